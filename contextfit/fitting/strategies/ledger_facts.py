"""The facts a message states, as ``fact-ledger`` reads them: local rules, no model.

A message is split into sentences (line breaks and CJK full stops end one
too). A sentence is a **fact line** when it holds a value of one of these
sorts, found as written:

* ``quoted`` — text between ``"…"``, ``“…”``, `````…`````, ``「…」`` or ``『…』``;
* ``money`` and ``measure`` — an amount (``$4,200``, ``12 €``) or a number
  with its unit (``250 ms``, ``6 replicas``, ``3.5 GB``, ``40%``, ``5 个``);
* ``date`` — ``2025-03-14``, ``March 14``, ``14 March``, ``Thursday 14:30``,
  ``14:30``, ``3月14日``;
* ``version`` — ``v2.3.1``, ``8.4.0``, a product and its version (``PostgreSQL 16``);
* ``identifier`` — words mixing letters and digits (``INC-4821``,
  ``eu-west-3``, ``7f3a9c2``), ``snake_case`` names, all-capital words;
* ``name`` — runs of two or more capitalized words (``Priya Raman``);
* ``number`` — any other number of two digits or more (a port);
* ``choice`` — the word after a decision verb ("use pnpm", "switched to
  Redis", "goes by heron", "改为 …").

Each line gets a **priority**: markers of a fact to keep ("important",
"remember", "for the record", "decision", "from now on", "change of plan",
"重要", "记住"…) and decision verbs ("use", "switch to", "is now", "set … to")
raise it, each sort of value adds to it, a user's sentence ranks above an
assistant's and a tool's output (logs) below both, and a sentence whose
shape — its plain lower-case words, values left out — recurs in three
messages or more is boilerplate (a log line, a stock phrase) and drops.

Each line also has a **key**: its content words without the values, the
markers and the decision verbs (CJK runs as character pairs). A later line
with a value of the same sort and nearly the same key (weighted by how rare
each word is) **supersedes** an earlier one: the ledger keeps the newest.

>>> [(line.sorts, line.choice) for line in fact_lines("Important: the billing port is 5433. Thanks!", "user")]
[(('number',), None)]
>>> fact_lines("We switched the search cluster to eu-west-3 yesterday.", "user")[0].values
('eu-west-3',)
>>> fact_lines("部署区域改为 eu-west-3。谢谢", "user")[0].values
('eu-west-3',)
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat

from ...caches import register
from ...memo import TextMemo, digest
from ...text import sentences, words

_QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”|`([^`\n]{2,80})`|「([^」\n]{1,80})」|『([^』\n]{1,80})』")
_MONEY = re.compile(r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|K|m|M|million|billion|bn))?\b"
                    r"|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|dollars|euros|€|元|円)")
_UNITS = (r"%|ms|s|sec|secs|seconds?|minutes?|mins?|hours?|hrs?|h|days?|weeks?|months?|years?|"
          r"[KMGTP]i?B|[kKMG]b|kbps|Mbps|Gbps|k|K|x|rps|qps|req/s|tokens?|users?|replicas?|nodes?|pods?|workers?|"
          r"threads?|cores?|vCPUs?|CPUs?|GPUs?|instances?|shards?|partitions?|retries|attempts|items?|rows?|"
          r"records?|requests?|connections?|files?|pages?|km|mi|m|cm|mm|kg|g|lb|lbs|°C|°F|px|em|pt|"
          r"个|台|人|天|小时|分钟|秒|毫秒|次|件|日|時間|分|円|元")
_MEASURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:" + _UNITS + r")(?![A-Za-z])")
_MONTHS = (r"January|February|March|April|May|June|July|August|September|October|November|December|"
           r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
_WEEKDAYS = r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
    rf"|\b(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b|\b\d{{1,2}} (?:{_MONTHS})(?: \d{{4}})?\b"
    rf"|\b(?:{_WEEKDAYS})(?: \d{{1,2}}(?::\d{{2}})?(?:\s?[ap]m)?)?\b|\b\d{{1,2}}:\d{{2}}(?:\s?[ap]m)?\b"
    r"|\d{4}年\d{1,2}月\d{1,2}日|\d{1,2}月\d{1,2}日"
)
_VERSION = re.compile(r"\bv\d+(?:\.\d+)*\b|\b\d+\.\d+\.\d+(?:\.\d+)?\b|\b[A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)? v?\d+(?:\.\d+)*[a-z]*\b")
_IDENTIFIER = re.compile(
    r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)+\b"  # INC-4821, eu-west-3
    r"|\b(?=\w*\d)(?=\w*[A-Za-z])[A-Za-z0-9]{3,}\b"  # 7f3a9c2, ORD1234
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"  # snake_case
    r"|\b[A-Z]{2,}[0-9]*\b"  # NASA, S3
)
_NAME = re.compile(r"\b[A-Z][a-zà-ÿ]+(?:[ -][A-Z][a-zà-ÿ]+)+\b")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,.]*\d(?![\w])")
_CHOICE = re.compile(
    r"\b(?:use|using|uses|switch(?:ed)? to|go(?:es|ing)? with|went with|mov(?:e|ed|es) (?:\w+ )?(?:to|over to)|"
    r"builds? with|renamed (?:\w+ ){0,3}to|called|calls? (?:\w+ ){0,4}?(?:project|it|them|him|her)|named|goes by|set (?:\w+ ){0,4}to|(?:is|are) now|"
    r"decided on|chose|picked|prefer|choose|pick)\s+[\"“`']?([\w][\w.+#/-]*)",
    re.IGNORECASE,
)
_CHOICE_CJK = re.compile(r"(?:改为|改成|换成|设为|设置为|定为|使用|采用|叫做|叫|是|為|为|に変更|にする)\s*[「『“\"]?([\w.+#/-]{2,})")
#: In a sentence marked as a fact ("Important: the build tool is hatch."), what follows its last "is", ":" or "=".
_STATED = re.compile(r"(?:\b(?:is|are|was|equals)|[:=])\s+[\"“`']?([\w][\w.+#/-]*)", re.IGNORECASE)
_CUES = re.compile(
    r"\b(?:important|remember|note|for the record|decision|decided|agreed|from now on|going forward|"
    r"change of plan|update|correction|instead|fyi|make sure|don't forget|do not forget|keep in mind)\b|重要|记住|記住|注意|决定|決定|以后|今後|必ず|務必|务必",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:use|using|switch(?:ed)?|go with|went with|moved?|set|is now|are now|renamed|called|named|"
    r"decided|chose|picked|agreed|settled|pinned|raised|lowered|bumped|changed|rotated|scaled)\b|改为|改成|换成|设为|使用|采用",
    re.IGNORECASE,
)
#: words that are markers or verbs, not what a fact is about (left out of its key)
_NOT_KEY = frozenset(words(
    "important remember note record decision decided agreed now going forward change plan update correction "
    "instead fyi make sure forget keep mind must always never use using switch switched go went move moved set "
    "renamed called named chose picked settled please later that this these those from with into onto over "
    "again also just still already yesterday today tomorrow morning week"
))
# What a match needs, cheap to look for first: a digit, for most values; a date's mark or word, a
# currency, two capitals in a row (an all-capital identifier), for the finders that need them (see
# _finders); and, in an ASCII sentence lower-cased, a word of a marker, a choice or a decision verb
# (their patterns' English words, stems, or phrases spelled out: see fact_lines).
_DIGIT = re.compile(r"\d")
_CAPITALS = re.compile(r"[A-Z]{2}")
_DATE_MARK = re.compile(r"\d[-/:月]")
_DATE_WORD = re.compile(r"Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec|day")
_MONEY_MARK = re.compile(r"\$|€|£|¥|元|円|USD|EUR|GBP|dollars|euros")
_CUE_WORDS = re.compile(r"important|remember|note|for the record|decision|decided|agreed|from now on|going forward|"
                        r"change of plan|update|correction|instead|fyi|make sure|don't forget|do not forget|keep in mind")
_CHOICE_WORDS = re.compile(r"use|using|switch|go with|goes with|going with|goes by|went with|mov|build|named|call|set|"
                           r"is now|are now|decided on|chose|choose|pick|prefer")
_DECISION_WORDS = re.compile(r"use|using|switch|go with|went with|move|set|is now|are now|named|called|decided|chose|"
                             r"picked|agreed|settled|pinned|raised|lowered|bumped|changed|rotated|scaled")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_SIGNATURE_WORD = re.compile(r"(?<![\w./-])[a-z]+(?![\w./-])")

#: Priorities (see the module docstring): a line below LEDGER_THRESHOLD is not worth a ledger line.
CUE_BONUS = 3.0
DECISION_BONUS = 1.5
SORT_BONUS = 1.0
NUMBER_BONUS = 0.5
ROLE_BONUS = {"user": 1.0, "assistant": 0.0}
TOOL_PENALTY = -2.0
BOILERPLATE_PENALTY = -3.0
BOILERPLATE_MESSAGES = 3
LEDGER_THRESHOLD = 1.0
#: How alike two keys must be (rarity-weighted overlap) for a later line to supersede an earlier one.
SUPERSEDE_SIMILARITY = 0.9
MAX_LINE_CHARS = 300

_FINDERS = (("quoted", _QUOTED), ("money", _MONEY), ("measure", _MEASURE), ("date", _DATE), ("version", _VERSION),
            ("identifier", _IDENTIFIER), ("name", _NAME), ("number", _NUMBER))
#: The finders that may match a sentence, by whether it holds (a digit, what a date needs, what an
#: amount of money needs, what an identifier needs): see :func:`_finders`.
_FINDER_SETS = {
    (digit, date, money, identifier): tuple(
        (sort, pattern) for sort, pattern in _FINDERS
        if {"date": date, "money": digit and money, "identifier": identifier}.get(sort, digit or sort in ("quoted", "name")))
    for digit in (False, True) for date in (False, True) for money in (False, True) for identifier in (False, True)
}


@dataclass(frozen=True, slots=True)
class FactLine:
    """One sentence of a message that states a fact (module docstring)."""

    text: str
    values: tuple[str, ...]
    sorts: tuple[str, ...]
    choice: str | None
    key: frozenset[str]
    base_priority: float
    signature: str

    @property
    def main_sort(self) -> str:
        """The sort a superseding line must share: the first value's, else ``choice``."""
        return self.sorts[0] if self.sorts else "choice"


