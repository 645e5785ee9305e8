"""The glanceable layer: a strategy's context window at a glance, coloured by what fills it.

One headline — the prompt's tokens against the window, compact
("112K of 128K tokens, 88%") — and one bar across the whole context window,
coloured **by category**: system prompt, tool definitions, character,
persona, lore, memory, examples, history, summary, reasoning and the chat
framing no block holds, then the free budget and the response reserve — as
SillyTavern's prompt itemization and Claude Code's ``/context`` show it. The
category colours are none of the fate colours (those stay on the block
chart and the fate matrix), so a room never reads "history" as "kept".

Every piece of text is escaped; the stretches carry their tokens in
``data-tokens`` and their category in ``data-category``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..amounts import percent, window_text
from ..pipeline.plan import PromptPlan
from .budget_bar import stretch_html
from .charts import FREE_COLOR, RESERVE_COLOR, RESERVE_FILL, reserve_style, swatch

#: Block kinds by category, in itemization order, with the colour of each. None is a fate colour
#: (``charts.FATE_COLORS``): a muted palette after Paul Tol's, safe for colour-blind readers.
CATEGORIES: dict[str, tuple[str, str]] = {
    "system": ("system", "#332288"),
    "tools": ("tool definitions", "#88CCEE"),
    "character": ("character", "#882255"),
    "persona": ("persona", "#AA4499"),
    "lorebook": ("lore", "#999933"),
    "memory": ("memory", "#DDCC77"),
    "example": ("examples", "#8C6D31"),
    "history": ("history", "#6F7FA6"),
    "summary": ("summary", "#CC6677"),
    "reasoning": ("reasoning", "#1B9E9E"),
}
#: A kind none of :data:`CATEGORIES` names (a plugin's) and the framing no block holds.
OTHER = ("other", "#7A5C99")
FRAMING = ("chat framing", "#3A3A3A")
FREE = "free budget"
RESERVE = "response reserve"

#: Page CSS for the bars (static: no user text goes into it; the hover labels are the block chart's).
CSS = """<style>
.contextfit-window { color: #333; margin: 0.1rem 0 0.5rem; }
.contextfit-window .cfw-head { font-size: 1.15rem; font-weight: 600; line-height: 1.3; }
.contextfit-window .cfw-track { position: relative; display: flex; height: 22px; margin-top: 4px; background: #FAFAFA;
  box-shadow: inset 0 0 0 1px #E4E4E4; }
.contextfit-window .cfb-part { position: relative; height: 100%; box-sizing: border-box; flex: none; }
.contextfit-window .cfb-part:hover { box-shadow: inset 0 0 0 2px #333; z-index: 5; }
.contextfit-window .cfb-part:hover > .cfk-tip { display: block; top: calc(100% + 6px); }
.contextfit-window .cfk-from-left > .cfk-tip { left: 0; }
.contextfit-window .cfk-from-right > .cfk-tip { right: 0; }
.contextfit-category-legend { font-size: 0.85rem; line-height: 1.8; margin: -0.3rem 0 0.4rem -1em; }
</style>"""


@dataclass(frozen=True, slots=True)
class Stretch:
    """One stretch of the window: its category, colour, tokens, and share of the context limit (0–1)."""

    category: str
    color: str
    tokens: int
    share: float


@dataclass(frozen=True, slots=True)
class WindowView:
    """What one strategy's bar shows: its headline and the stretches, together the whole window."""

    headline: str
    stretches: tuple[Stretch, ...]
    context_limit: int


def window_view(plan: PromptPlan) -> WindowView:
    """The window of ``plan`` by category: what it sends by kind of block (the framing no block
    holds its own stretch, so they add up to the prompt), the free budget and the reserve.

    >>> from contextfit import plan_prompt
    >>> plan = plan_prompt([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    ...                    model="gpt-4o", context_limit=1000, response_reserve=200)
    >>> view = window_view(plan)
    >>> view.headline, [(s.category, s.tokens) for s in view.stretches]
    ('15 of 1.0K tokens, 2%', [('system', 7), ('history', 5), ('chat framing', 3), ('free budget', 785), ('response reserve', 200)])
    >>> sum(s.tokens for s in view.stretches) == plan.context_limit
    True
    """
    sent: dict[str, int] = {}
    for block in plan.blocks:
        if block.included and block.tokens:
            sent[block.kind] = sent.get(block.kind, 0) + block.tokens
    named = [(CATEGORIES[kind], sent[kind]) for kind in CATEGORIES if kind in sent]
    others = sum(tokens for kind, tokens in sent.items() if kind not in CATEGORIES)
    framing = plan.prompt_tokens - sum(sent.values())
    parts = named + ([(OTHER, others)] if others else []) + ([(FRAMING, framing)] if framing > 0 else [])
    free = max(plan.budget - plan.prompt_tokens, 0)
    parts += [((FREE, FREE_COLOR), free), ((RESERVE, RESERVE_COLOR), plan.response_reserve)]
    limit = max(plan.context_limit, 1)
    stretches = tuple(Stretch(name, color, tokens, tokens / limit) for (name, color), tokens in parts if tokens > 0)
    return WindowView(window_text(plan.prompt_tokens, plan.context_limit), stretches, plan.context_limit)


def window_html(plan: PromptPlan) -> str:
    """The headline and the bar of ``plan``, as HTML (with :data:`CSS` on the page)."""
    view = window_view(plan)
    parts, start = [], 0.0
    for stretch in view.stretches:
        width = 100 * stretch.share
        if stretch.category == RESERVE:
            background, extra = reserve_style()
        else:
            background, extra = stretch.color, ""
        label = f"{stretch.category}: {stretch.tokens:,} tokens ({percent(stretch.share, 1)} of the window)"
        parts.append(stretch_html("cfb-part", width, background, label, extra,
                                  f' data-category="{html.escape(stretch.category)}" data-tokens="{stretch.tokens}"',
                                  start))
        start += width
    return (f'<div class="contextfit-window" data-strategy="{html.escape(plan.strategy or "")}">'
            f'<div class="cfw-head">{html.escape(view.headline)}</div>'
            f'<div class="cfw-track" role="group" aria-label="the context window by category">{"".join(parts)}</div></div>')


def legend_html(plans: Iterable[PromptPlan]) -> str:
    """One line naming the categories the bars of ``plans`` show, in their colours (static text only)."""
    present = categories_of(list(plans))
    order = [name for name, _ in CATEGORIES.values()] + [OTHER[0], FRAMING[0], FREE, RESERVE]
    colors = {name: color for name, color in [*CATEGORIES.values(), OTHER, FRAMING]} | {FREE: FREE_COLOR}
    items = []
    for name in sorted(present, key=order.index):
        if name == RESERVE:
            items.append(swatch(html.escape(name), RESERVE_FILL, RESERVE_COLOR, "/", RESERVE_COLOR))
        else:
            items.append(swatch(html.escape(name), colors[name], "#C8C8C8" if name == FREE else colors[name]))
    return f'<div class="contextfit-category-legend">{"".join(items)}</div>'


def categories_of(plans: Sequence[PromptPlan]) -> list[str]:
    """The categories the bars of ``plans`` show, each once, in the order they first appear."""
    present: list[str] = []
    for plan in plans:
        present += [s.category for s in window_view(plan).stretches if s.category not in present]
    return present
