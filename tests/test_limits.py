"""The importers' limits: file size, messages, lorebook entries, PNG chunks — each a clear error."""

from __future__ import annotations

import json

import pytest

import contextfit
from contextfit import limits
from contextfit.errors import InvalidConversation
from contextfit.inputs.formats import load as load_module
from contextfit.inputs.lorebook import parse as parse_module


def sillytavern_chat(messages: int) -> str:
    lines = [json.dumps({"user_name": "You", "character_name": "Ann"})]
    lines += [json.dumps({"name": "You" if i % 2 else "Ann", "is_user": bool(i % 2), "mes": "hi"}) for i in range(messages)]
    return "\n".join(lines)


def world_info(entries: int) -> str:
    return json.dumps({"entries": {str(i): {"uid": i, "key": [f"k{i}"], "content": "c"} for i in range(entries)}})


def test_the_file_size_limit_is_the_one_constant_the_server_refers_to() -> None:
    assert load_module.DEFAULT_MAX_BYTES == limits.MAX_FILE_BYTES == 16 * 1024 * 1024
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation("x" * (limits.MAX_FILE_BYTES + 1))
    assert caught.value.location == "input" and "the limit is 16.0 MB" in caught.value.message


def test_a_sillytavern_chat_over_the_message_limit_is_refused_at_its_first_line_too_many() -> None:
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(sillytavern_chat(limits.MAX_MESSAGES + 1))
    assert caught.value.location == f"line {limits.MAX_MESSAGES + 2}: $"
    assert "100,002 lines" in caught.value.message and "at most 100,000 messages" in caught.value.message


@pytest.mark.parametrize(
    ("text", "location", "held"),
    [
        (json.dumps([{"role": "user", "content": "hi"}] * (limits.MAX_MESSAGES + 1)), f"$[{limits.MAX_MESSAGES}]",
         "100,001 list items"),
        ("\n".join([json.dumps({"role": "user", "content": "hi"})] * (limits.MAX_MESSAGES + 1)),
         f"line {limits.MAX_MESSAGES + 1}: $", "100,001 lines"),
        (json.dumps({"messages": [{"role": "user", "content": "hi"}] * (limits.MAX_MESSAGES + 1)}),
         f"$.messages[{limits.MAX_MESSAGES}]", "100,001 messages"),
        (json.dumps([json.loads(line) for line in sillytavern_chat(limits.MAX_MESSAGES + 1).splitlines()]),
         f"$[{limits.MAX_MESSAGES + 1}]", "100,002 list items"),
    ],
    ids=["json-list", "json-lines", "request-body", "sillytavern-list-with-metadata"],
)
def test_a_list_over_the_message_limit_is_refused_at_its_first_item_too_many(text: str, location: str, held: str) -> None:
    # README "Limits": "at the first line or item over it" -- a JSON list too, not only JSON Lines.
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(text)
    assert caught.value.location == location
    assert held in caught.value.message and "at most 100,000 messages" in caught.value.message


def test_a_list_at_the_message_limit_loads(monkeypatch) -> None:
    monkeypatch.setattr(load_module, "MAX_MESSAGES", 40)
    assert len(contextfit.load_conversation(json.dumps([{"role": "user", "content": "hi"}] * 40)).messages) == 40
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(json.dumps([{"role": "user", "content": "hi"}] * 41))
    assert caught.value.location == "$[40]"


def test_a_chat_at_the_message_limit_loads(monkeypatch) -> None:
    monkeypatch.setattr(load_module, "MAX_MESSAGES", 40)
    assert len(contextfit.load_conversation(sillytavern_chat(40)).messages) == 40
    with pytest.raises(InvalidConversation):
        contextfit.load_conversation(sillytavern_chat(41))


