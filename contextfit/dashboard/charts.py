"""Plotly figures of prompt plans, for the dashboard (never imports streamlit).

One colour per fate in every chart (colour-blind safe, Okabe–Ito):
protected blue, kept green, summarized orange, compressed purple, excluded
grey; the response reserve is a hatched vermilion band. Within a fate a
*shade* says more, the same way in every chart (:data:`SHADES`): the summary
that is sent is solid orange, the blocks folded into it pale and striped;
exclusions stay grey but over budget, low relevance, manual and late overflow
differ by shade and pattern. A block is named by its id everywhere
(:func:`block_keys`). Every number goes into the figures as plain lists, and
every piece of user text is HTML-escaped before it reaches a hover label:
pasted markup is shown, never interpreted.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from ..fitting import results as reasons
from ..pipeline.plan import PlanBlock, PromptPlan, fate_of
from .bands import band_text, tokens_text

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
#: The response reserve's fill: the reserve colour, light, hatched in it.
RESERVE_FILL = "rgba(213,94,0,0.25)"
#: Past this many blocks, block charts and the fate matrix bin neighbouring blocks.
DENSE_THRESHOLD = 300
_FONT = {"family": "Inter, system-ui, sans-serif", "size": 12}
#: Plotly's options for every chart the dashboard and the report draw: no mode bar.
PLOTLY_CONFIG = {"displayModeBar": False, "displaylogo": False, "responsive": True}


@dataclass(frozen=True, slots=True)
class Shade:
    """How one shade is drawn: its fate, legend label, colour and bar pattern ("" for solid)."""

    fate: str
    label: str
    color: str
    pattern: str = ""


#: The shade of a tool result sent cleared (a placeholder in its place), and of another block sent shortened.
CLEARED = "cleared"
SHORTENED = "shortened"
#: Shades in legend order; each belongs to one fate and keeps that fate's hue.
SHADES: dict[str, Shade] = {
    "protected": Shade("protected", "protected", FATE_COLORS["protected"]),
    "kept": Shade("kept", "kept", FATE_COLORS["kept"]),
    reasons.SUMMARY: Shade("summarized", "summary (sent)", FATE_COLORS["summarized"]),
    reasons.SUMMARIZED: Shade("summarized", "folded into the summary", "#F6DDA6", "|"),
    reasons.COMPRESSED: Shade("compressed", "compressed", FATE_COLORS["compressed"]),
    # the originals of compressed blocks (excluded with reason "summarized", yet folded into no summary)
    CLEARED: Shade("compressed", "cleared (placeholder sent)", "#EDC9DD", "/"),
    SHORTENED: Shade("compressed", "shortened (a shorter copy sent)", "#F3DCE8", "/"),
    reasons.OVER_BUDGET: Shade("excluded", "excluded: over budget", FATE_COLORS["excluded"]),
    reasons.LOW_RELEVANCE: Shade("excluded", "excluded: low relevance", "#CFCFCF", "."),
    reasons.MANUAL: Shade("excluded", "excluded: manual", "#8E8E8E", "x"),
    reasons.LATE_OVERFLOW: Shade("excluded", "excluded: late overflow", "#A3A3A3", "-"),
    reasons.NOT_SENT: Shade("excluded", "excluded: not sent (the provider drops it)", "#DADADA", "\\"),
    "excluded": Shade("excluded", "excluded: other", "#C9C9C9", "+"),
}


def shade_of(reason: str) -> str:
    """The shade of a block with this reason (a key of :data:`SHADES`).

    >>> shade_of("summary"), shade_of("summarized"), shade_of("pinned"), shade_of("intercepted")
    ('summary', 'summarized', 'protected', 'excluded')
    """
    if reason in SHADES:
        return reason
    return fate_of(reason)


def plan_shades(plan: PromptPlan) -> list[str]:
    """The shade of each of ``plan``'s blocks, in order: :func:`shade_of` its reason, but an original
    that a compressed block stands for (reason ``summarized``: its content went into an added block)
    reads :data:`CLEARED` for a tool result, :data:`SHORTENED` otherwise, not "folded into the summary".

    >>> from contextfit import plan_prompt
    >>> chat = [{"role": "user", "content": "Look it up."},
    ...         {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
    ...          "function": {"name": "lookup", "arguments": "{}"}}]},
    ...         {"role": "tool", "tool_call_id": "c1", "content": "result " * 300},
    ...         {"role": "user", "content": "Thanks."}]
    >>> plan = plan_prompt(chat, model="gpt-4o", context_strategy="clear-tool-results", keep=0,
    ...                    context_limit=200, response_reserve=50)
    >>> [(block.id, shade) for block, shade in zip(plan.blocks, plan_shades(plan)) if block.id == "m2"]
    [('m2', 'compressed'), ('m2', 'cleared')]
    """
    inputs = [block for block in plan.blocks if block.origin == "input"]
    replaced: set[int] = set()
    for block in plan.blocks:
        if block.origin != "input" and block.included and block.reason == reasons.COMPRESSED:
            replaced.update(id(inputs[source]) for source in block.sources if 0 <= source < len(inputs))
    return [(CLEARED if block.role in ("tool", "function") or "tool_result" in str(block.message.get("content"))
             else SHORTENED) if id(block) in replaced and block.reason == reasons.SUMMARIZED else shade_of(block.reason)
            for block in plan.blocks]


def _marker(shade: str) -> dict[str, Any]:
    style = SHADES[shade]
    marker: dict[str, Any] = {"color": style.color}
    if style.pattern:
        marker["pattern"] = {"shape": style.pattern, "fgcolor": "#555555", "bgcolor": style.color, "fillmode": "replace",
                             "size": 6, "solidity": 0.3}
    return marker


def block_keys(plan: PromptPlan) -> list[str]:
    """The one name of each block on every chart and table: its id, made
    unique within a plan (a repeated id gets ``#2``, ``#3``...)."""
    seen: dict[str, int] = {}
    keys = []
    for block in plan.blocks:
        count = seen[block.id] = seen.get(block.id, 0) + 1
        keys.append(block.id if count == 1 else f"{block.id}#{count}")
    return keys


def preview(text: str, width: int = 120, line: int = 48) -> str:
    """Escaped text for a hover label, at most ``width`` characters in lines of
    about ``line`` (a hover label wider than a narrow column is cut off).

    >>> preview("<b>bold</b> & more")
    '&lt;b&gt;bold&lt;/b&gt; &amp; more'
    >>> preview("word " * 20, width=40, line=20)
    'word word word word<br>word word word word…'
    """
    flat = " ".join(str(text).split())
    cut = len(flat) > width
    if cut:
        flat = flat[: width - 1].rstrip()
    lines, current = [], ""
    for word in flat.split(" "):
        if current and len(current) + 1 + len(word) > line:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    lines.append(current)
    return "<br>".join(html.escape(part) for part in lines) + ("…" if cut else "")


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
            "hoverlabel": {"align": "left", "namelength": -1, "font": {"size": 12}},
            **layout,
        },
    )


