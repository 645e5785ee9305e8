"""Must-survive facts: is what the conversation depends on still in what is sent?

A fact is declared as

* a string — found verbatim (case-sensitive) in a sent block;
* a ``/pattern/flags`` string — a regular expression, written and run like a
  lorebook regex key (``inputs/lorebook/matching.py``: JavaScript syntax,
  a CPU-time limit per search and per replay, a pattern too long is never run);
  one so written that does not compile is refused (a lorebook would read it as
  text; ``{"text": ...}`` says that), while ``/usr/bin/`` (a slash inside) is text;
* a mapping ``{"text": ...}`` or ``{"regex": ...}``, with an optional
  ``"name"``, ``"besides": true`` (it must be sent besides the request's own
  user message, and is in force once a message before that one says it: a
  fact the question refers back to is not kept by the question) and
  ``"message"`` (a message id or index): the fact is *pinned*
  to that message and is in force from the turn that message is part of;
  ``{"message": ...}`` alone pins the whole message: it is present when that
  message is sent or a summary line quotes it. A replay refuses a pin to a
  message its conversation does not hold (an audit's chat may grow to it).

A text or regex fact is in force from the first turn whose conversation so far
contains it: in its messages, or in the character card or persona, which every
request sends (in force from the first turn). ``{{char}}`` and ``{{user}}`` in a
fact's text and in the messages are read as the prompt fills them in. At each turn it is **present** when a sent block holds it —
verbatim in a message (``verbatim``), or in a summary line that quotes it
(``summary``) — and **lost** otherwise.

Without declared facts the **default entity rule** applies, per turn: the
entities of the latest user message that an earlier message also contains
must still be sent outside the latest user message itself. Entities are, in
this order, without repeats:

1. quoted strings: text between ``"…"``, ``“…”`` or backticks, 2–80 characters;
2. code symbols: dotted names (``os.path.join``), calls (``fit()``),
   ``snake_case`` and ``camelCase`` words;
3. identifiers: words mixing letters and digits (``ORD-1234``, ``gpt-4o``)
   and all-capital words of two letters or more (``NASA``, ``ÖBB``);
4. numbers of two characters or more (``42``, ``3.5``, ``2024``);
5. capitalized names: runs of capitalized words (a capital, then small
   letters, in any script) not at the start of a sentence (``… met Ada
   Lovelace``, ``… mit Jürgen Müller``);
6. CJK terms, for the scripts that write no capitals and no spaces: runs of
   katakana (``メアリー``), and runs of two to ten Han characters (``清水寺``);
   a longer Han run (a Chinese clause) is cut at the characters that mostly
   stand alone (``的``, ``了``, ``是``, ``我``…) and keeps its pieces of two to ten.

An entity is found in a text between non-word characters (``42`` is not in
``1423``); Han, hiragana and katakana characters are no such boundary
(``清水寺`` is in ``清水寺と金閣寺``, ``42`` in ``第42号``). The rule reads
only the text: it is deterministic and offline.

>>> entities('Did the "blue box" fix ORD-1234 for Ada Lovelace at 42 Main St? Check parse_args().')
['blue box', 'parse_args()', 'ORD-1234', '42', 'Ada Lovelace', 'Main St']
>>> entities("2日目は清水寺とメアリーの金閣寺に行きたい。"), entities("我想去北京的故宫博物院看看")
(['日目', '清水寺', 'メアリー', '金閣寺'], ['北京', '故宫博物院'])
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InvalidSettings
from ..inputs.messages import (
    CHARACTER,
    PERSONA,
    SUMMARY,
    explicit_id,
    kind_of,
    message_id,
    message_text,
    meta_of,
    role_of,
)
from ..inputs.lorebook.matching import RegexBudget, RegexKey, compile_regex_key, regex_shaped
from ..inputs.macros import check_growth
from ..pipeline.assembly import fill_macros

VERBATIM = "verbatim"
IN_SUMMARY = "summary"
LOST = "lost"
#: Blocks every request sends (protected, before the history): a fact they hold is in force from the first turn.
STANDING = frozenset({CHARACTER, PERSONA})
#: The longest fact name or replay label: each turn's row repeats it, so a long one multiplies the answer's size.
MAX_NAME = 80


def shortened(text: str, most: int = MAX_NAME) -> str:
    """``text`` cut to ``most`` characters, the last one an ellipsis.

    >>> shortened("ORD-7731"), shortened("x" * 100, 5)
    ('ORD-7731', 'xxxx…')
    """
    return text if len(text) <= most else text[: most - 1] + "…"

_QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”|`([^`\n]{2,80})`")
_CODE = re.compile(
    r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|\b[A-Za-z_]\w*\(\)"
    r"|\b[a-z0-9]+(?:_[a-z0-9]+)+\b|\b[a-z]+[A-Z]\w*\b"
)
# Every match of _CODE holds one of these (a dot before a name, "()", a digit or
# lower-case letter on both sides of "_", a lower-case letter before a capital):
# a text without any has no code symbol, and this simpler scan is about 4x faster.
_CODE_HINT = re.compile(r"\.[A-Za-z_]|\(\)|[a-z0-9]_[a-z0-9]|[a-z][A-Z]")
_IDENTIFIER = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b|\b(?=\w*\d)(?=\w*[A-Za-z])[A-Za-z0-9]+\b|\b[A-Z]{2,}\b")
# Identifiers but all-capital words, and numbers, hold a digit (Unicode ``\d``, as the
# patterns read it): a text without one runs only the all-capital pattern.
_DIGIT = re.compile(r"\d")
_CAPITALS = re.compile(r"\b[A-Z]{2,}\b")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,.]*\d(?![\w])|(?<![\w.])\d{2,}(?![\w])")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")
# All-capital words and names in every script ("ÖBB", "Zoë Müller": [A-Z] and [a-z] missed every name with an
# accent), for a text that is not ASCII: the patterns match whole words of letters (``[^\W\d_]``: ``re``'s word
# characters, as contains_word reads them) and the case is checked on the match (_all_capitals, _name_runs). On
# ASCII they find what the patterns above find, at about twice the time: ASCII keeps those.
_IDENTIFIER_ANY = re.compile(_IDENTIFIER.pattern.replace(r"\b[A-Z]{2,}\b", r"\b[^\W\d_]{2,}\b"))
_CAPITALS_ANY = re.compile(r"\b[^\W\d_]{2,}\b")
_LETTER_WORD = re.compile(r"\b[^\W\d_]+\b")
# CJK: Han (the unified ideographs, extension A, the compatibility block), hiragana and katakana
# (with the prolonged sound mark ー and the middle dot ・, half-width forms too). They write words
# without spaces, so they are no word boundary for contains_word (Hangul writes spaces: it is).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_CJK = re.compile(f"[{_HAN}{_KANA}]")
_CJK_TERM = re.compile(f"(?P<kana>[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]{{2,}})|(?P<han>[{_HAN}]{{2,}})")
# Han characters that mostly stand alone in Chinese (particles, pronouns, common verbs and
# measure words): a Han run longer than a term is cut at them.
_HAN_BREAKS = re.compile("[的了是在和与及或而我你他她它们这那有不也就都要会对把被给从到吗呢吧啊很还又说去来想可以之其个为着过看]")
_TERM_MOST = 10


def entities(text: str) -> list[str]:
    """The default rule's entities of ``text``, in the rule's order (see the module docstring)."""
    found: list[str] = []
    taken = bytearray(len(text))  # 1 where an earlier entity's match stands

    def add(value: str, start: int, end: int) -> None:
        value = value.strip()
        if len(value) < 2 or taken.find(1, start, end) != -1:
            return
        taken[start:end] = b"\x01" * (end - start)
        if value not in found:
            found.append(value)

    for match in _QUOTED.finditer(text):
        group = next(g for g in range(1, 4) if match.group(g) is not None)
        add(match.group(group), match.start(), match.end())
    ascii = text.isascii()
    identifier, capitals = (_IDENTIFIER, _CAPITALS) if ascii else (_IDENTIFIER_ANY, _CAPITALS_ANY)
    patterns = (identifier, _NUMBER) if _DIGIT.search(text) else (capitals,)
    for pattern in (_CODE, *patterns) if _CODE_HINT.search(text) else patterns:
        for match in pattern.finditer(text):
            value = match.group(0)
            if not ascii and pattern is not _CODE and value.isalpha() and not _all_capitals(value):
                continue  # a word of letters is an entity when all of them are capitals
            add(value, match.start(), match.end())
    runs = ((match.start(), match.end()) for match in _NAME.finditer(text)) if ascii else _name_runs(text)
    for start, end in runs:
        name = text[start:end]
        if _sentence_initial(text, start):
            # sentence-initial capital: drop the first word, keep the rest of the run
            rest = name.split(None, 1)
            if len(rest) == 2:
                add(rest[1], end - len(rest[1]), end)
            continue
        add(name, start, end)
    if not ascii and _CJK.search(text):
        for start, end in _cjk_terms(text):
            add(text[start:end], start, end)
    return found


def _cjk_terms(text: str) -> Iterable[tuple[int, int]]:
    """Where ``text`` holds CJK terms (rule 6 of the module docstring): (start, end) of each.

    >>> text = "清水寺と・メアリー・の北京的故宫博物院看看我们的上海浦东国际机场"
    >>> [text[a:b] for a, b in _cjk_terms(text)]
    ['清水寺', 'メアリー', '北京', '故宫博物院', '上海浦东国际机场']
    """
    for match in _CJK_TERM.finditer(text):
        start, end = match.span()
        if match.lastgroup == "kana":
            while start < end and text[start] in "・ー":  # no mark at either end
                start += 1
            while end > start and text[end - 1] == "・":
                end -= 1
            if end - start >= 2:
                yield start, end
            continue
        if end - start <= _TERM_MOST:
            yield start, end
            continue
        piece = start
        for cut in (*(start + found.start() for found in _HAN_BREAKS.finditer(match.group(0))), end):
            if 2 <= cut - piece <= _TERM_MOST:
                yield piece, cut
            piece = cut + 1


def _all_capitals(word: str) -> bool:
    return all(char.isupper() for char in word)


def _capitalized(word: str) -> bool:
    return len(word) > 1 and word[0].isupper() and all(char.islower() for char in word[1:])


def _name_runs(text: str) -> Iterable[tuple[int, int]]:
    """Where ``text`` holds runs of capitalized words (a capital, then small letters, in any
    script) parted by white space only: (start, end) of each.

    >>> [(a, b) for a, b in _name_runs("met Zoë Müller-Lüdenscheidt and ÉLODIE at Zürich2")]
    [(4, 14), (15, 27)]
    """
    start = end = -1
    for match in _LETTER_WORD.finditer(text):
        if not _capitalized(match.group(0)):
            continue
        if start >= 0 and text[end:match.start()].isspace():
            end = match.end()
            continue
        if start >= 0:
            yield start, end
        start, end = match.start(), match.end()
    if start >= 0:
        yield start, end


def _sentence_initial(text: str, start: int) -> bool:
    position = start - 1
    while position >= 0 and text[position] in " \t":
        position -= 1
    return position < 0 or text[position] in ".!?:\n\"“(*-#>"


def contains_word(text: str, entity: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``entity`` stands in ``text`` (within ``text[start:end]``) between non-word characters.

    >>> contains_word("order 1423 shipped", "42"), contains_word("the answer is 42.", "42")
    (False, True)
    >>> contains_word("42 is 42.", "42", 1), contains_word("42 is 42.", "42", 1, 7)
    (True, False)
    """
    return find_word(text, entity, start, end) != -1


