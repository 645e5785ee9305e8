"""When strategies send the same prompt, why — and "Squeeze", the limit at which they stop.

Side by side, two identical columns read as a fault. :func:`alike` groups the
strategies whose plans send the same blocks and says, per strategy, why it
did nothing of its own here: no lore or memory to rank, nothing marked by
hand, no tool results to clear (or no more than the newest it keeps),
nothing dropped to summarize or to put in a ledger.

:func:`squeeze` finds a smaller window at which the strategies have work to
do: a budget under which part of what may be dropped no longer fits, with
the response reserve scaled with the limit (a 16,384-token reserve stays
out of a 2,600-token window), lowered step by step until at least two
strategies send different prompts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..fitting import results
from ..fitting.strategies.clear_tool_results import DEFAULT_KEEP  # the results it keeps whole by default
from ..inputs import messages as msg
from ..pipeline.plan import PromptPlan
from ..replays.losses import losses

#: The shares of what may be dropped that "Squeeze" tries to keep, in turn.
SQUEEZE_SHARES = (0.75, 0.5, 0.3, 0.15)
#: The share of the window the scaled reserve takes: the current one's, within these bounds (a reserve of
#: 400 tokens in a 128,000-token window would scale to a 5-token reserve, too small for any reply).
LEAST_RESERVE_SHARE, MOST_RESERVE_SHARE = 0.125, 0.25


def sent_signature(plan: PromptPlan) -> tuple:
    """What a plan sends, for comparing plans: each sent block's id and text, in order."""
    return tuple((block.id, block.content) for block in plan.blocks if block.included)


def _differ(plans: Sequence[PromptPlan]) -> bool:
    return len({sent_signature(plan) for plan in plans}) > 1


@dataclass(frozen=True, slots=True)
class Alike:
    """Strategies sending one prompt: the first of them (in the page's order), the others, and each one's reason."""

    first: str
    others: tuple[str, ...]
    reasons: Mapping[str, str]


def alike(plans: Mapping[str, PromptPlan]) -> list[Alike]:
    """The groups of strategies (fitted plans, in the page's order) that send the same prompt, each
    strategy after the first with why it did nothing of its own."""
    groups: dict[tuple, list[str]] = {}
    for name, plan in plans.items():
        groups.setdefault(sent_signature(plan), []).append(name)
    return [Alike(names[0], tuple(names[1:]), {name: reason(name, plans[name]) for name in names[1:]})
            for names in groups.values() if len(names) > 1]


def reason(strategy: str, plan: PromptPlan) -> str:
    """Why ``strategy`` did nothing of its own in ``plan``, in words (a plugin: that it sends the same prompt).

    >>> from contextfit import plan_prompt
    >>> chat = [{"role": "user", "content": "hello " * 40}, {"role": "assistant", "content": "hi " * 40},
    ...         {"role": "user", "content": "And now?"}]
    >>> plan = plan_prompt(chat, model="gpt-4o", context_limit=120, response_reserve=20, context_strategy="manual")
    >>> reason("manual", plan), reason("vector-recall", plan), reason("clear-tool-results", plan)
    ('nothing is marked by hand for exclusion', 'no lore or memory to rank', 'no tool results to clear')
    """
    inputs = [block for block in plan.blocks if block.origin == "input"]
    dropped = any(not block.included for block in plan.blocks)
    if strategy == "vector-recall":
        ranked = [block for block in inputs if block.kind in (msg.LOREBOOK, msg.MEMORY) and block.fate != "protected"]
        if not ranked:
            return "no lore or memory to rank"
        if all(block.included for block in ranked):
            return "all of its lore and memory fits"
    elif strategy == "manual":
        if not any(msg.meta_of(block.message).get("manualExcluded") for block in inputs):
            return "nothing is marked by hand for exclusion"
    elif strategy == "clear-tool-results":
        found = sum(1 for block in inputs if msg.link_ids(block.message)[1])
        if not found:
            return "no tool results to clear"
        if found <= DEFAULT_KEEP:
            return f"{_count(found, 'tool result')}, within the newest {DEFAULT_KEEP} it keeps whole"
    elif strategy in ("summarize", "fact-ledger"):
        what = "summarize" if strategy == "summarize" else "put in a ledger"
        if not dropped:
            return f"nothing is dropped, so nothing to {what}"
        if (skipped := _skipped(plan)) is not None:
            return skipped
        if strategy == "fact-ledger":
            return "the dropped history holds no fact for its ledger"
    elif strategy == "truncate":
        return "it drops the oldest first, as the others fall back to"
    return "it drops the same blocks here"


def _skipped(plan: PromptPlan) -> str | None:
    """Why a summary or a ledger was not sent, as the strategy's own note says it ("no summary: no
    sentence of the dropped history fits the summary size"), else ``None``."""
    for note in plan.diagnostics:
        message = str(note.get("message", ""))
        if note.get("code") in (results.SUMMARY_SKIPPED, results.LEDGER_INCOMPLETE) and ": " in message:
            head, _, why = message.partition(": ")
            if head in ("No summary", "No fact ledger"):
                return f"{head.lower()}: {why.split('; ')[0]}"
    return None


def _count(number: int, noun: str) -> str:
    return f"{'one' if number == 1 else f'{number:,}'} {noun}{'' if number == 1 else 's'}"


@dataclass(frozen=True, slots=True)
class Squeeze:
    """A smaller window for the comparison: its context limit and response reserve."""

    limit: int
    reserve: int

    @property
    def label(self) -> str:
        """The button's label.

        >>> Squeeze(2643, 338).label
        'Squeeze: a 2,643-token window (reserve 338)'
        """
        return f"Squeeze: a {self.limit:,}-token window (reserve {self.reserve:,})"


def squeeze(plan: PromptPlan, replan: Callable[[int, int], Mapping[str, Any]]) -> Squeeze | None:
    """A window in which the strategies differ, for a comparison where everything fits; ``plan`` is
    one strategy's plan of it, ``replan(limit, reserve)`` the plans of every strategy at another
    window (strategy → plan or error). ``None`` when nothing could ever be dropped.

    The budget keeps what is protected and the chat framing, and a share of what may be dropped
    (:data:`SQUEEZE_SHARES`, in turn, until two strategies differ); the reserve keeps its share of
    the window (between :data:`LEAST_RESERVE_SHARE` and :data:`MOST_RESERVE_SHARE`), never more than
    it is now.
    """
    droppable = sum(block.tokens or 0 for block in plan.blocks if block.included and block.fate != "protected")
    if droppable <= 1:
        return None
    share = plan.response_reserve / plan.context_limit if plan.context_limit else 0.0
    share = min(max(share, LEAST_RESERVE_SHARE), MOST_RESERVE_SHARE)
    found = differing = None
    for kept in SQUEEZE_SHARES:
        budget = max(1, plan.prompt_tokens - droppable + int(droppable * kept))
        reserve = min(plan.response_reserve, math.ceil(budget / (1 - share)) - budget)
        found = Squeeze(budget + reserve, reserve)
        fitted = [made for made in replan(found.limit, found.reserve).values() if isinstance(made, PromptPlan)]
        if _differ(fitted):
            # a window where one strategy at least can be shipped (keeps the question and the pins):
            # a squeeze that leaves "no strategy can be shipped" shows the strategies at work, not an answer
            if any(losses(made).refusal is None for made in fitted):
                return found
            differing = differing or found
    return differing or found

