"""``truncate``'s walk, carried from one fit of a growing chat to the next.

``truncate`` keeps the longest run of recent unprotected units (a message, or
a tool call with its results) that fits what the protected blocks leave: its
walk goes from the newest unit back until one does not fit. With every unit's
cost known, that is a search in prefix sums: with ``cum[j]`` the cost of the
oldest ``j`` units and ``total`` the cost of all of them, units ``j..`` are
kept for the smallest ``j`` whose ``total - cum[j]`` fits the room (costs are
never negative, so every shorter run fits too and the unit before does not).

A :class:`Walk` keeps those sums, the reasons, and the kept and excluded
messages of one fit. A later fit of the same messages with more at the end
(a :class:`~contextfit.pipeline.session.FitSession` vouches that the earlier
ones are the same objects, unedited) recomputes only from the oldest unit the
new messages changed: the new units, a group a new tool result joined, the
previous current input, which a new message unprotects. The previous walk's
lists are cut there and extended in place (a store keeps one walk per
counter and budget, the newest): a refit after one appended message does
work in proportion to what changed and to the kept run, not to the chat.

The answer is the plain walk's, exactly (``tests/pipeline/test_session.py`` holds a
session's fits to fresh ones, and ``tests/fitting/test_walk.py`` this walk to
:func:`~contextfit.fitting.strategies.base.fill_newest`).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_
from typing import Any

from .. import results
from ..analysis import FitView
from .base import Proposal
from .thinking import fit_thinning

#: Walks a store keeps (one per counter and budget: the newest fit of each).
WALKS_KEPT = 8


@dataclass(slots=True)
class Walk:
    """``truncate``'s walk over the first ``n`` messages for one budget. Read
    it, do not change it: the next walk made from it takes over its lists."""

    n: int
    current: int | None  # the current input it protected
    current_root: int | None  # the first member of its group then
    roots: list[int]  # first member of each unprotected unit, ascending
    cum: list[int]  # cum[j]: the cost of units roots[:j]
    cut: int  # units roots[cut:] are kept
    reasons: list[str | None]
    kept: list[dict]  # the kept messages, in order
    excluded: list[dict]


def empty_walk() -> Walk:
    """The walk over no messages, which a fresh walk is made from."""
    return Walk(0, None, None, [], [0], 0, [], [], [])


def trimmed_walk(walk: Walk, k: int) -> Walk | None:
    """``walk`` over its first ``k`` messages, when the ones after them are
    protected and in no unit (a plain tail: :meth:`~contextfit.fitting.analysis.ChatAnalysis.trimmed`);
    else ``None``. It takes over ``walk``'s lists."""
    if k > walk.n or (walk.roots and walk.roots[-1] >= k) or any(walk.reasons[k:]):
        return None
    tail = walk.n - k
    del walk.reasons[k:]
    if tail:
        del walk.kept[len(walk.kept) - tail:]  # protected: kept, and last in order
    return Walk(k, walk.current, walk.current_root, walk.roots, walk.cum, walk.cut, walk.reasons, walk.kept,
                walk.excluded)


def walked_truncate(view: FitView, budget: int, options: dict[str, Any], walks: dict) -> Proposal | None:
    """The built-in ``truncate``'s proposal for ``view``, from the last walk in
    ``walks`` (keyed by counter and budget) when there is one, and that walk
    stored for the next fit; ``None`` where the plain walk must run (options
    given, or blocks left uncounted: ``count_excluded=False`` counts only what
    the walk reaches). Its ``assembled`` carries the total and the kept and
    excluded messages, so that the host does not derive them again; the
    proposal's lists are the walk's (the host copies what it changes or keeps)."""
    if options or view.analysis.counted_total is None:
        return None
    thinned = fit_thinning(view, budget, options)  # reasoning of older turns goes first, as truncate does
    if thinned is not None:
        return thinned
    walk = carried_walk(view, budget, walks)
    return Proposal(walk.reasons, assembled=(kept_total(view, walk), walk.kept, walk.excluded))


