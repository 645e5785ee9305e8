"""The Replay page's line charts: one line per strategy over the turns, and their one legend.

Prompt tokens, cumulative cost, the share read from the provider's cache and
the facts still sent (an × where one was lost), each strategy in the colour
it keeps whichever others are replayed (:mod:`contextfit.dashboard.palette`, never a fate
colour) with a marker of its own, its ``stable_prefix`` variant dotted.
"""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go

from ..replays.run import DECLARED, Replay
from .charts import _figure
from .palette import strategy_color, strategy_symbol


def series(result: Replay, label: str) -> dict[str, list[Any]]:
    """Per-turn values of one strategy: prompt tokens, cumulative cost, cache-hit
    share, retention and the facts lost (``None`` where a turn failed or no fact was in force)."""
    out: dict[str, list[Any]] = {"turn": [], "prompt": [], "cost": [], "cache": [], "retention": [], "lost": []}
    spent = 0.0
    priced = result.prices is not None
    for turn in result.turns[label]:
        out["turn"].append(turn.turn)
        out["prompt"].append(turn.prompt_tokens)
        if turn.cost is not None:
            spent += turn.cost.total
        out["cost"].append(spent if priced and turn.error is None else None)  # a failed turn: a gap
        out["cache"].append(turn.cache_read / turn.prompt_tokens if turn.prompt_tokens else None)
        fitted = turn.error is None  # a turn that sent nothing is a gap, not a loss drawn at 0%
        out["retention"].append(turn.retention if fitted else None)
        out["lost"].append(turn.lost if fitted else [])
    return out


#: Titles short enough for a chart of a narrow window (800 pixels with the sidebar: about 30
#: characters), and short units.
_TITLES = {
    "prompt": ("Prompt tokens per turn", "tokens"),
    "cost": ("Cumulative cost", "US dollars"),
    "cache": ("Read from the cache, per turn", "share of the prompt"),
    "retention": ("Facts still sent (× lost)", "share of facts"),
}


#: How the unified hover writes a value of each metric (plotly's d3 formats).
_HOVER = {"prompt": "%{y:,} tokens", "cost": "$%{y:,.6~g}", "cache": "%{y:.1%}", "retention": "%{y:.1%}"}


def line_style(result: Replay, label: str) -> dict[str, Any]:
    """The colour and dash of a strategy's line: its colour in the strategies' palette
    (:mod:`contextfit.dashboard.palette`: never a fate colour, a built-in's whichever others are
    replayed), its stable_prefix variant dotted.

    >>> from types import SimpleNamespace as S
    >>> result = S(turns={"vector-recall": [], "truncate+stable_prefix": [], "mine": []})
    >>> [(line_style(result, label)["color"], line_style(result, label)["dash"]) for label in result.turns]
    [('#7A7A00', 'solid'), ('#111111', 'dot'), ('#B5179E', 'solid')]
    """
    color = strategy_color(label, list(result.turns))
    return {"color": color, "dash": "dot" if label.endswith("+stable_prefix") else "solid", "width": 2}


def lines_legend_html(result: Replay) -> str:
    """One legend for the four line charts (each repeated eight names, taller than its plot at
    1280 pixels, and plotly's legend under a plot sat on it after the window was widened)."""
    borders = {"solid": "solid", "dot": "dotted"}
    items = []
    for label in result.turns:  # a line drawn as a border: st.html keeps no SVG
        style = line_style(result, label)
        swatch = (f'<span class="line-swatch" style="display:inline-block;width:24px;height:0;vertical-align:middle;'
                  f'border-top:3px {borders[style["dash"]]} {style["color"]};margin:0 0.3em 0 1em"></span>')
        items.append(f'<span style="white-space:nowrap">{swatch}{html.escape(label)}</span> ')
    return ('<div class="contextfit-lines-legend" style="font-size:0.85rem;margin:0 0 0.25rem -1em;line-height:1.8">'
            + "".join(items) + "</div>")


