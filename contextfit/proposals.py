"""Reading what an untrusted strategy returned.

A plugin strategy returns the messages to keep (or a :class:`FitResult`).
Messages it returns unchanged are recognised as the originals — by identity
with the copy it was given, else by equality in order; anything else is a
block it added, which must say what it is (``meta.kind: "summary"`` or
``meta.compressed: true``). The host derives everything else itself.
"""

from __future__ import annotations

from typing import Any

from . import messages as msg
from . import results as r
from .analysis import FitView
from .results import FitResult, InsertedBlock
from .strategies.base import Proposal

_EXCLUDED = frozenset({r.OVER_BUDGET, r.MANUAL, r.LOW_RELEVANCE, r.SUMMARIZED})


class Unusable(Exception):
    """The strategy's answer cannot be used; the message says why."""


def match_items(items: list[Any], given: list[dict], originals: list[dict]) -> list[int | None]:
    """For each returned item, the index of the unchanged original it is, or ``None``.

    ``given`` are the copies the callee received (identity is checked against
    them), ``originals`` what they were copied from (equality is checked
    against them, so a copy edited in place is not an original any more).
    Each original is recognised at most once.
    """
    position = {id(copy): i for i, copy in enumerate(given)}
    used: set[int] = set()
    found: list[int | None] = []
    cursor = 0
    for item in items:
        index = position.get(id(item))
        if index is not None and index not in used and _equal(item, originals[index]):
            used.add(index)
            found.append(index)
            cursor = index + 1
            continue
        match = None
        if isinstance(item, dict):
            for candidate in (*range(cursor, len(originals)), *range(0, cursor)):
                if candidate not in used and _equal(item, originals[candidate]):
                    match = candidate
                    break
        if match is not None:
            used.add(match)
            cursor = match + 1
        found.append(match)
    return found


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _source_indices(block: dict, n: int) -> tuple[int, ...]:
    meta = msg.meta_of(block)
    found: list[int] = []
    for key in ("summarized", "sources", "source"):
        value = meta.get(key)
        values = value if isinstance(value, list) else [value]
        for entry in values:
            index = entry.get("index") if isinstance(entry, dict) else entry
            if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n and index not in found:
                found.append(index)
    return tuple(sorted(found))


def proposal_from_output(output: Any, view: FitView, given: list[dict]) -> Proposal:
    """Turn a plugin strategy's return value into a :class:`Proposal`."""
    if isinstance(output, FitResult):
        output = output.kept
    if isinstance(output, tuple):
        output = list(output)
    if not isinstance(output, list):
        raise Unusable(f"it returned {type(output).__name__}; a strategy returns a list of messages or a FitResult")
    matches = match_items(output, given, view.messages)
    reasons: list[str | None] = [r.OVER_BUDGET] * view.n
    inserted: list[InsertedBlock] = []
    pending: list[dict] = []
    for item, index in zip(output, matches):
        if index is not None:
            reasons[index] = None
            inserted.extend(_block(block, index, view) for block in pending)
            pending.clear()
            continue
        if not isinstance(item, dict):
            raise Unusable(f"it returned a {type(item).__name__} where a message dict belongs")
        meta = msg.meta_of(item)
        if meta.get("kind") != msg.SUMMARY and meta.get("compressed") is not True:
            raise Unusable(
                "it returned a message that is not one of the originals and is not marked as a block it added "
                "(meta.kind 'summary' or meta.compressed true)"
            )
        pending.append(item)
    inserted.extend(_block(block, view.n, view) for block in pending)
    for block in inserted:
        for index in block.sources:
            if reasons[index] == r.OVER_BUDGET:
                reasons[index] = r.SUMMARIZED
    return Proposal(reasons, inserted)


def _block(message: dict, before: int, view: FitView) -> InsertedBlock:
    reason = r.SUMMARY if msg.meta_of(message).get("kind") == msg.SUMMARY else r.COMPRESSED
    return InsertedBlock(message, before, reason, view.count_block(message), _source_indices(message, view.n))


def check_proposal(proposal: Any, n: int) -> None:
    """Raise :class:`Unusable` when a ``propose`` answer is malformed."""
    if not isinstance(proposal, Proposal):
        raise Unusable(f"propose() returned {type(proposal).__name__}, not a Proposal")
    if len(proposal.reasons) != n:
        raise Unusable(f"propose() gave {len(proposal.reasons)} reasons for {n} messages")
    for reason in proposal.reasons:
        if reason is not None and reason not in _EXCLUDED:
            raise Unusable(f"propose() used {reason!r}, which is not an exclusion reason")
    for block in proposal.inserted:
        if not isinstance(block, InsertedBlock) or not 0 <= block.before <= n:
            raise Unusable("propose() inserted a block at an impossible position")
