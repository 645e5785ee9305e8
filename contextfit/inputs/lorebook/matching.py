"""How a key is found in the scanned text, after SillyTavern's ``WorldInfoBuffer``.

The scanned text is built like SillyTavern's buffer: the newest message
first, every piece preceded by ``"\\x01"`` and separated by a newline, so a
match never straddles two messages and a whole-word test sees a boundary at
each message's edges. Each piece remembers where it came from, so a match can
be traced to its message (or to the entry whose content woke it).

Key matching (``matchKeys``):

- a key written ``/pattern/flags`` (flags from ``gimsuy``, every inner ``/``
  escaped) is a regex and ignores the case and whole-word settings; the
  JavaScript pattern runs on the ``regex`` package (``re``'s syntax, plus
  variable-width lookbehind as in JavaScript) after translating named groups
  (``(?<name>…)``, ``\\k<name>``) and ``[^]``. A pattern it cannot compile is
  matched as plain text, as SillyTavern does with an invalid regex;
- otherwise, unless case-sensitive, both sides are lower-cased and the key is
  searched as a substring, or, with whole words on, between word boundaries.
  Unlike SillyTavern, which falls back to a bare substring test for keys of
  several words, multi-word keys get boundaries too ("magical forest" does not
  match "magical forestry"), and a word character is Python's Unicode one
  (accented letters are letters; JavaScript's ``\\W`` treats "é" as a boundary).

A regex key is a user's program: ``/(a|a)+$/`` backtracks for ever on forty
``a`` and a ``b``, and the 24 characters ``/(?:a{999999}){999999}/`` would
compile into gigabytes. Every regex search runs under a :class:`RegexBudget` —
a CPU-time limit per key and per request, with the GIL released while it runs —
on at most :attr:`RegexLimits.max_text_chars` of the newest text. A pattern
longer than :attr:`RegexLimits.max_pattern_chars`, or one that would compile
to more than :attr:`RegexLimits.max_pattern_units` nodes (about 120 bytes
each; counted repeats multiply, ``pattern_size.py``), is never compiled.
A key stopped by a limit does not match, and the budget reports it
(``LOREBOOK_KEY_TIMEOUT``, ``LOREBOOK_KEY_TOO_LONG``, ``LOREBOOK_KEY_TOO_LARGE``,
``LOREBOOK_SCAN_LIMITED``). The limits in force come from :func:`regex_limits`
(the API sets its own). A key's groups are compiled non-capturing when nothing
reads them back (``pattern_size.without_captures``): only where it matches is
used, and a search would otherwise keep every capture of a repeated group
(163 MB for ``(a)*`` over a million characters, within its 0.25 s).

Compiled keys are kept in a :class:`~contextfit.memo.TextMemo` of
:data:`COMPILED_KEYS_BYTES`, each charged its compiled size; the ``regex``
package's own pattern cache is not used (it keeps 500 patterns whatever their size).
"""

from __future__ import annotations

import bisect
import re
import sys
import threading
import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
import regex

from contextfit.caches import register
from contextfit.inputs.lorebook.pattern_size import pattern_units, without_captures
from contextfit.memo import TextMemo

#: The diagnostics this module reports (listed with the rest in ``fitting/results.py``).
LOREBOOK_KEY_TIMEOUT = "LOREBOOK_KEY_TIMEOUT"
LOREBOOK_KEY_TOO_LONG = "LOREBOOK_KEY_TOO_LONG"
LOREBOOK_KEY_TOO_LARGE = "LOREBOOK_KEY_TOO_LARGE"
LOREBOOK_SCAN_LIMITED = "LOREBOOK_SCAN_LIMITED"

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
class RegexLimits:
    """How far user regex keys may run: seconds per key and per request
    (one plan), the longest pattern, the largest compiled pattern (in the
    nodes of :func:`~contextfit.inputs.lorebook.pattern_size.pattern_units`,
    about 120 bytes each: 10,000 is about 1.2 MB) and the scanned text evaluated.

    The seconds are CPU seconds of the thread that matches, as the ``regex``
    package counts its ``timeout``: on a machine busy with other work a key
    may take longer by the clock (the API's per-request limit is by the clock).

    >>> RegexLimits().key_seconds, RegexLimits().request_seconds
    (0.25, 2.0)
    """

    key_seconds: float = 0.25
    request_seconds: float = 2.0
    max_pattern_chars: int = 1_000
    max_text_chars: int = 1_000_000
    max_pattern_units: int = 10_000


_LIMITS: ContextVar[RegexLimits] = ContextVar("contextfit_regex_limits", default=RegexLimits())  # noqa: B039 - frozen


@contextmanager
def regex_limits(limits: RegexLimits) -> Iterator[RegexLimits]:
    """Use ``limits`` for the regex keys evaluated inside the ``with`` block
    (this thread or task only; restored afterwards).

    >>> with regex_limits(RegexLimits(key_seconds=5)):
    ...     RegexBudget().limits.key_seconds
    5
    >>> RegexBudget().limits.key_seconds
    0.25
    """
    token = _LIMITS.set(limits)
    try:
        yield limits
    finally:
        _LIMITS.reset(token)