def _found(sentence: str, finders: Sequence[tuple[str, re.Pattern[str]]]) -> tuple[list[str], list[str]]:
    """The values of a sentence and their sorts, found by ``finders`` (those that may match, in the
    finders' order), none inside another."""
    taken = bytearray(len(sentence))
    found: list[str] = []
    sorts: list[str] = []
    for sort, pattern in finders:
        for match in pattern.finditer(sentence):
            # a match holds at most one group (only quoted has groups, one per kind of quote): the value
            start, end = match.span(match.lastindex or 0)
            if end - start < 2 or taken.find(1, start, end) != -1:
                continue
            value = sentence[start:end].strip()
            if not value:
                continue
            taken[start:end] = b"\x01" * (end - start)
            found.append(value)
            sorts.append(sort)
    return found, sorts


def _finders(sentence: str, digits: bool = True) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The finders that may match ``sentence`` (``digits=False``: it has no digit), in their order.

    Each finder left out would have found nothing: every value but a quote, a name, a weekday, a
    ``snake_case`` name or an all-capital word holds a digit; every date a digit before ``-``,
    ``/``, ``:`` or ``月``, a month (whose name begins with its abbreviation) or a weekday; every
    amount of money a currency's sign or name."""
    if digits and _DIGIT.search(sentence) is not None:
        return _FINDER_SETS[True, _DATE_MARK.search(sentence) is not None or _DATE_WORD.search(sentence) is not None,
                            _MONEY_MARK.search(sentence) is not None, True]
    return _FINDER_SETS[False, "day" in sentence, False, "_" in sentence or _CAPITALS.search(sentence) is not None]