def find_word(text: str, entity: str, start: int = 0, end: int | None = None) -> int:
    """Where ``entity`` first stands in ``text[start:end]`` between non-word characters, else -1.

    >>> find_word("order 1423, then 42.", "42"), find_word("order 1423", "42")
    (17, -1)
    """
    stop = len(text) if end is None else end
    position = text.find(entity, start, stop)
    while position != -1:
        before = text[position - 1] if position else " "
        end = position + len(entity)
        after = text[end] if end < len(text) else " "
        if not (_word_char(before) and _word_char(entity[0])) and not (_word_char(after) and _word_char(entity[-1])):
            return position
        position = text.find(entity, position + 1, stop)
    return -1


def _word_char(char: str) -> bool:
    """A character that joins a word: a letter, digit or ``_``, but not Han or kana, which write
    words without spaces (their words have no boundary to stand between)."""
    return (char.isalnum() or char == "_") and (char < "\u3040" or not _CJK.match(char))


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han, hiragana or katakana character.

    >>> has_cjk("清水寺"), has_cjk("Zürich")
    (True, False)
    """
    return _CJK.search(text) is not None


@dataclass(frozen=True, slots=True)
class Fact:
    """One must-survive fact: a text, a regex (``/pattern/flags``), or a pinned message."""

    name: str
    text: str | None = None
    regex: str | None = None
    message: str | int | None = None
    #: ``True``: the fact must be sent *besides* the user message of the request (a fact a question
    #: refers back to is not kept by the question itself); in force once a message before it says it.
    besides: bool = False

    def to_dict(self) -> dict[str, Any]:
        found = {key: value for key, value in (("name", self.name), ("text", self.text), ("regex", self.regex),
                                                ("message", self.message)) if value is not None}
        return {**found, "besides": True} if self.besides else found


def declared_facts(facts: Sequence[Any] | None) -> list[Fact]:
    """The facts a caller declared (strings, mappings, or :class:`Fact` values already checked), checked.

    >>> [f.to_dict() for f in declared_facts(["blue box", "/ORD-[0-9]+/", {"message": 3}])]
    [{'name': 'blue box', 'text': 'blue box'}, {'name': '/ORD-[0-9]+/', 'regex': '/ORD-[0-9]+/'}, {'name': 'message 3', 'message': 3}]
    """
    if facts is None:
        return []
    if isinstance(facts, (str, Mapping)) or not isinstance(facts, Sequence):
        raise InvalidSettings(f"facts must be a list of strings or objects, got {type(facts).__name__}.")
    return _distinct([(fact, True) if isinstance(fact, Fact) else _declared(fact, position)
                      for position, fact in enumerate(facts)])


def facts_that_check(facts: Sequence[Any]) -> tuple[list[int], list[InvalidSettings]]:
    """The positions of the facts :func:`declared_facts` takes together, and an error for each
    one left out, named as ``facts[i]`` of ``facts``: in order, a fact is left out when it does
    not check alone, or when the ones kept before it and it would be refused together (it
    repeats one, or shares a name). Each fact is checked once, and only a fact that clashes is
    checked with those kept: a box of 1,000 lines with one bad line is not checked 1,000 times.

    >>> positions, errors = facts_that_check(["ORD-7731", "/([a-z/", "ORD-7731", "courier"])
    >>> positions, [str(error)[:47] for error in errors]
    ([0, 3], ['facts[1] is written as a /regex/ but does not c', 'facts[2] repeats facts[0]; give each fact once.'])
    """
    declared: list[tuple[Fact, bool]] = []
    positions: list[int] = []
    errors: list[InvalidSettings] = []
    keys: set[tuple] = set()
    names: tuple[set[str], set[str]] = (set(), set())  # derived names, given names
    for position, fact in enumerate(facts):
        try:
            item = (fact, True) if isinstance(fact, Fact) else _declared(fact, position)
        except InvalidSettings as error:  # named facts[position] already
            errors.append(error)
            continue
        checked, given = item
        key = (checked.text, checked.regex, checked.message)
        # what _distinct refuses: a repeat, a given name another fact has, a name derived as one given
        clash = key in keys or checked.name in names[1] or (given and checked.name in names[0])
        if clash:
            try:
                _distinct([*declared, item])
            except InvalidSettings as error:  # in the candidates' indices: said as the caller's
                where = [*positions, position]
                errors.append(InvalidSettings(
                    re.sub(r"facts\[(\d+)\]", lambda match: f"facts[{where[int(match[1])]}]", str(error))))
                continue
        declared.append(item)
        positions.append(position)
        keys.add(key)
        names[given].add(checked.name)
    return positions, errors


def _distinct(declared: list[tuple[Fact, bool]]) -> list[Fact]:
    """The facts, each under a name of its own: a report names them at every turn, and a page
    keyed by name would take two facts of one name for one. A fact given twice is refused, and
    so is a given name that another fact has; two names derived alike (texts that differ only
    past their 79th character, the text "message 3" and a pin to message 3) are told apart by
    " (2)", " (3)"...

    >>> names = [f.name for f in declared_facts(["a" * 90, "a" * 91, "message 3", {"message": 3}])]
    >>> [len(name) for name in names[:2]], names[1][-5:], names[2:]
    ([80, 80], '… (2)', ['message 3', 'message 3 (2)'])
    """
    first: dict[tuple, int] = {}
    for position, (fact, _) in enumerate(declared):
        key = (fact.text, fact.regex, fact.message)
        if key in first:
            raise InvalidSettings(f"facts[{position}] repeats facts[{first[key]}]; give each fact once.")
        first[key] = position
    derived: dict[str, int] = {}
    for position, (fact, explicit) in enumerate(declared):
        if not explicit:
            derived.setdefault(fact.name, position)
    named: dict[str, int] = {}
    for position, (fact, explicit) in enumerate(declared):
        if explicit:
            other = named.get(fact.name, derived.get(fact.name))
            if other is not None:
                raise InvalidSettings(f"facts[{position}] is named {fact.name!r}, as facts[{other}] is; "
                                      "each fact needs a name of its own (a report names it at every turn).")
            named[fact.name] = position
    out = []
    for position, (fact, explicit) in enumerate(declared):
        if not explicit:
            name, tried = fact.name, 1
            while name in named:
                tried += 1
                suffix = f" ({tried})"
                name = shortened(fact.name, MAX_NAME - len(suffix)) + suffix
            named[name] = position
            fact = replace(fact, name=name)
        out.append(fact)
    return out


def conversation_facts(conversation: Any) -> Any:
    """The facts a :class:`~contextfit.Conversation` declares (a bundle's ``settings.facts``), else ``None``.

    >>> from contextfit import load_conversation
    >>> conversation_facts(load_conversation('{"contextfit": "conversation", "settings": {"facts": ["AX55"]},'
    ...                                      ' "messages": [{"role": "user", "content": "Hi"}]}'))
    ['AX55']
    >>> conversation_facts([{"role": "user", "content": "Hi"}]) is None
    True
    """
    settings = getattr(conversation, "settings", None)
    return settings.get("facts") if isinstance(settings, Mapping) else None


def fact_from_line(line: str) -> str | dict:
    """A fact as typed on one line (the dashboard's facts box, the CLI's ``--fact``): a JSON
    object such as ``{"text": "ORD-7731", "message": 3}`` (a fact pinned to a message), else the
    line itself, text or ``/pattern/flags``.

    >>> fact_from_line('{"message": 2}'), fact_from_line("ORD-7731"), fact_from_line("{not json}")
    ({'message': 2}, 'ORD-7731', '{not json}')
    """
    if line.startswith("{") and line.endswith("}"):
        try:
            value = json.loads(line)
        except ValueError:
            return line
        if isinstance(value, dict):
            return value
    return line


def _declared(fact: Any, position: int) -> tuple[Fact, bool]:
    """The fact at ``position``, checked, and whether its name was given."""
    where = f"facts[{position}]"
    if isinstance(fact, str):
        if compile_regex_key(fact) is not None:
            fact = {"regex": fact}
        elif regex_shaped(fact):  # a lorebook key would be read as text; a fact so written is meant as a regex
            raise InvalidSettings(f"{where} is written as a /regex/ but does not compile: {fact!r}. Fix the pattern, "
                                  f"or give {{\"text\": {json.dumps(fact, ensure_ascii=False)}}} to look for it as text.")
        else:
            fact = {"text": fact}
    if not isinstance(fact, Mapping):
        raise InvalidSettings(f"{where} must be a string or an object, got {type(fact).__name__}.")
    unknown = set(fact) - {"name", "text", "regex", "message", "besides"}
    if unknown:
        raise InvalidSettings(f"{where} has unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                              "use text, regex, message, name, besides.")
    text, pattern, message, name = fact.get("text"), fact.get("regex"), fact.get("message"), fact.get("name")
    besides = fact.get("besides", False)
    if not isinstance(besides, bool):
        raise InvalidSettings(f"{where}.besides must be true or false, got {besides!r}.")
    if besides and text is None and pattern is None:
        raise InvalidSettings(f"{where}.besides applies to a text or regex fact (a pinned message is its own).")
    if text is not None and pattern is not None:
        raise InvalidSettings(f"{where} gives both text and regex; a fact is one or the other.")
    for key, value in (("text", text), ("regex", pattern), ("name", name)):
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidSettings(f"{where}.{key} must be a non-empty string, got {value!r}.")
    if message is not None and (isinstance(message, bool) or not isinstance(message, (str, int))):
        raise InvalidSettings(f"{where}.message must be a message id or index, got {message!r}.")
    if text is None and pattern is None and message is None:
        raise InvalidSettings(f"{where} needs text, regex or message.")
    if pattern is not None and compile_regex_key(pattern) is None:
        raise InvalidSettings(f"{where}.regex must be written /pattern/flags (a lorebook regex key), got {pattern!r}.")
    if name is not None and len(name) > MAX_NAME:  # a report names the fact at every turn
        raise InvalidSettings(f"{where}.name must be at most {MAX_NAME} characters, got {len(name):,}.")
    return (Fact(name or shortened(text or pattern or f"message {message}"), text, pattern, message, besides),
            name is not None)


def filled_facts(facts: Sequence[Fact], names: Mapping[str, str]) -> list[Fact]:
    """``facts`` with ``{{user}}`` and ``{{char}}`` in their texts filled in as the prompt fills them
    (``names``: :func:`~contextfit.pipeline.plan.macro_names`); each keeps its name. A fact typed
    ``{{char}}`` was looked for as written, and lost at every turn: the prompt says the name.

    >>> [f.to_dict() for f in filled_facts(declared_facts(["{{char}}'s map", "/{{user}}/"]), {"char": "Mara"})]
    [{'name': "{{char}}'s map", 'text': "Mara's map"}, {'name': '/{{user}}/', 'regex': '/{{user}}/'}]
    """
    check_growth(((f"facts[{number}].text", fact.text) for number, fact in enumerate(facts) if fact.text), names)
    return [replace(fact, text=fill_macros(fact.text, names)) if fact.text is not None else fact for fact in facts]


class FactFinder:
    """Finds declared facts in texts, with one regex time budget for a whole replay.

    Results are kept per text object: a block sent turn after turn is searched once.
    """

    def __init__(self, facts: Sequence[Fact]) -> None:
        self.facts = list(facts)
        self.budget = RegexBudget()
        self._keys: list[RegexKey | None] = [compile_regex_key(f.regex) if f.regex else None for f in self.facts]
        self._memo: dict[int, tuple[str, frozenset[int]]] = {}

    def found_in(self, text: str) -> frozenset[int]:
        """Positions of the text and regex facts ``text`` holds."""
        hit = self._memo.get(id(text))
        if hit is not None and hit[0] is text:
            return hit[1]
        found = set()
        for position, fact in enumerate(self.facts):
            if fact.text is not None and fact.text in text:
                found.add(position)
            elif self._keys[position] is not None and self.budget.search(self._keys[position], text, fact.regex) is not None:
                found.add(position)
        result = frozenset(found)
        if len(self._memo) > 200_000:
            self._memo.clear()
        self._memo[id(text)] = (text, result)
        return result

    def position(self, index: int, text: str) -> int | None:
        """Where the text or regex fact at ``index`` first stands in ``text`` (a character offset), or ``None``.

        >>> finder = FactFinder(declared_facts(["ORD-7", "/ORD-[0-9]+/"]))
        >>> finder.position(0, "was ORD-7 sent?"), finder.position(1, "was ORD-7 sent?"), finder.position(0, "no")
        (4, 4, None)
        """
        fact = self.facts[index]
        if fact.text is not None:
            found = text.find(fact.text)
            return None if found == -1 else found
        key = self._keys[index]
        return None if key is None else self.budget.search(key, text, fact.regex)


def pinned_position(fact: Fact, ids: Sequence[str]) -> int | None:
    """The message position a fact is pinned to (``ids``: every message's id), or None.

    >>> pinned_position(Fact("x", message="m2"), ["m1", "m2"]), pinned_position(Fact("x", message=0), ["a"])
    (1, 0)
    """
    if fact.message is None:
        return None
    if isinstance(fact.message, int):
        return fact.message if 0 <= fact.message < len(ids) else None
    try:
        return list(ids).index(fact.message)
    except ValueError:
        return None


def message_ids(messages: Sequence[dict]) -> list[str]:
    """Every message's block id as the prompt assembly gives it (``id``, ``meta.id``, else ``m<position>``).

    >>> message_ids([{"role": "user", "content": "a"}, {"id": "x", "role": "user", "content": "b"}])
    ['m0', 'x']
    """
    return [explicit_id(message) or f"m{position}" for position, message in enumerate(messages)]


def pinned_status(wanted: str, plain: Iterable[tuple[Any, bool]], summaries: Iterable[dict]) -> str:
    """A pinned message's state: ``verbatim`` when a sent block is that message
    (``plain``: the sent blocks' ``(id, compressed)``, summaries aside) and not
    compressed, ``summary`` when a summary block quotes it (``meta.sources``), else ``lost``.

    >>> pinned_status("m3", [("m3", False)], []), pinned_status("m3", [("m3", True)], []), pinned_status("m1", [], [])
    ('verbatim', 'lost', 'lost')
    """
    if any(ident == wanted and not compressed for ident, compressed in plain):
        return VERBATIM
    quoted = any(source.get("id") == wanted for block in summaries
                 for source in meta_of(block).get("sources") or () if isinstance(source, dict))
    return IN_SUMMARY if quoted else LOST


def fact_report(facts: Sequence[Fact], messages: Sequence[dict], kept: Sequence[dict],
                names: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """``{"name", "status"}`` of each declared fact in force in ``messages``
    (a text or regex one that a message, or the card or persona among ``kept``, holds;
    a pinned message that exists),
    as ``kept`` (the blocks sent) carries it — what a generation's audit records. ``names``: what
    ``{{user}}`` and ``{{char}}`` stand for (:func:`filled_facts`), in the facts and the messages alike.

    >>> chat = [{"role": "user", "content": "My order is ORD-7."}, {"role": "user", "content": "Hi"}]
    >>> fact_report(declared_facts(["ORD-7", "/ORD-[0-9]+/", "absent", {"message": 0}]), chat, chat[1:])
    [{'name': 'ORD-7', 'status': 'lost'}, {'name': '/ORD-[0-9]+/', 'status': 'lost'}, {'name': 'message 0', 'status': 'lost'}]
    """
    if not facts:
        return []
    if names:
        facts = filled_facts(facts, names)
    finder = FactFinder(facts)
    ids = message_ids(messages)
    standing = [block for block in kept if kind_of(block) in STANDING]  # the card and persona: always sent
    texts = [message_text(m) if isinstance(m, dict) else "" for m in messages]
    if names:  # as the prompt says them
        texts = [fill_macros(text, names) for text in texts]
    said = frozenset().union(*map(finder.found_in, [*texts, *map(message_text, standing)]))
    # the request's own user message (the last one): what a "besides" fact must be sent apart from
    asking = next((position for position in range(len(messages) - 1, -1, -1) if isinstance(messages[position], dict)
                   and role_of(messages[position]) == "user"), None)
    asked = None if asking is None else ids[asking]
    said_before = frozenset().union(*map(finder.found_in, [*texts[:asking], *map(message_text, standing)])) \
        if asking is not None else said
    summaries = [block for block in kept if kind_of(block) == SUMMARY]
    plain = [block for block in kept if kind_of(block) != SUMMARY]
    in_plain = frozenset().union(*(finder.found_in(message_text(block)) for block in plain))
    question = None if asking is None else messages[asking]
    besides_plain = frozenset().union(*(finder.found_in(message_text(block)) for block in plain
                                        if block is not question  # the question, or its assembled block
                                        and not (role_of(block) == "user" and explicit_id(block) == asked)))
    in_summary = frozenset().union(*(finder.found_in(message_text(block)) for block in summaries))
    report = []
    for index, fact in enumerate(facts):
        if fact.text is None and fact.regex is None:
            position = pinned_position(fact, ids)
            if position is None:
                continue
            pairs = [(message_id(block, -1), bool(meta_of(block).get("compressed"))) for block in plain]
            status = pinned_status(ids[position], pairs, summaries)
        elif index not in (said_before if fact.besides else said):
            continue
        else:
            sent = besides_plain if fact.besides else in_plain
            status = VERBATIM if index in sent else IN_SUMMARY if index in in_summary else LOST
        report.append({"name": fact.name, "status": status})
    return report
