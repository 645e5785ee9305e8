r"""Where the proxy vocabulary under-counts: the extra tokens an approximate profile adds.

An approximate profile counts with ``cl100k_base`` (the *proxy*) and scales the
count up. A constant factor is not enough everywhere: measured against the
offline references (Claude 2's tokenizer for ``anthropic``, Gemma 3's for
``gemini``; ``docs/tokenizers.md``), a few kinds of text cost the reference far
more tokens than the proxy, and short texts have too few tokens for a factor to
give any room. Three rules, each a property of the text, never a list of texts:

* **Characters the proxy merges better than the reference.** The abugidas of
  South and South-East Asia (Indic scripts, Sinhala, Thai, Lao, Tibetan,
  Myanmar, Khmer and their neighbours, :data:`ABUGIDAS`) are 3 UTF-8 bytes a
  character; Claude 2's byte-level vocabulary has few merges for them (Khmer:
  2.9 tokens a character, nearly one per byte). Underscores: ``cl100k_base``
  has tokens such as ``_COUNT`` and ``___``, the references mostly split at
  ``_``. Each such character adds a profile's rate (``char_percent``: per 100
  characters of the class) to the unscaled count.
* **Blank runs longer than the reference's longest blank token.** A run of ``k``
  equal blanks (space, tab or newline) costs the reference ``ceil(k / L)``
  tokens, ``L`` the longest such token in its vocabulary (Gemma 3: 31 for all
  three; Claude 2: 8 for tabs); the proxy's tokens are longer. Each run longer
  than ``L`` adds ``ceil(k / L)``.
* **Mixed blank runs** (Gemma 3: it merges a blank only with the same
  blank, and has no token for CR or U+3000 or most other spaces, which fall back
  to one token per UTF-8 byte): in a run of blanks, each change of character
  adds 1; each blank other than space, tab and newline adds its UTF-8 length.
  Claude 2 merges a tab with no other blank: each change from or to a tab adds 1.

Then ``headroom_tokens`` makes the upper bound at least the unscaled count plus
that many tokens, for short texts, where one token is a large part of the count.

Pure-ASCII text without long or mixed blank runs (English chat, code, JSON)
costs one ``str.isascii`` and one regex search; nothing here runs for an exact
profile.

>>> abugida_characters("សួស្តី hello ஹலோ")
9
>>> character_extra("MAX_RETRY_COUNT ภาษา", (("abugida", 100), ("underscore", 40)))
5
>>> blank_run_extra("a" + " " * 100 + "b", ((" ", 31),), mixed=False)
4
>>> blank_run_extra("a \n \n b", (), mixed=True)
4
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["ABUGIDAS", "CLASSES", "abugida_characters", "blank_run_extra", "character_extra", "extra_counter"]

#: Unicode blocks of the abugidas (and their marks) that byte-level vocabularies
#: trained mostly on Latin text split into bytes: Devanagari to Sinhala
#: (U+0900-U+0DFF), Thai, Lao, Tibetan (U+0E00-U+0FFF), Myanmar (U+1000-U+109F),
#: Tagalog to Khmer (U+1700-U+17FF), Mongolian to Tai Tham, Balinese to Batak,
#: Lepcha, Ol Chiki (U+1800-U+1C7F), Ethiopic (U+1200-U+139F), Syloti Nagri to
#: Cham, Myanmar Extended-A/B, Tai Viet, Meetei Mayek (U+A800-U+AAFF, U+ABC0-U+ABFF).
ABUGIDAS = (
    "\u0900-\u0dff\u0e00-\u0fff\u1000-\u109f\u1200-\u139f\u1700-\u17ff\u1800-\u1c7f"
    "\ua800-\uaaff\uabc0-\uabff"
)
_ABUGIDA = re.compile(f"[{ABUGIDAS}]")
#: A change of blank inside a blank run (Gemma 3 merges only equal blanks), and the blanks
#: other than space, tab and newline (no token of their own in Gemma 3: one per UTF-8 byte).
_RUN = re.compile(r"\s{2,}")
_ODD_BLANK = re.compile(r"[^\S \t\n]")
#: An ASCII text has a change of blank or an odd blank only if it holds one of these.
_ASCII_CHANGES = (" \n", "\n ", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")


def abugida_characters(text: str) -> int:
    """Characters of :data:`ABUGIDAS` in ``text`` (0 at once for ASCII text).

    >>> abugida_characters("plain English"), abugida_characters("ภาษาไทย")
    (0, 7)
    """
    if text.isascii():
        return 0
    return len(_ABUGIDA.findall(text))


#: The character classes a profile's ``char_percent`` names: class -> how many are in a text.
CLASSES = {
    "abugida": abugida_characters,
    "underscore": lambda text: text.count("_"),
}


def character_extra(text: str, rates: tuple[tuple[str, int], ...]) -> int:
    """Extra tokens for the characters of ``text`` in each class of ``rates``
    ((class, tokens per 100 characters) pairs), rounded up per class.

    >>> character_extra("a_b_c", (("underscore", 40),)), character_extra("abc", (("underscore", 40),))
    (1, 0)
    """
    extra = 0
    for name, percent in rates:
        extra += -(-CLASSES[name](text) * percent // 100)
    return extra


def extra_counter(char_percent: tuple[tuple[str, int], ...], blank_tokens: tuple[tuple[str, int], ...],
                  mixed_blanks: bool | str) -> Callable[[str], int]:
    """``text -> extra tokens`` for one profile's rules: :func:`character_extra` plus
    :func:`blank_run_extra`, with one cheap test first that most texts pass (an ASCII
    text with no underscore, tab, CR, long run or change of blank has no extra).

    >>> extra = extra_counter((("abugida", 100), ("underscore", 20)), (("\\t", 8),), "\\t")
    >>> extra("Plain English, nothing to add."), extra("MAX_SIZE ภาษา"), extra("a" + "\\t" * 9)
    (0, 5, 2)
    """
    probes = ("_",) if any(name == "underscore" for name, _ in char_percent) else ()
    probes += tuple(char * (limit + 1) for char, limit in blank_tokens)
    probes += _ASCII_CHANGES if mixed_blanks is True else tuple(mixed_blanks or "")

    runs = _long_runs(blank_tokens)
    changes = _changes_of(mixed_blanks) if isinstance(mixed_blanks, str) and mixed_blanks else None

    def extra(text: str) -> int:
        if text.isascii() and not any(probe in text for probe in probes):
            return 0
        return character_extra(text, char_percent) + _blank_extra(text, runs, mixed_blanks, changes)

    return extra


def _long_runs(longest: tuple[tuple[str, int], ...]) -> tuple[re.Pattern[str] | None, tuple[str, ...], dict[str, int]]:
    """(a regex of the runs longer than their limit, the shortest such run of each blank, the limits)."""
    if not longest:
        return None, (), {}
    pattern = re.compile("|".join(f"{re.escape(char)}{{{limit + 1},}}" for char, limit in longest))
    return pattern, tuple(char * (limit + 1) for char, limit in longest), dict(longest)


def _changes_of(blanks: str) -> re.Pattern[str]:
    """A regex of each change of blank from or to one of ``blanks``."""
    chars = re.escape(blanks)
    return re.compile(f"[{chars}](?=[^\\S{chars}])|[^\\S{chars}](?=[{chars}])")


def blank_run_extra(text: str, longest: tuple[tuple[str, int], ...], mixed: bool | str) -> int:
    """Extra tokens for the blank runs of ``text`` (see the module's rules).

    ``longest`` pairs a blank with the longest run of it the reference has one
    token for; ``mixed`` adds the Gemma-style costs of blanks (``True``: 1 per
    change of blank in a run, every blank other than space, tab and newline its
    UTF-8 length), or, as a string, 1 for each change of blank from or to one of
    its characters (Claude 2 merges a tab with no other blank). Cheap ``in``
    tests come first: most texts have no run to look at.

    >>> blank_run_extra("\\t" * 20, (("\\t", 8),), mixed=False), blank_run_extra("\\t" * 8, (("\\t", 8),), mixed=False)
    (3, 0)
    >>> blank_run_extra("x\\u3000\\u3000y", (), mixed=True)  # two 3-byte blanks and no change
    6
    >>> blank_run_extra("\\t\\n\\t\\n    x", (), mixed="\\t"), blank_run_extra("\\n    x", (), mixed="\\t")
    (3, 0)
    """
    changes = _changes_of(mixed) if isinstance(mixed, str) and mixed else None
    return _blank_extra(text, _long_runs(longest), mixed, changes)


def _blank_extra(text: str, long_runs: tuple[re.Pattern[str] | None, tuple[str, ...], dict[str, int]],
                 mixed: bool | str, changes: re.Pattern[str] | None) -> int:
    """:func:`blank_run_extra` with its regexes made (once per profile by :func:`extra_counter`)."""
    extra = 0
    runs, probes, limits = long_runs
    if runs is not None and any(probe in text for probe in probes):
        for run in runs.finditer(text):
            extra += -(-(run.end() - run.start()) // limits[text[run.start()]])
    if mixed is True:
        if text.isascii() and not any(char in text for char in _ASCII_CHANGES[2:]):
            extra += text.count(" \n") + text.count("\n ")  # only spaces and newlines: their changes
        else:
            for run in _RUN.findall(text):  # each change of blank in a run
                extra += sum(1 for a, b in zip(run, run[1:]) if a != b)
            extra += sum(len(char.encode("utf-8", "surrogatepass")) for char in _ODD_BLANK.findall(text))
    elif changes is not None and any(char in text for char in mixed):
        extra += len(changes.findall(text))
    return extra
