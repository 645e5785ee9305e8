"""The lorebook values: a book, its entries, and why an entry activated.

Field names follow SillyTavern's World Info entry (``key`` → ``keys``,
``keysecondary`` → ``secondary_keys``, ``disable`` → ``disabled``, …) and the
defaults are SillyTavern's own (``newWorldInfoEntryDefinition`` and the
``world_info_*`` settings in ``public/scripts/world-info.js``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from contextfit.inputs.lorebook.matching import compile_regex_key

#: SillyTavern's default "Scan Depth" setting (``world_info_depth``): the
#: number of most recent chat messages searched for keys.
DEFAULT_SCAN_DEPTH = 2
#: SillyTavern's cap on any scan depth (``MAX_SCAN_DEPTH``).
MAX_SCAN_DEPTH = 1000
#: SillyTavern's default insertion depth for "@ D" entries (``DEFAULT_DEPTH``).
DEFAULT_DEPTH = 4
#: SillyTavern's default insertion order of a new entry.
DEFAULT_ORDER = 100
#: SillyTavern's default weight inside an inclusion group (``DEFAULT_WEIGHT``).
DEFAULT_GROUP_WEIGHT = 100


class SelectiveLogic(IntEnum):
    """How secondary keys combine with a primary-key match (``world_info_logic``).

    >>> SelectiveLogic(3).name
    'AND_ALL'
    """

    AND_ANY = 0  #: at least one secondary key is present
    NOT_ALL = 1  #: at least one secondary key is absent
    NOT_ANY = 2  #: no secondary key is present
    AND_ALL = 3  #: every secondary key is present


class Position(IntEnum):
    """Where SillyTavern inserts an entry (``world_info_position``).

    Entries keep the raw number, so a position this enum does not know
    survives parsing; :func:`position_name` labels it.

    >>> Position.AT_DEPTH.value
    4
    """

    BEFORE_CHAR = 0
    AFTER_CHAR = 1
    AN_TOP = 2
    AN_BOTTOM = 3
    AT_DEPTH = 4
    EM_TOP = 5
    EM_BOTTOM = 6
    OUTLET = 7


def position_name(position: int) -> str:
    """A readable label for a position number.

    >>> position_name(0), position_name(42)
    ('before_char', 'position_42')
    """
    try:
        return Position(position).name.lower()
    except ValueError:
        return f"position_{position}"


@dataclass(frozen=True, slots=True)
class LorebookEntry:
    """One World Info entry.

    ``case_sensitive``, ``match_whole_words`` and ``scan_depth`` are ``None``
    when the entry follows the book (and then the global) default. ``keys``
    may hold regex keys written as ``/pattern/flags``; see :attr:`regex_keys`.

    >>> entry = LorebookEntry(uid=0, keys=("forest",), content="Trees.")
    >>> entry.order, entry.selective_logic.name, entry.disabled
    (100, 'AND_ANY', False)
    """

    uid: int | str
    keys: tuple[str, ...] = ()
    secondary_keys: tuple[str, ...] = ()
    content: str = ""
    comment: str = ""
    selective: bool = True
    selective_logic: SelectiveLogic = SelectiveLogic.AND_ANY
    constant: bool = False
    disabled: bool = False
    order: int | float = DEFAULT_ORDER
    position: int = Position.BEFORE_CHAR
    depth: int = DEFAULT_DEPTH
    role: int | None = None
    case_sensitive: bool | None = None
    match_whole_words: bool | None = None
    scan_depth: int | None = None
    use_regex: bool = False
    probability: int | float = 100
    use_probability: bool = True
    group: str = ""
    group_override: bool = False
    group_weight: int | float = DEFAULT_GROUP_WEIGHT
    use_group_scoring: bool | None = None
    exclude_recursion: bool = False
    prevent_recursion: bool = False
    delay_until_recursion: int = 0
    sticky: int | None = None
    cooldown: int | None = None
    delay: int | None = None
    vectorized: bool = False
    display_index: int | None = None

    @property
    def regex_keys(self) -> tuple[str, ...]:
        """The primary and secondary keys that SillyTavern reads as regexes.

        >>> LorebookEntry(uid=1, keys=("/drag(on|ons)/i", "wyrm")).regex_keys
        ('/drag(on|ons)/i',)
        """
        return tuple(
            key for key in self.keys + self.secondary_keys if compile_regex_key(key) is not None
        )


@dataclass(frozen=True, slots=True)
class Lorebook:
    """A parsed lorebook: a standalone World Info file or a card's ``character_book``.

    ``scan_depth``, ``case_sensitive``, ``match_whole_words`` and ``recursive``
    are ``None`` when the book does not say, and SillyTavern's global defaults
    apply (2 messages, case-insensitive, substring matching, no recursion).
    ``token_budget`` is recorded, not enforced: the fitting engine owns the budget.

    >>> book = Lorebook(name="Eldoria", entries=(LorebookEntry(uid=0, keys=("wood",)),))
    >>> book.source_format, len(book.entries)
    ('world_info', 1)
    """

    name: str | None = None
    entries: tuple[LorebookEntry, ...] = ()
    scan_depth: int | None = None
    case_sensitive: bool | None = None
    match_whole_words: bool | None = None
    recursive: bool | None = None
    token_budget: int | None = None
    source_format: str = "world_info"


@dataclass(frozen=True, slots=True)
class Activation:
    """Why one entry is in the prompt.

    ``matched_in`` is the index, in the message sequence given to
    :func:`~contextfit.inputs.lorebook.activate`, of the newest message where
    ``matched_key`` was found; it is ``None`` for constant entries and for
    entries woken by another entry's content (recursion).

    >>> hit = Activation(LorebookEntry(uid=0), constant=True, matched_key=None,
    ...                  matched_in=None, reason="constant entry")
    >>> hit.entry.uid, hit.constant
    (0, True)
    """

    entry: LorebookEntry
    constant: bool
    matched_key: str | None
    matched_in: int | None
    reason: str
