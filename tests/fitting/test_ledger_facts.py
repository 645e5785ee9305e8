"""fact-ledger's fact lines (strategies/ledger_facts.py) read fast and the same: the cheap checks
that skip a pattern never skip one that would have matched, and the lines kept by text are the
lines read afresh."""

from __future__ import annotations

import re
import sys
import tracemalloc
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from support.depth import examples

from contextfit import caches
from contextfit.fitting.strategies import ledger_facts as facts
from contextfit.memo import TextMemo

SETTINGS = settings(max_examples=examples(150))
_ALWAYS = re.compile("")

# Words that sit on the checks' edges: what a gate looks for and near misses, the case-blind
# matches outside ASCII (Kelvin sign, long s, dotted and dotless i), digits of other scripts.
TOKENS = [
    "Important:", "IMPORTANT", "important", "imp0rtant", "Note", "noted", "for the record", "From now on,", "FYI",
    "don't forget", "do not forget", "Keep in mind", "change of plan", "instead", "update", "correction",
    "use", "Use", "USING", "uses", "used", "switched to", "Switch to", "go with", "goes with", "Going with", "went with",
    "goes by", "moved over to", "move it to", "build with", "renamed the app to", "called", "calls the project",
    "named", "set the limit to", "SET", "is now", "are now", "Is Now", "decided on", "chose", "choose", "picked",
    "pick", "prefer", "settled", "pinned", "raised", "bumped", "rotated", "scaled", "agreed",
    "\u212aelvin", "u\u017fe", "\u0130mportant", "\u0131s now", "ſet",
    "Monday", "Friday 14:30", "today", "days", "Sunday", "March 14", "14 March 2025", "Mar. 3rd", "Sept 9",
    "2025-03-14", "3/14/25", "10:45 pm", "3月14日", "2025年3月14日", "１２", "٣٤", "12-3", "7/8",
    "$4,200", "12 €", "€", "£3", "¥", "300 元", "5 円", "40 USD", "9 EUR", "GBP", "USD", "EUR", "dollars", "euros", "元", "円",
    "4 million",
    "250 ms", "6 replicas", "3.5 GB", "40%", "5 个", "5, ms", "v2.3.1", "8.4.0", "PostgreSQL 16", "Python v3",
    "INC-4821", "eu-west-3", "7f3a9c2", "ORD1234", "snake_case_name", "NASA", "S3", "EU", "Priya Raman", "Omar Haddad",
    "port", "5433", "42", "7", "the", "billing", "service", "region", "a", "b2", "x",
    '"quoted text"', "“curly quote”", "`code`", "「括弧」", "『二重』", "部署区域改为", "重要", "记住", "使用", "是",
    "に変更", ",", ";", "—", "-", ".", "!", "?", "。", "\n", "  ", "\t",
]


@st.composite
def messages(draw) -> str:
    return " ".join(draw(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12)))


def ungated_lines(text: str, role: str) -> list[facts.FactLine]:
    """fact_lines with every pattern asked on every sentence (no check first)."""
    with mock.patch.multiple(facts, _DIGIT=_ALWAYS, _CUE_WORDS=_ALWAYS, _CHOICE_WORDS=_ALWAYS,
                             _DECISION_WORDS=_ALWAYS, _finders=lambda sentence, digits=True: facts._FINDERS):
        return facts.fact_lines(text, role)


@SETTINGS
@given(messages(), st.sampled_from(["user", "assistant", "tool"]))
def test_the_checks_before_the_patterns_change_no_line(text, role):
    assert facts.fact_lines(text, role) == ungated_lines(text, role)


def test_the_checks_change_no_line_of_any_word_alone():
    """Each word in a few frames, alone with its value: a word a check forgets changes a line here."""
    frames = ["{}", "The {} port is 5433.", "We {} redis.", "It is 40 {}.", "Important: {} = pnpm", "{} 14"]
    for token in TOKENS:
        for frame in frames:
            text = frame.format(token)
            assert facts.fact_lines(text, "user") == ungated_lines(text, "user"), text


