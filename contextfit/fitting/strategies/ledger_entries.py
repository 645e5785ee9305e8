"""``fact-ledger``'s entries, carried from one fit of a growing chat to the next.

The **entries** of a chat are its history messages' fact lines
(:mod:`.ledger_facts`) whose priority reaches ``LEDGER_THRESHOLD`` — a line
whose shape recurs in ``BOILERPLATE_MESSAGES`` messages or more marked down —
in message order. Then each entry, in that order, **supersedes** every earlier
one not yet superseded that has a value of the same sort, no value in common
with it, and nearly the same key (:func:`~.ledger_facts.weighed_same_key`, the words
weighted by their rarity over all the entries, :func:`~.ledger_facts.word_weight`); it ``replaces`` the newest of
them.

All of that reads the whole history: a new message can make an older line
boilerplate, and every new entry changes every word's rarity. An
:class:`Entries` kept in the analysis' ``derived`` cache carries it exactly:

* how many messages have each line shape: a shape that reaches the mark
  marks down the entries that have it, and drops those that fall below the
  threshold;
* the pass' answers that the weights cannot change — where one key holds the
  other, the shared words are the lighter key's own: always the same thing;
  where the keys have too many words of their own for what they share, no
  weights of up to twice as many entries make them the same
  (:func:`unasked_bound`; the pass keeps the least such ratio) — and, in
  order, the others it asked (the *checks*) with their answers. When the
  weights change, the checks are asked again. If every answer stands and the
  entries are still too few to turn a pair left unasked, the pass over the old
  entries is what it was (those answers are all it took from the weights) and
  only the new entries are passed over; if not, or a dropped entry had
  superseded or been superseded, the pass runs again over every entry.

An entry meets only the earlier entries that share a key word and its sort and
are not superseded yet (an index by word that a superseded entry leaves).

So a refit after an appended message reads the new message's lines, asks the
checks again and passes over the new entries, not over the whole history
(``tests/fitting/test_ledger_entries.py`` holds every state, fresh or carried, to the
plain pass). A state is taken over by the next one (its lists extended in
place); an analysis whose state was taken over (an edit refits from the one
before) starts again from no message. Each state has a lock, held by the fit
that reads its entries, so that one being taken over is never read half-changed.
"""

from __future__ import annotations

import math
import threading
from bisect import insort
from collections.abc import Iterator
from contextlib import contextmanager
from operator import attrgetter

from ...inputs.messages import HISTORY
from ..analysis import CARRY_TRIMMERS, FitView
from .ledger_facts import (
    BOILERPLATE_MESSAGES, BOILERPLATE_PENALTY, LEDGER_THRESHOLD, SUPERSEDE_SIMILARITY, FactLine, key_weight,
    lines_bytes, message_lines, weighed_same_key, word_weight,
)

def unasked_bound(entries: int) -> float:
    """The ratio ``m / s`` past which two keys sharing ``s`` words, the one with fewer words of
    its own having ``m``, are not the same key whatever the weights of ``entries`` entries are.

    Every weight is ``log(1 + entries / holding)`` with ``1 <= holding <= entries``: between
    ``log 2`` and ``log(1 + entries)``. Same keys need the lighter key's own words to weigh at
    most ``(1 - σ) / σ`` of the shared ones (σ = ``SUPERSEDE_SIMILARITY``), so at most
    ``s * log(1 + entries) * (1 - σ) / σ`` against at least ``m * log 2``. The margin covers
    the sums' rounding.

    >>> round(unasked_bound(64), 3), round(unasked_bound(1000), 3)
    (0.669, 1.107)
    """
    return math.log1p(entries) / _LOG2 * (1 - SUPERSEDE_SIMILARITY) / SUPERSEDE_SIMILARITY * (1 + 1e-6)


_LOG2 = math.log(2)
#: The pass leaves a pair unasked by :func:`unasked_bound` of at least this many entries, or of
#: twice the entries it weighs: its certificate then holds until the entries double.
UNASKED_FLOOR = 64

