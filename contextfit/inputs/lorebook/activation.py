"""Which lorebook entries a chat wakes, after SillyTavern's ``checkWorldInfo``.

Followed from SillyTavern:

- the last ``scan_depth`` chat messages are scanned, newest first (default 2,
  capped at 1000; 0 scans nothing); only chat turns count (kind ``history``
  in :func:`contextfit.inputs.messages.kind_of`: not system/developer messages, not
  lorebook, character or memory blocks); text parts are read, tool calls are
  not; a message's ``name`` is prefixed (``"Ana: …"``) as SillyTavern's
  default "include names" does;
- settings resolve entry → ``activate()`` argument → book → SillyTavern global
  default (case-insensitive, substring matching, no recursion);
- ``disabled`` entries never activate; ``constant`` ones always do; an entry
  without keys activates only when constant; the first primary key (in the
  entry's order) that is found wins; secondary keys apply only when
  ``selective`` is true and there are some, with AND_ANY / NOT_ALL / NOT_ANY /
  AND_ALL exactly as ``matchSecondaryKeys``;
- ``{{user}}``/``{{char}}`` in keys (and in content fed to recursion) are
  replaced from ``names`` first;
- recursion (book ``recursive_scanning`` or ``recursive=True``): activated
  content is scanned again until nothing new activates; ``exclude_recursion``,
  ``prevent_recursion`` and ``delay_until_recursion`` levels behave as in
  SillyTavern; a match in another entry's content has ``matched_in=None``;
- ``delay`` (an entry waits until the chat has that many messages);
- inclusion groups: of several entries of one group activated in a pass, one
  stays: the ``group_override`` one with the highest order, else a weighted
  roll with ``rng``, or without ``rng`` the heaviest (ties: highest order,
  then first in the book); a group already represented takes no more;
- ``probability`` is rolled only when an ``rng`` (``random.Random``) is given;
  without one every matched entry activates, so a plan is reproducible;
- the result is in prompt order: ascending ``order``; SillyTavern walks
  entries by descending order and prepends each one, so among equal orders
  the later-activated entry (the later one in the book, within a pass) comes
  first.

Left out: sticky and cooldown (they need per-chat state across generations),
group scoring, the token budget (the fitting engine owns it), minimum
activations, ``@@activate`` decorators, character/tag filters, generation
triggers, scanning the persona/character description, vector retrieval
(``vectorized`` entries are scanned like any other, as ``checkWorldInfo`` does),
and the Author's Note injection buffer.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping, Sequence

from contextfit.inputs.lorebook.matching import RegexBudget, ScanText, find_key, key_source, substitute_names
from contextfit.inputs.lorebook.model import (
    DEFAULT_SCAN_DEPTH,
    MAX_SCAN_DEPTH,
    Activation,
    Lorebook,
    LorebookEntry,
    SelectiveLogic,
)
from contextfit.inputs.messages import HISTORY, kind_of


def activate(
    lorebook: Lorebook,
    messages: Sequence[dict | str],
    *,
    scan_depth: int | None = None,
    case_sensitive: bool | None = None,
    match_whole_words: bool | None = None,
    names: Mapping[str, str] | None = None,
    recursive: bool | None = None,
    include_names: bool = True,
    rng: random.Random | None = None,
    budget: RegexBudget | None = None,
) -> list[Activation]:
    """The entries ``messages`` activate, in prompt order.

    ``messages`` are OpenAI-shaped dicts (``content`` text or text parts) or
    plain strings, oldest first. The keyword settings override the book's
    defaults; an entry's own setting overrides both. Regex keys run under
    ``budget`` (see :class:`~contextfit.inputs.lorebook.matching.RegexBudget`; a
    fresh one when not given), which reports the keys a limit stopped.

    >>> from contextfit.inputs.lorebook.model import LorebookEntry, Lorebook
    >>> book = Lorebook(entries=(
    ...     LorebookEntry(uid=0, keys=("wood",), content="Eldoria is a forest."),
    ...     LorebookEntry(uid=1, content="Magic is real.", constant=True, order=50)))
    >>> [(a.entry.uid, a.matched_key, a.matched_in) for a in activate(book, ["Hi", "Into the WOODS"])]
    [(1, None, None), (0, 'wood', 1)]
    >>> [a.entry.uid for a in activate(book, ["Into the woods", "Hi", "Hello"])]
    [1]
    """
    run = _Scan(
        lorebook,
        chat=_Chat(messages, include_names),
        scan_depth=_first(scan_depth, lorebook.scan_depth, DEFAULT_SCAN_DEPTH),
        case_sensitive=_first(case_sensitive, lorebook.case_sensitive, False),
        match_whole_words=_first(match_whole_words, lorebook.match_whole_words, False),
        names=names,
        budget=budget or RegexBudget(),
    )
    sequence = run.scan(recursive=_first(recursive, lorebook.recursive, False), rng=rng)
    numbered = sorted(enumerate(sequence), key=lambda pair: (pair[1].entry.order, -pair[0]))
    return [activation for _, activation in numbered]


class _Scan:
    """One evaluation: the chat pieces, the settings, and the recursion buffer."""

    def __init__(self, lorebook: Lorebook, *, chat: _Chat, scan_depth: int, case_sensitive: bool,
                 match_whole_words: bool, names: Mapping[str, str] | None, budget: RegexBudget) -> None:
        self.lorebook = lorebook
        self.chat = chat
        self.scan_depth = scan_depth
        self.case_sensitive = case_sensitive
        self.match_whole_words = match_whole_words
        self.names = names
        self.budget = budget
        self.recursion_pieces: list[tuple[str, Hashable]] = []
        self._texts: dict[int, ScanText] = {}

    def scan(self, *, recursive: bool, rng: random.Random | None) -> list[Activation]:
        # Descending order, book order among equals: SillyTavern's sortFn on a stable sort.
        entries = sorted(self.lorebook.entries, key=lambda entry: -entry.order)
        levels = sorted({e.delay_until_recursion for e in entries if e.delay_until_recursion})
        level = levels.pop(0) if levels else 0
        in_recursion = False
        done: dict[str, Activation] = {}
        failed: set[str] = set()
        while True:
            found = [
                hit for entry in entries
                if str(entry.uid) not in done and str(entry.uid) not in failed
                and self._eligible(entry, in_recursion, recursive, level)
                and (hit := self._check(entry)) is not None
            ]
            found = _filter_groups(found, list(done.values()), rng)
            for hit in found:
                if _passes_probability(hit.entry, rng):
                    done[str(hit.entry.uid)] = hit
                else:
                    failed.add(str(hit.entry.uid))
            feeding = [h.entry for h in found if str(h.entry.uid) in done and not h.entry.prevent_recursion]
            if recursive and feeding:
                in_recursion = True
            elif levels:
                in_recursion, level = True, levels.pop(0)
            else:
                return list(done.values())
            self._feed(feeding)

    def _eligible(self, entry: LorebookEntry, in_recursion: bool, recursive: bool, level: int) -> bool:
        if entry.disabled or (entry.delay and self.chat.length() < entry.delay):
            return False
        if entry.delay_until_recursion and (not in_recursion or entry.delay_until_recursion > level):
            return False
        return not (in_recursion and recursive and entry.exclude_recursion)

    def _feed(self, entries: list[LorebookEntry]) -> None:
        for entry in entries:
            if entry.content:
                text = substitute_names(entry.content, self.names)
                self.recursion_pieces.append((text, ("entry", entry.uid)))
        self._texts.clear()

    def _text(self, depth: int) -> ScanText:
        depth = min(int(depth), MAX_SCAN_DEPTH)
        if depth not in self._texts:
            # A depth of 0 scans nothing at all, recursion included, as in SillyTavern.
            pieces = self.chat.newest(depth) + self.recursion_pieces if depth > 0 else []
            self._texts[depth] = ScanText.build(pieces)
        return self._texts[depth]

    def _check(self, entry: LorebookEntry) -> Activation | None:
        if entry.constant:
            return Activation(entry, constant=True, matched_key=None, matched_in=None,
                              reason="constant entry")
        if not entry.keys:
            return None
        scan = self._text(_first(entry.scan_depth, self.scan_depth))
        case_sensitive = _first(entry.case_sensitive, self.case_sensitive)
        whole_words = _first(entry.match_whole_words, self.match_whole_words)

        def find(key: str) -> tuple[str, Hashable] | None:
            needle = substitute_names(key, self.names).strip()
            position = find_key(
                scan, needle, case_sensitive=case_sensitive, match_whole_words=whole_words, budget=self.budget
            )
            if position is None:
                return None
            return needle, key_source(scan, needle, position, case_sensitive=case_sensitive)

        for key in entry.keys:
            if (primary := find(key)) is not None:
                break
        else:
            return None
        where = primary[1]
        reason = f"key {key!r} found in " + _describe_source(where)
        if entry.selective and entry.secondary_keys:
            verdict = _secondary(entry, find)
            if verdict is None:
                return None
            reason += f"; {verdict}"
        matched_in = where[1] if isinstance(where, tuple) and where[0] == "message" else None
        return Activation(entry, constant=False, matched_key=key, matched_in=matched_in, reason=reason)


def _secondary(entry: LorebookEntry, find: Callable[[str], object]) -> str | None:
    """SillyTavern's ``matchSecondaryKeys``: a phrase for the reason, or ``None`` when it fails."""
    logic = entry.selective_logic
    any_found, all_found = False, True
    for key in entry.secondary_keys:
        hit = find(key) is not None
        any_found, all_found = any_found or hit, all_found and hit
        if logic is SelectiveLogic.AND_ANY and hit:
            return f"secondary key {key!r} found (AND_ANY)"
        if logic is SelectiveLogic.NOT_ALL and not hit:
            return f"secondary key {key!r} absent (NOT_ALL)"
    if logic is SelectiveLogic.NOT_ANY and not any_found:
        return "no secondary key found (NOT_ANY)"
    if logic is SelectiveLogic.AND_ALL and all_found:
        return "every secondary key found (AND_ALL)"
    return None