def lines_figure(result: Replay, metric: str, large: bool = False) -> go.Figure:
    """One line per strategy over the turns: ``prompt``, ``cost``, ``cache`` or ``retention``
    (retention marks with an × the turns where a fact was lost, the facts in the hover).

    The hover is unified: a turn's box lists every strategy, so lines that lie on each other
    (strategies that sent the same) are all named. The legend is :func:`lines_legend_html`.
    ``large``: for presentation mode (page CSS cannot enlarge a plotly chart's text)."""
    title, unit = _TITLES[metric]
    data: list[dict[str, Any]] = []
    for label in result.turns:
        values = series(result, label)
        style = line_style(result, label)
        name = html.escape(label)
        data.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": values["turn"],
                     "y": values[metric], "line": style,
                     "marker": {"size": 7 if large else 5, "symbol": strategy_symbol(label, list(result.turns))},
                     "hovertemplate": f"{name}: {_HOVER[metric]}<extra></extra>"})
        if metric == "retention":
            lost = [(turn, value, names) for turn, value, names in zip(values["turn"], values["retention"], values["lost"])
                    if names]
            if lost:
                data.append({"type": "scatter", "mode": "markers", "name": name + " lost",
                             "x": [t for t, _, _ in lost], "y": [v for _, v, _ in lost],
                             "marker": {"symbol": "x", "size": 9, "color": style["color"]},
                             "text": [html.escape(", ".join(names))[:200] for _, _, names in lost],
                             "hovertemplate": f"× {name} lost %{{text}}<extra></extra>"})
    yaxis: dict[str, Any] = {"title": {"text": unit}}
    if metric in ("cache", "retention"):
        yaxis.update(range=[-0.02, 1.05], tickformat=".0%")
    # whole turns, with separators: two turns were ticked "1, 1.5, 2" and a long chat's last "1000"
    xaxis: dict[str, Any] = {"title": {"text": "turn"}, "tickformat": ",d", "hoverformat": ",d"}
    if len(result.requests) <= 10:
        xaxis["dtick"] = 1
    if large:  # each axis's own sizes: the dashboard's chart theme sets them over the layout's font
        for axis in (xaxis, yaxis):
            axis.update(tickfont={"size": 15})
            axis["title"] = {**axis["title"], "font": {"size": 16}}
    figure = _figure(data, legend=False, xaxis=xaxis, yaxis=yaxis, height=440 if large else 320, hovermode="x unified",
                     title={"text": title, "font": {"size": 20 if large else 14}, "x": 0, "y": 0.98},
                     margin={"l": 10, "r": 10, "t": 44 if large else 36, "b": 10},
                     **({"font": {"family": "Inter, system-ui, sans-serif", "size": 16},
                         "hoverlabel": {"font": {"size": 16}, "align": "left", "namelength": -1}} if large else {}))
    if not any(value is not None for trace in data for value in trace["y"]):  # an empty plot says why
        if all(totals.failed_turns == totals.turns for totals in result.totals.values()):
            empty = _NOTHING_FITTED
        elif metric == "retention" and result.fact_rule != DECLARED:
            empty = _EMPTY_UNDER_THE_RULE
        else:
            empty = _EMPTY.get(metric, ("Nothing to draw.",))
        lines = [html.escape(line.format(model=result.model)) for line in empty]
        figure.add_annotation(text="<br>".join(lines), xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                              font={"size": 13})
        figure.update_xaxes(visible=False)  # axes of nothing (-1 to 4 "US dollars") read as data
        figure.update_yaxes(visible=False)
    return figure


#: What an empty chart says instead, a line each (two columns of a 1280-pixel window are narrow).
_EMPTY = {
    "cost": ("No prices for {model}", "in the catalog: no cost."),
    "retention": ("No fact in force at any turn.",),
}


#: Any chart when no strategy could fit any turn (it said "No prices for gpt-4o" beside a price source).
_NOTHING_FITTED = ("No strategy could fit any turn:", "nothing was sent (see the notes above).")


#: The empty retention chart under the default entity rule: no entity recurred (a chat in a script
#: without capitals, say), so the user's own facts are the way on.
_EMPTY_UNDER_THE_RULE = ("No fact in force at any turn:", "type the facts to follow",
                         "in the sidebar (Must-survive facts).")