def _key(sentence: str, values: Iterable[str]) -> frozenset[str]:
    rest = sentence
    for value in values:
        rest = rest.replace(value, " ")
    found: set[str] = set()
    for word in words(rest):
        if word in _NOT_KEY or word.isdigit():
            continue
        if _CJK.search(word):
            found.update(word[i:i + 2] for i in range(max(1, len(word) - 1)))
        else:
            found.add(word)
    return frozenset(found)


def fact_lines(text: str, role: str) -> list[FactLine]:
    """The fact lines of a message's text (``role``: its role; module docstring)."""
    lines = []
    digits = _DIGIT.search(text) is not None  # none in the message: none in any of its sentences
    for sentence in sentences(text):
        sentence = " ".join(sentence.split())
        if not sentence or len(sentence) > MAX_LINE_CHARS:
            continue
        values, sorts = _found(sentence, _finders(sentence, digits))
        lowered = sentence.lower()
        # An ASCII sentence is matched case-blind as its lower case is (each letter its own), so a
        # marker or decision verb needs one of its words there; any other text asks the patterns.
        plain = sentence.isascii()
        cue = (not plain or _CUE_WORDS.search(lowered) is not None) and _CUES.search(sentence) is not None
        choice_match = (_CHOICE.search(sentence) if not plain or _CHOICE_WORDS.search(lowered) else None) \
            or (_CHOICE_CJK.search(sentence) if not plain else None)
        if choice_match is None and cue and not values:
            choice_match = next(reversed(list(_STATED.finditer(sentence))), None)
        choice = choice_match.group(1).rstrip(".,;:!?-/") if choice_match else None
        if choice is not None and any(choice in value or value in choice for value in values):
            choice = None  # the decision's object is already a value
        if not values and choice is None:
            continue
        if choice is not None:
            values.append(choice)
        decision = (not plain or _DECISION_WORDS.search(lowered) is not None) and _DECISION.search(sentence) is not None
        distinct = list(dict.fromkeys(sort for sort in sorts))
        priority = (CUE_BONUS * cue + DECISION_BONUS * decision
                    + sum(NUMBER_BONUS if sort == "number" else SORT_BONUS for sort in distinct[:2])
                    + (SORT_BONUS if choice is not None else 0.0)
                    + (TOOL_PENALTY if role in ("tool", "function") else ROLE_BONUS.get(role, 0.0)))
        signature = " ".join(_SIGNATURE_WORD.findall(lowered))
        lines.append(FactLine(_clauses(sentence, values), tuple(values), tuple(distinct), choice,
                              _key(sentence, values), priority, signature))
    return lines