def test_the_checks_change_no_line_of_the_hand_made_cases():
    for text in ["Important: the billing port is 5433. Thanks!", "We switched the search cluster to eu-west-3 yesterday.",
                 "部署区域改为 eu-west-3。谢谢", "The \u212aelvin note: we u\u017fe pnpm.", "Let's meet Friday.",
                 "Deploy on March 14 at 10:45 pm, budget $4,200.", "NASA said snake_case_name is fine.",
                 "I think it will rain today.", "It costs 300 元 per 5 个."]:
        for role in ("user", "tool"):
            assert facts.fact_lines(text, role) == ungated_lines(text, role)


def test_the_date_check_knows_every_month_and_weekday():
    """A date without one of _DATE_MARK's digit marks names a month or a weekday: _DATE_WORD
    must find each of them (a month added to the pattern must be added there too)."""
    names = facts._MONTHS.split("|") + facts._WEEKDAYS.split("|")
    assert [name for name in names if not facts._DATE_WORD.search(name)] == []
    assert all("day" in name for name in facts._WEEKDAYS.split("|"))


def test_only_the_quoted_finder_has_groups():
    """_found takes a match's value as its last group: quoted has one group per kind of quote."""
    assert {sort: pattern.groups for sort, pattern in facts._FINDERS if pattern.groups} == {"quoted": 5}
    for quote in ('"a b"', "“a b”", "`a b`", "「a b」", "『a b』"):
        assert facts._found(f"say {quote} now", facts._FINDERS) == (["a b"], ["quoted"])


def test_a_sentence_without_a_digit_skips_the_finders_that_need_one():
    assert [sort for sort, _ in facts._finders("The owner is Priya Raman.")] == ["quoted", "name"]
    assert [sort for sort, _ in facts._finders("See you Monday, NASA.")] == ["quoted", "date", "identifier", "name"]
    assert [sort for sort, _ in facts._finders("Retry 12 took 250 ms.")] == ["quoted", "measure", "version", "identifier",
                                                                             "name", "number"]
    assert facts._finders("Pay $40 on 3/14.") == facts._FINDERS


def test_message_lines_are_fact_lines_kept_by_role_and_text():
    caches.clear_caches(vocabularies=False)
    text = "Important: the billing port is 5433. We use pnpm."
    first = facts.message_lines(text, "user")
    assert list(first) == facts.fact_lines(text, "user")
    assert facts.message_lines(text, "user") is first  # kept
    as_tool = facts.message_lines(text, "tool")
    assert [line.base_priority for line in as_tool] == [line.base_priority + facts.TOOL_PENALTY - facts.ROLE_BONUS["user"]
                                                        for line in first]
    assert caches.entries()["fact_ledger.lines"] == 2
    caches.clear_caches(vocabularies=False)
    assert caches.entries()["fact_ledger.lines"] == 0
    assert facts.message_lines(text, "user") == first and facts.message_lines(text, "user") is not first


def test_message_lines_stay_within_their_bytes():
    small = TextMemo(64 * 1024)
    with mock.patch.object(facts, "_LINES", small):
        for number in range(2_000):
            facts.message_lines(f"Important: the service s{number} port is {5000 + number}. Thanks!", "user")
        assert 0 < len(small) < 2_000 and small.nbytes <= small.max_bytes
        huge = "Important: the port is 5433. " * 20_000  # its lines weigh more than a quarter of the budget
        assert len(facts.message_lines(huge, "user")) == 20_000
        assert facts.message_lines(huge + " ", "user") is not facts.message_lines(huge + " ", "user")  # not kept
        assert facts.message_lines("\ud800 lone surrogate 5433 ms", "user") == tuple(
            facts.fact_lines("\ud800 lone surrogate 5433 ms", "user"))


def test_the_lines_byte_estimate_covers_what_they_hold():
    text = " ".join(f"Important: the {name} service port is {5000 + i}, owner Priya Raman, region eu-west-{i}."
                    for i, name in enumerate(["billing", "search", "auth", "cache", "queue", "ledger"] * 5))
    facts.fact_lines(text, "user")  # the fold cache warm: what stays is the lines' own
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        lines = tuple(facts.fact_lines(text, "user"))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    estimate = facts.lines_bytes(lines)
    assert held <= estimate <= 3 * held + sys.getsizeof(lines)
