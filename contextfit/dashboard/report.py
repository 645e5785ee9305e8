"""The comparison as one standalone HTML file: what people paste into a slide
deck or send after a demo.

One file, no network: plotly's JavaScript is embedded once, inline, and every
chart is drawn from data in the page. It opens on the recommendation (which
strategy to ship, what it gives up, the trade-off against the runner-up), then
holds the settings — with the hand edits and the must-survive facts, so its
numbers can be reproduced —, the verdict table (best values marked), each
strategy's costs at volume and **Lost:** line, the token breakdown by kind,
each strategy's budget bar and block chart, and the fate matrix in Compare's
own HTML (its colours and patterns), under one legend of the shades that
occur. Numbers carry thousands separators and no table shows ``None``. Every
piece of user text (source name, strategy names, settings, block ids) is
HTML-escaped; the charts escape their own hover text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import plotly.io as pio
from plotly.offline import get_plotlyjs

from ..amounts import window_text
from ..errors import ContextfitError
from ..pipeline.plan import PromptPlan
from ..replays.answer import recommend
from ..replays.recommend import PRIORITY_WORDS, Recommendation
from ..replays.volume import DEFAULT_CONVERSATIONS_PER_DAY
from . import answer_box, breakdown, charts, verdict
from .block_chart import CSS as GRID_CSS
from .block_chart import DENSE_THRESHOLD as GRID_DENSE_THRESHOLD
from .fate_grid import fate_html

_STYLE = """
body{font-family:Inter,system-ui,sans-serif;margin:2rem auto;max-width:1400px;padding:0 1.5rem;color:#1f1f1f}
h1{font-size:1.7rem;margin-bottom:.2rem} h2{font-size:1.25rem;margin-top:2rem} h3{font-size:1.05rem;margin:.5rem 0}
table{border-collapse:collapse;font-size:.9rem;margin:.5rem 0} th,td{border:1px solid #ddd;padding:.35rem .6rem;text-align:left}
th{background:#f5f5f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
.strategies{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:1rem}
.strategy{border:1px solid #e3e3e3;border-radius:8px;padding:.6rem} .muted{color:#666;font-size:.85rem}
.answer{font-size:1.2rem;line-height:1.5;border-left:6px solid #333;background:#F4F4F4;padding:.8rem 1rem;margin:1rem 0}
.lost{font-size:.9rem;margin:.3rem 0 .6rem}
"""
#: What a table cell shows for no value.
EMPTY = "—"


def _cell(value: Any) -> str:
    """A value as a table cell reads it: thousands separators, never ``None``.

    >>> _cell(128000), _cell(None), _cell(True), _cell(0.5), _cell("1,500")
    ('128,000', '—', 'yes', '0.5', '1,500')
    """
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.10g}" if abs(value) >= 1000 else f"{value:.10g}"
    return str(value)


def _table(rows: Sequence[Mapping[str, Any]], styles: Sequence[Mapping[str, str]] | None = None,
           numeric: Sequence[str] = ()) -> str:
    if not rows:
        return "<p class='muted'>Nothing to show.</p>"
    headers = list(rows[0])
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for number, row in enumerate(rows):
        cells = []
        for header in headers:
            value = row.get(header)
            style = (styles[number].get(header, "") if styles else "")
            css = f' style="{html.escape(style)}"' if style else ""
            numeric_cell = header in numeric or (isinstance(value, (int, float)) and not isinstance(value, bool))
            klass = ' class="num"' if numeric_cell else ""
            cells.append(f"<td{klass}{css}>{html.escape(_cell(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _chart(figure: Any, div_id: str) -> str:
    return pio.to_html(figure, full_html=False, include_plotlyjs=False, config=charts.PLOTLY_CONFIG,
                       div_id=div_id, default_width="100%")


def hand_edits(overrides: Mapping[str, Mapping[str, Any]] | None) -> list[dict[str, str]]:
    """Compare's edits by hand as rows (block id, edit), so the report's numbers can be reproduced.

    >>> hand_edits({"m3": {"pinned": True, "relevance": 0.7}, "m5": {"manualExcluded": True}, "m6": {"pinned": False}})
    [{'block': 'm3', 'edit': 'pinned; relevance 0.70'}, {'block': 'm5', 'edit': 'excluded by hand'}, {'block': 'm6', 'edit': 'unpinned'}]
    """
    rows = []
    for ident, edit in (overrides or {}).items():
        words = []
        if "pinned" in edit:
            words.append("pinned" if edit["pinned"] else "unpinned")
        if "manualExcluded" in edit:
            words.append("excluded by hand" if edit["manualExcluded"] else "not excluded")
        if "required" in edit:
            words.append("required" if edit["required"] else "not required")
        if edit.get("relevance") is not None:
            words.append(f"relevance {float(edit['relevance']):.2f}")
        if words:
            rows.append({"block": str(ident), "edit": "; ".join(words)})
    return rows


def recommendation_html(answer: Recommendation, conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY) -> str:
    """The recommendation at the top of the report: the sentence, then each strategy's costs at volume
    and its **Lost:** line (:mod:`contextfit.dashboard.answer_box`, as the Replay page shows them)."""
    return "\n".join([
        f"<p class='answer'>{html.escape(answer.sentence)}</p>",
        f"<p class='muted'>{html.escape(answer_box.evidence_text(answer, conversations_per_day))}</p>",
        _table(answer_box.volume_rows(answer, conversations_per_day)),
    ])


def comparison_html(
    plans: Mapping[str, PromptPlan | ContextfitError],
    *,
    source_name: str,
    settings: Mapping[str, Any],
    registry: Any = None,
    created: datetime | None = None,
    recommendation: Recommendation | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY,
) -> str:
    """The whole comparison as one self-contained HTML document.

    ``settings`` are shown as given (label → value), e.g. model, context
    limit, response reserve; ``source_name`` names the conversation (a
    sample's title, an uploaded file's name); ``overrides`` are Compare's hand
    edits (block id → ``pinned`` / ``manualExcluded`` / ``relevance``), listed
    with the settings. ``recommendation`` is the one the page shows
    (:func:`~contextfit.replays.answer.recommendation_for`); without it the
    report makes one from the plans alone (:func:`~contextfit.replays.answer.recommend`).
    """
    created = created or datetime.now(timezone.utc)
    answer = recommendation if recommendation is not None else recommend(plans)
    rows = verdict.verdict_rows(plans, registry, answer)
    fitted = {name: plan for name, plan in plans.items() if isinstance(plan, PromptPlan)}
    token_scale = charts.prompt_scale(list(fitted.values()))
    block_scale = charts.block_scale(list(fitted.values()))
    facts = [name for name, _ in answer.outcomes[0].facts] if answer.outcomes else []
    listed = [{"setting": key, "value": value} for key, value in settings.items()]
    listed.append({"setting": "priority", "value": f"{answer.priority} ({PRIORITY_WORDS[answer.priority]})"})
    listed.append({"setting": "conversations a day", "value": conversations_per_day})
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>contextfit comparison — {html.escape(source_name)}</title>",
        f"<style>{_STYLE}</style>",
        GRID_CSS,
        # Inline, so the file opens with no network (a slide deck, a mail attachment).
        f"<script type='text/javascript'>{get_plotlyjs()}</script>",
        "</head><body>",
        "<h1>Which blocks does the model see?</h1>",
        f"<p class='muted'>contextfit comparison of <b>{html.escape(source_name)}</b> · "
        f"{created.strftime('%Y-%m-%d %H:%M UTC')}</p>",
        "<h2>Recommendation</h2>",
        recommendation_html(answer, conversations_per_day),
        "<h2>Settings</h2>",
        _table(listed),
        "<h3>Hand edits</h3>",
        _table(hand_edits(overrides)) if overrides else "<p class='muted'>None: every block as the conversation marks it.</p>",
        "<h3>Must-survive facts</h3>",
        (f"<p>{html.escape(', '.join(facts))}</p>" if facts else
         "<p class='muted'>None in force at the latest request.</p>"),
        "<h2>Verdict</h2>",
        "<p class='muted'>Best value of each column marked: fewest tokens, least of the budget, fewest blocks "
        "dropped, cheapest request (the reply included, cached input as the provider bills it). Summarized and "
        "compressed blocks are counted, not ranked. A strategy that drops or folds away your question or a "
        "pinned block is never marked, and says so.</p>",
        _table(verdict.table(rows), verdict.styles(rows)),
    ]
    if fitted:
        parts += ["<h2>Tokens by kind</h2>", _table(breakdown.breakdown_table(fitted))]
        tools = {name: breakdown.per_tool(plan) for name, plan in fitted.items()}
        first = next((rows for rows in tools.values() if rows), None)
        if first:
            parts += ["<h3>Tool definitions, per tool</h3>", _table(first)]
        used = {shade for plan in fitted.values() for shade in charts.plan_shades(plan)}
        parts += ["<h2>Each strategy</h2>", charts.legend_html(used), "<div class='strategies'>"]
        lost = answer.lost_lines()
        for number, (name, plan) in enumerate(fitted.items()):
            parts += [
                "<div class='strategy'>",
                f"<h3>{html.escape(name)} <span class='muted'>"
                f"{html.escape(window_text(plan.prompt_tokens, plan.context_limit))}</span></h3>",
                f"<p class='lost'>{html.escape(lost.get(name, ''))}</p>",
                _chart(charts.budget_figure(plan, token_scale=token_scale), f"budget-{number}"),
                _chart(charts.blocks_figure(plan, token_scale=block_scale), f"blocks-{number}"),
                "</div>",
            ]
        parts.append("</div>")
        if len(fitted) > 1:
            parts += ["<h2>Fate of every block, strategy by strategy</h2>",
                      "<p class='muted'>Hover a cell for its block and reason; the colours and patterns are the "
                      "legend's above.</p>",
                      fate_html(fitted, GRID_DENSE_THRESHOLD)]
    for name, plan in plans.items():
        if isinstance(plan, ContextfitError):
            parts.append(f"<p class='muted'>{html.escape(name)}: {html.escape(plan.code)}: {html.escape(str(plan))}</p>")
    # Each chart is drawn as the page is read, before the grid holds all its cells: fit them once it is whole.
    parts.append("<script>window.addEventListener('load', () => document.querySelectorAll('.js-plotly-plot')"
                 ".forEach(plot => Plotly.Plots.resize(plot)));</script>")
    parts.append("</body></html>")
    return "\n".join(parts)