@pytest.mark.parametrize(
    "shape",
    [
        lambda n: json.dumps({"messages": [{"role": "user", "content": "hi"}] * n}),
        lambda n: json.dumps([{"role": "user", "content": "hi"}] * n),
        lambda n: json.dumps({"conversations": [{"from": "human", "value": "hi"}] * n}),
        lambda n: "\n".join(["User: hi", "Assistant: hello"] * (n // 2 + 1)),
    ],
    ids=["openai-request", "openai-list", "sharegpt", "text"],
)
def test_every_format_is_held_to_the_message_limit(monkeypatch, shape) -> None:
    monkeypatch.setattr(load_module, "MAX_MESSAGES", 30)
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(shape(31))
    assert "at most 30 messages" in caught.value.message


def test_a_world_info_file_over_the_entry_limit_is_refused() -> None:
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(world_info(limits.MAX_LOREBOOK_ENTRIES + 1))
    assert caught.value.location == "$.entries"
    assert "20,001 entries" in caught.value.message and "at most 20,000" in caught.value.message


def test_the_entry_limit_holds_for_character_books_and_plan_prompt(monkeypatch) -> None:
    monkeypatch.setattr(parse_module, "MAX_LOREBOOK_ENTRIES", 5)
    card = {"spec": "chara_card_v2", "data": {"name": "A", "character_book": {"entries": [
        {"keys": ["k"], "content": "c", "enabled": True}] * 6}}}
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(json.dumps(card))
    assert caught.value.location == "$.data.character_book.entries"
    with pytest.raises(InvalidConversation):
        contextfit.plan_prompt([{"role": "user", "content": "hi"}], model="gpt-4o", lorebook=json.loads(world_info(6)))
    assert len(contextfit.load_conversation(world_info(5)).lorebook.entries) == 5


def test_the_documented_limits_tables_state_the_constants() -> None:
    from support.paths import REPO

    from contextfit import text
    from contextfit.inputs.lorebook import matching
    from contextfit.fitting import analysis, counting, relevance
    from contextfit.tokens import tokenizers
    from contextfit.fitting.strategies import summarize

    section = (REPO / "docs" / "operations.md").read_text(encoding="utf-8").split("## Limits\n", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[3].strip(): line.split("|")[2].strip() for line in section.splitlines()
            if line.startswith("| ") and line.count("|") >= 4}
    mib = lambda n: f"{n // (1024 * 1024)} MiB"  # noqa: E731
    assert rows["`contextfit.limits.MAX_FILE_BYTES` (`load_conversation(max_bytes=)`)"] == mib(limits.MAX_FILE_BYTES)
    assert rows["`contextfit.limits.MAX_MESSAGES`"] == f"{limits.MAX_MESSAGES:,}"
    assert rows["`contextfit.limits.MAX_LOREBOOK_ENTRIES`"] == f"{limits.MAX_LOREBOOK_ENTRIES:,}"
    assert rows["`contextfit.limits.MAX_PNG_CHUNKS`"] == f"{limits.MAX_PNG_CHUNKS:,}"
    assert rows["`tokenizers.CACHE_BYTES`"] == mib(tokenizers.CACHE_BYTES)
    assert rows["`analysis.PREFIX_BYTES`"].startswith(mib(analysis.PREFIX_BYTES))
    assert rows["`counting.COUNTS_BYTES`"] == mib(counting.COUNTS_BYTES)
    assert rows["`counting.LINE_COSTS_BYTES`"] == mib(counting.LINE_COSTS_BYTES)
    assert rows["`strategies.summarize.TEXT_UNITS_BYTES`, `LINE_UNITS_BYTES`"] == (
        f"{summarize.TEXT_UNITS_BYTES // 2**20} + {mib(summarize.LINE_UNITS_BYTES)}")
    assert rows["`relevance.BAGS_BYTES`"] == mib(relevance.BAGS_BYTES)
    assert rows["`text.FOLDED_BYTES`"] == mib(text.FOLDED_BYTES)
    assert rows["`matching.COMPILED_KEYS_BYTES`"] == mib(matching.COMPILED_KEYS_BYTES)
    assert rows["`contextfit.limits.MAX_NAME_CHARS`"] == f"{limits.MAX_NAME_CHARS:,} characters"
    assert rows["`contextfit.limits.MAX_MACRO_GROWTH`"] == f"{limits.MAX_MACRO_GROWTH:,}"
    assert rows["`matching.RegexLimits.max_pattern_units`"].startswith(f"{matching.RegexLimits().max_pattern_units:,} nodes")
