"""What a fit returns: reasons, decisions and :class:`FitResult`.

The reason strings and diagnostic codes are a stable contract (SPEC §3.5):
users filter on them, the API sends them, audits store them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from ..inputs.lorebook.matching import (
    LOREBOOK_KEY_TIMEOUT,
    LOREBOOK_KEY_TOO_LARGE,
    LOREBOOK_KEY_TOO_LONG,
    LOREBOOK_SCAN_LIMITED,
)
from ..inputs.messages import explicit_id, kind_of, role_of

# Why a block was included.
SYSTEM = "system"
CHARACTER = "character"
PERSONA = "persona"
REQUIRED = "required"
PINNED = "pinned"
CURRENT_INPUT = "current_input"
WITHIN_BUDGET = "within_budget"
SUMMARY = "summary"
COMPRESSED = "compressed"
RESTORED = "restored"

# Why a block was excluded.
OVER_BUDGET = "over_budget"
MANUAL = "manual"
LOW_RELEVANCE = "low_relevance"
SUMMARIZED = "summarized"
LATE_OVERFLOW = "late_overflow"
INTERCEPTED = "intercepted"
NOT_SENT = "not_sent"  # reasoning the provider drops (an earlier turn's, another provider's): plan rows only

INCLUDED_REASONS = (SYSTEM, CHARACTER, PERSONA, REQUIRED, PINNED, CURRENT_INPUT, WITHIN_BUDGET, SUMMARY, COMPRESSED, RESTORED)
EXCLUDED_REASONS = (OVER_BUDGET, MANUAL, LOW_RELEVANCE, SUMMARIZED, LATE_OVERFLOW, INTERCEPTED, NOT_SENT)
PROTECTED_REASONS = (SYSTEM, CHARACTER, PERSONA, REQUIRED, PINNED, CURRENT_INPUT, RESTORED)
_INCLUDED = frozenset(INCLUDED_REASONS)

# Diagnostic codes (the ``code`` key of every diagnostics entry).
STRATEGY_REJECTED = "STRATEGY_REJECTED"
BUDGET_ENFORCED = "BUDGET_ENFORCED"
GROUP_SPLIT_PREVENTED = "GROUP_SPLIT_PREVENTED"
ORPHAN_TOOL_RESULT = "ORPHAN_TOOL_RESULT"
REPEATED_TOOL_CALL_ID = "REPEATED_TOOL_CALL_ID"
TOOL_CALL_WITHOUT_RESULT = "TOOL_CALL_WITHOUT_RESULT"
COUNT_ADJUSTED = "COUNT_ADJUSTED"
MANUAL_MARK_IGNORED = "MANUAL_MARK_IGNORED"
SUMMARY_SKIPPED = "SUMMARY_SKIPPED"
SUMMARY_SCAN_LIMITED = "SUMMARY_SCAN_LIMITED"
LEDGER_INCOMPLETE = "LEDGER_INCOMPLETE"
INTERCEPTOR_APPLIED = "INTERCEPTOR_APPLIED"
INTERCEPTOR_FAILED = "INTERCEPTOR_FAILED"
INTERCEPTOR_REJECTED = "INTERCEPTOR_REJECTED"
LATE_OVERFLOW_DROPPED = "LATE_OVERFLOW"
RELEVANCE = "RELEVANCE"
HIDDEN_MESSAGES_SKIPPED = "HIDDEN_MESSAGES_SKIPPED"
LOREBOOK_POSITION_APPROXIMATED = "LOREBOOK_POSITION_APPROXIMATED"
PARTS_NOT_SENT = "PARTS_NOT_SENT"
IMAGE_SIZE_UNKNOWN = "IMAGE_SIZE_UNKNOWN"
REASONING_ESTIMATED = "REASONING_ESTIMATED"
TOOL_SHAPES_UNVERIFIED = "TOOL_SHAPES_UNVERIFIED"
EFFECTIVE_CONTEXT_EXCEEDED = "EFFECTIVE_CONTEXT_EXCEEDED"

DIAGNOSTIC_CODES = (
    STRATEGY_REJECTED,
    BUDGET_ENFORCED,
    GROUP_SPLIT_PREVENTED,
    ORPHAN_TOOL_RESULT,
    REPEATED_TOOL_CALL_ID,
    TOOL_CALL_WITHOUT_RESULT,
    COUNT_ADJUSTED,
    MANUAL_MARK_IGNORED,
    SUMMARY_SKIPPED,
    SUMMARY_SCAN_LIMITED,
    LEDGER_INCOMPLETE,
    RELEVANCE,
    INTERCEPTOR_APPLIED,
    INTERCEPTOR_FAILED,
    INTERCEPTOR_REJECTED,
    LATE_OVERFLOW_DROPPED,
    HIDDEN_MESSAGES_SKIPPED,
    LOREBOOK_POSITION_APPROXIMATED,
    LOREBOOK_KEY_TIMEOUT,
    LOREBOOK_KEY_TOO_LONG,
    LOREBOOK_KEY_TOO_LARGE,
    LOREBOOK_SCAN_LIMITED,
    PARTS_NOT_SENT,
    IMAGE_SIZE_UNKNOWN,
    REASONING_ESTIMATED,
    TOOL_SHAPES_UNVERIFIED,
    EFFECTIVE_CONTEXT_EXCEEDED,
)


def is_included(reason: str) -> bool:
    """Whether a reason string means the block is sent.

    >>> is_included("pinned"), is_included("over_budget")
    (True, False)
    """
    return reason in _INCLUDED


@dataclass(frozen=True, slots=True)
class Decision:
    """The fate of one block: kept or not, why, and what it costs.

    ``index`` is the block's position in the input messages, or ``None`` for a
    block the strategy inserted (a summary, a shortened message), whose
    ``sources`` name the input positions it stands for.
    """

    index: int | None
    included: bool
    reason: str
    tokens: int | None
    role: str
    kind: str
    id: str
    message: dict = field(repr=False, compare=False)
    group: int | None = None
    sources: tuple[int, ...] = ()
    origin: str = "input"

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (camelCase keys, no message body)."""
        return {
            "index": self.index,
            "id": self.id,
            "role": self.role,
            "kind": self.kind,
            "tokens": self.tokens,
            "included": self.included,
            "reason": self.reason,
            "group": self.group,
            "sources": list(self.sources),
            "origin": self.origin,
        }