def message_lines(text: str, role: str) -> tuple[FactLine, ...]:
    """:func:`fact_lines`, kept by text and role (:data:`LINES_BYTES` at most): the same message
    in another chat, or the same chat uploaded again with a new last message, is read once."""
    key = digest(f"{role}\x00{text}")  # 16 bytes: a cached message does not keep its text alive
    found = _LINES.lookup(key)
    if found is None:
        found = tuple(fact_lines(text, role))
        _LINES.put_key(key, found, lines_bytes(found))
    return found


def lines_bytes(lines: tuple[FactLine, ...]) -> int:
    """What a message's cached lines hold (their strings and sets counted whole, even those shared)."""
    size = sys.getsizeof(lines)
    for line in lines:
        size += (sys.getsizeof(line) + sys.getsizeof(line.text) + sys.getsizeof(line.values)
                 + sum(map(sys.getsizeof, line.values)) + sys.getsizeof(line.sorts) + sys.getsizeof(line.key)
                 + sum(map(sys.getsizeof, line.key)) + sys.getsizeof(line.signature))
    return size


#: Bytes the message lines cache (:func:`message_lines`) may hold.
LINES_BYTES = 32 * 1024 * 1024
_LINES: TextMemo[tuple[FactLine, ...]] = register("fact_ledger.lines", TextMemo(LINES_BYTES))


_CLAUSE_END = re.compile(r"[,;，；、]\s*|\s+[—–-]\s+")


def _clauses(sentence: str, values: Sequence[str]) -> str:
    """The shortest run of the sentence's clauses (parted by commas, semicolons, dashes) that holds all
    its values, verbatim: "Restarted billing and it came up on port 5433, the checks are green." keeps
    its first clause. A sentence whose values span it all is kept whole.

    >>> _clauses("Restarted billing and it came up on port 5433, the checks are green again.", ["5433"])
    'Restarted billing and it came up on port 5433'
    """
    bounds = [0, *(match.start() for match in _CLAUSE_END.finditer(sentence)), len(sentence)]
    spans = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    where = [i for i, (start, end) in enumerate(spans) if any(v in sentence[start:end] for v in values)]
    if not where or len(spans) == 1:
        return sentence
    start, end = spans[where[0]][0], spans[where[-1]][1]
    clause = sentence[start:end].lstrip(",;，；、—–- ").rstrip()
    if not all(value in clause for value in values):
        return sentence
    return clause


def word_weight(lines: int, holding: int) -> float:
    """A key word's weight when ``holding`` of ``lines`` lines hold it: a rare word tells more.

    >>> round(word_weight(10, 10), 3), round(word_weight(10, 1), 3)
    (0.693, 2.398)
    """
    return math.log(1 + lines / holding)


def key_weight(key: frozenset[str], weight: dict[str, float]) -> float:
    """What a key weighs: its words' weights (1 for a word ``weight`` lacks), summed in the key's order."""
    return sum(map(weight.get, key, repeat(1.0)))  # in C, adding the same weights in the same order as a loop would


def weighed_same_key(a: frozenset[str], b: frozenset[str], weight: dict[str, float], a_weight: float,
                     b_weight: float) -> bool:
    """Whether two non-empty keys whose :func:`key_weight` is known name the same thing: their
    shared words weigh at least :data:`SUPERSEDE_SIMILARITY` of the lighter key.

    >>> w = {"billing": 2.0, "search": 2.0, "service": 0.5, "port": 1.0}
    >>> a, b = frozenset({"billing", "service", "port"}), frozenset({"billing", "service", "port", "now"})
    >>> c = frozenset({"search", "service", "port"})
    >>> weighed_same_key(a, b, w, key_weight(a, w), key_weight(b, w)), weighed_same_key(a, c, w, key_weight(a, w), key_weight(c, w))
    (True, False)
    """
    lighter = min(a_weight, b_weight)
    return lighter > 0 and sum(map(weight.get, a & b, repeat(1.0))) >= SUPERSEDE_SIMILARITY * lighter


__all__ = ["BOILERPLATE_MESSAGES", "BOILERPLATE_PENALTY", "FactLine", "LEDGER_THRESHOLD", "LINES_BYTES", "fact_lines",
           "key_weight", "lines_bytes", "message_lines", "weighed_same_key", "word_weight"]