@dataclass(frozen=True, slots=True)
class RegexKey:
    """A compiled ``/pattern/flags`` key; ``sticky`` (flag ``y``) anchors it at the start.

    ``pattern`` is ``None`` when the key is over a limit: it is a regex key
    that is never evaluated, and ``refused`` is the diagnostic that says why
    (``LOREBOOK_KEY_TOO_LONG`` or ``LOREBOOK_KEY_TOO_LARGE``).
    """

    pattern: regex.Pattern[str] | None
    sticky: bool
    refused: str | None = None

    def search(self, haystack: str, timeout: float | None = None) -> int | None:
        """Where the pattern matches, or ``None``; raises ``TimeoutError`` after ``timeout`` seconds."""
        if self.pattern is None:
            return None
        # concurrent=True releases the GIL: a slow key does not stall the other threads.
        find = self.pattern.match if self.sticky else self.pattern.search
        found = find(haystack, timeout=timeout, concurrent=True)
        return None if found is None else found.start()


def compile_regex_key(key: str) -> RegexKey | None:
    """The regex a key stands for, or ``None`` when it is plain text (``parseRegexFromString``).

    >>> compile_regex_key("/shadow ?fangs?/i").pattern.flags & regex.IGNORECASE != 0
    True
    >>> compile_regex_key("forest") is None, compile_regex_key("/a/b/") is None
    (True, True)
    >>> compile_regex_key("/" + "a" * 5000 + "/").refused  # too long to evaluate
    'LOREBOOK_KEY_TOO_LONG'
    >>> compile_regex_key("/(?:a{999999}){999999}/").refused  # never compiled: it would take gigabytes
    'LOREBOOK_KEY_TOO_LARGE'
    """
    limits = _LIMITS.get()
    memo_key = f"{limits.max_pattern_chars}:{limits.max_pattern_units}:{key}"
    found = _COMPILED.get(memo_key)
    if found is None:
        found = _compile_regex_key(key, limits)
        size = sys.getsizeof(found.pattern) if isinstance(found, RegexKey) and found.pattern is not None else 0
        _COMPILED.put(memo_key, found, size)
    return found if isinstance(found, RegexKey) else None


def regex_shaped(key: str) -> bool:
    """Whether ``key`` is written as a regex key (``/pattern/flags``, no unescaped slash
    inside, no flag twice), compiling or not: what :func:`compile_regex_key` tries.

    >>> regex_shaped("/(x/"), regex_shaped("/usr/bin/"), regex_shaped("forest")
    (True, False, False)
    """
    found = _REGEX_KEY.match(key)
    return bool(found) and not _UNESCAPED_SLASH.search(found.group(1)) and len(set(found.group(2))) == len(found.group(2))


#: Bytes the compiled keys may hold together (each is charged its compiled size,
#: ``sys.getsizeof``; one is at most about 1.2 MB under the default limits).
COMPILED_KEYS_BYTES = 8 * 1024 * 1024

_PLAIN = False  # the memo's value for a key that is plain text (a TextMemo holds no None)
_COMPILED: TextMemo[RegexKey | bool] = register("lorebook.regex_keys", TextMemo(COMPILED_KEYS_BYTES))


def _compile_regex_key(key: str, limits: RegexLimits) -> RegexKey | bool:
    found = _REGEX_KEY.match(key)
    if not found:
        return _PLAIN
    pattern, flags = found.groups()
    if _UNESCAPED_SLASH.search(pattern) or len(set(flags)) != len(flags):
        return _PLAIN
    if len(pattern) > limits.max_pattern_chars:
        return RegexKey(None, sticky="y" in flags, refused=LOREBOOK_KEY_TOO_LONG)
    pattern = pattern.replace("\\/", "/")
    pattern = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    pattern = re.sub(r"\\k<([A-Za-z_]\w*)>", r"(?P=\1)", pattern)
    pattern = pattern.replace("[^]", r"[\s\S]")
    options = regex.VERSION0
    options |= regex.IGNORECASE if "i" in flags else 0
    options |= regex.MULTILINE if "m" in flags else 0
    options |= regex.DOTALL if "s" in flags else 0
    if pattern_units(pattern) > limits.max_pattern_units:  # before the compiler sees it
        return RegexKey(None, sticky="y" in flags, refused=LOREBOOK_KEY_TOO_LARGE)
    _forget_compiled_text(len(pattern))
    # Groups nothing reads back need not capture: a search then keeps no capture history.
    for candidate in dict.fromkeys((without_captures(pattern), pattern)):
        try:
            return RegexKey(regex.compile(candidate, options, cache_pattern=False), sticky="y" in flags)
        except Exception:  # regex.error, and OverflowError/RecursionError on monstrous patterns
            continue
    return _PLAIN


