"""What a plan does not send, in words: the **Lost:** line under each strategy.

A plan's blocks name what was excluded by id (``m3``, ``lorebook:1``); a room
reads turns, lore entries and memories. :func:`losses` reads a
:class:`~contextfit.pipeline.plan.PromptPlan` and says, per kind of block,
what it drops outright, what it folds into its summary and what it sends
cleared (a tool result's placeholder), with the history counted in turns
(turn 1 is the first user message and the replies after it; before it, the
greeting or the opening), and whether it keeps the user's question and every
pinned block — a plan that does not is never recommended.

>>> from contextfit import plan_prompt
>>> chat = [{"role": "assistant", "content": "Welcome aboard."},
...         {"role": "user", "content": "A long question " * 40}, {"role": "assistant", "content": "An answer."},
...         {"role": "user", "content": "And now?"}]
>>> plan = plan_prompt(chat, model="gpt-4o", context_limit=160, response_reserve=60)
>>> losses(plan).line()
'Lost: the greeting and part of turn 1.'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..fitting import results as reasons
from ..inputs.messages import kind_of, link_ids, message_id, meta_of, role_of

__all__ = ["Losses", "Reading", "losses", "question_position", "tool_names", "turn_numbers", "turns_text"]

#: How many names a phrase lists before it counts them ("5 lore entries").
_NAMED = 3
_PREVIEW = 40


@dataclass(frozen=True, slots=True)
class Losses:
    """What one plan does not send as it was, in words (each a phrase, in prompt order)."""

    #: ``None`` when the question is sent (or there is none), else how it is lost:
    #: "drops your question" or "folds your question into its summary"
    question: str | None = None
    #: pinned blocks that are not sent as they were, by id
    pinned: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    folded: tuple[str, ...] = ()
    cleared: tuple[str, ...] = ()
    #: tool results over ``tool_result_cap``, sent as their head and tail
    capped: tuple[str, ...] = ()
    #: the must-survive facts this plan does not send (their names)
    facts: tuple[str, ...] = ()
    #: what the folded blocks went into: ``summary``, or ``ledger`` (fact-ledger's block of facts)
    into: str = "summary"

    @property
    def refusal(self) -> str | None:
        """Why this plan is never recommended: it does not send the question or a pinned block."""
        found = [self.question] if self.question else []
        if self.pinned:
            found.append(f"drops the pinned {_plural(len(self.pinned), 'block', 'blocks', counted=False)} "
                         f"{_and(self.pinned)}")
        return " and ".join(found) or None

    @property
    def nothing(self) -> bool:
        return not (self.question or self.pinned or self.dropped or self.folded or self.cleared or self.capped
                    or self.facts)

    def words(self) -> str:
        """What it gives up, as a sentence's predicate: ``"loses lore “The Lamp of Orrin” and
        memory 1, and folds the greeting into its summary"``; ``"sends everything"``.

        >>> Losses(dropped=("memories 2–4",), folded=("the greeting",)).words()
        'loses memories 2–4 and folds the greeting into its summary'
        >>> Losses(dropped=("lore “A”", "memories 2–4"), folded=("the greeting",)).words()
        'loses lore “A” and memories 2–4, and folds the greeting into its summary'
        >>> Losses(cleared=("the read_ledger result of turn 2",), facts=("HERON",)).words()
        'sends the read_ledger result of turn 2 cleared (a placeholder in its place), no longer sending “HERON”'
        """
        if self.nothing:
            return "sends everything"
        parts = [self.question] if self.question else []
        if self.pinned:
            parts.append(f"drops the pinned {_plural(len(self.pinned), 'block', 'blocks', counted=False)} "
                         f"{_and(self.pinned)}")
        if self.dropped:
            parts.append(f"loses {_and(self.dropped)}")
        if self.folded:
            parts.append(f"folds {_and(self.folded)} into its {self.into}")
        if self.cleared:
            several = len(self.cleared) > 1 or self.cleared[0][:1].isdigit()
            parts.append(f"sends {_and(self.cleared)} cleared ({'placeholders' if several else 'a placeholder'} "
                         f"in {'their' if several else 'its'} place)")
        if self.capped:
            parts.append(f"sends only the head and tail of {_and(self.capped)}")
        # "loses A, B and C, and folds D…": a comma parts two verbs when a list stands before
        joint = ", and " if len(parts) > 2 or any(" and " in part for part in parts[:-1]) else " and "
        said = ", ".join(parts[:-1]) + joint + parts[-1] if len(parts) > 1 else "".join(parts)
        if self.facts:
            lost = _and([f"“{name}”" for name in self.facts[:_NAMED]])
            more = f" and {len(self.facts) - _NAMED} more" if len(self.facts) > _NAMED else ""
            said = f"{said}, no longer sending {lost}{more}" if said else f"no longer sends {lost}{more}"
        return said

    def line(self) -> str:
        """The **Lost:** line shown under a strategy.

        >>> Losses(dropped=("lore “The Lamp of Orrin”",), folded=("turns 1–2",), facts=("Saltwitch",)).line()
        'Lost: lore “The Lamp of Orrin”. Folded into the summary: turns 1–2. Facts no longer sent: “Saltwitch”.'
        >>> Losses().line()
        'Lost: nothing; every block is sent as it is.'
        >>> Losses(capped=("the read_file result of turn 1",)).line()
        'Lost: no block outright. Capped (head and tail sent): the read_file result of turn 1.'
        """
        if self.nothing:
            return "Lost: nothing; every block is sent as it is."
        folded_question = bool(self.question) and self.question.startswith("folds")  # "…into its summary"
        question = ["your question"] if self.question and not folded_question else []
        dropped = [*question, *(f"the pinned block {name}" for name in self.pinned), *self.dropped]
        folded = [*(["your question"] if folded_question else []), *self.folded]
        out = [f"Lost: {_and(dropped)}." if dropped else "Lost: no block outright."]
        if folded:
            out.append(f"Folded into the {self.into}: {_and(folded)}.")
        if self.cleared:
            out.append(f"Cleared (placeholder sent): {_and(self.cleared)}.")
        if self.capped:
            out.append(f"Capped (head and tail sent): {_and(self.capped)}.")
        if self.facts:
            out.append(f"Facts no longer sent: {_and([f'“{name}”' for name in self.facts])}.")
        return " ".join(out)

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "pinned": list(self.pinned), "dropped": list(self.dropped),
                "folded": list(self.folded), "cleared": list(self.cleared), "capped": list(self.capped), "facts": list(self.facts),
                "line": self.line()}


@dataclass(frozen=True, slots=True)
class Reading:
    """What :func:`losses` reads of a request's input blocks, whatever the strategy: each block's
    turn, the question's position, each tool result's tool. Made once for all the plans of one
    request (:meth:`of`)."""

    turns: list[int | None]
    question: int | None
    names: dict[str, str]

    @classmethod
    def of(cls, plan: Any) -> Reading:
        messages = [block.message for block in plan.blocks if block.origin == "input"]
        return cls(turn_numbers(messages), question_position(messages), tool_names(messages))


def losses(plan: Any, lost_facts: Iterable[str] = (), reading: Reading | None = None) -> Losses:
    """What ``plan`` (a :class:`~contextfit.pipeline.plan.PromptPlan`) does not send as it was,
    in words; ``lost_facts``: the names of the must-survive facts it does not send; ``reading``:
    :meth:`Reading.of` a plan of the same request (made here when not given)."""
    inputs = [block for block in plan.blocks if block.origin == "input"]
    reading = reading or Reading.of(plan)
    turns, question, names = reading.turns, reading.question, reading.names
    how: dict[int, str] = {}  # input position -> "folded" / "cleared" / "capped", for the blocks an inserted one stands for
    into = "summary"
    for block in plan.blocks:
        if block.origin != "input" and block.included and block.sources:
            fate = "folded" if block.reason == reasons.SUMMARY else "cleared" if block.reason == reasons.COMPRESSED else None
            if fate == "cleared" and meta_of(block.message).get("capped"):
                fate = "capped"
            if fate == "folded" and meta_of(block.message).get("method") == "fact-ledger":
                into = "ledger"
            for source in block.sources if fate else ():
                how[source] = fate
    lost: dict[str, list[tuple[int, Any]]] = {"dropped": [], "folded": [], "cleared": [], "capped": []}
    question_lost = None
    pinned = []
    for position, block in enumerate(inputs):
        if block.included:
            continue
        fate = how.get(position, "dropped")
        if position == question:
            question_lost = f"folds your question into its {into}" if fate == "folded" else "drops your question"
            continue
        if is_pinned(block.message):
            pinned.append(block.id)
            continue
        lost[fate].append((position, block))
    return Losses(
        question=question_lost,
        pinned=tuple(pinned),
        dropped=tuple(_phrases(lost["dropped"], turns, names)),
        folded=tuple(_phrases(lost["folded"], turns, names)),
        cleared=tuple(_phrases(lost["cleared"], turns, names)),
        capped=tuple(_phrases(lost["capped"], turns, names)),
        facts=tuple(lost_facts),
        into=into,
    )


def _phrases(found: list[tuple[int, Any]], turns: list[int | None], names: Mapping[str, str]) -> list[str]:
    """The phrases for blocks of one fate, kind by kind in the order the kinds first appear."""
    by_kind: dict[str, list[tuple[int, Any]]] = {}
    for position, block in found:
        kind = block.kind if block.kind in ("lorebook", "memory", "example") else \
            "tool" if _is_result(block.message) else "history" if block.kind == "history" else "other"
        by_kind.setdefault(kind, []).append((position, block))
    out = []
    for kind, items in by_kind.items():
        if kind == "lorebook":
            titles = [_lore_title(block) for _, block in items]
            out.append(f"lore {', '.join(titles)}" if len(titles) <= _NAMED else f"{len(titles)} lore entries")
        elif kind == "memory":
            out.append(_memories([block for _, block in items]))
        elif kind == "example":
            out.append(_plural(len(items), "an example chat", "example chats"))
        elif kind == "tool":
            out.append(_tool_results(items, turns, names))
        elif kind == "history":
            out.append(_history(items, turns))
        else:
            out.append(_and([block.id for _, block in items]) if len(items) <= _NAMED
                       else f"{len(items)} other blocks")
    return out


def _history(items: list[tuple[int, Any]], turns: list[int | None]) -> str:
    """The turns the history blocks are in, whole or in part."""
    per_turn: dict[int, list[int]] = {}
    for position, _ in items:
        per_turn.setdefault(turns[position] or 0, []).append(position)
    sizes: dict[int, int] = {}
    for turn in turns:
        if turn is not None:
            sizes[turn] = sizes.get(turn, 0) + 1
    whole = [turn for turn, positions in per_turn.items() if len(positions) == sizes.get(turn, 0)]
    partial = [turn for turn in per_turn if turn not in whole]
    phrases = []
    if 0 in per_turn:
        first = next(block for position, block in items if (turns[position] or 0) == 0)
        if 0 not in whole:
            phrases.append("part of the opening")
        elif sizes.get(0) == 1 and first.role == "assistant":
            phrases.append("the greeting")
        else:
            phrases.append("the opening" if sizes.get(0) == 1 else "the opening messages")
    whole_turns = [turn for turn in whole if turn]
    if whole_turns:
        phrases.append(turns_text(whole_turns))
    partial_turns = [turn for turn in partial if turn]
    if partial_turns:
        phrases.append("part of " + turns_text(partial_turns))
    return _and(phrases)


def _tool_results(items: list[tuple[int, Any]], turns: list[int | None], names: Mapping[str, str]) -> str:
    """``the read_ledger result of turn 2``, or ``3 tool results of turns 2–4``."""
    where = sorted({turns[position] or 0 for position, _ in items})
    at = f" of {turns_text(where)}" if where and where != [0] else ""
    if len(items) == 1:
        name = names.get(items[0][1].id) or "tool"
        return f"the {name} result{at}"
    return f"{len(items)} tool results{at}"


def _memories(blocks: list[Any]) -> str:
    numbers = [_number(block.id, "memory:") for block in blocks]
    if len(blocks) == 1:
        preview = _preview(blocks[0].content)
        label = f"memory {numbers[0]}" if numbers[0] is not None else f"memory {blocks[0].id}"
        return f"{label} (“{preview}”)"
    if all(number is not None for number in numbers):
        return f"memories {_ranges(numbers)}"  # type: ignore[arg-type]
    return _plural(len(blocks), "a memory", "memories")


def _preview(text: str, most: int = _PREVIEW) -> str:
    """The start of ``text`` on one line, cut at a word.

    >>> _preview("Tomas promised his sister he would be home before the winter solstice.")
    'Tomas promised his sister he would be…'
    """
    flat = " ".join(text.split())
    if len(flat) <= most:
        return flat
    cut = flat[: most - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > most // 2 else cut).rstrip(",;:") + "…"


def _lore_title(block: Any) -> str:
    entry = meta_of(block.message).get("lorebook")
    comment = entry.get("comment") if isinstance(entry, dict) else None
    return f"“{comment}”" if isinstance(comment, str) and comment.strip() else block.id


def _number(ident: str, prefix: str) -> int | None:
    if ident.startswith(prefix) and ident[len(prefix):].isdigit():
        return int(ident[len(prefix):])
    return None


def _ranges(numbers: Sequence[int]) -> str:
    """``[1, 2, 3, 5]`` as ``1–3 and 5``.

    >>> _ranges([3, 1, 2, 5]), _ranges([4])
    ('1–3 and 5', '4')
    """
    runs: list[list[int]] = []
    for number in sorted(set(numbers)):
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return _and([str(a) if a == b else f"{a}–{b}" for a, b in runs])


def turns_text(turns: Sequence[int]) -> str:
    """Turn numbers in words.

    >>> turns_text([1, 2, 3, 7]), turns_text([2])
    ('turns 1–3 and 7', 'turn 2')
    """
    return ("turn " if len(turns) == 1 else "turns ") + _ranges(turns)


def _and(items: Sequence[str]) -> str:
    items = list(items)
    if not items:
        return ""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _plural(count: int, one: str, many: str, counted: bool = True) -> str:
    if count == 1:
        return one
    return f"{count} {many}" if counted else many


def _is_result(message: dict) -> bool:
    return link_ids(message)[1]


def is_pinned(block: dict) -> bool:
    """``pinned: true`` on a block or in its ``meta`` (as Compare's hand edits set it).

    >>> is_pinned({"meta": {"pinned": True}}), is_pinned({"pinned": "yes"})
    (True, False)
    """
    return block.get("pinned") is True or meta_of(block).get("pinned") is True


def is_request(message: dict) -> bool:
    """A user message that asks (not a tool result carried in a user message, not hidden)."""
    return (role_of(message) == "user" and kind_of(message) == "history"
            and meta_of(message).get("hidden") is not True and not _is_result(message))


def turn_numbers(blocks: Sequence[dict]) -> list[int | None]:
    """Per block (a request's assembled blocks, in prompt order): the turn a history block belongs to
    (1 for the first user message and the replies after it; 0 before it), ``None`` for other kinds.

    >>> turn_numbers([{"role": "system", "content": "s"}, {"role": "assistant", "content": "hi"},
    ...               {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
    [None, 0, 1, 1]
    """
    out: list[int | None] = []
    turn = 0
    for block in blocks:
        if kind_of(block) != "history":
            out.append(None)
            continue
        if is_request(block):
            turn += 1
        out.append(turn)
    return out


def question_position(blocks: Sequence[dict]) -> int | None:
    """The position of the user's question among a request's blocks: the last user message that
    asks (in an agent's tool round, the one the tool results answer), or ``None``.

    >>> question_position([{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [
    ...     {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "c", "content": "42"}])
    0
    """
    for position in range(len(blocks) - 1, -1, -1):
        if is_request(blocks[position]):
            return position
    return None


def tool_names(blocks: Sequence[dict]) -> dict[str, str]:
    """Each tool result's block id → the name of the tool that produced it (from its call).

    >>> tool_names([{"role": "assistant", "content": "", "tool_calls": [
    ...     {"id": "c1", "type": "function", "function": {"name": "read_ledger", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "…", "meta": {"id": "m5"}}])
    {'m5': 'read_ledger'}
    """
    calls: dict[str, str] = {}
    out: dict[str, str] = {}
    for position, block in enumerate(blocks):
        for call in block.get("tool_calls") or () if isinstance(block.get("tool_calls"), list) else ():
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                calls[str(call.get("id"))] = str(call["function"].get("name") or "tool")
        content = block.get("content")
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and str(part.get("type", "")).endswith("tool_use"):
                calls[str(part.get("id"))] = str(part.get("name") or "tool")
        ids, result = link_ids(block)
        if result:
            name = block.get("name") if isinstance(block.get("name"), str) else None
            found = name or next((calls[i] for i in ids if i in calls), None)
            if found:
                out[message_id(block, position)] = _NAME_CLEAN.sub("", found)[:40] or "tool"
    return out


_NAME_CLEAN = re.compile(r"[\s“”]")
