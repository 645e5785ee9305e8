"""The fate matrix as plain HTML and CSS, for the Compare page.

The cells come from :func:`~contextfit.dashboard.charts.fate_matrix_view` (the
shades and hover text the block charts use): one row per strategy, one cell per block in prompt
order, binned past :data:`~contextfit.dashboard.block_chart.DENSE_THRESHOLD`
blocks. With the budget bars and block charts in HTML too, Compare draws no
plotly chart: the browser neither compiles the 4.7 MB chart code for it nor
mounts a new chart on every refit (docs/dashboard.md, "Speed"). The page's CSS
is :data:`contextfit.dashboard.block_chart.CSS`; every piece of user text is
escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from ..pipeline.plan import PromptPlan
from .block_chart import DENSE_THRESHOLD, SHADE_CLASS, ticks
from .charts import SHADES, MatrixView, fate_matrix_view, plan_shades


def shades_of(plans: Mapping[str, PromptPlan]) -> list[str]:
    """The shades the matrix of ``plans`` shows, for a legend that lists only those (in legend order).

    >>> from contextfit import plan_prompt
    >>> shades_of({"truncate": plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o")})
    ['protected']
    """
    present = {shade for plan in plans.values() for shade in plan_shades(plan)}
    return [shade for shade in SHADES if shade in present]


def fate_html(plans: Mapping[str, PromptPlan], dense_threshold: int = DENSE_THRESHOLD) -> str:
    """The fate matrix of ``plans`` (strategy → plan) as HTML (with :data:`~contextfit.dashboard.block_chart.CSS`
    on the page). Each cell carries its shade in ``data-shade`` ("absent": not in this plan) and its hover
    label (``.cfk-tip``)."""
    return _html(fate_matrix_view(plans, dense_threshold))


def _html(view: MatrixView) -> str:
    width = len(view.shades[0]) if view.shades else 0
    rows = []
    for name, shades, hovers in zip(view.names, view.shades, view.hovers):
        cells = "".join(
            f'<div class="cfk-col {"cfk-from-left" if number < width / 2 else "cfk-from-right"} '
            f'{"cfm-absent" if shade is None else SHADE_CLASS[shade]}" data-shade="{html.escape(shade or "absent")}">'
            f'<span class="cfk-tip">{hover}</span></div>'
            for number, (shade, hover) in enumerate(zip(shades, hovers))
        )
        escaped = html.escape(name)
        rows.append(f'<span class="cfm-name">{escaped}</span><div class="cfm-row" data-strategy="{escaped}">{cells}</div>')
    # Ticks in blocks (round numbers even when cells are binned), each at the centre of its block's place
    # along the row (cells share the row equally, their 1-pixel gaps aside).
    x_ticks = ticks(view.blocks - 1, most=6) if view.blocks > 1 else [0]
    span = max(width * view.per_cell, 1)
    labels = "".join(f'<span style="left:{100 * (tick + 0.5) / span:.3f}%">{tick:,}</span>' for tick in x_ticks)
    return (
        f'<div class="contextfit-matrix" data-rows="{len(rows)}" data-cells="{width}">'
        '<div class="cfm-grid">'
        f'{"".join(rows)}'
        f'<span></span><div class="cfk-xaxis">{labels}</div>'
        f'<span></span><div class="cfk-xtitle">{html.escape(view.x_title)}</div>'
        "</div></div>"
    )
