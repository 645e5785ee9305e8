"""A joined text's count from its parts' counts equals tiktoken's count of the join.

``Tokenizer.count_joined`` adds the parts' counts where ``tokens/summed_counts.py``
proves tiktoken's pre-tokenizer cuts between them (a part ending with LF
before one starting with ``-``: a summary's lines). The oracle is tiktoken's
``encode_ordinary`` of the joined text, on generated lines that hold every
character the argument is about (white space, CR, LF, ``/``, ``-``,
punctuation, letters of several scripts, marks, digits, contractions).
"""

from __future__ import annotations

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

import contextfit
from contextfit.tokens import summed_counts as joins
from contextfit.tokens.chat_counter import token_counter
from contextfit.tokens.sent import sent_counter
from contextfit.tokens.tokenizers import get_tokenizer

EXACT = ("o200k_base", "cl100k_base")
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u2003\u3000"
OTHER = "aZé漢😀\u0301'sdtlmvre/!?.,-_19#\"<|>…"
ALPHABET = WHITE_SPACE + OTHER + "    "


def direct(name: str, text: str) -> int:
    return len(get_tokenizer(name).encoding.encode_ordinary(text))


def test_both_exact_encodings_use_the_patterns_the_argument_covers() -> None:
    # A tiktoken release that changes a pattern must fail here, not count wrong.
    assert all(joins.covers(get_tokenizer(name).encoding) for name in EXACT)
    assert not joins.covers(object())


line = st.text(alphabet=ALPHABET, max_size=30)


@settings(max_examples=examples(600), suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(EXACT), header=line, lines=st.lists(line, max_size=8))
def test_a_summary_made_of_any_lines_counts_as_its_join(name: str, header: str, lines: list[str]) -> None:
    parts = [header + "\n", *["- " + text + "\n" for text in lines]]
    parts[-1] = parts[-1][:-1]
    assert get_tokenizer(name).count_joined(parts) == direct(name, "".join(parts))


# Parts whose ends are the characters the argument turns on.
STARTS = ["-", "- ", "/", " ", "\n", "\r", "a", "'s", "1", ".", ""]
ENDS = ["\n", ".\n", "!\n", " \n", "\r\n", "/\n", "-\n", "\n\n", "\t\n", "\u3000\n", ".", " ", "/", ""]
edged = st.tuples(st.sampled_from(STARTS), line, st.sampled_from(ENDS)).map("".join)


@settings(max_examples=examples(600), suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(EXACT), left=edged, right=edged)
def test_where_the_rule_cuts_tiktoken_pieces_the_join_as_the_two_parts(name: str, left: str, right: str) -> None:
    # The argument itself, on the pieces (a stronger check than the counts): tiktoken's
    # pattern run by the Python regex module, as its own second path runs it.
    pattern = regex.compile(get_tokenizer(name).encoding._pat_str)
    if joins.splits_between(left, right):
        assert pattern.findall(left + right) == pattern.findall(left) + pattern.findall(right)
    assert get_tokenizer(name).count_joined([left, right]) == direct(name, left + right)


@settings(max_examples=examples(600), suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(EXACT), parts=st.lists(st.one_of(edged, st.text(alphabet=ALPHABET + "\n\n---", max_size=12)),
                                                 max_size=8))
def test_any_parts_count_as_their_join(name: str, parts: list[str]) -> None:
    # Parts of every shape: the rule must merge whatever it cannot prove.
    assert get_tokenizer(name).count_joined(parts) == direct(name, "".join(parts))


@pytest.mark.parametrize("name", EXACT)
def test_the_oracle_catches_a_cut_the_rule_refuses(name: str) -> None:
    # The check above can fail: cutting before the line break instead of after it
    # (punctuation and the line break are one piece) counts one token too many.
    left, right = "The wolves came.", "\n- They left."
    assert not joins.splits_between(left, right)
    assert direct(name, left) + direct(name, right) != direct(name, left + right)
    assert get_tokenizer(name).count_joined([left, right]) == direct(name, left + right)


def test_an_approximate_profile_counts_the_join() -> None:
    claude = get_tokenizer("anthropic")
    parts = ["Summary:\n", "- The wolves came.\n", "- They left."]
    assert claude.count_joined(parts) == claude.count("".join(parts))


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "claude-sonnet-4", "gemini-2.5-pro"])
@pytest.mark.parametrize("template", ["openai", "anthropic"])
def test_every_counter_counts_a_joined_block_as_the_block(model: str, template: str) -> None:
    block = {"role": "system", "meta": {"kind": "summary", "id": "summary"}}
    parts = ["Summary of 3 earlier messages:\n", "- Ada: ORD-1234 shipped.\n", "- Tool: result: {\"ok\": true}"]
    whole = {**block, "content": "".join(parts)}
    counter = token_counter(model)
    assert counter.count_joined(block, parts) == counter.count_message(whole)
    sent = sent_counter(counter, template)
    assert sent.count_joined(block, parts) == sent.count_message(whole)


def test_a_summary_block_costs_what_tiktoken_counts_for_it() -> None:
    # End to end: the summary's recorded tokens against a direct count of the block sent.
    chat = [{"role": "system", "content": "Be brief."}]
    for turn in range(40):
        chat.append({"role": "user", "content": f"Order ORD-{1000 + turn} is late. Where is it? Check the depot."})
        chat.append({"role": "assistant", "content": f"ORD-{1000 + turn} left the depot on day {turn}.\nIt ships soon!"})
    plan = contextfit.plan_prompt(chat, model="gpt-4o", context_limit=900, response_reserve=100,
                                  context_strategy="summarize")
    summary = next(m for m in plan.fit.kept if m.get("meta", {}).get("kind") == "summary")
    lines = summary["content"].split("\n")
    assert len(lines) > 3
    per_message, role = 3, 1  # OpenAI's per-message overhead and the role "system"
    assert plan.fit.tokens == token_counter("gpt-4o")(plan.fit.kept)
    assert token_counter("gpt-4o").count_message(summary) == per_message + role + direct("o200k_base", summary["content"])