@dataclass(frozen=True, slots=True)
class InsertedBlock:
    """A block that is not one of the input messages, placed before input
    position ``before``: added by the strategy (a summary, a shortened
    message) or by an interceptor (``origin`` says which)."""

    message: dict
    before: int
    reason: str
    tokens: int | None
    sources: tuple[int, ...] = ()
    origin: str = "strategy"


class Decisions(Sequence[Decision]):
    """The decisions of a fit, in prompt order, built on demand.

    A fit of 10,000 messages must not pay for 10,000 objects nobody reads, so
    this read-only sequence keeps the per-message arrays and makes a
    :class:`Decision` when one is asked for. It behaves like a list.

    The reason of input message ``i`` is ``overrides[i]`` when present, else
    ``reasons[i]`` (an exclusion reason), else for a kept message its
    protection reason ``protect[i]``, else ``within_budget``.
    """

    __slots__ = ("_messages", "_reasons", "_protect", "_overrides", "_tokens", "_roles", "_kinds", "_ids", "_groups",
                 "_inserted", "_positions")

    def __init__(self, messages, reasons, protect, overrides, tokens, roles, kinds, ids, groups,
                 inserted: Sequence[InsertedBlock]):
        self._messages = messages
        self._reasons = reasons
        self._protect = protect
        self._overrides = overrides
        self._tokens = tokens
        self._roles = roles
        self._kinds = kinds
        self._ids = ids
        self._groups = groups
        self._inserted = sorted(inserted, key=lambda block: block.before)
        # Prompt position of each inserted block: its input position plus the
        # inserted blocks before it.
        self._positions = [block.before + k for k, block in enumerate(self._inserted)]

    def __len__(self) -> int:
        return len(self._reasons) + len(self._inserted)

    def reason_of(self, index: int) -> str:
        """The reason of input message ``index``."""
        reason = self._overrides.get(index) or self._reasons[index] or self._protect[index]
        return reason or WITHIN_BUDGET

    @overload
    def __getitem__(self, position: int) -> Decision: ...
    @overload
    def __getitem__(self, position: slice) -> list[Decision]: ...
    def __getitem__(self, position):
        if isinstance(position, slice):
            return [self[k] for k in range(*position.indices(len(self)))]
        size = len(self)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError("decision index out of range")
        k = bisect_right(self._positions, position) - 1
        if k >= 0 and self._positions[k] == position:
            return self._inserted_decision(k)
        return self._input_decision(position - (k + 1))

    def _inserted_decision(self, k: int) -> Decision:
        block = self._inserted[k]
        return Decision(
            index=None,
            included=is_included(block.reason),
            reason=block.reason,
            tokens=block.tokens,
            role=role_of(block.message),
            kind=kind_of(block.message),
            id=explicit_id(block.message) or f"inserted-{k}",
            message=block.message,
            sources=block.sources,
            origin=block.origin,
        )

    def _input_decision(self, index: int) -> Decision:
        reason = self._overrides.get(index) or self._reasons[index] or self._protect[index] or WITHIN_BUDGET
        ident = self._ids[index]
        return Decision(
            index=index,
            included=reason in _INCLUDED,
            reason=reason,
            tokens=self._tokens[index],
            role=self._roles[index],
            kind=self._kinds[index],
            id=str(index) if ident is None else ident,
            message=self._messages[index],
            group=self._groups.get(index),
        )

    def __iter__(self) -> Iterator[Decision]:
        inserted, k = self._inserted, 0
        for index in range(len(self._reasons)):
            while k < len(inserted) and inserted[k].before == index:
                yield self._inserted_decision(k)
                k += 1
            yield self._input_decision(index)
        for rest in range(k, len(inserted)):
            yield self._inserted_decision(rest)

    def rows(self) -> Iterator[tuple]:
        """Every block in prompt order as a plain tuple, without making
        :class:`Decision` objects (the pipeline builds its own blocks from
        these): ``(index, id, role, kind, tokens, included, reason, group,
        origin, sources, message)``."""
        overrides, reasons, protect = self._overrides, self._reasons, self._protect
        tokens, roles, kinds, ids, groups, messages = (
            self._tokens, self._roles, self._kinds, self._ids, self._groups, self._messages)
        inserted, k = self._inserted, 0
        for index in range(len(reasons)):
            while k < len(inserted) and inserted[k].before == index:
                yield self._inserted_row(k)
                k += 1
            reason = (overrides.get(index) if overrides else None) or reasons[index] or protect[index] or WITHIN_BUDGET
            ident = ids[index]
            yield (index, str(index) if ident is None else ident, roles[index], kinds[index], tokens[index],
                   reason in _INCLUDED, reason, groups.get(index), "input", (), messages[index])
        for rest in range(k, len(inserted)):
            yield self._inserted_row(rest)

    def _inserted_row(self, k: int) -> tuple:
        d = self._inserted_decision(k)
        return (d.index, d.id, d.role, d.kind, d.tokens, d.included, d.reason, d.group, d.origin, d.sources, d.message)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Decisions({len(self)} blocks)"

    def reasons(self) -> list[str]:
        """Every reason in prompt order (cheap: no Decision objects)."""
        out = [self.reason_of(index) for index in range(len(self._reasons))]
        for position, block in zip(self._positions, self._inserted):
            out.insert(position, block.reason)
        return out

    def inserted(self) -> list[InsertedBlock]:
        """The inserted blocks in prompt order, each with the tokens the host counted for it."""
        return list(self._inserted)

    def with_changes(self, overrides: dict[int, str], inserted: Sequence[InsertedBlock]) -> "Decisions":
        """A copy with more per-message reasons and a new list of inserted blocks."""
        return Decisions(self._messages, self._reasons, self._protect, {**self._overrides, **overrides},
                         self._tokens, self._roles, self._kinds, self._ids, self._groups, inserted)