_CSS_PATTERNS = {
    "/": "repeating-linear-gradient(-45deg,{fg} 0 1px,transparent 1px 4px)",
    "\\": "repeating-linear-gradient(45deg,{fg} 0 1px,transparent 1px 4px)",
    "|": "repeating-linear-gradient(90deg,{fg} 0 1px,transparent 1px 4px)",
    "-": "repeating-linear-gradient(0deg,{fg} 0 1px,transparent 1px 4px)",
    ".": "radial-gradient({fg} 0.8px,transparent 1px) 0 0/4px 4px",
    "x": "repeating-linear-gradient(45deg,{fg} 0 1px,transparent 1px 4px),"
         "repeating-linear-gradient(-45deg,{fg} 0 1px,transparent 1px 4px)",
    "+": "repeating-linear-gradient(0deg,{fg} 0 1px,transparent 1px 4px),"
         "repeating-linear-gradient(90deg,{fg} 0 1px,transparent 1px 4px)",
}


def css_pattern(pattern: str, foreground: str = "#555555") -> str:
    """A bar pattern of :data:`SHADES` ("" for solid) as CSS background layers, each followed by a comma
    (put the colour after it), so HTML swatches and bars look like the plotly ones.

    >>> css_pattern("")
    ''
    >>> css_pattern("|", "#000")
    'repeating-linear-gradient(90deg,#000 0 1px,transparent 1px 4px),'
    """
    return _CSS_PATTERNS[pattern].format(fg=foreground) + "," if pattern else ""


