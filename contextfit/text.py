"""Small, dependency-free text tools for summaries and relevance.

Words are lower-cased runs of letters and digits (any script), with a short
English stop-word list removed and a light plural/suffix folding so "forests"
meets "forest". Sentences split on terminal punctuation and line breaks.
"""

from __future__ import annotations

import re
import sys

from .caches import register

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# A sentence ends at . ! ? … (with any closing quotes or brackets) before
# white space or the end, at CJK full stops, or at a line break.
SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s|$)|[。！？]+|\n")

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
    you've your yours yourself yourselves also just like get got one will yes ok okay oh well really
    """.split()
)


def fold(word: str) -> str:
    """Fold a lower-case word to a rough stem (plural and common suffixes).

    >>> fold("forests"), fold("running"), fold("studies")
    ('forest', 'runn', 'study')
    """
    if len(word) > 4:
        if word.endswith("ies"):
            return word[:-3] + "y"
        if word.endswith("ing"):
            return word[:-3]
        if word.endswith("ed") and not word.endswith("eed"):
            return word[:-2]
        if word.endswith("es") and word[-3] in "sxz":
            return word[:-2]
        if word.endswith("s") and not word.endswith("ss"):
            return word[:-1]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """Content words of ``text``: lower-cased, stop words removed, folded.

    >>> words("The Shadowfangs came to the forests of Eldoria!")
    ['shadowfang', 'came', 'forest', 'eldoria']
    """
    return _content_words(_WORD.findall(text.lower()))


def _content_words(found: list[str]) -> list[str]:
    """The content words among lower-cased word matches: stop words removed, folded."""
    folded = list(map(_FOLDED.get, found))
    if None in folded:
        for position, match in enumerate(found):
            if folded[position] is None:
                folded[position] = _fold_once(match)
    return [word for word in folded if word]


# Each distinct word is folded once: "" marks a word that is not a content word.
# A plain dict, read in C by words(); what it holds is bounded on the write side:
# words longer than _FOLDED_LONGEST are folded every time (a 100,000-letter
# "word" would otherwise stay), and past FOLDED_BYTES it starts over.
_FOLDED: dict[str, str] = {}
_FOLDED_LONGEST = 64
#: Bytes the fold cache may hold (each entry: the word, its folded form, a dict slot).
FOLDED_BYTES = 8 * 1024 * 1024
_folded_bytes = 0


def _fold_once(match: str) -> str:
    global _folded_bytes
    word = "" if match in STOP_WORDS or (len(match) == 1 and match.isascii()) else fold(match)
    if len(match) > _FOLDED_LONGEST:
        return word
    size = 2 * sys.getsizeof(match) + 100  # the word, a folded copy at most its size, the slot
    if _folded_bytes + size > FOLDED_BYTES:
        _FOLDED.clear()
        _folded_bytes = 0
    _FOLDED[match] = word
    _folded_bytes += size
    return word


def folded_bytes() -> int:
    """Bytes the fold cache accounts for now (at most :data:`FOLDED_BYTES`)."""
    return _folded_bytes


def clear_caches() -> None:
    """Forget the folded words (benchmarks use it for a cold start)."""
    global _folded_bytes
    _FOLDED.clear()
    _folded_bytes = 0


register("text.folded_words", _FOLDED, clear=clear_caches)


def sentences(text: str) -> list[str]:
    """Split text into sentences, verbatim (only surrounding space trimmed).

    >>> sentences("Hello there. How are you?\\nFine!")
    ['Hello there.', 'How are you?', 'Fine!']
    """
    out = []
    start = 0
    for match in SENTENCE_END.finditer(text):
        piece = text[start : match.end()].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def sentences_with_words(text: str) -> list[tuple[str, list[str]]]:
    """Each sentence of ``text`` with its content words: ``[(s, words(s)) for s in sentences(text)]``.

    An ASCII text is lower-cased once and each sentence's words are matched in
    place (lower-casing ASCII is per character, and a word never crosses a
    sentence end: the end is punctuation before white space, or a line
    break); any other text, whose lower case may depend on the neighbours
    (Greek final sigma), is taken a sentence at a time.

    >>> sentences_with_words("The wolves came. Forests burned!")
    [('The wolves came.', ['wolve', 'came']), ('Forests burned!', ['forest', 'burn'])]
    """
    if not text.isascii():
        return [(sentence, words(sentence)) for sentence in sentences(text)]
    lowered, find = text.lower(), _WORD.findall
    out = []
    start = 0
    for match in SENTENCE_END.finditer(text):
        end = match.end()
        piece = text[start:end].strip()
        if piece:
            out.append((piece, _content_words(find(lowered, start, end))))
        start = end
    tail = text[start:].strip()
    if tail:
        out.append((tail, _content_words(find(lowered, start))))
    return out
