"""A strategy's block chart as plain HTML and CSS, for the Compare page.

The same chart as :func:`contextfit.dashboard.charts.blocks_figure` (the same
bars, from :func:`~contextfit.dashboard.charts.blocks_view`; the same shades,
scale and hover text), without a plotly instance. Compare shows one per
strategy side by side, and a refit changes all of them: Streamlit mounts a
changed plotly figure as a new chart, which the browser builds from scratch
(docs/dashboard.md, "Speed"), while this HTML is updated in place.

Each bar is a column of the plot (a block, or a bin of neighbouring blocks
past :data:`DENSE_THRESHOLD`) holding its shades'
fills, stacked, and a hover label shown while the pointer is anywhere in
the column (a bar a pixel tall can still be hovered). Labels open inside
the plot beside the bar, towards the middle of the chart, and in the first
and last of side-by-side columns towards the page's middle, so none is cut
off at the page's or the window's edge. Every piece
of user text is escaped (:func:`~contextfit.dashboard.charts.blocks_view`).
"""

from __future__ import annotations

import html

from ..pipeline.plan import PromptPlan
from .charts import SHADES, BlockBar, BlocksView, blocks_view, css_pattern

#: Past this many blocks neighbours share a bar (and a matrix cell), for a chart across the page: half
#: the plotly chart's 300. Every bar is elements the browser sanitizes, lays out and paints again on each
#: refit, and a bar narrower than a few pixels cannot be hovered.
DENSE_THRESHOLD = 150
#: Bars across all side-by-side block charts together (:func:`dense_threshold`).
PAGE_BARS = 250