def reserve_style() -> tuple[str, str]:
    """A reserve stretch's CSS: its background and the outline that goes with it (every bar draws it so)."""
    return css_pattern("/", RESERVE_COLOR) + RESERVE_FILL, f";box-shadow:inset 0 0 0 1px {RESERVE_COLOR}"


def swatch(label: str, color: str, border: str, pattern: str = "", pattern_color: str = "#555555") -> str:
    """One legend item: a square of ``color`` (``pattern`` over it in ``pattern_color``) and its ``label``
    (escaped by the caller), never broken inside: a wrapped line starts with a swatch, in line with the
    page's text.

    >>> swatch("free budget", "#EDEDED", "#C8C8C8").count("#EDEDED")
    1
    """
    return ('<span style="white-space:nowrap"><span style="display:inline-block;width:0.9em;height:0.9em;'
            f'background:{css_pattern(pattern, pattern_color)}{color};border:1px solid {border};margin:0 0.3em 0 1em;'
            f'vertical-align:middle"></span>{label}</span> ')


def legend_html(only: Iterable[str] | None = None, window: bool = True) -> str:
    """The shades (colour and pattern) as one line of HTML (static: no user text), for a page-level legend;
    ``only``: the shades to list (those the charts below use), in legend order; ``window``: the free
    budget and the response reserve too (a budget bar shows them, the fate matrix does not)."""
    wanted = None if only is None else set(only)
    items = [swatch(style.label, style.color, style.color, style.pattern) for shade, style in SHADES.items()
             if wanted is None or shade in wanted]
    if window:
        items.append(swatch("free budget", FREE_COLOR, "#C8C8C8"))
        items.append(swatch("response reserve", RESERVE_FILL, RESERVE_COLOR, "/"))
    return ('<div class="contextfit-legend" style="font-size:0.85rem;margin:-0.5rem 0 0.5rem -1em;line-height:1.8">'
            + "".join(items) + "</div>")


def _integer_ticks(top: float) -> dict[str, Any]:
    """Axis settings that never show a half-step tick (a 3-token axis gets 0, 1, 2, 3)."""
    if top <= 10:
        return {"tickmode": "linear", "tick0": 0, "dtick": 1, "tickformat": ",d"}
    return {"tickformat": ",d"}


def prompt_scale(plans: Sequence[PromptPlan]) -> int:
    """The token axis shared by side-by-side budget bars: the longest of their
    "sent" and "not sent" rows, so none is cut off and all compare."""
    top = 1
    for plan in plans:
        top = max(top, plan.prompt_tokens, sum(block.tokens or 0 for block in plan.blocks if not block.included))
    return top


@dataclass(frozen=True, slots=True)
class BudgetSegment:
    """One stretch of a budget bar: ``row`` "sent" or "not sent", its shade and kind, and its tokens;
    ``count`` says them in words: "12 tokens", or an approximate profile's band
    ("about E tokens (approximate, up to N)")."""

    row: str
    shade: str
    kind: str
    tokens: int
    count: str


