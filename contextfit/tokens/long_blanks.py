r"""Encoding text with very long blank runs exactly as the exact tokenizers do, without their panic.

tiktoken cuts text into pieces with a regular expression before its BPE.
The ``\s+(?!\S)`` branch of the exact patterns keeps one backtracking entry
per character of a run of *blanks* (white space other than CR and LF), and
fancy-regex gives up past 1,000,000 entries: ``encode_ordinary(" " * 1_000_000)``
raises a Rust panic (``PanicException: StackOverflow``). Measured with
tiktoken 0.14: 999,998 spaces (or tabs) before a letter pass, 1,000,000 fail,
for ``o200k_base`` and ``cl100k_base`` alike, and for the open vocabularies
built on tiktoken (Llama 3, Qwen, Qwen 3.5, Tekken, DeepSeek; Llama 4 uses
o200k's pattern); every other run tried (one letter, CJK, emoji, digits,
punctuation, newlines, 2,000,000 long) passes, but for DeepSeek, whose last
branch ``(?:[^\s\p{L}\p{M}\p{P}\p{S}\p{N}](?!…))+`` also backtracks: a
million control, format or private-use characters (NUL, U+200B, U+E000)
panic there. Mistral's SentencePiece models (read by kitoken) pass everything.

:func:`encode_ordinary` cuts the text around each blank run of at least
:data:`LONG_BLANK_RUN` characters (and, for DeepSeek, each run as long of
such *other* characters), encodes the parts with tiktoken as usual and the
run's own piece with tiktoken's BPE alone (no regex), so the ids are exactly
``encoding.encode_ordinary(text)``'s. Why the cuts change nothing, for a
maximal blank run ``text[a:b]`` (``b - a >= 2``) with ``text[b]`` not white
space, in every pattern of :data:`CUTS`:

1. *A piece starts at ``a``.* ``text[a - 1]`` is CR, LF or not white space.
   The only branches whose match can hold white space after its first
   character match white space only, or end in ``[\r\n/]*`` / ``[\r\n]*+``
   (CR, LF and ``/``), so no piece runs from ``a - 1`` into the run. The
   prefix ``text[:a]`` splits the same way alone: at ``a`` it has its end
   where ``text`` has a blank, and the only tests that tell them apart are
   ``$`` (cl100k's ``\s++$``) and a look-ahead at white space, reachable only
   through white space ending at ``a``; there the ``\s*[\r\n]`` branch, tried
   first, matches from the piece's start to its last CR/LF, ``a - 1``.
2. *The run's piece is ``text[a:b-1]``.* At ``a``, every branch before
   ``\s+(?!\S)`` fails (a letter, digit or punctuation branch needs a non-blank
   at ``a + 1``; ``\s*[\r\n]`` needs a CR or LF, and there is none up to
   ``b``; cl100k's ``\s++$`` needs the end of the text). ``\s+(?!\S)`` takes
   the run, fails its look-ahead at ``b`` and gives back one character.
   DeepSeek's look-ahead is ``(?![^\s\p{N}CJK])``: before a digit or a CJK
   character the run is one piece whole, ``text[a:b]``.
3. *The rest is independent.* The patterns have no look-behind and no
   ``^``, so the pieces of ``text[b - 1:]`` (or ``text[b:]``) are those of
   ``text`` after that point.

A run that reaches the end of the text is the piece ``text[a:b]``; cl100k
matches trailing white space with the possessive ``\s++$`` (no backtracking:
4,000,000 spaces pass) and is left to tiktoken. A run followed by CR or LF
belongs to a ``\s*[\r\n]`` piece, which the regex engine matches without
backtracking (2,000,000 spaces pass).

DeepSeek's *other* runs, maximal runs ``text[c:d]`` of control (but white
space), format and private-use characters, whose class is the same in every
Unicode version: such a character is never a letter, mark, punctuation,
symbol or digit, so the last branch takes the run, but for its last character
when ``text[d]`` is a non-CJK letter or mark (then that one starts the letter
piece that follows). A piece starts at ``c`` by the argument of point 1, but
for a blank at ``c - 1``: that blank is a piece of its own (the look-ahead of
the blanks before it fails at ``c``), so the cut is at ``c - 1``. Where the
class of ``text[c - 1]``, ``text[d]`` or ``text[b]`` (for DeepSeek) is not
certain — a code point unassigned in Python's Unicode tables — the run is
left to tiktoken; if it panics there, the tokenizer refuses the text with
``TOKENIZER_UNAVAILABLE`` (``tokenizers.py``).

The same point 1 holds wherever a blank follows a non-blank, white-space-free
character: no piece crosses there, and each side splits alone as it does in
the whole. :func:`encode_parts` cuts a long text at such places into parts of
about :data:`PART_CHARS`, so counting a 2 MB message holds the token ids of
64 KB at a time (about 0.5 MB) instead of all of them (17 MB of Python ints).
A SentencePiece model with a dummy prefix (``open_models.SentencePiece``) is
cut where a space follows a non-space, leaving that space out: the part after
it gets it back as its dummy prefix.

Finding runs costs a strided sample of the text (``text[::stride]``, about
0.3 ms per MB, against 40 ms per MB to encode), and a full scan only when the
sample holds a long enough run; texts shorter than :data:`LONG_BLANK_RUN` are
handed to tiktoken at once. A Qwen text is normalized to NFC first, as Qwen's
tokenizer does (NFC never joins a character to a blank or an other character).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from contextfit.caches import register
from contextfit.tokens.open_models import (
    DEEPSEEK_CJK,
    DEEPSEEK_PATTERN,
    LLAMA3_PATTERN,
    QWEN35_PATTERN,
    QWEN_PATTERN,
    TEKKEN_PATTERN,
)

__all__ = ["CUTS", "LONG_BLANK_RUN", "PART_CHARS", "Cuts", "covers", "encode_ordinary", "encode_parts"]

#: Blank runs at least this long are encoded around tiktoken's regex. Far below
#: the 1,000,000 that panics, far above any formatting seen in real chats.
LONG_BLANK_RUN = 10_000

#: Texts longer than this are encoded part by part (:func:`encode_parts`).
PART_CHARS = 65_536

# Unicode White_Space (what ``\s`` means to the Rust regex crate) minus CR and
# LF. Not str.isspace: that adds U+001C-U+001F, which the regex treats as text.
_BLANK = "\t\x0b\x0c \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_WHITE = re.compile(f"[\r\n{_BLANK}]")
# A blank after a character that is not white space: where a part may end.
_CUT = re.compile(f"[^\r\n{_BLANK}][{_BLANK}]")
# A space after a character that is neither a space nor SentencePiece's "▁", and before something
# (the part after it must not be empty): where a SentencePiece text may be cut.
_SPACE_CUT = re.compile("[^ \u2581] (?=.)", re.DOTALL)
# Control characters but white space, format and private-use characters: neither white space, letter,
# mark, punctuation, symbol nor digit in any Unicode version (a format character that Unicode 17 adds
# was unassigned before: the same class). Written for the regex package (\p{...}).
_OTHER = r"\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\p{Cf}\p{Co}"
_CJK = re.compile(f"[{DEEPSEEK_CJK}]")

# The patterns the argument above was made for (tiktoken_ext.openai_public),
# and whether each matches trailing white space whole without backtracking.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


@dataclass(frozen=True, slots=True)
class Cuts:
    """How the argument applies to one pattern (module docstring).

    ``trailing_whole``: a blank run at the end is matched whole without
    backtracking (cl100k's ``\\s++$``), so it is left to tiktoken;
    ``whole_before_digit_or_cjk``: a blank run before a digit or CJK character
    is one piece, look-ahead included (DeepSeek); ``other_runs``: runs of
    control, format and private-use characters are cut too (DeepSeek).
    """

    trailing_whole: bool = False
    whole_before_digit_or_cjk: bool = False
    other_runs: bool = False


#: The patterns :func:`encode_ordinary` cuts, by ``Encoding._pat_str`` (Llama 4's is o200k's).
CUTS: dict[str, Cuts] = {
    O200K_PATTERN: Cuts(),
    CL100K_PATTERN: Cuts(trailing_whole=True),
    LLAMA3_PATTERN: Cuts(),
    QWEN_PATTERN: Cuts(),
    QWEN35_PATTERN: Cuts(),
    TEKKEN_PATTERN: Cuts(),
    DEEPSEEK_PATTERN: Cuts(whole_before_digit_or_cjk=True, other_runs=True),
}


def covers(encoding: Any) -> bool:
    """Whether :func:`encode_ordinary` knows ``encoding``'s pattern (every exact tiktoken encoding)."""
    return getattr(encoding, "_pat_str", None) in CUTS


@lru_cache(maxsize=8)
def _scanners(minimum: int, other: bool = False) -> tuple[int, Any, Any]:
    """(stride, sample pattern, full pattern) for runs of at least ``minimum`` blanks
    (``other``: of control, format and private-use characters).

    A run of ``minimum`` characters holds at least ``minimum // stride``
    consecutive characters of ``text[::stride]``, so a sample without such a
    run proves the text has none.
    """
    stride = max(1, minimum // 128)
    if other:
        import regex  # \p{Cf}, \p{Co}: the re module has no Unicode classes

        return (stride, regex.compile(f"[{_OTHER}]{{{minimum // stride},}}"), regex.compile(f"[{_OTHER}]{{{minimum},}}"))
    sample = re.compile(f"[{_BLANK}]{{{minimum // stride},}}")
    full = re.compile(f"[{_BLANK}]{{{minimum},}}")
    return stride, sample, full


register("long_blanks.scanners", _scanners)


def encode_ordinary(encoding: Any, text: str) -> list[int]:
    """``encoding.encode_ordinary(text)``, also for texts with blank runs of any length.

    >>> from contextfit.tokens.tokenizers import get_tokenizer
    >>> o200k = get_tokenizer("o200k_base").encoding
    >>> len(encode_ordinary(o200k, " " * 2_000_000 + "x"))
    15627
    >>> encode_ordinary(o200k, "Hello world!") == o200k.encode_ordinary("Hello world!")
    True
    """
    if len(text) < LONG_BLANK_RUN:
        return encoding.encode_ordinary(text)
    cuts = CUTS.get(getattr(encoding, "_pat_str", None))
    if cuts is None:
        return encoding.encode_ordinary(text)  # a pattern the argument does not cover
    text = _normalized(encoding, text)
    pieces = _long_pieces(text, cuts)
    if not pieces:
        return encoding.encode_ordinary(text)
    ids: list[int] = []
    start = 0
    for first, stop in pieces:
        if first > start:
            ids += encoding.encode_ordinary(text[start:first])
        ids += encoding._encode_single_piece(text[first:stop])
        start = stop
    if start < len(text):
        ids += encoding.encode_ordinary(text[start:])
    return ids


def _normalized(encoding: Any, text: str) -> str:
    normalize = getattr(encoding, "normalize", None)
    return text if normalize is None else normalize(text)


def _long_pieces(text: str, cuts: Cuts) -> list[tuple[int, int]]:
    """The spans of ``text`` that are pieces of their own and encoded by BPE alone, in order."""
    pieces = list(_blank_pieces(text, cuts))
    if cuts.other_runs:
        pieces = sorted([*pieces, *_other_pieces(text)])
    return pieces


def _runs(text: str, other: bool = False) -> Iterator[tuple[int, int]]:
    stride, sample, full = _scanners(LONG_BLANK_RUN, other)
    if sample.search(text[::stride]) is None:
        return
    for run in full.finditer(text):
        yield run.span()


def _blank_pieces(text: str, cuts: Cuts) -> Iterator[tuple[int, int]]:
    end = len(text)
    for first, stop in _runs(text):
        if stop == end:
            if not cuts.trailing_whole:  # cl100k's possessive ``\s++$`` takes it whole
                yield first, stop
            continue
        if text[stop] in "\r\n":
            continue  # inside a ``\s*[\r\n]`` piece: no backtracking there
        whole = _digit_or_cjk(text[stop]) if cuts.whole_before_digit_or_cjk else False
        if whole is not None:  # else: not sure how the engine classes that character; left to it
            yield first, stop if whole else stop - 1


def _other_pieces(text: str) -> Iterator[tuple[int, int]]:
    end = len(text)
    for first, stop in _runs(text, other=True):
        before = text[first - 1] if first else "\n"
        if before in "\r\n":
            blank_before = False
        elif _WHITE.match(before):
            blank_before = True
        elif _major_class(before) in "LMNPS":
            blank_before = False
        else:
            continue  # an unassigned character before it might continue the run
        last = stop
        if stop < end:
            after = text[stop]
            if not _WHITE.match(after):
                kind = _major_class(after)
                if kind not in "LMNPS":
                    continue  # not sure how the engine classes it
                if kind in "LM" and not _CJK.match(after):
                    last = stop - 1  # it starts the letter piece that follows
        if blank_before:
            yield first - 1, first
        yield first, last


def _digit_or_cjk(char: str) -> bool | None:
    """Whether ``char`` (not white space) is a digit or CJK character as DeepSeek's pattern reads it; None: not sure."""
    if _CJK.match(char):
        return True
    kind = _major_class(char)
    return None if kind == "?" else kind == "N"


def _major_class(char: str) -> str:
    """The first letter of ``char``'s general category, or ``?`` when Python's Unicode tables
    may class it otherwise than tiktoken's (unassigned here, or a lone surrogate)."""
    category = unicodedata.category(char)
    return "?" if category in ("Cn", "Cs") else category[0]


def encode_parts(encoding: Any, text: str) -> Iterator[list[int]]:
    """:func:`encode_ordinary` of ``text`` as consecutive lists of ids (their
    concatenation is the whole), each from about :data:`PART_CHARS` characters.

    A text of an encoding the argument does not cover is encoded whole.

    >>> from contextfit.tokens.tokenizers import get_tokenizer
    >>> o200k = get_tokenizer("o200k_base").encoding
    >>> text = "The wolves came down from the hills. " * 5_000
    >>> parts = list(encode_parts(o200k, text))
    >>> len(parts) > 1, [i for part in parts for i in part] == o200k.encode_ordinary(text)
    (True, True)
    """
    size = PART_CHARS
    words = getattr(encoding, "dummy_prefix_words", False)
    if len(text) <= size or not (words or covers(encoding)):
        yield encode_ordinary(encoding, text)
        return
    text = _normalized(encoding, text)
    finder = _SPACE_CUT if words else _CUT
    start, end = 0, len(text)
    while end - start > size:
        cut = finder.search(text, start + size)
        if cut is None:
            break
        yield encode_ordinary(encoding, text[start:cut.start() + 1])
        start = cut.end() if words else cut.start() + 1  # SentencePiece: the space is the next part's dummy prefix
    yield encode_ordinary(encoding, text[start:] if start else text)