_PURGE_LOCK = threading.Lock()
_SINCE_PURGE = [0]
#: Pattern characters compiled between two ``regex.purge()`` calls.
_PURGE_EVERY_CHARS = 1024 * 1024


def _forget_compiled_text(chars: int) -> None:
    """Keep the ``regex`` package from remembering every pattern ever compiled.

    Even with ``cache_pattern=False`` it notes each pattern's text (whether it
    is locale-sensitive) in a table that only its own cache trims: a server
    compiling distinct keys would grow by their text for ever. Its public
    ``regex.purge()`` empties that table (and its cache, which is not used here).
    """
    with _PURGE_LOCK:
        _SINCE_PURGE[0] += chars + 100
        if _SINCE_PURGE[0] < _PURGE_EVERY_CHARS:
            return
        _SINCE_PURGE[0] = 0
    regex.purge()


class RegexBudget:
    """The time one request's regex keys may spend, and the limits they met.

    One budget is shared by every key of every lorebook in one plan; each
    search gets at most ``key_seconds`` and what is left of
    ``request_seconds``. A key stopped by a limit does not match;
    :attr:`diagnostics` says which (once per key and limit).

    >>> budget = RegexBudget(RegexLimits(key_seconds=0.01))
    >>> budget.search(compile_regex_key("/(a|a)+$/"), "a" * 40 + "b", "/(a|a)+$/") is None
    True
    >>> [d["code"] for d in budget.diagnostics]
    ['LOREBOOK_KEY_TIMEOUT']
    """

    def __init__(self, limits: RegexLimits | None = None) -> None:
        self.limits = limits or _LIMITS.get()
        self.spent = 0.0
        self.diagnostics: list[dict] = []
        self._reported: set[tuple[str, str]] = set()

    def search(self, key: RegexKey, text: str, written: str) -> int | None:
        """Where ``key`` (written ``written``) matches ``text``, within the limits, or ``None``."""
        limits = self.limits
        if key.pattern is None:
            if key.refused == LOREBOOK_KEY_TOO_LARGE:
                self._report(LOREBOOK_KEY_TOO_LARGE, written,
                             f"This regex key would compile to more than {limits.max_pattern_units:,} nodes (counted "
                             "repeats multiply: (?:a{1000}){1000} is a million); it is not compiled and does not match.")
            else:
                self._report(LOREBOOK_KEY_TOO_LONG, written,
                             f"A regex key longer than {limits.max_pattern_chars} characters is not evaluated; it does not match.")
            return None
        left = limits.request_seconds - self.spent
        if left <= 0:
            self._report(LOREBOOK_KEY_TIMEOUT, written,
                         f"The regex keys of this request used their {limits.request_seconds:g} s; this key was not evaluated and does not match.")
            return None
        if len(text) > limits.max_text_chars:
            text = text[: limits.max_text_chars]  # the newest messages come first
            self._report(LOREBOOK_SCAN_LIMITED, "",
                         f"Regex keys read only the newest {limits.max_text_chars:,} characters of the scanned text.")
        started = time.thread_time()  # the regex package counts its timeout in this thread's CPU time too
        try:
            return key.search(text, timeout=min(limits.key_seconds, left))
        except TimeoutError:
            self._report(LOREBOOK_KEY_TIMEOUT, written,
                         f"This regex key ran past its {min(limits.key_seconds, left):g} s and was stopped; it does not match.")
            return None
        except MemoryError:  # a runaway search can ask for more than there is before its time is up
            self._report(LOREBOOK_KEY_TOO_LARGE, written,
                         "This regex key ran out of memory while matching and was stopped; it does not match.")
            return None
        finally:
            self.spent += time.thread_time() - started

    def _report(self, code: str, key: str, message: str) -> None:
        if (code, key) not in self._reported:
            self._reported.add((code, key))
            self.diagnostics.append({"code": code, **({"key": key} if key else {}), "message": message})


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


def find_key(
    scan: ScanText, key: str, *, case_sensitive: bool, match_whole_words: bool, budget: RegexBudget | None = None
) -> int | None:
    """Where ``key`` (already macro-substituted) is found in ``scan``, or ``None``.

    A position in :attr:`ScanText.lowered` when the key is matched without
    case, else in :attr:`ScanText.text`; :func:`key_source` maps it back.
    A regex key runs under ``budget`` (a fresh one with the current limits
    when not given).

    >>> scan = ScanText.build([("Into the woodland", ("message", 0))])
    >>> find_key(scan, "wood", case_sensitive=False, match_whole_words=True) is None
    True
    >>> find_key(scan, "WOOD", case_sensitive=False, match_whole_words=False) is not None
    True
    """
    needle = key.strip()
    if not needle or not scan.text:
        return None
    regex_key = compile_regex_key(needle)
    if regex_key is not None:
        return (budget or RegexBudget()).search(regex_key, scan.text, needle)
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
