r"""Where tiktoken provably splits a joined text: a text's count from its parts' counts.

A summary is its header and one line per pick, joined by line breaks, and
it is counted whole after every refit (about 1,000 tokens per summarize fit
in a replay, 2.7 of the 4.0 million characters a 1,000-turn replay counted).
Its lines come back turn after turn, so its count is the sum of its parts'
cached counts wherever the pre-tokenizer is proven to cut between them.

tiktoken cuts text into pieces with a regular expression and encodes each
piece alone, so ``count(left + right) == count(left) + count(right)`` when
the pieces of the whole are the pieces of ``left`` followed by those of
``right``. That holds for both exact patterns (:data:`long_blanks.O200K_PATTERN`,
:data:`long_blanks.CL100K_PATTERN`) when ``left`` ends with LF and ``right``
starts with ``-`` (:func:`splits_between`):

1. *No piece of the whole crosses the LF.* A piece holding the LF and the
   ``-`` after it would have to match LF with one branch element and ``-``
   with the next: letter branches start with ``[^\r\n\p{L}\p{N}]?`` and go on
   with letters and marks; digit branches take digits; the punctuation
   branch's ``[^\s\p{L}\p{N}]+`` takes no white space and its tail
   (``[\r\n/]*`` in o200k, ``[\r\n]*+`` in cl100k) takes no ``-``; every
   white-space branch takes white space only; cl100k's contractions are
   fixed letters. So every piece of the whole starting in ``left`` ends in
   it.
2. *``left`` splits alone as in the whole.* A branch tried at a position of
   ``left`` behaves alike in both texts unless it reads the character after
   ``left``: where the whole has ``-`` and ``left`` alone its end. The
   elements that can stand there after taking the LF (the tails above,
   ``\s*``, ``\s+``, ``[\r\n]+``) take neither ``-`` nor the end, the same
   way; what tells the two apart is a test of the end itself: o200k's
   ``\s+(?!\S)`` and cl100k's ``\s++$`` and ``\s+(?!\S)``. They are tried
   only at a position inside the white space run that ends with the LF
   (elsewhere a non-blank stops the run before the end of ``left``), and
   there an earlier branch, or the one just after, matches the same span:
   o200k's ``\s*[\r\n]+`` comes first and takes the run up to its last LF,
   the end of ``left``; cl100k's ``\s++$`` takes that span in ``left``
   alone, and in the whole it fails (``-`` is not the end) and
   ``\s*[\r\n]``, the next branch, takes the same span (from the start to the
   last CR or LF, the end of ``left``). Neither ``\s+(?!\S)`` is reached.
3. *``right`` splits alone as in the whole.* The patterns have no
   look-behind, no ``^`` and no ``\b``, and ``$`` is the end of both.

Each count is tiktoken's (or the fast engine's, held to it), so the sum is
exact. Any other pattern, an approximate profile (its band is not additive)
or a join the rule does not cover is counted whole. ``tests/tokens/test_joins.py``
holds the sum to a direct count on generated lines for both encodings.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

from contextfit.tokens.long_blanks import CL100K_PATTERN, O200K_PATTERN

__all__ = ["covers", "runs", "splits_between"]

_PROVEN = frozenset((O200K_PATTERN, CL100K_PATTERN))


def covers(encoding: Any) -> bool:
    """Whether the argument above was made for ``encoding``'s pattern (both exact encodings)."""
    return getattr(encoding, "_pat_str", None) in _PROVEN


def splits_between(left: str, right: str) -> bool:
    r"""Whether the pieces of ``left + right`` are those of ``left``, then those of ``right``.

    >>> splits_between("Summary:\n", "- a line."), splits_between("a.", "\n- b"), splits_between("a\n", "/b")
    (True, False, False)
    """
    return left[-1:] == "\n" and right[:1] == "-"


def runs(parts: Sequence[str]) -> list[str]:
    r"""``parts`` joined where :func:`splits_between` does not hold: texts whose
    counts add up to the count of ``"".join(parts)``.

    >>> runs(["Head:\n", "- one.\n", "- two."]), runs(["a", "b\n", "- c"])
    (['Head:\n', '- one.\n', '- two.'], ['ab\n', '- c'])
    """
    if all(map(str.endswith, parts[:-1], repeat("\n"))) and all(map(str.startswith, parts[1:], repeat("-"))):
        return list(parts)  # a summary's lines: every join is a cut (tested in C)
    out: list[str] = []
    pending: list[str] = []
    for part in parts:
        if pending and not splits_between(pending[-1], part):
            pending.append(part)
            continue
        if pending:
            out.append("".join(pending))
        pending = [part]
    if pending:
        out.append("".join(pending))
    return out