def carried_walk(view: FitView, budget: int, walks: dict) -> Walk:
    """The plain walk over ``view`` with ``budget - view.protected_tokens()``
    tokens for unprotected units (what :func:`~.base.fill_newest` keeps from
    :func:`~.base.start_reasons`), made from the last walk in ``walks`` at that
    budget and stored in its place. Every strategy that starts with that walk
    shares it (``truncate``; ``summarize`` at its budget less the summary's
    reserve; ``vector-recall`` when its drops are older than the cut). Needs
    every block counted (``view.analysis.counted_total`` set). Read the walk's
    lists, do not change them: the next walk takes them over."""
    key = (view.counting.state, budget)
    before = walks.pop(key, None)
    if before is None or before.n > view.n:
        before = empty_walk()
    walk = extend_walk(view, before, budget - view.protected_tokens())
    walks[key] = walk
    while len(walks) > WALKS_KEPT:
        del walks[next(iter(walks))]
    return walk


def kept_total(view: FitView, walk: Walk) -> int:
    """Tokens of what ``walk`` keeps: the protected blocks and the kept units."""
    return view.protected_tokens() + walk.cum[-1] - walk.cum[walk.cut]


def cut_root(walk: Walk) -> int:
    """The first message of the oldest kept unit (``walk.n`` when none is kept)."""
    return walk.roots[walk.cut] if walk.cut < len(walk.roots) else walk.n


def _first_changed(view: FitView, before: Walk) -> int:
    """The oldest position whose unit or protection may differ from ``before``'s:
    the new messages, a group one of them joined, and the current input's
    group when the current input moved."""
    group_of, start = view.analysis.group_of, before.n
    first = start
    for index in range(start, view.n):
        root = group_of.get(index)
        if root is not None and root < first:
            first = root
    if before.current != view.current_input:
        for index in (before.current, before.current_root, view.current_input):
            if index is not None and index < first:
                first = min(index, group_of.get(index, index))
    return first


def extend_walk(view: FitView, before: Walk, room: int) -> Walk:
    """The walk over ``view`` with ``room`` tokens for unprotected units, made
    from ``before`` (a walk over a prefix of the same, unedited messages; an
    :func:`empty_walk` for a fresh one), whose lists it takes over."""
    analysis, protect, n = view.analysis, view.protect, view.n
    tokens, group_of, members = analysis.tokens, analysis.group_of, analysis.members
    first = _first_changed(view, before)
    # Units before ``first`` are the same units with the same costs: keep their sums.
    same = bisect_left(before.roots, first)
    roots, cum = before.roots, before.cum
    del roots[same:], cum[same + 1:]
    total = cum[-1]
    for index in range(first, n):
        if protect[index] is None:
            root = group_of.get(index)
            if root is None:
                total += tokens[index]  # type: ignore[operator]
            elif root == index:
                for member in members[root]:
                    total += tokens[member]  # type: ignore[operator]
            else:
                continue
            roots.append(index)
            cum.append(total)
    cut = bisect_left(cum, total - room)
    cut_root = roots[cut] if cut < len(roots) else n
    over = results.OVER_BUDGET
    reasons = before.reasons
    reasons.extend(repeat(over, n - before.n))
    for index in range(first, n):
        root = group_of.get(index, index)
        if root < first:  # a later member of an older unit: set with its unit below
            continue
        reasons[index] = None if protect[index] is not None or root >= cut_root else over
    # Older units whose fate changed: between the previous cut and this one.
    low, high = min(before.cut, cut), min(max(before.cut, cut), same)
    for j in range(low, high):
        root = roots[j]
        reason = None if j >= cut else over
        for member in members.get(root) or (root,):
            reasons[member] = reason
    # Below ``changed`` only protected messages are kept, then and now; from
    # there on the lists are made again (the kept run and what changed).
    changed = roots[low] if low < same else first
    protected = bisect_left(view.protected, changed)
    messages = view.messages
    tail, kept, excluded = reasons[changed:], before.kept, before.excluded
    del kept[protected:], excluded[changed - protected:]
    kept.extend(compress(messages[changed:], map(is_, tail, repeat(None))))
    excluded.extend(compress(messages[changed:], tail))
    current = view.current_input
    return Walk(n, current, None if current is None else group_of.get(current, current), roots, cum, cut, reasons,
                kept, excluded)
