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
* **Mixed blank runs** (Gemma 3 only: it merges a blank only with the same
  blank, and has no token for CR or U+3000 or most other spaces, which fall back
  to one token per UTF-8 byte): in a run of two or more blanks, each change of
  character adds 1, each blank other than space, tab and newline its UTF-8
  length.

Then ``headroom_tokens`` makes the upper bound at least the unscaled count plus
that many tokens, for short texts, where one token is a large part of the count.

Pure-ASCII text without long or mixed blank runs (English chat, code, JSON)
costs one ``str.isascii`` and one regex search; nothing here runs for an exact
profile.

>>> abugida_characters("សួស្តី hello ஹலோ")
9
>>> character_extra("MAX_RETRY_COUNT ภาษา", (("abugida", 100), ("underscore", 40)))
5
>>> blank_run_extra("a" + " " * 100 + "b", {" ": 31}, mixed=False)
4
>>> blank_run_extra("a \n \n b", {}, mixed=True)
4
"""

from __future__ import annotations

import re

__all__ = ["ABUGIDAS", "CLASSES", "abugida_characters", "blank_run_extra", "character_extra"]

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
#: Two or more blanks in a row.
_BLANK_RUN = re.compile(r"\s{2,}")
_SAME_RUN = re.compile(r"(\s)\1*")


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


def blank_run_extra(text: str, longest: dict[str, int], mixed: bool | str) -> int:
    """Extra tokens for the blank runs of ``text`` (see the module's rules).

    ``longest`` maps a blank to the longest run of it the reference has one
    token for; ``mixed`` adds the Gemma-style costs of runs that mix blanks
    (``True``), or, as a string, 1 for each change of blank from or to one of
    its characters (Claude 2 merges a tab with no other blank).

    >>> blank_run_extra("\\t" * 20, {"\\t": 8}, mixed=False), blank_run_extra("\\t" * 8, {"\\t": 8}, mixed=False)
    (3, 0)
    >>> blank_run_extra("x\\u3000\\u3000y", {}, mixed=True)  # two 3-byte blanks and no change
    6
    >>> blank_run_extra("\\t\\n\\t\\n    x", {}, mixed="\\t"), blank_run_extra("\\n    x", {}, mixed="\\t")
    (3, 0)
    """
    extra = 0
    for run in _BLANK_RUN.finditer(text):
        piece = run.group()
        parts = [part.group() for part in _SAME_RUN.finditer(piece)]
        for part in parts:
            char, k = part[0], len(part)
            limit = longest.get(char)
            if limit is not None and k > limit:
                extra += -(-k // limit)
            if mixed is True and char not in " \t\n":
                extra += k * len(char.encode("utf-8", "surrogatepass"))
        if mixed is True:
            extra += len(parts) - 1
        elif mixed:
            extra += sum(1 for a, b in zip(parts, parts[1:]) if a[0] in mixed or b[0] in mixed)
    return extra