@dataclass(frozen=True, slots=True)
class BudgetView:
    """What a budget bar shows (:func:`budget_view`), drawn by :func:`budget_figure` (plotly, for the
    report, the audit and replay pages) and by :func:`contextfit.dashboard.budget_bar.budget_html` (Compare).

    ``gauge`` is the window row: (name, percent of the context limit, tokens) for the prompt, the free
    budget and the response reserve, together 100 %. ``top`` is the token axis's end, ``used`` the
    prompt's percent of the budget, ``band`` the prompt's exact count or approximate band (plain text).
    """

    segments: tuple[BudgetSegment, ...]
    gauge: tuple[tuple[str, float, int], ...]
    top: int
    budget: int
    budget_in_view: bool
    used: float
    band: str
    approximate: bool = False  # the tokenizer profile's count is an estimate: ``band`` says its range

    @property
    def note(self) -> str:
        """The line above the bar: the prompt's share of the budget (short: a column is narrow)."""
        return f"{self.used:.1f}% of the budget" + ("" if self.budget_in_view else " · zoomed in")


def budget_view(plan: PromptPlan, token_scale: int | None = None) -> BudgetView:
    """The numbers of a budget bar: see :func:`budget_figure`."""
    segments: list[BudgetSegment] = []
    shades = plan_shades(plan)
    sent = _tokens_by(plan.blocks, included=True, shades=shades)
    overhead = plan.prompt_tokens - sum(sent.values())
    if overhead > 0:  # reply priming and message framing belong to no block
        sent[("protected", "chat overhead")] = overhead
    approximate = plan.tokenizer.approximate
    for row, totals in (("sent", sent), ("not sent", _tokens_by(plan.blocks, included=False, shades=shades))):
        estimates = _tokens_by(plan.blocks, included=row == "sent", estimate=True, shades=shades) if approximate else {}
        for (shade, kind), tokens in sorted(totals.items(), key=lambda item: (list(SHADES).index(item[0][0]), item[0][1])):
            segments.append(BudgetSegment(row, shade, kind, tokens, tokens_text(tokens, estimates.get((shade, kind)), approximate)))
    limit = plan.context_limit or 1
    free = max(plan.budget - plan.prompt_tokens, 0)
    gauge = (("prompt", 100 * plan.prompt_tokens / limit, plan.prompt_tokens),
             ("free budget", 100 * free / limit, free),
             ("response reserve", 100 * plan.response_reserve / limit, plan.response_reserve))
    longest = max(plan.prompt_tokens, sum(sent.values()), sum(b.tokens or 0 for b in plan.blocks if not b.included), 1)
    top = max(token_scale or 0, longest)
    budget_in_view = plan.budget <= top * 1.5
    if budget_in_view:
        top = max(top, plan.budget)
    used = 100 * plan.prompt_tokens / plan.budget if plan.budget else 100.0
    return BudgetView(tuple(segments), gauge, top, plan.budget, budget_in_view, used, band_text(plan), approximate)


