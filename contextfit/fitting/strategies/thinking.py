"""``keep_thinking``: reasoning of older turns goes before whole turns do.

Providers do not need the reasoning of earlier turns: Anthropic strips the
``thinking`` / ``redacted_thinking`` blocks of previous assistant turns
itself and requires only those of the current tool-use turn (the assistant
message whose ``tool_use`` the last ``tool_result`` answers); OpenAI keeps
reasoning items only across the tool calls of one turn; DeepSeek refuses
``reasoning_content`` sent back. When the chat ends on tool results (an agent
in the middle of its loop), everything after the last user message is the
current tool-use turn: its reasoning is never dropped here, whichever shape
the results take (an OpenAI ``tool`` message is no user input, so the engine
does not protect that turn as it protects an Anthropic ``tool_result``
message's). What is dropped is always the reasoning of older turns.

``keep_thinking`` (for ``truncate``, ``summarize`` and ``clear-tool-results``):

* ``None`` (default, what the providers require): when the prompt does not
  fit, the reasoning of older assistant turns is dropped first, oldest
  first, only as far as needed, before any turn is dropped;
* ``False``: the reasoning of every older turn is dropped, fit or not (the
  current tool-use turn's stays);
* ``True``: reasoning is kept like any other content.

An assistant message without its reasoning is a ``compressed`` block
(``meta.compressed``) in the original's place; the original is
``summarized``, as with a cleared tool result.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

from ...inputs.messages import HISTORY, TOOL_RESULT_ROLES, meta_of
from .. import results
from ..analysis import CARRY_TRIMMERS, FitView, trim_scan
from ...errors import InvalidSettings
from ..results import InsertedBlock
from ...tokens.reasoning import has_reasoning, only_tool_results, strip_reasoning


def keep_thinking_option(options: dict) -> bool | None:
    """The validated ``keep_thinking`` option (``None``: what the provider requires)."""
    value = options.get("keep_thinking")
    if value is not None and not isinstance(value, bool):
        raise InvalidSettings(f"keep_thinking must be true, false or unset, got {value!r}.")
    return value


def without_reasoning(message: dict) -> dict | None:
    """A copy of an assistant message without its reasoning, or ``None`` when it has none.

    >>> without_reasoning({"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
    ...                                                     {"type": "text", "text": "Yes."}]})
    {'role': 'assistant', 'content': [{'type': 'text', 'text': 'Yes.'}], 'meta': {'compressed': True}}
    """
    copy = strip_reasoning(message)
    if copy is None:
        return None
    copy["meta"] = {**meta_of(message), "compressed": True}
    return copy


def drop_old_reasoning(
    view: FitView, budget: int, keep: bool | None, costs: list[int], replaced: dict[int, InsertedBlock], total: int
) -> int:
    """Drop the reasoning of unprotected assistant messages, oldest first (all of
    it with ``keep=False``, as far as the budget needs with ``None``); fills
    ``replaced`` and ``costs`` and returns the new total."""
    if keep is True or (keep is None and total <= budget):
        return total
    protect, messages = view.protect, view.messages
    turn_start = tool_turn_start(view)
    for index in reasoning_indices(view):
        if keep is None and total <= budget:
            break
        if protect[index] is not None or index >= turn_start:
            continue
        current = replaced[index].message if index in replaced else messages[index]
        copy = without_reasoning(current)
        if copy is None:
            continue
        tokens = view.count_block(copy)
        if tokens >= costs[index]:
            continue
        total -= costs[index] - tokens
        costs[index] = tokens
        replaced[index] = InsertedBlock(copy, index, results.COMPRESSED, tokens, (index,))
    return total


def tool_turn_start(view: FitView) -> int:
    """Where the current tool-use turn starts — just after the last user message that is
    not only tool results — when the chat ends on tool results; ``view.n`` otherwise
    (no turn whose reasoning must stay). Blocks a template puts after the chat do not count.

    >>> from contextfit.fitting.analysis import build_view
    >>> from contextfit.fitting.counting import counting_for
    >>> chat = [{"role": "user", "content": "Fix it."},
    ...         {"role": "assistant", "content": None, "reasoning_content": "Edit h.py.",
    ...          "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "edit", "arguments": "{}"}}]},
    ...         {"role": "tool", "tool_call_id": "c1", "content": "done"}]
    >>> count = lambda messages: 3 * len(messages)
    >>> tool_turn_start(build_view(chat, counting_for(count))), tool_turn_start(build_view(chat[:2], counting_for(count)))
    (1, 2)
    """
    kinds, roles, messages = view.analysis.kinds, view.analysis.roles, view.messages
    last = next((index for index in range(view.n - 1, -1, -1) if kinds[index] == HISTORY), None)
    if last is None or not (roles[last] in TOOL_RESULT_ROLES or only_tool_results(messages[last])):
        return view.n
    for index in range(last, -1, -1):
        if kinds[index] == HISTORY and roles[index] == "user" and not only_tool_results(messages[index]):
            return index + 1
    return 0


_SCANNED = ("reasoning", -1)  # analysis.derived key: (messages scanned, assistant messages with reasoning)
CARRY_TRIMMERS[_SCANNED[0]] = trim_scan


def reasoning_indices(view: FitView) -> list[int]:
    """The assistant messages that carry reasoning, oldest first. Kept in the
    analysis' ``derived`` cache, so a chat that grows by one message scans one."""
    derived = view.analysis.derived
    scanned, found = derived.get(_SCANNED, (0, ()))  # type: ignore[misc]
    if scanned > view.n:
        scanned, found = 0, ()
    if scanned < view.n:
        roles, messages = view.analysis.roles, view.messages
        new = [index for index in range(scanned, view.n) if roles[index] == "assistant" and has_reasoning(messages[index])]
        found = (*found, *new)
        derived[_SCANNED] = (view.n, found)
    return list(found)


def drop_oldest_units(
    view: FitView, budget: int, reasons: list[str | None], costs: list[int], replaced: dict[int, InsertedBlock], total: int
) -> int:
    """Truncate on top of replacements: drop the oldest unprotected units (with
    the blocks standing for their members) until ``total`` fits; returns it.

    Dropping the oldest units until the rest fits keeps the longest run of
    recent units that fits, so this walks newest first, as
    :func:`~contextfit.fitting.strategies.base.fill_newest` does, and stops at the
    first unit that does not fit: the work follows what is kept, not what is
    dropped (most of a clear-tool-results refit when the budget is a small
    share of a long chat). A group is as old as its first member.
    """
    if total <= budget:
        return total
    protect, group_of, members = view.protect, view.analysis.group_of, view.analysis.members
    over = results.OVER_BUDGET
    reasons[:] = repeat(over, view.n)  # then the protected kept (C-level; a comprehension cost O(n) in Python)
    for index in view.protected:
        reasons[index] = None
    room = budget - view.base_tokens - sum(costs[index] for index in view.protected)
    for index in range(view.n - 1, -1, -1):
        if protect[index] is not None:
            continue
        root = group_of.get(index)
        if root is None:
            cost = costs[index]
            if cost > room:
                break
            room -= cost
            reasons[index] = None
        elif root == index:  # protection covers a whole group or none of it
            unit = members[root]
            cost = sum(costs[member] for member in unit)
            if cost > room:
                break
            room -= cost
            for member in unit:
                reasons[member] = None
    for index in [index for index in replaced if reasons[index] is not None]:
        del replaced[index]
    return budget - room


def with_replacements(reasons: list[str | None], replaced: dict[int, InsertedBlock]) -> list[InsertedBlock]:
    """Mark each replaced original ``summarized``; the replacements in prompt order."""
    for index in replaced:
        reasons[index] = results.SUMMARIZED
    return sorted(replaced.values(), key=lambda block: block.before)


def thin(view: FitView, budget: int, options: dict[str, Any]) -> tuple[list[int], dict[int, InsertedBlock], int] | None:
    """Older turns' reasoning dropped as ``keep_thinking`` asks: ``(costs,
    replaced, total)``, or ``None`` when nothing was dropped (the plain path
    then gives the same answer)."""
    keep = keep_thinking_option(options)
    if keep is True:
        return None
    counted = view.analysis.counted_total
    if keep is None and (counted is None or view.base_tokens + counted <= budget):
        return None  # it fits (or the caller asked not to count everything): nothing to drop
    if not reasoning_indices(view):
        return None
    costs = [view.count(index) for index in range(view.n)]
    total = view.base_tokens + sum(costs)
    replaced: dict[int, InsertedBlock] = {}
    total = drop_old_reasoning(view, budget, keep, costs, replaced, total)
    return (costs, replaced, total) if replaced else None


def fit_thinning(view: FitView, budget: int, options: dict[str, Any]):
    """``truncate`` with ``keep_thinking``: a :class:`Proposal`, or ``None`` when no
    reasoning was dropped (the caller's plain path then gives the same answer)."""
    from .base import Proposal

    thinned = thin(view, budget, options)
    if thinned is None:
        return None
    costs, replaced, total = thinned
    reasons: list[str | None] = [None] * view.n
    drop_oldest_units(view, budget, reasons, costs, replaced, total)
    return Proposal(reasons, with_replacements(reasons, replaced))


def thinned_view(view: FitView, replaced: dict[int, InsertedBlock]) -> FitView:
    """A view of the same fit where each replaced message stands as its
    replacement (its tokens too): what ``summarize`` fits after ``keep_thinking``
    dropped reasoning. Its analysis are a copy: nothing reaches the cached analysis."""
    messages = list(view.messages)
    analysis = view.analysis.copy()
    for index, block in replaced.items():
        messages[index] = block.message
        analysis.tokens[index] = block.tokens
    if None not in analysis.tokens:
        analysis.counted_total = sum(analysis.tokens)  # type: ignore[arg-type]
    return FitView(messages, analysis, view.counting)


def merge_replacements(proposal, replaced: dict[int, InsertedBlock]):
    """A proposal made over :func:`thinned_view` for the real view: a kept
    replacement is sent in its original's place (the original ``summarized``);
    a dropped or summarized one keeps the reason the strategy gave it."""
    reasons = list(proposal.reasons)
    kept = {index: block for index, block in replaced.items() if reasons[index] is None}
    inserted = [*with_replacements(reasons, kept), *proposal.inserted]
    proposal.reasons = reasons
    proposal.inserted = sorted(inserted, key=lambda block: block.before)
    proposal.assembled = None  # the kept messages are the real view's, not the thinned one's
    return proposal