def _filter_groups(
    found: list[Activation], earlier: list[Activation], rng: random.Random | None
) -> list[Activation]:
    """Keep one entry per inclusion group (``filterByInclusionGroups`` without scoring or timers)."""
    taken_groups = {name for a in earlier for name in _groups(a.entry)}
    dropped: set[int] = set()
    groups: dict[str, list[Activation]] = {}
    for hit in found:
        for name in _groups(hit.entry):
            groups.setdefault(name, []).append(hit)
    for name, members in groups.items():
        if name in taken_groups:
            dropped.update(id(m) for m in members)
            continue
        if len(members) <= 1:
            continue
        overriding = [m for m in members if m.entry.group_override]
        if overriding:
            winner = max(overriding, key=lambda m: m.entry.order)  # first of the highest order
        elif rng is not None:
            winner = _weighted_pick(members, rng)
        else:
            winner = max(members, key=lambda m: m.entry.group_weight)
        dropped.update(id(m) for m in members if m is not winner)
    return [hit for hit in found if id(hit) not in dropped]


def _groups(entry: LorebookEntry) -> list[str]:
    return [name.strip() for name in entry.group.split(",") if name.strip()]


def _weighted_pick(members: list[Activation], rng: random.Random) -> Activation:
    total = sum(max(0, m.entry.group_weight) for m in members)
    roll, running = rng.random() * total, 0.0
    for member in members:
        running += max(0, member.entry.group_weight)
        if roll <= running:
            return member
    return members[-1]