def budget_figure(plan: PromptPlan, legend: bool = False, token_scale: int | None = None) -> go.Figure:
    """The context window as a % gauge, and the prompt zoomed in, by shade and kind.

    Top row "window" (percent of the context limit): the prompt, the free
    budget and the response reserve, together exactly 100 %, so the whole
    window is always in view. Below, in tokens, zoomed to the prompt (a
    prompt of 2,000 tokens is readable in a 1M window): row "sent" stacks
    what the prompt spends by shade then kind (tool definitions and chat
    overhead included, so it adds up to ``prompt_tokens``); row "not sent"
    what was dropped or folded into a summary. The token axis reaches
    ``token_scale`` (see :func:`prompt_scale`) or this plan's longest row,
    never less: no bar is cut off. A dashed line marks the budget when it is
    within that axis.
    """
    view = budget_view(plan, token_scale)
    traces: list[dict[str, Any]] = []
    shown: set[str] = set()
    approximate = plan.tokenizer.approximate
    band = f"<br>prompt: {html.escape(view.band)}"  # approximate: the point estimate and the upper end shown
    for segment in view.segments:
        label = SHADES[segment.shade].label
        # an approximate count reads as its band: "about E tokens (approximate, up to N)"
        count = html.escape(segment.count) if approximate else "%{x:,} tokens"
        traces.append({
            "type": "bar",
            "y": [segment.row],
            "x": [segment.tokens],
            "orientation": "h",
            "name": label,
            "legendgroup": segment.shade,
            "showlegend": segment.shade not in shown,
            "marker": {**_marker(segment.shade), "line": {"color": "white", "width": 1}},
            "hovertemplate": f"{html.escape(label)} · {html.escape(_kind_label(segment.kind))}: {count}{band}<extra></extra>",
        })
        shown.add(segment.shade)
    markers = {"prompt": {"color": "#4D4D4D"}, "free budget": {"color": FREE_COLOR},
               "response reserve": {"color": "rgba(213,94,0,0.25)", "line": {"color": RESERVE_COLOR, "width": 1},
                                    "pattern": {"shape": "/", "fgcolor": RESERVE_COLOR}}}
    for name, share, tokens in view.gauge:
        count = html.escape(view.band) if name == "prompt" and approximate else "%{customdata:,} tokens"
        traces.append({"type": "bar", "y": ["window"], "x": [share], "orientation": "h", "name": name,
                       "xaxis": "x2", "yaxis": "y2", "marker": markers[name], "showlegend": name != "prompt",
                       "customdata": [tokens],
                       "hovertemplate": f"{name}: {count} (%{{x:.1f}}% of the window)<extra></extra>"})
    top = view.top
    shapes, annotations = [], []
    if view.budget_in_view:
        shapes.append({"type": "line", "xref": "x", "yref": "y domain", "x0": plan.budget, "x1": plan.budget,
                       "y0": 0, "y1": 1, "line": {"color": "#333333", "dash": "dash", "width": 1}})
    # Short: a narrow column's chart is some 200 pixels wide, and the caption above says the rest.
    annotations.append({"x": 0, "y": 1.0, "xref": "paper", "yref": "paper", "showarrow": False,
                        "xanchor": "left", "yanchor": "bottom", "font": {"size": 11}, "text": view.note})
    return _figure(
        traces,
        legend,
        xaxis={"title": None, "range": [0, top * 1.03], "separatethousands": True, **_integer_ticks(top),
               "anchor": "y", "nticks": 2, "tickangle": 0},  # a column is narrow: two labels fit
        yaxis={"categoryorder": "array", "categoryarray": ["not sent", "sent"], "domain": [0, 0.58]},
        xaxis2={**_AXIS, "range": [0, 100], "ticktext": ["0%", "100%"], "anchor": "y2", "showgrid": False,
                "tickvals": [0, 100]},
        yaxis2={**_AXIS, "domain": [0.74, 1], "anchor": "x2"},
        shapes=shapes,
        annotations=annotations,
        barmode="stack",
        height=250 if legend else 200,
        bargap=0.3,
        margin={"l": 10, "r": 20, "t": 28, "b": 10},  # room for the gauge's "100%" label
    )


#: Plain names of block kinds (SillyTavern's prompt itemization, where it has one).
KIND_LABELS = {
    "system": "system prompt", "character": "character", "persona": "persona", "lorebook": "lorebook",
    "memory": "memory", "example": "examples", "tools": "tool definitions", "reasoning": "reasoning",
    "history": "history", "summary": "summary", "chat overhead": "chat overhead",
}


def _kind_label(kind: str) -> str:
    return KIND_LABELS.get(kind, kind)