@dataclass(frozen=True, slots=True)
class FitResult:
    """The outcome of :func:`contextfit.shift_context`.

    Unpacks into the seed's three lists:

    >>> from contextfit import shift_context
    >>> count = lambda messages: sum(len(m["content"].split()) for m in messages)
    >>> chat = [{"role": "system", "content": "Be brief."},
    ...         {"role": "user", "content": "one two three four"},
    ...         {"role": "assistant", "content": "five six"},
    ...         {"role": "user", "content": "seven"}]
    >>> kept, excluded, truncated = shift_context(chat, count, budget=5)
    >>> [m["content"] for m in kept], len(excluded), truncated
    (['Be brief.', 'five six', 'seven'], 1, [])
    """

    kept: list[dict]
    excluded: list[dict]
    truncated: list[dict]
    tokens: int
    budget: int
    decisions: Sequence[Decision]
    strategy: str
    diagnostics: list[dict]
    protected_tokens: int = 0

    def __iter__(self) -> Iterator[list[dict]]:
        yield self.kept
        yield self.excluded
        yield self.truncated

    @property
    def fits(self) -> bool:
        """``tokens <= budget`` (always true for a result the engine returns)."""
        return self.tokens <= self.budget

    def counts(self) -> "FateCounts":
        """How many input blocks were dropped, folded into a summary, and sent compressed
        (:func:`fate_counts`): the one count every face shows."""
        return fate_counts(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape: messages plus decisions with camelCase keys."""
        return {
            "strategy": self.strategy,
            "tokens": self.tokens,
            "budget": self.budget,
            "protectedTokens": self.protected_tokens,
            "kept": self.kept,
            "excluded": self.excluded,
            "truncated": self.truncated,
            "decisions": [decision.to_dict() for decision in self.decisions],
            "diagnostics": self.diagnostics,
        }


@dataclass(frozen=True, slots=True)
class FateCounts:
    """What a fit did to the input blocks it did not send as they were."""

    #: not sent at all (over budget, low relevance, manual, a late overflow…)
    dropped: int
    #: folded into a summary block that is sent
    summarized: int
    #: sent in a shortened form (a cleared tool result, a capped one, reasoning stripped)
    compressed: int


def fate_counts(fit: FitResult) -> FateCounts:
    """Count a fit's input blocks by what became of them, from the blocks it inserted: a
    summary's sources were summarized, a compressed block's source was compressed (a cleared
    tool result's original is excluded with reason ``summarized``, yet nothing summarizes it),
    every other excluded input block was dropped. Reads the inserted blocks only, never the
    whole decision list (a replay counts every turn of every strategy).

    >>> from contextfit import shift_context
    >>> count = lambda messages: sum(len(str(m["content"]).split()) for m in messages)
    >>> chat = [{"role": "user", "content": "one two three"}, {"role": "assistant", "content": "four"},
    ...         {"role": "user", "content": "five"}]
    >>> fate_counts(shift_context(chat, count, budget=2))
    FateCounts(dropped=1, summarized=0, compressed=0)
    """
    decisions = fit.decisions
    summarized = compressed = 0
    if isinstance(decisions, Decisions):
        for block in decisions.inserted():
            if block.reason not in _INCLUDED:  # dropped after all (a late overflow): its sources went with it
                continue
            if kind_of(block.message) == SUMMARY or block.reason == SUMMARY:
                summarized += len(block.sources)
            elif block.reason == COMPRESSED:
                compressed += len(block.sources) or 1
    else:  # decisions a caller built by hand: what the blocks say of themselves
        for block in fit.truncated:
            meta = block.get("meta") if isinstance(block.get("meta"), dict) else {}
            if kind_of(block) == SUMMARY:
                summarized += len(meta.get("summarized") or ())
            elif meta.get("compressed"):
                compressed += 1
    dropped = len(fit.excluded) - summarized - compressed
    return FateCounts(max(dropped, 0), summarized, compressed)
