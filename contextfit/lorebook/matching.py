"""How a key is found in the scanned text, after SillyTavern's ``WorldInfoBuffer``.

The scanned text is built like SillyTavern's buffer: the newest message
first, every piece preceded by ``"\\x01"`` and separated by a newline, so a
match never straddles two messages and a whole-word test sees a boundary at
each message's edges. Each piece remembers where it came from, so a match can
be traced to its message (or to the entry whose content woke it).

Key matching (``matchKeys``):

- a key written ``/pattern/flags`` (flags from ``gimsuy``, every inner ``/``
  escaped) is a regex and ignores the case and whole-word settings; the
  JavaScript pattern runs on Python's ``re`` after translating named groups
  (``(?<name>…)``, ``\\k<name>``) and ``[^]``. A pattern ``re`` cannot compile is
  matched as plain text, as SillyTavern does with an invalid regex;
- otherwise, unless case-sensitive, both sides are lower-cased and the key is
  searched as a substring, or, with whole words on, between word boundaries.
  Unlike SillyTavern, which falls back to a bare substring test for keys of
  several words, multi-word keys get boundaries too ("magical forest" does not
  match "magical forestry"), and a word character is Python's Unicode one
  (accented letters are letters; JavaScript's ``\\W`` treats "é" as a boundary).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

MATCHER = "\x01"
JOINER = "\n" + MATCHER

_REGEX_KEY = re.compile(r"^/([\s\S]+?)/([gimsuy]*)$")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_MACRO = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}|<(USER|BOT|CHAR)>", re.IGNORECASE)
_LEGACY_MACRO = {"user": "user", "bot": "char", "char": "char"}


def substitute_names(text: str, names: Mapping[str, str] | None) -> str:
    """Replace ``{{user}}``, ``{{char}}`` (any name in ``names``) and the legacy
    ``<USER>``/``<BOT>``/``<CHAR>``; unknown macros stay as written.

    >>> substitute_names("{{User}} meets <BOT>", {"user": "Ana", "char": "Seraphina"})
    'Ana meets Seraphina'
    >>> substitute_names("{{time}}", {"user": "Ana"})
    '{{time}}'
    """
    if not names or "{{" not in text and "<" not in text:
        return text
    lowered = {str(k).lower(): str(v) for k, v in names.items()}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or _LEGACY_MACRO[match.group(2).lower()]
        return lowered.get(name.lower(), match.group(0))

    return _MACRO.sub(replace, text)


@dataclass(frozen=True, slots=True)
class RegexKey:
    """A compiled ``/pattern/flags`` key; ``sticky`` (flag ``y``) anchors it at the start."""

    pattern: re.Pattern[str]
    sticky: bool

    def search(self, haystack: str) -> int | None:
        """Where the pattern matches, or ``None``."""
        found = self.pattern.match(haystack) if self.sticky else self.pattern.search(haystack)
        return None if found is None else found.start()


@lru_cache(maxsize=2048)
def compile_regex_key(key: str) -> RegexKey | None:
    """The regex a key stands for, or ``None`` when it is plain text (``parseRegexFromString``).

    >>> compile_regex_key("/shadow ?fangs?/i").pattern.flags & re.IGNORECASE != 0
    True
    >>> compile_regex_key("forest") is None, compile_regex_key("/a/b/") is None
    (True, True)
    """
    found = _REGEX_KEY.match(key)
    if not found:
        return None
    pattern, flags = found.groups()
    if _UNESCAPED_SLASH.search(pattern) or len(set(flags)) != len(flags):
        return None
    pattern = pattern.replace("\\/", "/")
    pattern = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    pattern = re.sub(r"\\k<([A-Za-z_]\w*)>", r"(?P=\1)", pattern)
    pattern = pattern.replace("[^]", r"[\s\S]")
    options = 0
    options |= re.IGNORECASE if "i" in flags else 0
    options |= re.MULTILINE if "m" in flags else 0
    options |= re.DOTALL if "s" in flags else 0
    try:
        return RegexKey(re.compile(pattern, options), sticky="y" in flags)
    except Exception:  # re.error, and OverflowError/RecursionError on monstrous patterns
        return None


def _find_whole_word(haystack: str, needle: str) -> int | None:
    """First ``needle`` with no word character on either side (``(?<!\\w)needle(?!\\w)``).

    A ``str.find`` walk: a regex that starts with a lookbehind cannot use the
    literal-prefix search and is ~50x slower on long chats.
    """
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or not _is_word(haystack[start - 1])) and (
            end == len(haystack) or not _is_word(haystack[end])
        ):
            return start
        start = haystack.find(needle, start + 1)
    return None


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"  # exactly re's Unicode \w


@dataclass(slots=True)
class ScanText:
    """The text one entry scans: pieces joined SillyTavern's way, each with its source.

    >>> scan = ScanText.build([("Hello there", ("message", 3)), ("The wood", ("message", 2))])
    >>> hit = find_key(scan, "wood", case_sensitive=True, match_whole_words=True)
    >>> scan.source_at(hit)
    ('message', 2)
    """

    text: str
    lowered: str
    _starts: list[int] = field(default_factory=list)
    _lowered_starts: list[int] = field(default_factory=list)
    _sources: list[Hashable] = field(default_factory=list)

    @classmethod
    def build(cls, pieces: Sequence[tuple[str, Hashable]]) -> ScanText:
        """Join ``(text, source)`` pieces, newest first."""
        texts = [text for text, _ in pieces]
        lowered = [text.lower() for text in texts]
        return cls(
            text=MATCHER + JOINER.join(texts) if texts else "",
            lowered=MATCHER + JOINER.join(lowered) if texts else "",
            _starts=_offsets(texts),
            _lowered_starts=_offsets(lowered),
            _sources=[source for _, source in pieces],
        )

    def source_at(self, position: int | None, *, lowered: bool = False) -> Hashable | None:
        """The source of the piece holding ``position`` in :attr:`text` (or :attr:`lowered`)."""
        starts = self._lowered_starts if lowered else self._starts
        if position is None or not starts:
            return None
        return self._sources[max(0, bisect.bisect_right(starts, position) - 1)]


def _offsets(texts: list[str]) -> list[int]:
    starts, position = [], len(MATCHER)
    for text in texts:
        starts.append(position)
        position += len(text) + len(JOINER)
    return starts


def find_key(scan: ScanText, key: str, *, case_sensitive: bool, match_whole_words: bool) -> int | None:
    """Where ``key`` (already macro-substituted) is found in ``scan``, or ``None``.

    A position in :attr:`ScanText.lowered` when the key is matched without
    case, else in :attr:`ScanText.text`; :func:`key_source` maps it back.

    >>> scan = ScanText.build([("Into the woodland", ("message", 0))])
    >>> find_key(scan, "wood", case_sensitive=False, match_whole_words=True) is None
    True
    >>> find_key(scan, "WOOD", case_sensitive=False, match_whole_words=False) is not None
    True
    """
    needle = key.strip()
    if not needle or not scan.text:
        return None
    regex = compile_regex_key(needle)
    if regex is not None:
        return regex.search(scan.text)
    haystack = scan.text if case_sensitive else scan.lowered
    if not case_sensitive:
        needle = needle.lower()
    if match_whole_words:
        return _find_whole_word(haystack, needle)
    position = haystack.find(needle)
    return None if position < 0 else position


def key_source(scan: ScanText, key: str, position: int | None, *, case_sensitive: bool) -> Hashable | None:
    """The source of a :func:`find_key` hit."""
    lowered = not case_sensitive and compile_regex_key(key.strip()) is None
    return scan.source_at(position, lowered=lowered)