def _tokens_by(blocks: Sequence[PlanBlock], included: bool, estimate: bool = False,
               shades: Sequence[str] | None = None) -> dict[tuple[str, str], int]:
    """Tokens by (shade, kind) of the blocks sent (or not); ``estimate``: their point estimates;
    ``shades``: each block's (:func:`plan_shades`), else its reason's."""
    totals: dict[tuple[str, str], int] = {}
    for position, block in enumerate(blocks):
        if block.included == included and block.tokens:
            key = (shade_of(block.reason) if shades is None else shades[position], block.kind)
            tokens = block.tokens_estimate if estimate and block.tokens_estimate is not None else block.tokens
            totals[key] = totals.get(key, 0) + tokens
    return totals


def _count_text(tokens: int | None, estimate: int | None, approximate: bool) -> str:
    """A block's count in a hover: ``"12 tokens"``, or its band for an approximate profile."""
    if approximate and tokens is not None:
        return tokens_text(tokens, estimate, True)
    return "not counted" if tokens is None else f"{tokens:,} tokens"


def _hover(key: str, block: PlanBlock, approximate: bool = False, shade: str | None = None) -> str:
    tokens = html.escape(_count_text(block.tokens, block.tokens_estimate, approximate))
    label = SHADES[shade or shade_of(block.reason)].label
    return (
        f"<b>{html.escape(key)}</b> · {html.escape(block.role or '—')} · {html.escape(_kind_label(block.kind))}<br>"
        f"{tokens} · {html.escape(label)} ({html.escape(block.reason)})<br>"
        f"{preview(block.content)}"
    )


def block_scale(plans: Sequence[PromptPlan], dense_threshold: int = DENSE_THRESHOLD) -> int:
    """The token axis shared by side-by-side block charts: their tallest bar."""
    top = 1
    for plan in plans:
        if len(plan.blocks) <= dense_threshold:
            top = max(top, max((block.tokens or 0 for block in plan.blocks), default=0))
        else:
            size = math.ceil(len(plan.blocks) / dense_threshold)
            for start in range(0, len(plan.blocks), size):
                totals: dict[str, int] = {}
                for block in plan.blocks[start : start + size]:
                    shade = shade_of(block.reason)
                    totals[shade] = totals.get(shade, 0) + (block.tokens or 0)
                top = max(top, sum(totals.values()))
    return top


@dataclass(frozen=True, slots=True)
class BlockBar:
    """One bar of a block chart, or one shade's part of a binned bar: its centre ``x`` and ``width`` in
    prompt-order units, ``base`` (the tokens stacked below it in its bin), ``tokens``, ``shade`` and
    ``hover`` (HTML, every piece of user text escaped)."""

    x: float
    width: float
    base: int
    tokens: int
    shade: str
    hover: str


@dataclass(frozen=True, slots=True)
class BlocksView:
    """What a block chart shows (:func:`blocks_view`), drawn by :func:`blocks_figure` (plotly, for the
    report and the audit page) and by :func:`contextfit.dashboard.block_chart.blocks_html` (Compare).

    ``bars`` in :data:`SHADES` order, then prompt order; the x axis spans ``blocks`` blocks (from -0.5
    to ``blocks - 0.5``); ``per_bar`` blocks make one bar (1 unless binned); ``top`` is the tallest bar
    or the shared scale, never less.
    """

    bars: tuple[BlockBar, ...]
    blocks: int
    per_bar: int
    top: int

    @property
    def x_title(self) -> str:
        return "prompt order" if self.per_bar == 1 else f"prompt order · {self.per_bar} blocks per bar"


