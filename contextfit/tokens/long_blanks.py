r"""Encoding text with very long blank runs, exactly as tiktoken would, without its panic.

tiktoken cuts text into pieces with a regular expression before its BPE.
The ``\s+(?!\S)`` branch of both exact patterns keeps one backtracking entry
per character of a run of *blanks* (white space other than CR and LF), and
fancy-regex gives up past 1,000,000 entries: ``encode_ordinary(" " * 1_000_000)``
raises a Rust panic (``PanicException: StackOverflow``). Measured with
tiktoken 0.14: 999,998 spaces (or tabs) before a letter pass, 1,000,000 fail,
for ``o200k_base`` and ``cl100k_base`` alike; every other run tried (one
letter, CJK, emoji, digits, punctuation, newlines, 2,000,000 long) passes.

:func:`encode_ordinary` cuts the text around each blank run of at least
:data:`LONG_BLANK_RUN` characters, encodes the parts with tiktoken as usual
and the run's own piece with tiktoken's BPE alone (no regex), so the ids are
exactly ``encoding.encode_ordinary(text)``'s. Why the cuts change nothing,
for a maximal blank run ``text[a:b]`` (``b - a >= 2``) with ``text[b]`` not
white space:

1. *A piece starts at ``a``.* ``text[a - 1]`` is CR, LF or not white space.
   The only branches whose match can hold white space after its first
   character match white space only, or end in ``[\r\n/]*`` / ``[\r\n]*+``
   (CR, LF and ``/``), so no piece runs from ``a - 1`` into the run. The
   prefix ``text[:a]`` splits the same way alone: at ``a`` it has its end
   where ``text`` has a blank, and the only test that tells them apart is
   ``$`` (cl100k's ``\s++$``), reachable only through white space ending at
   ``a``; there it matches exactly the span that ``\s*[\r\n]`` matches in
   the whole text (from the piece's start to its last CR/LF, ``a - 1``).
2. *The run's piece is ``text[a:b-1]``.* At ``a``, every branch before
   ``\s+(?!\S)`` fails (a letter, digit or punctuation branch needs a non-blank
   at ``a + 1``; ``\s*[\r\n]`` needs a CR or LF, and there is none up to
   ``b``; cl100k's ``\s++$`` needs the end of the text). ``\s+(?!\S)`` takes
   the run, fails its look-ahead at ``b`` and gives back one character.
3. *The rest is independent.* The patterns have no look-behind and no
   ``^``, so the pieces of ``text[b - 1:]`` are those of ``text`` after ``b - 1``.

A run that reaches the end of the text is the piece ``text[a:b]`` for
``o200k_base``; ``cl100k_base`` matches trailing white space with the
possessive ``\s++$`` (no backtracking: 4,000,000 spaces pass) and is left
to tiktoken. A run followed by CR or LF belongs to a ``\s*[\r\n]`` piece,
which the regex engine matches without backtracking (2,000,000 spaces pass).

The same point 1 holds wherever a blank follows a non-blank, white-space-free
character: no piece crosses there, and each side splits alone as it does in
the whole. :func:`encode_parts` cuts a long text at such places into parts of
about :data:`PART_CHARS`, so counting a 2 MB message holds the token ids of
64 KB at a time (about 0.5 MB) instead of all of them (17 MB of Python ints).

Finding runs costs a strided sample of the text (``text[::stride]``, about
0.3 ms per MB, against 40 ms per MB to encode), and a full scan only when the
sample holds a long enough blank run; texts shorter than
:data:`LONG_BLANK_RUN` are handed to tiktoken at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from contextfit.caches import register

__all__ = ["LONG_BLANK_RUN", "PART_CHARS", "encode_ordinary", "encode_parts"]

#: Blank runs at least this long are encoded around tiktoken's regex. Far below
#: the 1,000,000 that panics, far above any formatting seen in real chats.
LONG_BLANK_RUN = 10_000

#: Texts longer than this are encoded part by part (:func:`encode_parts`).
PART_CHARS = 65_536

# Unicode White_Space (what ``\s`` means to the Rust regex crate) minus CR and
# LF. Not str.isspace: that adds U+001C-U+001F, which the regex treats as text.
_BLANK = "\t\x0b\x0c \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# A blank after a character that is not white space: where a part may end.
_CUT = re.compile(f"[^\r\n{_BLANK}][{_BLANK}]")

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
_TRAILING_RUN_IS_SAFE = {O200K_PATTERN: False, CL100K_PATTERN: True}


def covers(encoding: Any) -> bool:
    """Whether :func:`encode_ordinary` knows ``encoding``'s pattern (both exact encodings)."""
    return getattr(encoding, "_pat_str", None) in _TRAILING_RUN_IS_SAFE


@lru_cache(maxsize=8)
def _scanners(minimum: int) -> tuple[int, re.Pattern[str], re.Pattern[str]]:
    """(stride, sample pattern, full pattern) for runs of at least ``minimum`` blanks.

    A run of ``minimum`` characters holds at least ``minimum // stride``
    consecutive characters of ``text[::stride]``, so a sample without such a
    run proves the text has none.
    """
    stride = max(1, minimum // 128)
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
    minimum = LONG_BLANK_RUN
    if len(text) < minimum:
        return encoding.encode_ordinary(text)
    trailing_safe = _TRAILING_RUN_IS_SAFE.get(getattr(encoding, "_pat_str", None))
    if trailing_safe is None:
        return encoding.encode_ordinary(text)  # a pattern the argument does not cover
    stride, sample, full = _scanners(minimum)
    if sample.search(text[::stride]) is None:
        return encoding.encode_ordinary(text)
    ids: list[int] = []
    start = 0
    end_of_text = len(text)
    for run in full.finditer(text):
        first, stop = run.span()
        if stop < end_of_text and text[stop] in "\r\n":
            continue  # inside a ``\s*[\r\n]`` piece: no backtracking there
        if stop == end_of_text and trailing_safe:
            break  # cl100k's possessive ``\s++$`` takes it whole
        piece_end = stop if stop == end_of_text else stop - 1
        if first > start:
            ids += encoding.encode_ordinary(text[start:first])
        ids += encoding._encode_single_piece(text[first:piece_end])
        start = piece_end
    if start < end_of_text:
        ids += encoding.encode_ordinary(text[start:])
    return ids


def encode_parts(encoding: Any, text: str) -> Iterator[list[int]]:
    """:func:`encode_ordinary` of ``text`` as consecutive lists of ids (their
    concatenation is the whole), each from about :data:`PART_CHARS` characters.

    >>> from contextfit.tokens.tokenizers import get_tokenizer
    >>> o200k = get_tokenizer("o200k_base").encoding
    >>> text = "The wolves came down from the hills. " * 5_000
    >>> parts = list(encode_parts(o200k, text))
    >>> len(parts) > 1, [i for part in parts for i in part] == o200k.encode_ordinary(text)
    (True, True)
    """
    size = PART_CHARS
    start, end = 0, len(text)
    while end - start > size:
        cut = _CUT.search(text, start + size)
        if cut is None:
            break
        yield encode_ordinary(encoding, text[start:cut.start() + 1])
        start = cut.start() + 1
    yield encode_ordinary(encoding, text[start:] if start else text)
