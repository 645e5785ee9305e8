"""Read SillyTavern World Info JSON and Character Card ``character_book`` objects.

Accepted shapes:

- a World Info file, ``{"entries": {"0": {...}, ...}}`` (or ``entries`` as a
  list), with the 2023 field set (``uid``, ``key``, ``keysecondary``,
  ``comment``, ``content``, ``constant``, ``selective``, ``order``) or the
  current one (``disable``, ``position``, ``depth``, ``probability``,
  ``group``, ``scanDepth``, ``caseSensitive``, ``matchWholeWords``,
  ``selectiveLogic``, ``*Recursion``, ``sticky``/``cooldown``/``delay``, …);
- a Character Card V2/V3 ``character_book`` (``keys``, ``secondary_keys``,
  ``insertion_order``, ``enabled``, ``position: "before_char"|"after_char"``,
  ``extensions: {...}``), read the way SillyTavern's ``convertCharacterBook``
  reads it (``extensions.*`` wins over the top-level spec fields);
- a whole character card, whose ``data.character_book`` is read.

Missing fields take SillyTavern's defaults. Two deliberate leniencies: a key
list written as one string is split on commas, and a card entry without
``enabled`` is enabled (SillyTavern would silently disable it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.limits import MAX_LOREBOOK_ENTRIES
from contextfit.inputs.lorebook import readers as read
from contextfit.inputs.lorebook.model import (
    DEFAULT_DEPTH,
    DEFAULT_GROUP_WEIGHT,
    DEFAULT_ORDER,
    MAX_SCAN_DEPTH,
    Lorebook,
    LorebookEntry,
    Position,
)

# Fields only a World Info entry has; their presence marks the book's dialect.
_WORLD_INFO_MARKERS = ("key", "keysecondary", "uid", "disable", "order")


def parse_world_info(data: object, *, location: str = "$") -> Lorebook:
    """Parse a World Info object or a card's ``character_book`` into a :class:`Lorebook`.

    ``data`` is already-decoded JSON. Anything unreadable raises
    :class:`~contextfit.errors.InvalidConversation` whose ``location`` is a
    JSON path under ``location`` (e.g. ``$.entries["3"].key``).

    >>> book = parse_world_info({"entries": {"0": {"uid": 0, "key": ["wood"], "content": "Trees."}}})
    >>> book.source_format, book.entries[0].keys, book.entries[0].order
    ('world_info', ('wood',), 100)
    >>> card_book = parse_world_info({"name": "Eldoria", "entries": [
    ...     {"keys": ["glade"], "content": "A haven.", "insertion_order": 5, "enabled": True}]})
    >>> card_book.source_format, card_book.name, card_book.entries[0].uid
    ('character_book', 'Eldoria', 0)
    >>> parse_world_info({"entries": {"3": {"key": 7}}})
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidConversation: "key" must be a list of keywords such as ["forest", ...
    """
    if not isinstance(data, Mapping):
        raise InvalidConversation(
            f"A lorebook must be a JSON object with an \"entries\" field, not {read.describe(data)}.",
            location=location,
        )
    if "entries" not in data:
        return _parse_wrapped_card(data, location)
    entries = data["entries"]
    entries_location = read.child(location, "entries")
    if isinstance(entries, (Mapping, list)) and len(entries) > MAX_LOREBOOK_ENTRIES:
        raise InvalidConversation(
            f"This lorebook has {len(entries):,} entries; contextfit reads at most {MAX_LOREBOOK_ENTRIES:,} "
            "(contextfit.limits.MAX_LOREBOOK_ENTRIES). Split it into smaller books.",
            location=entries_location,
        )
    if isinstance(entries, Mapping):
        items = [
            (read.child(entries_location, str(key)), raw, read.uid_from_key(str(key)))
            for key, raw in _js_key_order(entries)
        ]
    elif isinstance(entries, list):
        items = [(read.child(entries_location, i), v, None) for i, v in enumerate(entries)]
    else:
        raise InvalidConversation(
            "\"entries\" must be an object keyed by entry id or a list of entries, "
            f"not {read.describe(entries)}.",
            location=entries_location,
        )
    for entry_location, raw, _ in items:
        if not isinstance(raw, Mapping):
            raise InvalidConversation(
                f"Each lorebook entry must be a JSON object, not {read.describe(raw)}.",
                location=entry_location,
            )
    card_dialect = isinstance(entries, list) and not any(
        marker in raw for _, raw, _ in items for marker in _WORLD_INFO_MARKERS
    )
    read_entry = _card_entry if card_dialect else _world_info_entry
    id_field = "id" if card_dialect else "uid"
    parsed = [
        read_entry(raw, loc, fallback)
        for (loc, raw, _), fallback in zip(items, _fallback_uids(items, id_field))
    ]
    _check_unique_uids(parsed, [loc for loc, _, _ in items])
    return Lorebook(
        name=read.text(data, "name", location, default=None),
        entries=tuple(parsed),
        scan_depth=read.integer(data, "scan_depth", location, minimum=0, maximum=MAX_SCAN_DEPTH),
        case_sensitive=read.flag(data, "case_sensitive", location, default=None),
        match_whole_words=read.flag(data, "match_whole_words", location, default=None),
        recursive=read.flag(data, "recursive_scanning", location, default=None),
        token_budget=read.integer(data, "token_budget", location, minimum=0),
        source_format="character_book" if card_dialect else "world_info",
    )


def _parse_wrapped_card(data: Mapping[str, Any], location: str) -> Lorebook:
    """A whole character card (or its ``data``) handed over instead of the book."""
    inner = data.get("data")
    if isinstance(inner, Mapping) and "character_book" in inner:
        data, location = inner, read.child(location, "data")
    if "character_book" not in data:
        raise InvalidConversation(
            "This is not a lorebook: it has no \"entries\" field. Load a SillyTavern World Info "
            "file or a character card's character_book.",
            location=location,
        )
    book, location = data["character_book"], read.child(location, "character_book")
    if book is None:
        raise InvalidConversation(
            "This character card has no embedded lorebook (data.character_book is empty).",
            location=location,
        )
    if not isinstance(book, Mapping) or "entries" not in book:
        # Unwrap one level only, so nested input can never recurse deeply.
        raise InvalidConversation(
            "A character card's character_book must be an object with an \"entries\" list.",
            location=location,
        )
    return parse_world_info(book, location=location)


def _world_info_entry(raw: Mapping[str, Any], loc: str, fallback_uid: int | str | None) -> LorebookEntry:
    uid = read.uid(raw, "uid", loc, fallback_uid)
    keys = read.keys(raw, "key", loc) if "key" in raw else read.keys(raw, "keys", loc)
    return LorebookEntry(
        uid=uid,
        keys=keys,
        secondary_keys=read.keys(raw, "keysecondary", loc),
        content=read.text(raw, "content", loc),
        comment=read.text(raw, "comment", loc),
        selective=read.flag(raw, "selective", loc, default=True),
        selective_logic=read.logic(raw, "selectiveLogic", loc),
        constant=read.flag(raw, "constant", loc, default=False),
        disabled=read.flag(raw, "disable", loc, default=False),
        order=read.number(raw, "order", loc, default=DEFAULT_ORDER),
        position=read.position(raw, "position", loc, default=Position.BEFORE_CHAR),
        depth=read.integer(raw, "depth", loc, minimum=0, default=DEFAULT_DEPTH),
        role=read.integer(raw, "role", loc, minimum=0),
        case_sensitive=read.flag(raw, "caseSensitive", loc, default=None),
        match_whole_words=read.flag(raw, "matchWholeWords", loc, default=None),
        scan_depth=read.integer(raw, "scanDepth", loc, minimum=0, maximum=MAX_SCAN_DEPTH),
        use_regex=read.flag(raw, "use_regex", loc, default=False),
        **_shared_fields(lambda field: (raw, field, loc), camel=True),
    )


def _fallback_uids(items: list[tuple[str, Any, Any]], id_field: str) -> list[int | str | None]:
    """The id an entry gets when it has none: its key in an object, else the
    smallest id no other entry uses (SillyTavern's ``convertCharacterBook``)."""
    used = {str(raw[id_field]) for _, raw, _ in items if raw.get(id_field) is not None}
    next_free = 0
    fallbacks: list[int | str | None] = []
    for _, raw, key_uid in items:
        if key_uid is not None or raw.get(id_field) is not None:
            fallbacks.append(key_uid)  # an explicit id wins over the fallback anyway
            continue
        while str(next_free) in used:
            next_free += 1
        fallbacks.append(next_free)
        used.add(str(next_free))
    return fallbacks


def _card_entry(raw: Mapping[str, Any], loc: str, fallback_uid: int | str | None) -> LorebookEntry:
    ext = raw.get("extensions")
    ext_loc = read.child(loc, "extensions")
    if ext is None:
        ext = {}
    elif not isinstance(ext, Mapping):
        raise InvalidConversation(
            f"\"extensions\" must be a JSON object, not {read.describe(ext)}.", location=ext_loc
        )

    def pick(ext_field: str, top_field: str | None = None) -> tuple[Mapping[str, Any], str, str]:
        # extensions.* wins, as in SillyTavern's convertCharacterBook.
        if ext.get(ext_field) is not None or top_field is None or raw.get(top_field) is None:
            return ext, ext_field, ext_loc
        return raw, top_field, loc

    if ext.get("position") is not None:
        position = read.position(ext, "position", ext_loc, default=Position.BEFORE_CHAR)
    else:
        position = read.position(raw, "position", loc, default=Position.AFTER_CHAR)
    keys = read.keys(raw, "keys", loc) if "keys" in raw else read.keys(raw, "key", loc)
    comment = read.text(raw, "comment", loc) or read.text(raw, "name", loc)
    return LorebookEntry(
        uid=read.uid(raw, "id", loc, fallback_uid),
        keys=keys,
        secondary_keys=read.keys(raw, "secondary_keys", loc),
        content=read.text(raw, "content", loc),
        comment=comment,
        selective=read.flag(raw, "selective", loc, default=False),
        selective_logic=read.logic(*pick("selectiveLogic", "selective_logic")),
        constant=read.flag(raw, "constant", loc, default=False),
        disabled=not read.flag(raw, "enabled", loc, default=True),
        order=read.number(raw, "insertion_order", loc, default=DEFAULT_ORDER),
        position=position,
        depth=read.integer(ext, "depth", ext_loc, minimum=0, default=DEFAULT_DEPTH),
        role=read.integer(ext, "role", ext_loc, minimum=0),
        case_sensitive=read.flag(*pick("case_sensitive", "case_sensitive"), default=None),
        match_whole_words=read.flag(*pick("match_whole_words", "match_whole_words"), default=None),
        scan_depth=read.integer(*pick("scan_depth", "scan_depth"), minimum=0, maximum=MAX_SCAN_DEPTH),
        use_regex=read.flag(raw, "use_regex", loc, default=False),
        **_shared_fields(lambda field: (ext, field, ext_loc), camel=False),
    )


def _shared_fields(
    where: Callable[[str], tuple[Mapping[str, Any], str, str]], *, camel: bool
) -> dict[str, Any]:
    """Fields spelled camelCase in World Info and snake_case in card ``extensions``."""

    def name(camel_name: str, snake_name: str) -> tuple[Mapping[str, Any], str, str]:
        return where(camel_name if camel else snake_name)

    # Cards store "useProbability" in camelCase even inside extensions.
    return {
        "probability": read.probability(*where("probability")),
        "use_probability": read.flag(*where("useProbability"), default=True),
        "group": read.text(*where("group")),
        "group_override": read.flag(*name("groupOverride", "group_override"), default=False),
        "group_weight": read.number(*name("groupWeight", "group_weight"), default=DEFAULT_GROUP_WEIGHT),
        "use_group_scoring": read.flag(*name("useGroupScoring", "use_group_scoring"), default=None),
        "exclude_recursion": read.flag(*name("excludeRecursion", "exclude_recursion"), default=False),
        "prevent_recursion": read.flag(*name("preventRecursion", "prevent_recursion"), default=False),
        "delay_until_recursion": read.recursion_level(*name("delayUntilRecursion", "delay_until_recursion")),
        "sticky": read.integer(*where("sticky"), minimum=0),
        "cooldown": read.integer(*where("cooldown"), minimum=0),
        "delay": read.integer(*where("delay"), minimum=0),
        "vectorized": read.flag(*where("vectorized"), default=False),
        "display_index": read.integer(*name("displayIndex", "display_index")),
    }


def _check_unique_uids(entries: list[LorebookEntry], locations: list[str]) -> None:
    seen: dict[str, str] = {}
    for entry, loc in zip(entries, locations):
        key = str(entry.uid)
        if key in seen:
            raise InvalidConversation(
                f"Two lorebook entries share the id {key!r} (the other is at {seen[key]}); "
                f"give each entry its own uid.",
                location=loc,
            )
        seen[key] = loc



def _js_key_order(entries: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """JavaScript's object key order: integer-like keys ascending, then the rest as written.

    SillyTavern scans a book in this order, which decides ties in ``order``.
    """
    items = list(entries.items())
    is_index = [bool(read.CANONICAL_INDEX.fullmatch(str(key))) for key, _ in items]
    numeric = sorted((kv for kv, index in zip(items, is_index) if index), key=lambda kv: int(kv[0]))
    named = [kv for kv, index in zip(items, is_index) if not index]
    return numeric + named