#: What an entry and a supersession check hold in an :class:`Entries` (the entry object, its place in
#: the rank list and the word index; the check's tuple), for the analysis' byte bound: estimates.
ENTRY_BYTES, CHECK_BYTES = 200, 64

#: analysis.derived key of the :class:`Entries` of an analysis' messages
_KEY = ("fact-ledger-entries", -1)
_RANK = attrgetter("rank")


class Entry:
    """A fact line of one message, with its place and what superseded it."""

    __slots__ = ("index", "line", "sort", "priority", "rank", "replaces", "superseded", "shown", "source", "cost")

    def __init__(self, index: int, line: FactLine, priority: float, order: int) -> None:
        self.index = index
        self.line = line
        self.sort = line.main_sort
        self.priority = priority
        # the ledger's order of choice: priority, then the newest, then the line's place in its message
        self.rank = (-priority, -index, order)
        self.replaces: int | None = None
        self.superseded = False
        # its ledger line, its ``meta.sources`` item and the line's tokens, once asked (fact_ledger.py)
        self.shown: str | None = None
        self.source: dict | None = None
        self.cost: int | None = None


class _Rarity(dict):
    """The rarity weights (:func:`~.ledger_facts.word_weight`) of the entries' key words, worked out for the keys asked about."""

    def __init__(self, total: int, counts: dict[str, int]) -> None:
        super().__init__()
        self.total, self.counts = total, counts
        self.key_weights: dict[int, tuple[frozenset[str], float]] = {}  # id(key) -> (key, its weight)
        #: a pair past this ratio is not asked (:func:`unasked_bound`, with room for the entries to double)
        self.unasked = unasked_bound(max(2 * total, UNASKED_FLOOR))

    def holding(self, *keys: frozenset[str]) -> "_Rarity":
        """These weights, with every word of ``keys`` among them."""
        for key in keys:
            for word in key:
                if word not in self:
                    self[word] = word_weight(self.total, self.counts[word])
        return self

    def same(self, a: frozenset[str], b: frozenset[str]) -> bool:
        """Whether ``a`` and ``b`` name the same thing (:func:`~.ledger_facts.weighed_same_key`), each key weighed once for the whole pass."""
        if not a or not b:
            return False
        return weighed_same_key(a, b, self, self.weigh(a), self.weigh(b))

    def weigh(self, key: frozenset[str]) -> float:
        """:func:`~.ledger_facts.key_weight` of ``key`` (this very set: another set of the same words
        may add them in another order), its words' weights worked out."""
        known = self.key_weights.get(id(key))
        if known is not None and known[0] is key:
            return known[1]
        found = key_weight(key, self.holding(key))
        self.key_weights[id(key)] = (key, found)
        return found