def blocks_view(plan: PromptPlan, dense_threshold: int = DENSE_THRESHOLD, token_scale: int | None = None) -> BlocksView:
    """The bars of a block chart: see :func:`blocks_figure`."""
    blocks = plan.blocks
    approximate = plan.tokenizer.approximate
    keys = block_keys(plan)
    if len(blocks) <= dense_threshold:
        order = {shade: number for number, shade in enumerate(SHADES)}
        shades = plan_shades(plan)
        # SHADES order, then prompt order (a stable sort): the figure's traces, one per shade
        bars = [BlockBar(block.index, 1, 0, block.tokens or 0, shade, _hover(key, block, approximate, shade))
                for shade, key, block in sorted(zip(shades, keys, blocks), key=lambda item: order[item[0]])]
        top = max(token_scale or 0, max((block.tokens or 0 for block in blocks), default=0), 1)
        return BlocksView(tuple(bars), len(blocks), 1, top)
    size = math.ceil(len(blocks) / dense_threshold)
    bins = math.ceil(len(blocks) / size)
    totals = {shade: [0] * bins for shade in SHADES}
    estimates = {shade: [0] * bins for shade in SHADES}
    counts = {shade: [0] * bins for shade in SHADES}
    for position, (block, shade) in enumerate(zip(blocks, plan_shades(plan))):  # one pass: tokens and blocks by shade
        totals[shade][position // size] += block.tokens or 0
        estimates[shade][position // size] += (block.tokens or 0) if block.tokens_estimate is None else block.tokens_estimate
        counts[shade][position // size] += 1
    bars, base = [], [0] * bins  # stacked in SHADES order within a bin
    for shade in SHADES:
        label = SHADES[shade].label
        for b in range(bins):
            if counts[shade][b]:
                hover = (f"blocks {html.escape(keys[b * size])} – {html.escape(keys[min((b + 1) * size, len(blocks)) - 1])}<br>"
                         f"{counts[shade][b]} {html.escape(label)}: "
                         f"{html.escape(_count_text(totals[shade][b], estimates[shade][b], approximate))}")
                start, end = b * size, min((b + 1) * size, len(blocks))  # the last bin may hold fewer
                bars.append(BlockBar((start + end) / 2 - 0.5, end - start, base[b], totals[shade][b], shade, hover))
                base[b] += totals[shade][b]
    top = max(token_scale or 0, max(base, default=0), 1)
    return BlocksView(tuple(bars), len(blocks), size, top)


def blocks_figure(plan: PromptPlan, dense_threshold: int = DENSE_THRESHOLD, legend: bool = False,
                  token_scale: int | None = None) -> go.Figure:
    """Tokens per block in prompt order, coloured by shade, with the block's id in the hover.

    Past ``dense_threshold`` blocks, neighbouring blocks are binned so the
    chart keeps at most that many bars (stacked by shade within a bin).
    ``token_scale`` (see :func:`block_scale`) gives side-by-side charts one
    y-axis; the axis never ends below this plan's tallest bar.
    """
    view = blocks_view(plan, dense_threshold, token_scale)
    binned = view.per_bar > 1
    traces: list[dict[str, Any]] = []
    for shade in SHADES:
        chosen = [bar for bar in view.bars if bar.shade == shade]
        if chosen:
            traces.append({
                "type": "bar",
                "x": [bar.x for bar in chosen],
                "y": [bar.tokens for bar in chosen],
                **({"width": [bar.width for bar in chosen]} if binned else {}),
                "name": SHADES[shade].label,
                "marker": _marker(shade),
                "hovertext": [bar.hover for bar in chosen],
                "hoverinfo": "text",
            })
    top = view.top
    if binned:
        xaxis = {"title": view.x_title, "range": [-0.5, view.blocks - 0.5], "tickformat": ",d"}
    else:
        ticks = {"tickmode": "linear", "tick0": 0, "dtick": 1} if view.blocks <= 12 else {"tickformat": ",d"}
        xaxis = {"title": view.x_title, "range": [-0.5, max(view.blocks, 1) - 0.5], **ticks}
    return _figure(traces, legend, xaxis=xaxis, yaxis={"title": "tokens", "range": [0, top * 1.05], **_integer_ticks(top)},
                   barmode="stack" if binned else "overlay", height=260, bargap=0.05 if binned else 0.15,
                   **_fixed_margins(top, legend))


def _fixed_margins(top: float, legend: bool) -> dict[str, Any]:
    """Margins that fit a block chart's axis labels, computed here rather than by plotly.

    Plotly's ``automargin`` measures the labels and draws the chart again: half
    of a block chart's drawing time, paid by the browser for each side-by-side
    chart on every refit. The y-axis labels are at most ``f"{top:,}"`` wide.
    A legend (above the plot) keeps plotly's automatic margins.

    >>> _fixed_margins(950, False)["margin"]["l"]  # "998" (the axis ends 5 % above the top)
    58
    >>> _fixed_margins(950, True)
    {}
    """
    if legend:
        return {}
    return {"margin": {"l": 34 + 8 * len(f"{int(math.ceil(top * 1.05)):,}"), "r": 10, "t": 24, "b": 46},
            "xaxis_automargin": False, "yaxis_automargin": False}


def _matrix(plans: Mapping[str, PromptPlan]) -> tuple[list[str], list[str], list[list[PlanBlock | None]]]:
    """(strategies, columns, blocks per strategy and column): one row per strategy, one column per block.

    Columns follow prompt order (the plans differ only by blocks a strategy
    inserted, such as a summary); a block a strategy does not have is ``None``.
    """
    keyed = {name: block_keys(plan) for name, plan in plans.items()}
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
        blocks = dict(zip(keyed[name], plan.blocks))
        rows.append([blocks.get(key) for key in columns])
    return list(plans), columns, rows


@dataclass(frozen=True, slots=True)
class MatrixView:
    """What a fate matrix shows (:func:`fate_matrix_view`), drawn as HTML by
    :func:`contextfit.dashboard.fate_grid.fate_html` (Compare and the report): one row per strategy in
    ``names``, one cell per block (or per ``per_cell`` neighbouring blocks) with its shade (the most
    common one in a bin; ``None``: not in this plan) and its hover text (HTML, user text escaped)."""

    names: tuple[str, ...]
    shades: tuple[tuple[str | None, ...], ...]
    hovers: tuple[tuple[str, ...], ...]
    per_cell: int
    blocks: int = 0  # the columns before binning: every block any plan has

    @property
    def x_title(self) -> str:
        return "block, in prompt order" if self.per_cell == 1 else f"block, in prompt order ({self.per_cell} blocks per cell)"


def fate_matrix_view(plans: Mapping[str, PromptPlan], dense_threshold: int = DENSE_THRESHOLD) -> MatrixView:
    """The cells of a fate matrix (:class:`MatrixView`): strategies × blocks, each cell shaded by the block's fate."""
    names, columns, rows = _matrix(plans)
    order = list(SHADES)
    size = max(1, math.ceil(len(columns) / dense_threshold))
    shaded = {id(block): shade for plan in plans.values() for block, shade in zip(plan.blocks, plan_shades(plan))}
    shades, hovers = [], []
    for name, row in zip(names, rows):
        shade_row, text_row = [], []
        for start in range(0, len(columns), size):
            cells = row[start : start + size]
            present = [shaded[id(block)] for block in cells if block is not None]
            shade = max(order, key=present.count) if present else None
            shade_row.append(shade)
            if size == 1:
                block = cells[0]
                what = "not in this plan" if block is None else f"{SHADES[shade].label} ({html.escape(block.reason)})"
                text_row.append(f"{html.escape(name)} · <b>{html.escape(columns[start])}</b>: {what}")
            else:
                counts = ", ".join(f"{present.count(s)} {SHADES[s].label}" for s in order if present.count(s))
                last = columns[min(start + size, len(columns)) - 1]
                text_row.append(f"{html.escape(name)} · blocks {html.escape(columns[start])} – {html.escape(last)}:<br>{counts}")
        shades.append(tuple(shade_row))
        hovers.append(tuple(text_row))
    return MatrixView(tuple(names), tuple(shades), tuple(hovers), size, len(columns))
