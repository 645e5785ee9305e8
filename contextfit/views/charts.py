"""Plotly figures of prompt plans, for the dashboard (never imports streamlit).

One colour per fate in every chart (colour-blind safe, Okabe–Ito):
protected blue, kept green, summarized orange, compressed purple, excluded
grey; the response reserve is a hatched vermilion band. Every number goes
into the figures as plain lists, and every piece of user text is
HTML-escaped before it reaches a hover label: pasted markup is shown, never
interpreted.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from ..engine.pipeline import PlanBlock, PromptPlan, fate_of
from .bands import band_text

FATES = ("protected", "kept", "summarized", "compressed", "excluded")
FATE_COLORS = {
    "protected": "#0072B2",
    "kept": "#009E73",
    "summarized": "#E69F00",
    "compressed": "#CC79A7",
    "excluded": "#B8B8B8",
}
FREE_COLOR = "#EDEDED"
RESERVE_COLOR = "#D55E00"
ABSENT_COLOR = "#FFFFFF"
#: Past this many blocks, block charts and the fate matrix bin neighbouring blocks.
DENSE_THRESHOLD = 300
_FONT = {"family": "Inter, system-ui, sans-serif", "size": 12}


def preview(text: str, width: int = 90) -> str:
    """One escaped line of text for a hover label.

    >>> preview("<b>bold</b> & more")
    '&lt;b&gt;bold&lt;/b&gt; &amp; more'
    """
    flat = " ".join(str(text).split())
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return html.escape(flat)


_AXIS = {"gridcolor": "#EBEBEB", "zeroline": False, "linecolor": "#D0D0D0", "automargin": True}


def _figure(data: list[dict[str, Any]], legend: bool = True, xaxis: Mapping[str, Any] | None = None,
            yaxis: Mapping[str, Any] | None = None, **layout: Any) -> go.Figure:
    """One figure made in one step from plain trace and layout dicts.

    Built with the empty template (plotly's default one costs ~100 ms to copy
    and validate per figure) and without ``add_trace``/``update_layout``,
    which re-validate the figure on every call: a tenth of the time.
    """
    return go.Figure(
        data=data,
        layout={
            "template": "none",
            "paper_bgcolor": "white",
            "plot_bgcolor": "white",
            "xaxis": {**_AXIS, **(xaxis or {})},
            "yaxis": {**_AXIS, **(yaxis or {})},
            "font": _FONT,
            "margin": {"l": 10, "r": 10, "t": 24, "b": 10},
            "showlegend": legend,
            "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "title": None},
            **layout,
        },
    )


def legend_html() -> str:
    """The fate colours as one line of HTML (static: no user text), for a page-level legend."""
    swatch = (
        '<span style="display:inline-block;width:0.8em;height:0.8em;background:{color};'
        'border:1px solid {border};margin:0 0.3em 0 1em;vertical-align:middle"></span>{label}'
    )
    items = [swatch.format(color=FATE_COLORS[fate], border=FATE_COLORS[fate], label=fate) for fate in FATES]
    items.append(swatch.format(color=FREE_COLOR, border="#C8C8C8", label="free budget"))
    items.append(swatch.format(color="rgba(213,94,0,0.25)", border=RESERVE_COLOR, label="response reserve"))
    return '<div style="font-size:0.85rem;margin:-0.5rem 0 0.5rem -1em">' + "".join(items) + "</div>"


def budget_figure(plan: PromptPlan, legend: bool = False) -> go.Figure:
    """Tokens by fate and kind against the context limit; the reserve as its own band.

    Row "sent": what the prompt spends, stacked by fate then kind, then the
    free budget, then the response reserve (together exactly the context
    limit). Row "not sent": what was dropped or folded into a summary. A
    dashed line marks the budget.
    """
    traces: list[dict[str, Any]] = []
    sent = _tokens_by(plan.blocks, included=True)
    overhead = plan.prompt_tokens - sum(sent.values())
    if overhead > 0:  # reply priming and tool definitions belong to no block
        sent[("protected", "overhead")] = overhead
    shown: set[str] = set()
    band = f"<br>prompt: {html.escape(band_text(plan))}"  # approximate: the point estimate and the upper end shown
    for row, totals in (("sent", sent), ("not sent", _tokens_by(plan.blocks, included=False))):
        for (fate, kind), tokens in sorted(totals.items(), key=lambda item: (FATES.index(item[0][0]), item[0][1])):
            traces.append({
                "type": "bar",
                "y": [row],
                "x": [tokens],
                "orientation": "h",
                "name": fate,
                "legendgroup": fate,
                "showlegend": fate not in shown,
                "marker": {"color": FATE_COLORS[fate], "line": {"color": "white", "width": 1}},
                "hovertemplate": f"{fate} · {html.escape(kind)}: %{{x:,}} tokens{band}<extra></extra>",
            })
            shown.add(fate)
    free = max(plan.budget - plan.prompt_tokens, 0)
    traces.append({"type": "bar", "y": ["sent"], "x": [free], "orientation": "h", "name": "free budget",
                   "marker": {"color": FREE_COLOR}, "hovertemplate": "free budget: %{x:,} tokens<extra></extra>"})
    traces.append({"type": "bar", "y": ["sent"], "x": [plan.response_reserve], "orientation": "h",
                   "name": "response reserve",
                   "marker": {"color": "rgba(213,94,0,0.25)", "line": {"color": RESERVE_COLOR, "width": 1},
                              "pattern": {"shape": "/", "fgcolor": RESERVE_COLOR}},
                   "hovertemplate": "response reserve: %{x:,} tokens<extra></extra>"})
    return _figure(
        traces,
        legend,
        xaxis={"title": None, "range": [0, max(plan.context_limit, plan.prompt_tokens) * 1.01], "separatethousands": True},
        yaxis={"categoryorder": "array", "categoryarray": ["not sent", "sent"]},
        shapes=[{"type": "line", "xref": "x", "yref": "paper", "x0": plan.budget, "x1": plan.budget, "y0": 0, "y1": 1,
                 "line": {"color": "#333333", "dash": "dash", "width": 1}}],
        annotations=[{"x": plan.budget, "y": 1.0, "xref": "x", "yref": "paper", "text": f"budget {plan.budget:,}",
                      "showarrow": False, "xanchor": "right", "yanchor": "bottom", "font": {"size": 11}}],
        barmode="stack",
        height=200 if legend else 150,
        bargap=0.3,
    )


def _tokens_by(blocks: Sequence[PlanBlock], included: bool) -> dict[tuple[str, str], int]:
    totals: dict[tuple[str, str], int] = {}
    for block in blocks:
        if block.included == included and block.tokens:
            key = (fate_of(block.reason), block.kind)
            totals[key] = totals.get(key, 0) + block.tokens
    return totals


def _hover(block: PlanBlock) -> str:
    tokens = "not counted" if block.tokens is None else f"{block.tokens:,} tokens"
    return (
        f"#{block.index} · {html.escape(block.role or '—')} · {html.escape(block.kind)}<br>"
        f"{tokens} · {block.fate} ({html.escape(block.reason)})<br>{preview(block.content)}"
    )


def blocks_figure(plan: PromptPlan, dense_threshold: int = DENSE_THRESHOLD, legend: bool = False) -> go.Figure:
    """Tokens per block in prompt order, coloured by fate, with the block in the hover.

    Past ``dense_threshold`` blocks, neighbouring blocks are binned so the
    chart keeps at most that many bars (stacked by fate within a bin).
    """
    traces: list[dict[str, Any]] = []
    blocks = plan.blocks
    if len(blocks) <= dense_threshold:
        for fate in FATES:
            chosen = [block for block in blocks if block.fate == fate]
            if chosen:
                traces.append({
                    "type": "bar",
                    "x": [block.index for block in chosen],
                    "y": [block.tokens or 0 for block in chosen],
                    "name": fate,
                    "marker": {"color": FATE_COLORS[fate]},
                    "hovertext": [_hover(block) for block in chosen],
                    "hoverinfo": "text",
                })
        return _figure(traces, legend, xaxis={"title": "block, in prompt order", "range": [-0.5, max(len(blocks), 1) - 0.5]},
                       barmode="overlay", height=240, bargap=0.15)
    size = math.ceil(len(blocks) / dense_threshold)
    bins = math.ceil(len(blocks) / size)
    totals = {fate: [0] * bins for fate in FATES}
    counts = {fate: [0] * bins for fate in FATES}
    for position, block in enumerate(blocks):  # one pass: a bin's tokens and blocks by fate
        fate = fate_of(block.reason)
        totals[fate][position // size] += block.tokens or 0
        counts[fate][position // size] += 1
    for fate in FATES:
        chosen = [b for b in range(bins) if counts[fate][b]]
        if chosen:
            traces.append({
                "type": "bar",
                "x": [b * size + size / 2 - 0.5 for b in chosen],
                "y": [totals[fate][b] for b in chosen],
                "width": [size] * len(chosen),
                "name": fate,
                "marker": {"color": FATE_COLORS[fate]},
                "hovertext": [
                    f"blocks #{b * size}–#{min((b + 1) * size, len(blocks)) - 1}<br>"
                    f"{counts[fate][b]} {fate}: {totals[fate][b]:,} tokens"
                    for b in chosen
                ],
                "hoverinfo": "text",
            })
    return _figure(traces, legend, xaxis={"title": f"prompt order · {size} blocks per bar",
                                          "range": [-0.5, len(blocks) - 0.5]},
                   barmode="stack", height=240, bargap=0.05)


def _keys(plan: PromptPlan) -> list[str]:
    """Block ids made unique within a plan (a repeated id gets ``#2``, ``#3``...)."""
    seen: dict[str, int] = {}
    keys = []
    for block in plan.blocks:
        count = seen[block.id] = seen.get(block.id, 0) + 1
        keys.append(block.id if count == 1 else f"{block.id}#{count}")
    return keys


def fate_matrix(plans: Mapping[str, PromptPlan]) -> tuple[list[str], list[str], list[list[str | None]]]:
    """(strategies, block ids, fates): one row per strategy, one column per block.

    Columns follow prompt order (the plans differ only by blocks a strategy
    inserted, such as a summary); a block a strategy does not have is ``None``.
    """
    keyed = {name: _keys(plan) for name, plan in plans.items()}
    columns = list(max(keyed.values(), key=len, default=[]))
    where = {key: position for position, key in enumerate(columns)}
    for keys in keyed.values():
        previous = -1
        for key in keys:
            position = where.get(key)
            if position is None:  # rare: a block only this plan has
                columns.insert(previous + 1, key)
                where = {k: p for p, k in enumerate(columns)}
                position = previous + 1
            previous = position
    rows = []
    for name, plan in plans.items():
        fates = dict(zip(keyed[name], (block.fate for block in plan.blocks)))
        rows.append([fates.get(key) for key in columns])
    return list(plans), columns, rows


def fate_matrix_figure(plans: Mapping[str, PromptPlan], dense_threshold: int = DENSE_THRESHOLD) -> go.Figure:
    """How each strategy reshapes the same conversation: strategies × blocks, coloured by fate."""
    names, columns, rows = fate_matrix(plans)
    codes = {fate: number for number, fate in enumerate(FATES)}
    absent = len(FATES)
    size = max(1, math.ceil(len(columns) / dense_threshold))
    z, text = [], []
    for name, row in zip(names, rows):
        z_row, text_row = [], []
        for start in range(0, len(columns), size):
            cells = row[start : start + size]
            present = [fate for fate in cells if fate is not None]
            fate = max(FATES, key=present.count) if present else None
            z_row.append(absent if fate is None else codes[fate])
            if size == 1:
                label = html.escape(columns[start])
                text_row.append(f"{html.escape(name)} · {label}: {fate or 'not in this plan'}")
            else:
                counts = ", ".join(f"{present.count(f)} {f}" for f in FATES if present.count(f))
                text_row.append(f"{html.escape(name)} · blocks #{start}–#{min(start + size, len(columns)) - 1}: {counts}")
        z.append(z_row)
        text.append(text_row)
    scale = []
    colors = [*(FATE_COLORS[fate] for fate in FATES), ABSENT_COLOR]
    for number, color in enumerate(colors):
        scale += [[number / len(colors), color], [(number + 1) / len(colors), color]]
    traces: list[dict[str, Any]] = [{
        "type": "heatmap",
        "z": z,
        "y": names,
        "x": list(range(len(z[0]) if z else 0)),
        "text": text,
        "hoverinfo": "text",
        "colorscale": scale,
        "zmin": -0.5,
        "zmax": len(colors) - 0.5,
        "showscale": False,
        "xgap": 1,
        "ygap": 3,
    }]
    for fate in FATES:  # a legend for the heatmap's colours
        traces.append({"type": "scatter", "x": [None], "y": [None], "mode": "markers", "name": fate,
                       "marker": {"color": FATE_COLORS[fate], "size": 10, "symbol": "square"}})
    label = "block, in prompt order" if size == 1 else f"block, in prompt order ({size} blocks per cell)"
    return _figure(traces, xaxis={"title": label, "showgrid": False}, yaxis={"autorange": "reversed", "showgrid": False},
                   height=90 + 42 * len(names))