class Entries:
    """The entries of a chat's first ``n`` messages, and what carries them to a longer chat."""

    __slots__ = ("n", "entries", "ranked", "shapes", "by_shape", "word_counts", "by_word", "checks", "unasked",
                 "last_line", "lock", "taken")

    def __init__(self) -> None:
        self.n = 0
        self.entries: list[Entry] = []  # in message order
        self.ranked: list[Entry] = []  # the same, by ``rank``
        self.shapes: dict[str, int] = {}  # line shape (signature) -> history messages with a line of it
        self.by_shape: dict[str, list[Entry]] = {}  # shape not yet boilerplate -> its entries
        self.word_counts: dict[str, int] = {}  # key word -> entries whose key holds it
        # (sort, key word) -> the entries passed over not (yet) superseded, in pass order (a dict: one leaves in O(1))
        self.by_word: dict[tuple[str, str], dict[Entry, None]] = {}
        self.checks: list[tuple[Entry, Entry, bool]] = []  # (earlier, later, same_key's answer), in pass order
        self.unasked = math.inf  # the least ratio of a pair the pass did not ask: not the same key below its bound
        self.last_line = -1  # the last message with a fact line
        self.lock = threading.Lock()
        self.taken = False

    @property
    def nbytes(self) -> int:
        """What the state holds, as the analysis counts it (:data:`ENTRY_BYTES`, :data:`CHECK_BYTES`)."""
        return ENTRY_BYTES * len(self.entries) + CHECK_BYTES * len(self.checks)

    def take_over(self, before: "Entries") -> None:
        """Carry on from ``before`` (whose lock the caller holds), which is not read again
        (and lets go of what it held)."""
        for name in ("n", "entries", "ranked", "shapes", "by_shape", "word_counts", "by_word", "checks", "unasked",
                     "last_line"):
            setattr(self, name, getattr(before, name))
        before.entries, before.ranked, before.checks = [], [], []
        before.shapes, before.by_shape, before.word_counts, before.by_word = {}, {}, {}, {}
        before.taken = True

    def extend(self, view: FitView) -> None:
        """The entries of ``view``'s messages, these being those of its first ``self.n``."""
        kinds, shapes = view.analysis.kinds, self.shapes
        read: list[tuple[int, tuple[FactLine, ...]]] = []
        marked: list[str] = []
        for index in range(self.n, view.n):
            lines = lines_of(view, index) if kinds[index] == HISTORY else None
            if lines:
                read.append((index, lines))
                self.last_line = index
                for shape in {line.signature for line in lines if line.signature}:
                    shapes[shape] = count = shapes.get(shape, 0) + 1
                    if count == BOILERPLATE_MESSAGES:
                        marked.append(shape)
        self.n = view.n
        dropped = []
        for shape in marked:
            for entry in self.by_shape.pop(shape, ()):
                entry.priority += BOILERPLATE_PENALTY
                self.ranked.remove(entry)
                if entry.priority < LEDGER_THRESHOLD:
                    dropped.append(entry)
                else:
                    entry.rank = (-entry.priority, *entry.rank[1:])
                    insort(self.ranked, entry, key=_RANK)
        again = any(entry.superseded or entry.replaces is not None for entry in dropped)
        if dropped:
            self._drop(dropped)
        added = []
        for index, lines in read:
            for order, line in enumerate(lines):
                priority = line.base_priority
                if shapes.get(line.signature, 0) >= BOILERPLATE_MESSAGES:
                    priority += BOILERPLATE_PENALTY
                if priority >= LEDGER_THRESHOLD:
                    entry = Entry(index, line, priority, order)
                    added.append(entry)
                    insort(self.ranked, entry, key=_RANK)
                    if line.signature and shapes[line.signature] < BOILERPLATE_MESSAGES:
                        self.by_shape.setdefault(line.signature, []).append(entry)
                    for word in line.key:
                        self.word_counts[word] = self.word_counts.get(word, 0) + 1
        self.entries.extend(added)
        weight = _Rarity(len(self.entries), self.word_counts)
        if not again and (added or dropped):  # the weights changed: do the pass' answers stand?
            same = weight.same
            again = self.unasked <= unasked_bound(weight.total) or \
                any(same(earlier.line.key, later.line.key) != answer for earlier, later, answer in self.checks)
        if again:
            for entry in self.entries:
                entry.superseded, entry.replaces, entry.shown, entry.source, entry.cost = False, None, None, None, None
            self.by_word, self.checks, self.unasked = {}, [], math.inf
        for entry in self.entries if again else added:
            self.unasked = min(self.unasked, _supersede(entry, self.by_word, weight, self.checks))

    def _drop(self, dropped: list[Entry]) -> None:
        """Forget entries that fell below the threshold."""
        gone = set(map(id, dropped))
        self.entries = [entry for entry in self.entries if id(entry) not in gone]
        self.checks = [check for check in self.checks if id(check[0]) not in gone and id(check[1]) not in gone]
        for entry in dropped:
            for word in entry.line.key:
                left = self.word_counts[word] - 1
                if left:
                    self.word_counts[word] = left
                else:
                    del self.word_counts[word]
                passed = self.by_word.get((entry.sort, word))
                if passed is not None:
                    passed.pop(entry, None)