def _passes_probability(entry: LorebookEntry, rng: random.Random | None) -> bool:
    if rng is None or not entry.use_probability or entry.probability >= 100:
        return True
    return rng.random() * 100 <= entry.probability


class _Chat:
    """The chat messages' scanned texts, newest first, read as far back as a
    scan asks (a long chat's older messages are never read: the default scan
    depth is a few messages, and none reaches past :data:`MAX_SCAN_DEPTH`)."""

    def __init__(self, messages: Sequence[object], include_names: bool) -> None:
        self.messages = messages
        self.include_names = include_names
        self.pieces: list[tuple[str, Hashable]] = []  # (text, ("message", index)), newest first
        self.unread = len(messages)  # the messages before this one are not read yet

    def newest(self, depth: int) -> list[tuple[str, Hashable]]:
        """The pieces of the newest ``depth`` chat messages."""
        messages, pieces = self.messages, self.pieces
        while len(pieces) < depth and self.unread:
            self.unread -= 1
            text = _message_text(messages[self.unread], self.include_names)
            if text is not None:
                pieces.append((text, ("message", self.unread)))
        return pieces[:depth]

    def length(self) -> int:
        """How many chat messages there are (an entry's ``delay`` waits for that many)."""
        return len(self.pieces) + sum(1 for message in self.messages[: self.unread] if isinstance(message, str) or (
            isinstance(message, dict) and kind_of(message) == HISTORY))


def _message_text(message: object, include_names: bool) -> str | None:
    """The scanned text of a chat turn, or ``None`` for a string that is not chat."""
    if isinstance(message, str):
        return message.strip()
    if not isinstance(message, dict) or kind_of(message) != HISTORY:
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        # Text parts only: SillyTavern scans what was said, not tool calls or reasoning.
        parts = [p if isinstance(p, str) else p.get("text") for p in content if isinstance(p, (str, dict))]
        text = "\n".join(part for part in parts if isinstance(part, str))
    else:
        text = ""
    name = message.get("name")
    if include_names and isinstance(name, str) and name.strip():
        text = f"{name}: {text}"
    return text.strip()


def _describe_source(source: Hashable) -> str:
    if isinstance(source, tuple) and source[0] == "entry":
        return f"the content of entry {source[1]!r} (recursive scan)"
    if isinstance(source, tuple):
        return f"message {source[1]}"
    return "the scanned text"


def _first(*values):  # type: ignore[no-untyped-def]
    """The first value that is not ``None`` (JavaScript's ``??``)."""
    for value in values:
        if value is not None:
            return value
    return None