def dense_threshold(columns: int) -> int:
    """How many bars each of ``columns`` side-by-side block charts may have: :data:`PAGE_BARS` shared out,
    between 20 and :data:`DENSE_THRESHOLD`. Five charts have plots about 125 pixels wide at 1440 and 95 at
    1280: 50 bars each stay 2.5 and nearly 2 pixels wide, so every one can be hovered, and a chat of up to
    50 blocks (the samples) is drawn block by block.

    >>> dense_threshold(5), dense_threshold(1), dense_threshold(20)
    (50, 150, 20)
    """
    return max(20, min(DENSE_THRESHOLD, PAGE_BARS // max(columns, 1)))
#: The plot's height in pixels (presentation mode enlarges it with its own CSS).
HEIGHT = 190
#: Horizontal gap around an unbinned bar, in percent of its column (plotly's ``bargap`` of the figure).
GAP = 7.5

#: The CSS class of each shade's fill (:data:`CSS` draws its colour and pattern).
SHADE_CLASS = {shade: f"cfk-s{number}" for number, shade in enumerate(SHADES)}

#: Both HTML charts of Compare: the block charts and the fate matrix (:mod:`contextfit.dashboard.fate_grid`).
_BOTH = ":is(.contextfit-blocks, .contextfit-matrix)"
#: ...and the budget bars (:mod:`contextfit.dashboard.budget_bar`) and window bars (:mod:`contextfit.dashboard.category_bar`),
#: whose hover labels look the same.
_LABELLED = ":is(.contextfit-blocks, .contextfit-matrix, .contextfit-budget, .contextfit-window)"

#: Page CSS for the block charts and the fate matrix (static: no user text goes into it); drawn once per page.
CSS = "<style>\n" + "\n".join([
    f"{_BOTH} {{ font-family: Inter, system-ui, sans-serif; font-size: 12px; color: #444; margin: 0.2rem 0 0.4rem; }}",
    ".contextfit-blocks .cfk-body { display: grid; grid-template-columns: max-content max-content 1fr; column-gap: 4px; }",
    ".contextfit-blocks .cfk-title { writing-mode: vertical-rl; transform: rotate(180deg); text-align: center; color: #666; }",
    f".contextfit-blocks .cfk-yaxis {{ position: relative; height: {HEIGHT}px; color: #666; font-size: 11px; }}",
    ".contextfit-blocks .cfk-yaxis span { position: absolute; right: 0; transform: translateY(50%); white-space: nowrap; }",
    ".contextfit-blocks .cfk-yaxis .cfk-sizer { position: static; visibility: hidden; transform: none; }",
    f".contextfit-blocks .cfk-plot {{ position: relative; height: {HEIGHT}px; border-bottom: 1px solid #D0D0D0; }}",
    ".contextfit-blocks .cfk-grid { position: absolute; left: 0; right: 0; border-top: 1px solid #EBEBEB; }",
    ".contextfit-blocks .cfk-col { position: absolute; top: 0; bottom: 0; }",
    ".contextfit-blocks .cfk-col:hover { background: rgba(0,0,0,0.04); z-index: 5; }",
    ".contextfit-blocks .cfk-fill { position: absolute; left: 0; right: 0; display: block; }",
    f".contextfit-blocks .cfk-gap .cfk-fill {{ left: {GAP}%; right: {GAP}%; }}",
    f"{_LABELLED} .cfk-tip {{ display: none; position: absolute; z-index: 20; width: max-content;"
    " max-width: 300px; padding: 4px 6px; background: white; border: 1px solid #BBB; border-radius: 3px;"
    " box-shadow: 0 1px 4px rgba(0,0,0,0.15); color: #222; font-size: 12px; line-height: 1.35; white-space: normal;"
    " overflow-wrap: break-word; }",
    f"{_BOTH} .cfk-col:hover > .cfk-tip {{ display: block; }}",
    # A block chart's label opens inside the plot, beside its bar (never above the chart, where the top of
    # the window may cut it off); a matrix cell's above the cell.
    ".contextfit-blocks .cfk-tip { top: 4px; }",
    ".contextfit-blocks .cfk-from-left > .cfk-tip { left: calc(100% + 4px); }",
    ".contextfit-blocks .cfk-from-right > .cfk-tip { right: calc(100% + 4px); }",
    ".contextfit-matrix .cfk-tip { bottom: calc(100% + 4px); }",
    ".contextfit-matrix .cfk-from-left > .cfk-tip { left: 0; }",
    ".contextfit-matrix .cfk-from-right > .cfk-tip { right: 0; }",
    # Side by side, the first column's labels open to the right and the last one's to the left: the page's edges.
    '[data-testid="stColumn"]:first-child:not(:last-child) .contextfit-blocks .cfk-tip { left: calc(100% + 4px); right: auto; }',
    '[data-testid="stColumn"]:last-child:not(:first-child) .contextfit-blocks .cfk-tip { right: calc(100% + 4px); left: auto; }',
    f"{_BOTH} .cfk-xaxis {{ position: relative; height: 15px; color: #666; font-size: 11px; }}",
    f"{_BOTH} .cfk-xaxis span {{ position: absolute; transform: translateX(-50%); white-space: nowrap; }}",
    f"{_BOTH} .cfk-xtitle {{ text-align: center; color: #666; }}",
    # The fate matrix: a row of cells per strategy.
    ".contextfit-matrix .cfm-grid { display: grid; grid-template-columns: max-content 1fr; column-gap: 8px; row-gap: 4px;"
    " align-items: center; }",
    ".contextfit-matrix .cfm-name { text-align: right; white-space: nowrap; }",
    ".contextfit-matrix .cfm-row { display: flex; height: 24px; gap: 1px; }",
    ".contextfit-matrix .cfk-col { position: relative; flex: 1 1 0; min-width: 0; }",
    ".contextfit-matrix .cfk-col:hover { outline: 2px solid #333; z-index: 5; }",
    ".contextfit-matrix .cfm-absent { background: white; box-shadow: inset 0 0 0 1px #E4E4E4; }",
    # A hover label reaches past its chart (a block chart is some 180 pixels wide at 1440), above its neighbours.
    f'[data-testid="stElementContainer"]:has({_LABELLED}), [data-testid="stHtml"]:has({_LABELLED})'
    " { overflow: visible !important; }",
    '[data-testid="stColumn"]:has(.contextfit-blocks .cfk-col:hover, :is(.contextfit-budget, .contextfit-window) .cfb-part:hover)'
    " { position: relative; z-index: 1000; }",
    *(f"{_BOTH} .{css} {{ background: {css_pattern(SHADES[shade].pattern)}{SHADES[shade].color}; }}"
      for shade, css in SHADE_CLASS.items()),
]) + "\n</style>"


def ticks(top: float, most: int = 5) -> list[int]:
    """Whole-number axis ticks from 0 to at most ``top``, at most ``most`` of them, in steps of 1, 2 or 5
    times a power of ten (no half-step tick on a small axis).

    >>> ticks(3), ticks(10), ticks(998), ticks(0.5)
    ([0, 1, 2, 3], [0, 5, 10], [0, 200, 400, 600, 800], [0])
    """
    step, power = 1, 1
    while int(top // step) + 1 > most:
        for size in (2, 5, 10):
            step = size * power
            if int(top // step) + 1 <= most:
                break
        power *= 10
    return list(range(0, int(top) + 1, step))


def blocks_html(plan: PromptPlan, token_scale: int | None = None, dense_threshold: int = DENSE_THRESHOLD) -> str:
    """The block chart of ``plan`` as HTML (with :data:`CSS` on the page).

    ``token_scale`` (see :func:`~contextfit.dashboard.charts.block_scale`) gives
    side-by-side charts one y-axis. Each fill carries its shade in
    ``data-shade`` and its tokens in ``data-tokens``; each column its hover
    label (``.cfk-tip``).
    """
    return _html(blocks_view(plan, dense_threshold, token_scale), html.escape(plan.strategy or ""))


def _columns(view: BlocksView) -> dict[float, list[BlockBar]]:
    """The bars by column (their centre), in prompt order; a bin's shades stacked from the bottom."""
    columns: dict[float, list[BlockBar]] = {}
    for bar in sorted(view.bars, key=lambda bar: (bar.x, bar.base)):
        columns.setdefault(bar.x, []).append(bar)
    return columns


def _html(view: BlocksView, strategy: str) -> str:
    axis_top = view.top * 1.05  # as the figure's axis: a little room above the tallest bar
    span = max(view.blocks, 1)
    gap = " cfk-gap" if view.per_bar == 1 else ""
    columns = []
    for x, bars in _columns(view).items():
        width = bars[0].width
        left = 100 * (x - width / 2 + 0.5) / span
        fills = "".join(
            f'<i class="cfk-fill {SHADE_CLASS[bar.shade]}" style="bottom:{100 * bar.base / axis_top:.3f}%;'
            f'height:{100 * bar.tokens / axis_top:.3f}%" data-shade="{html.escape(bar.shade)}" data-tokens="{bar.tokens}"></i>'
            for bar in bars
        )
        side = "cfk-from-left" if x < view.blocks / 2 else "cfk-from-right"
        tip = "<br>".join(bar.hover for bar in bars)
        columns.append(f'<div class="cfk-col {side}{gap}" style="left:{left:.3f}%;width:{100 * width / span:.3f}%">'
                       f'{fills}<span class="cfk-tip">{tip}</span></div>')
    y_ticks = ticks(axis_top, most=6)
    grid = "".join(f'<div class="cfk-grid" style="bottom:{100 * tick / axis_top:.3f}%"></div>' for tick in y_ticks[1:])
    y_labels = "".join(f'<span style="bottom:{100 * tick / axis_top:.3f}%">{tick:,}</span>' for tick in y_ticks)
    widest = f"{y_ticks[-1]:,}"
    x_ticks = ticks(view.blocks - 1) if view.blocks > 1 else [0]  # five at most: side-by-side charts step alike
    x_labels = "".join(f'<span style="left:{100 * (tick + 0.5) / span:.3f}%">{tick:,}</span>' for tick in x_ticks)
    return (
        f'<div class="contextfit-blocks" data-strategy="{strategy}" data-top="{view.top}" data-bars="{len(columns)}">'
        '<div class="cfk-body">'
        '<span class="cfk-title">tokens</span>'
        f'<div class="cfk-yaxis"><span class="cfk-sizer">{widest}</span>{y_labels}</div>'
        f'<div class="cfk-plot">{grid}{"".join(columns)}</div>'
        '<span></span><span></span>'
        f'<div class="cfk-xaxis">{x_labels}</div>'
        '<span></span><span></span>'
        f'<div class="cfk-xtitle">{html.escape(view.x_title)}</div>'
        "</div></div>"
    )
