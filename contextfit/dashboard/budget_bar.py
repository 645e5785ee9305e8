"""A strategy's budget bar as plain HTML and CSS, for the Compare page.

The same bar as :func:`contextfit.dashboard.charts.budget_figure` (the same
numbers, from :func:`~contextfit.dashboard.charts.budget_view`; the same colours,
patterns and labels), without a plotly instance: the Compare page shows one
per strategy side by side, and five small plotly charts cost the browser
more to draw than the rest of the page (docs/dashboard.md, "Speed"). Rows:
"window" (the prompt, the free budget and the response reserve, in percent
of the context limit), then "sent" and "not sent" in tokens, zoomed to the
prompt, with a dashed line at the budget when it is in view. Each stretch
says what it is on hover, in a label like the block chart's (its look is
:data:`contextfit.dashboard.block_chart.CSS`, which Compare draws with this
CSS), opening below the bar towards the page's middle; every piece of text
is escaped.
"""

from __future__ import annotations

import html

from ..pipeline.plan import PromptPlan
from .charts import FREE_COLOR, KIND_LABELS, SHADES, BudgetView, budget_view, css_pattern, reserve_style

#: Page CSS for the bars (static: no user text goes into it); drawn once per page.
CSS = """<style>
.contextfit-budget { font-family: Inter, system-ui, sans-serif; font-size: 12px; color: #444; margin: 0.2rem 0 0.6rem; }
.contextfit-budget .cfb-note { font-size: 11px; margin-bottom: 4px; }
.contextfit-budget .cfb-grid { display: grid; grid-template-columns: max-content 1fr; column-gap: 6px; row-gap: 3px;
  align-items: center; }
.contextfit-budget .cfb-label { text-align: right; white-space: nowrap; }
.contextfit-budget .cfb-track { position: relative; display: flex; height: 18px; background: #FAFAFA;
  box-shadow: inset 0 0 0 1px #E4E4E4; }
.contextfit-budget .cfb-window { height: 14px; }
.contextfit-budget .cfb-part { position: relative; height: 100%; box-sizing: border-box; border-right: 1px solid white; flex: none; }
.contextfit-budget .cfb-part:hover { box-shadow: inset 0 0 0 2px #333; z-index: 5; }
.contextfit-budget .cfb-part:hover > .cfk-tip { display: block; top: calc(100% + 6px); }
.contextfit-budget .cfk-from-left > .cfk-tip { left: 0; }
.contextfit-budget .cfk-from-right > .cfk-tip { right: 0; }
[data-testid="stColumn"]:first-child:not(:last-child) .contextfit-budget .cfk-tip { left: 0; right: auto; }
[data-testid="stColumn"]:last-child:not(:first-child) .contextfit-budget .cfk-tip { right: 0; left: auto; }
.contextfit-budget .cfb-window .cfb-part { border-right: none; }
.contextfit-budget .cfb-line { position: absolute; top: -3px; bottom: -3px; border-left: 1px dashed #333; pointer-events: none; }
.contextfit-budget .cfb-axis { display: flex; justify-content: space-between; color: #666; font-size: 11px; }
.contextfit-budget .cfb-gap { height: 4px; }
</style>"""


def stretch_html(css_class: str, width: float, background: str, label: str, extra: str = "", data: str = "", start: float = 0.0) -> str:
    """A stretch ``width`` percent wide starting at ``start`` percent, with its hover ``label`` (plain text)."""
    side = "cfk-from-left" if start + width / 2 < 50 else "cfk-from-right"  # the label opens towards the middle
    escaped = html.escape(label)
    return (f'<div class="{css_class} {side}" style="width:{width:.4f}%;background:{background}{extra}" '
            f'role="img" aria-label="{escaped}"{data}><span class="cfk-tip">{escaped.replace(chr(10), "<br>")}</span></div>')


def budget_html(plan: PromptPlan, token_scale: int | None = None) -> str:
    """The budget bar of ``plan`` as HTML (with :data:`CSS` on the page).

    ``token_scale`` shares the token axis of side-by-side bars, as
    :func:`~contextfit.dashboard.charts.budget_figure` does. Each stretch carries
    its tokens in ``data-tokens`` and its shade in ``data-shade``.
    """
    view = budget_view(plan, token_scale)
    return _html(view, html.escape(plan.strategy or ""))


def _html(view: BudgetView, strategy: str) -> str:
    scale = view.top * 1.03  # as the chart's axis: a little room after the longest row
    window, start = [], 0.0
    for name, share, tokens in view.gauge:
        if name == "prompt":
            background, extra = "#4D4D4D", ""
        elif name == "free budget":
            background, extra = FREE_COLOR, ""
        else:
            background, extra = reserve_style()
        count = view.band if name == "prompt" and view.approximate else f"{tokens:,} tokens"  # an estimate: its band
        window.append(stretch_html("cfb-part", share, background, f"{name}: {count} ({share:.1f}% of the window)", extra,
                            f' data-part="{name}" data-tokens="{tokens}"', start))
        start += share
    rows: dict[str, list[str]] = {"sent": [], "not sent": []}
    starts = {"sent": 0.0, "not sent": 0.0}
    for segment in view.segments:
        style = SHADES[segment.shade]
        label = f"{style.label} · {KIND_LABELS.get(segment.kind, segment.kind)}: {segment.count}\nprompt: {view.band}"
        width = 100 * segment.tokens / scale
        rows[segment.row].append(stretch_html("cfb-part", width, css_pattern(style.pattern) + style.color, label,
                                       data=f' data-shade="{html.escape(segment.shade)}" data-tokens="{segment.tokens}"',
                                       start=starts[segment.row]))
        starts[segment.row] += width
    # A marker (the caption and the axis say the budget): the stretches under it keep their labels.
    line = (f'<div class="cfb-line" style="left:{100 * view.budget / scale:.4f}%" data-tokens="{view.budget}"></div>'
            if view.budget_in_view else "")
    tracks = "".join(
        f'<span class="cfb-label">{row}</span><div class="cfb-track" data-row="{row}">{"".join(parts)}{line}</div>'
        for row, parts in rows.items()
    )
    return (
        f'<div class="contextfit-budget" data-strategy="{strategy}" data-top="{view.top}">'
        f'<div class="cfb-note">{html.escape(view.note)}</div>'
        '<div class="cfb-grid">'
        f'<span class="cfb-label">window</span><div class="cfb-track cfb-window" data-row="window">{"".join(window)}</div>'
        '<span></span><div class="cfb-axis"><span>0%</span><span>100%</span></div>'
        '<span class="cfb-gap"></span><span class="cfb-gap"></span>'
        f"{tracks}"
        f'<span></span><div class="cfb-axis" style="width:{100 / 1.03:.4f}%"><span>0</span><span>{view.top:,}</span></div>'
        "</div></div>"
    )
