"""Reading what an untrusted strategy returned, and where kept blocks stand.

A plugin strategy returns the messages to keep (or a :class:`FitResult`).
Messages it returns unchanged are recognised as the originals — by identity
with the copy it was given, else by equality in order; anything else is a
block it added, which must say what it is (``meta.kind: "summary"`` or
``meta.compressed: true``). A returned message that stands for a protected
block but differs from it is an alteration: the host restores the original.
A ``propose`` answer is checked and its inserted blocks recounted by the
host. The host derives everything else itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import compress, repeat
from operator import is_
from typing import Any

from ..errors import Unusable
from ..inputs.messages import SUMMARY, clone, explicit_id, meta_of, role_problem
from . import results
from .analysis import FitView
from .results import FitResult, InsertedBlock
from .strategies.base import Proposal

_EXCLUDED = frozenset({results.OVER_BUDGET, results.MANUAL, results.LOW_RELEVANCE, results.SUMMARIZED})



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
        if index is not None and index not in used and equal(item, originals[index]):
            used.add(index)
            found.append(index)
            cursor = index + 1
            continue
        match = None
        if isinstance(item, dict):
            for candidate in (*range(cursor, len(originals)), *range(0, cursor)):
                if candidate not in used and equal(item, originals[candidate]):
                    match = candidate
                    break
        if match is not None:
            used.add(match)
            cursor = match + 1
        found.append(match)
    return found


def equal(a: Any, b: Any) -> bool:
    """``a == b``, false when comparing raises."""
    try:
        return bool(a == b)
    except Exception:
        return False


def _source_indices(block: dict, n: int) -> tuple[int, ...]:
    meta = meta_of(block)
    found: list[int] = []
    for key in ("summarized", "sources", "source"):
        value = meta.get(key)
        values = value if isinstance(value, list) else [value]
        for entry in values:
            index = entry.get("index") if isinstance(entry, dict) else entry
            if _index_below(index, n) and index not in found:
                found.append(index)
    return tuple(sorted(found))


def _index_below(value: Any, n: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n


def _is_marked(message: dict) -> bool:
    meta = meta_of(message)
    return meta.get("kind") == SUMMARY or meta.get("compressed") is True


def _counterpart(item: dict, given_at: dict[int, int], used: set[int], view: FitView) -> int | None:
    """The input message an unrecognised item stands for: the copy it is (edited
    in place), else the first unused protected message of its role and id."""
    index = given_at.get(id(item))
    if index is not None:
        return index
    role, ident = item.get("role"), explicit_id(item)
    analysis = view.analysis
    for candidate in view.protected:
        if candidate not in used and analysis.roles[candidate] == role and analysis.ids[candidate] == ident:
            return candidate
    return None


def proposal_from_output(output: Any, view: FitView, given: list[dict]) -> tuple[Proposal, list[int]]:
    """Turn a plugin strategy's return value into a :class:`Proposal`, with the
    protected blocks it returned altered (they are restored, the proposal is
    rejected). Raises :class:`Unusable`."""
    if isinstance(output, FitResult):
        output = output.kept
    if isinstance(output, tuple):
        output = list(output)
    if not isinstance(output, list):
        raise Unusable(f"it returned {type(output).__name__}; a strategy returns a list of messages or a FitResult")
    matches = match_items(output, given, view.messages)
    used = {index for index in matches if index is not None}
    given_at = {id(copy): i for i, copy in enumerate(given)}
    reasons: list[str | None] = [results.OVER_BUDGET] * view.n
    inserted: list[InsertedBlock] = []
    pending: list[dict] = []
    altered: list[int] = []
    unmarked: str | None = None
    for item, index in zip(output, matches):
        if index is not None:
            reasons[index] = None
            inserted.extend(_block(block, index, view) for block in pending)
            pending.clear()
            continue
        if not isinstance(item, dict):
            raise Unusable(f"it returned a {type(item).__name__} where a message dict belongs", altered)
        if _is_marked(item):
            pending.append(item)
            continue
        counterpart = _counterpart(item, given_at, used, view)
        if counterpart is not None and view.protect[counterpart] is not None:
            used.add(counterpart)
            altered.append(counterpart)
        elif unmarked is None:
            unmarked = (
                "it returned a message that is not one of the originals and is not marked as a block it added "
                "(meta.kind 'summary' or meta.compressed true)"
            )
    if unmarked is not None:
        raise Unusable(unmarked, altered)
    inserted.extend(_block(block, view.n, view) for block in pending)
    for block in inserted:
        for index in block.sources:
            if reasons[index] == results.OVER_BUDGET:
                reasons[index] = results.SUMMARIZED
    return Proposal(reasons, inserted), altered


def _block(message: dict, before: int, view: FitView, sources: tuple[int, ...] = ()) -> InsertedBlock:
    """An inserted block as the host sees it: a copy, its reason from its mark,
    its tokens counted by the host."""
    problem = role_problem(message)
    if problem is not None:  # never sent: the caller's messages pass the same check
        raise Unusable(f"it added a block that cannot be sent: {problem}")
    message = clone(message)
    reason = results.SUMMARY if meta_of(message).get("kind") == SUMMARY else results.COMPRESSED
    sources = tuple(sorted({i for i in sources if _index_below(i, view.n)})) or _source_indices(message, view.n)
    return InsertedBlock(message, before, reason, view.count_block(message), sources)


def check_proposal(proposal: Any, view: FitView) -> Proposal:
    """A ``propose`` answer made safe to use: checked (raises :class:`Unusable`
    when malformed), its inserted blocks copied and recounted, its
    diagnostics kept only when they are dicts with a ``code``."""
    n = view.n
    if not isinstance(proposal, Proposal):
        raise Unusable(f"propose() returned {type(proposal).__name__}, not a Proposal")
    reasons = proposal.reasons
    if not isinstance(reasons, (list, tuple)) or len(reasons) != n:
        raise Unusable(f"propose() gave {len(reasons) if isinstance(reasons, (list, tuple)) else 'no list of'} "
                       f"reasons for {n} messages")
    for reason in reasons:
        if reason is not None and (not isinstance(reason, str) or reason not in _EXCLUDED):
            raise Unusable(f"propose() used {reason!r}, which is not an exclusion reason")
    inserted = []
    for block in proposal.inserted:
        if not isinstance(block, InsertedBlock) or not isinstance(block.before, int) or not 0 <= block.before <= n:
            raise Unusable("propose() inserted a block at an impossible position")
        if not isinstance(block.message, dict) or not _is_marked(block.message):
            raise Unusable("propose() inserted a block not marked as added (meta.kind 'summary' or meta.compressed true)")
        sources = block.sources if isinstance(block.sources, (list, tuple)) else ()
        inserted.append(_block(block.message, block.before, view, tuple(sources)))
    diagnostics = [dict(d) for d in proposal.diagnostics if isinstance(d, dict) and isinstance(d.get("code"), str)]
    return Proposal(list(reasons), inserted, diagnostics)


# -- where kept blocks stand -------------------------------------------------------


def kept_mask(reasons: list[str | None]) -> Iterator[bool]:
    """True for each kept input message (its reason is ``None``)."""
    return map(is_, reasons, repeat(None))


def insertions(reasons: list[str | None], inserted: list[InsertedBlock]) -> list[tuple[int, InsertedBlock]]:
    """Where each inserted block goes among the kept messages, in order: before
    its input position, after the kept messages in front of it and the blocks
    inserted before it."""
    ordered = sorted(inserted, key=lambda block: block.before)
    if not ordered:
        return []
    # One running count of the kept messages: counting a prefix per block was
    # quadratic (257 ms of a 10,000-message clear-tool-results refit). It runs
    # from the end, where a strategy's blocks stand (a summary, the newest
    # cleared results): the kept before a block are the kept less those after it.
    found, kept, downto = [], reasons.count(None), len(reasons)
    for k in range(len(ordered) - 1, -1, -1):
        block = ordered[k]
        if block.before < downto:
            kept -= reasons[block.before: downto].count(None)
            downto = block.before
        found.append((kept + k, block))
    found.reverse()
    return found


def prompt_items(view: FitView, proposal: Proposal) -> list[tuple[dict, int | InsertedBlock]]:
    """The kept blocks in prompt order, each with where it came from: its
    input index, or the :class:`InsertedBlock` it is."""
    messages, reasons = view.messages, proposal.reasons
    items: list[tuple[dict, int | InsertedBlock]] = [
        (messages[index], index) for index in compress(range(view.n), kept_mask(reasons))
    ]
    for position, block in insertions(reasons, proposal.inserted):
        items.insert(position, (block.message, block))
    return items