def _supersede(entry: Entry, by_word: dict[tuple[str, str], dict[Entry, None]], weight: _Rarity,
               checks: list[tuple[Entry, Entry, bool]]) -> float:
    """The pass' step for ``entry``: the earlier entries it supersedes (module docstring). Only
    the entries not superseded yet that share a key word and the sort can be: ``by_word`` holds
    those (an entry leaves it when it is superseded). A pair whose keys have too many words of
    their own for what they share is not the same key (:func:`unasked_bound`): it is not asked,
    and the least such ratio is returned (``inf`` when none)."""
    key, values, sort, index = entry.line.key, set(entry.line.values), entry.sort, entry.index
    earlier: dict[Entry, None] = {}
    for word in key:
        passed = by_word.get((sort, word))
        if passed:
            earlier.update(passed)
    weigh, key_weight, size, bound, unasked = weight.weigh, None, len(key), weight.unasked, math.inf
    for other in earlier:
        if other.superseded or other.index >= index or not values.isdisjoint(other.line.values):
            continue
        other_key = other.line.key
        if other_key <= key or key <= other_key:
            same = True  # the shared words are the lighter key's own, whatever they weigh
        else:  # weight.same(other_key, key), both keys non-empty (they share a word), neither holding the other
            shared = len(other_key & key)
            ratio = (min(size, len(other_key)) - shared) / shared
            if ratio > bound:
                unasked = min(unasked, ratio)
                continue
            if key_weight is None:
                key_weight = weigh(key)
            same = weighed_same_key(other_key, key, weight, weigh(other_key), key_weight)
            checks.append((other, entry, same))
        if same:
            other.superseded = True
            entry.replaces = other.index if entry.replaces is None else max(entry.replaces, other.index)
            for word in other_key:
                del by_word[(sort, word)][other]
    for word in key:
        by_word.setdefault((sort, word), {})[entry] = None
    return unasked


def lines_of(view: FitView, index: int) -> tuple[FactLine, ...]:
    """A message's fact lines, kept with the conversation's analysis (a refit reads them again)
    and by its text (:func:`~.ledger_facts.message_lines`)."""
    derived = view.analysis.derived
    key = ("fact-ledger", index)
    found = derived.get(key)
    if found is None:
        found = derived[key] = message_lines(view.text(index), view.analysis.roles[index])
        view.analysis.derived_bytes += lines_bytes(found)  # held with the analysis, past the text cache's bound
    return found  # type: ignore[return-value]


@contextmanager
def held_entries(view: FitView) -> Iterator[Entries]:
    """The entries of ``view``'s messages, carried from its analysis' last state when there
    is one; the state's lock is held until the caller is done reading it."""
    derived = view.analysis.derived
    state: Entries | None = derived.get(_KEY)  # type: ignore[assignment]
    if state is not None:
        state.lock.acquire()
        if state.taken or state.n > view.n:
            state.lock.release()
            state = None
    if state is None or state.n < view.n:
        held = 0 if state is None else state.nbytes  # counted in the analysis' bytes when it was made
        new = Entries()
        new.lock.acquire()
        if state is not None:
            new.take_over(state)
            state.lock.release()
        new.extend(view)
        view.analysis.derived_bytes += new.nbytes - held
        derived[_KEY] = state = new
    try:
        yield state
    finally:
        state.lock.release()


def _trimmed(state: Entries, k: int) -> Entries | None:
    """The state of a chat's first ``k`` messages (:data:`~contextfit.fitting.analysis.CARRY_TRIMMERS`):
    ``state`` itself, or taken over, when no message from ``k`` on had a fact line; else ``None``."""
    with state.lock:
        if state.taken or state.last_line >= k:
            return None
        if state.n <= k:
            return state
        new = Entries()
        new.take_over(state)
        new.n = k
        return new


CARRY_TRIMMERS[_KEY[0]] = _trimmed


__all__ = ["Entries", "Entry", "held_entries", "lines_of"]
