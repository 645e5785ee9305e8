"""Importers on the project's own small fixtures (tests/data/formats): every format."""

from __future__ import annotations

import copy
import json

import pytest
from support.paths import TEST_DATA

import contextfit
from contextfit.errors import InvalidConversation
from contextfit.inputs.formats import (
    FORMATS,
    CharacterCard,
    Conversation,
    detect_format,
    load_conversation,
    load_conversation_file,
)
from contextfit.inputs.messages import link_ids

DATA = TEST_DATA / "formats"


def load(name: str, format: str | None = None) -> Conversation:
    return load_conversation(DATA / name, format)


def roles(conversation: Conversation) -> list[str]:
    return [message["role"] for message in conversation.messages]


def linked_pairs(messages: list[dict]) -> tuple[set[str], set[str]]:
    """(call ids, result ids) as the fitting engine links them."""
    calls: set[str] = set()
    results: set[str] = set()
    for message in messages:
        ids, is_result = link_ids(message)
        (results if is_result else calls).update(ids)
    return calls, results


# --- detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("openai_tools.json", "openai"),
        ("anthropic_tools.json", "anthropic"),
        ("sillytavern_chat.jsonl", "sillytavern-chat"),
        ("sillytavern_group.jsonl", "sillytavern-chat"),
        ("card_v1.json", "character-card"),
        ("card_v2.json", "character-card"),
        ("card_v3.json", "character-card"),
        ("card_v2.png", "character-card"),
        ("world_info.json", "world-info"),
        ("sharegpt_tools.json", "sharegpt"),
        ("transcript.txt", "text"),
        ("hh_transcript.txt", "text"),
        ("names_transcript.txt", "text"),
    ],
)
def test_each_fixture_is_detected_and_loads_as_its_format(name: str, expected: str) -> None:
    assert detect_format(DATA / name) == expected
    conversation = load(name)
    assert conversation.format == expected
    assert expected in FORMATS
    # every message has the contextfit extras
    for message in conversation.messages:
        assert isinstance(message["meta"]["id"], str) and message["meta"]["id"]
        assert message["meta"]["kind"] in ("history", "system")
    ids = [message["meta"]["id"] for message in conversation.messages]
    assert len(ids) == len(set(ids)), "message ids are unique"


def test_the_told_format_is_used_even_when_the_text_looks_like_json() -> None:
    text = '{"messages": [{"role": "user", "content": "hi"}]}'
    conversation = load_conversation(text, "text")
    assert conversation.format == "text"
    assert conversation.messages[0]["content"] == text


@pytest.mark.parametrize(("alias", "name"), [("SillyTavern", "sillytavern-chat"), ("card", "character-card"), ("lorebook", "world-info")])
def test_format_aliases(alias: str, name: str) -> None:
    file = {"sillytavern-chat": "sillytavern_group.jsonl", "character-card": "card_v1.json", "world-info": "world_info.json"}[name]
    assert load(file, alias).format == name


def test_a_wrong_told_format_says_what_the_input_looks_like() -> None:
    with pytest.raises(InvalidConversation) as caught:
        load("sharegpt_tools.json", "openai")
    assert "looks like a sharegpt input, not openai" in caught.value.message
    with pytest.raises(InvalidConversation) as caught:
        load("transcript.txt", "anthropic")
    assert "not JSON" in caught.value.message
    with pytest.raises(InvalidConversation) as caught:
        load_conversation("User: hi", "whatsapp")
    assert "Unknown format 'whatsapp'" in caught.value.message and caught.value.location == "format"


# --- OpenAI -----------------------------------------------------------------------------------


def test_openai_messages_are_kept_as_given_with_only_meta_added() -> None:
    source = json.loads((DATA / "openai_tools.json").read_text())
    pristine = copy.deepcopy(source)
    conversation = load_conversation(source)
    assert source == pristine, "the caller's objects are never mutated"
    assert conversation.model == "gpt-4o"
    assert conversation.tools == source["tools"]
    assert roles(conversation) == ["developer", "user", "assistant", "tool", "user", "tool", "assistant"]
    for original, message in zip(source["messages"], conversation.messages):
        assert message is not original
        strip = lambda m: {key: value for key, value in m.items() if key != "meta"}  # noqa: E731
        assert strip(message) == strip(original)
    assistant = conversation.messages[2]
    assert assistant["reasoning_content"] == "Two cities, two calls."
    assert assistant["content"] is None
    assert conversation.messages[1]["name"] == "ana"
    assert conversation.messages[1]["content"] == [{"type": "text", "text": "Weather in Paris and Rome?"}]
    # ids: the message's own id wins, an existing meta is kept, the developer prompt stays a system block
    assert conversation.messages[4]["meta"]["id"] == "msg-user-2"
    assert conversation.messages[6]["meta"] == {"id": "m6", "kind": "history", "pinned": True}
    assert conversation.messages[0]["meta"]["kind"] == "system"
    calls, results = linked_pairs(conversation.messages)
    assert calls == results == {"call_paris", "call_rome"}
    assert any("max_tokens=512" in warning for warning in conversation.warnings)


def test_openai_bare_list_and_json_lines_of_messages() -> None:
    listed = load_conversation('[{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Hi"}]')
    assert listed.format == "openai" and roles(listed) == ["system", "user"]
    lines = load_conversation('{"role": "user", "content": "Hi"}\n\n{"role": "assistant", "content": "Hello"}\n')
    assert lines.format == "openai" and roles(lines) == ["user", "assistant"]
    assert [m["meta"]["id"] for m in lines.messages] == ["m0", "m1"]


def test_openai_fine_tuning_jsonl_takes_the_first_record() -> None:
    records = "\n".join(
        json.dumps({"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]})
        for i in range(3)
    )
    conversation = load_conversation(records)
    assert conversation.format == "openai"
    assert [m["content"] for m in conversation.messages] == ["q0", "a0"]
    assert conversation.warnings[0] == "This file holds 3 conversations; only the first (line 1) was loaded."


def test_openai_response_body_gives_its_reply() -> None:
    body = {"object": "chat.completion", "model": "gpt-4o-mini", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "London."}}]}
    conversation = load_conversation(body)
    assert conversation.format == "openai" and conversation.model == "gpt-4o-mini"
    assert conversation.messages[0]["content"] == "London."
    assert "response body" in conversation.warnings[0]


def test_openai_tool_result_without_an_id_is_kept_with_a_warning() -> None:
    conversation = load_conversation([{"role": "user", "content": "x"}, {"role": "tool", "content": "42"}])
    assert roles(conversation) == ["user", "tool"]
    assert "no tool_call_id" in conversation.warnings[0]


# --- Anthropic --------------------------------------------------------------------------------


def test_anthropic_system_becomes_a_leading_message_and_blocks_stay_as_is() -> None:
    source = json.loads((DATA / "anthropic_tools.json").read_text())
    conversation = load("anthropic_tools.json")
    assert conversation.model == "claude-sonnet-4"
    assert conversation.tools == source["tools"]
    assert conversation.messages[0] == {
        "role": "system",
        "content": "You answer with tools.\nBe brief.",
        "meta": {"id": "system", "kind": "system"},
    }
    for original, message in zip(source["messages"], conversation.messages[1:]):
        assert {key: value for key, value in message.items() if key != "meta"} == original
    block_types = [block["type"] for block in conversation.messages[2]["content"]]
    assert block_types == ["thinking", "text", "tool_use", "tool_use"]
    results = conversation.messages[3]["content"]
    assert results[1]["is_error"] is True and results[1]["content"] == [{"type": "text", "text": "clock unavailable"}]
    calls, answered = linked_pairs(conversation.messages)
    assert calls == answered == {"toolu_mul", "toolu_time"}


def test_anthropic_is_detected_by_its_blocks_without_a_system() -> None:
    body = {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "yo"}]},
    ]}
    conversation = load_conversation(json.dumps(body))
    assert conversation.format == "anthropic"
    assert roles(conversation) == ["user", "assistant"]


# --- SillyTavern chats ------------------------------------------------------------------------


def test_sillytavern_chat_keeps_hidden_messages_marked_and_swipes_counted() -> None:
    conversation = load("sillytavern_chat.jsonl")
    assert roles(conversation) == ["assistant", "user", "assistant", "system", "assistant"]
    first, user, hidden, narrator, last = conversation.messages
    assert first["content"] == "*Seraphina smiles.* Welcome to the glade."
    assert first["meta"]["swipes"] == 2 and first["meta"]["speaker"] == "Seraphina"
    assert "name" not in first, "a one-character chat needs no name field"
    assert user["meta"]["speaker"] == "Alex"
    assert hidden["meta"]["hidden"] is True
    assert narrator["meta"]["kind"] == "history", "a narrator line is history, not a protected system prompt"
    assert last["content"] == "You are in Eldoria, {{user}}." and last["meta"]["swipes"] == 3 and last["meta"]["swipeId"] == 1
    assert conversation.model == "gpt-4o"
    warnings = " ".join(conversation.warnings)
    for expected in ("Author's Note", "'Eldoria'", "hidden (is_system)", "swipes", "extra.reasoning"):
        assert expected in warnings


def test_sillytavern_send_dates_are_kept_raw_and_parsed() -> None:
    conversation = load("sillytavern_chat.jsonl")
    dates = [(m["meta"]["sendDate"], m["meta"].get("sendDateIso")) for m in conversation.messages]
    assert dates == [
        ("October 18, 2024 12:01pm", "2024-10-18T12:01:00"),
        ("October 18, 2024 12:02pm", "2024-10-18T12:02:00"),
        (1729252980000, "2024-10-18T12:03:00.000Z"),
        ("2024-10-18T12:04:00.000Z", "2024-10-18T12:04:00+00:00"),
        ("2023-4-21 @20h 02m 47s 124ms", "2023-04-21T20:02:47.124"),
    ]


def test_sillytavern_group_chat_names_each_character() -> None:
    conversation = load("sillytavern_group.jsonl")
    assert [(m["role"], m.get("name")) for m in conversation.messages] == [
        ("assistant", "Megumin"), ("user", None), ("assistant", "Aqua")]


def test_sillytavern_header_only_chat_is_empty_not_an_error() -> None:
    conversation = load_conversation('{"user_name": "You", "character_name": "Aqua", "create_date": 1}')
    assert conversation.format == "sillytavern-chat" and conversation.messages == []


# --- character cards and World Info -----------------------------------------------------------


def test_card_v1_flat_fields() -> None:
    conversation = load("card_v1.json")
    card = conversation.character
    assert isinstance(card, CharacterCard)
    assert (card.name, card.spec, card.scenario) == ("Megumin", "chara_card_v1", "A clearing near Axel.")
    assert card.example_dialogue.startswith("<START>")
    assert conversation.lorebook is None
    assert conversation.messages == [{"role": "assistant", "content": "*poses* I am Megumin!",
                                      "meta": {"id": "first_mes", "kind": "history", "speaker": "Megumin"}}]


def test_card_v2_fields_and_embedded_lorebook() -> None:
    conversation = load("card_v2.json")
    card = conversation.character
    assert card.name == "Sensei" and card.spec == "chara_card_v2" and card.spec_version == "2.0"
    assert card.system_prompt == "Answer like a teacher."
    assert card.post_history_instructions == "Stay in character."
    assert card.creator_notes == "Made for tests."
    assert card.alternate_greetings == ("Welcome back!", "Class is in session.")
    assert card.tags == ("teacher", "code"), "non-string tags are skipped"
    assert conversation.lorebook is card.character_book
    assert len(conversation.lorebook.entries) == 2
    assert conversation.messages[0]["content"] == "Hello, {{user}}. Ready to code?"
    assert conversation.messages[0]["meta"]["swipes"] == 3
    assert any("depth_prompt" in warning for warning in conversation.warnings)


def test_card_v3_and_its_warnings() -> None:
    conversation = load("card_v3.json")
    assert conversation.character.spec == "chara_card_v3" and conversation.character.spec_version == "3.0"
    assert conversation.character.tags == ("cat",)
    warnings = " ".join(conversation.warnings)
    assert "'Cat World'" in warnings and "group-only greeting" in warnings and "asset" in warnings


def test_pygmalion_style_v1_card() -> None:
    card = load_conversation({"char_name": "Bot", "char_persona": "Kind.", "char_greeting": "Hello!"}).character
    assert (card.name, card.description, card.first_message) == ("Bot", "Kind.", "Hello!")


def test_world_info_file_is_a_lorebook_without_messages() -> None:
    conversation = load("world_info.json")
    assert conversation.messages == []
    assert len(conversation.lorebook.entries) == 3


# --- ShareGPT and friends ---------------------------------------------------------------------


def test_sharegpt_function_calls_become_linked_tool_calls() -> None:
    conversation = load("sharegpt_tools.json")
    assert roles(conversation) == ["system", "user", "assistant", "tool", "tool", "assistant", "user",
                                   "assistant", "tool", "assistant"]
    parallel = conversation.messages[2]
    assert [call["id"] for call in parallel["tool_calls"]] == ["call_1", "call_2"]
    assert json.loads(parallel["tool_calls"][1]["function"]["arguments"]) == {"city": "Quito"}
    assert [m.get("tool_call_id") for m in conversation.messages if m["role"] == "tool"] == ["call_1", "call_2", "call_3"]
    # arguments given as a JSON string stay that string
    assert conversation.messages[7]["tool_calls"][0]["function"]["arguments"] == '{"city": "Madrid"}'
    assert conversation.tools == [{"type": "function", "function": {
        "name": "get_time", "description": "Current time in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    assert conversation.warnings == ["This file holds 2 conversations; only the first ($[0]) was loaded."]
    calls, results = linked_pairs(conversation.messages)
    assert calls == results == {"call_1", "call_2", "call_3"}


def test_sharegpt_oddities_are_kept_with_warnings() -> None:
    turns = [
        {"from": "human", "value": "hi"},
        {"from": "function_call", "value": "not json"},
        {"from": "observation", "value": "orphan result"},
    ]
    conversation = load_conversation({"conversations": turns})
    assert roles(conversation) == ["user", "assistant", "tool"]
    assert conversation.messages[1]["content"] == "not json"
    assert "kept as text" in conversation.warnings[0]
    assert "answers no earlier function call" in conversation.warnings[1]


def test_sharegpt_unknown_speaker_is_an_error_with_its_path() -> None:
    with pytest.raises(InvalidConversation) as caught:
        load_conversation({"conversations": [{"from": "human", "value": "a"}, {"from": "wizard", "value": "b"}]})
    assert caught.value.location == "$.conversations[1].from"
    assert "'wizard'" in caught.value.message


def test_llama_factory_typed_messages() -> None:
    record = {"messages": [
        {"role": "user", "content": [{"type": "text", "value": "Roll a die"}]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "value": "I should call roll."},
            {"type": "tool_call", "value": json.dumps({"name": "roll", "arguments": {"sides": 6}})}]},
        {"role": "tool", "content": [{"type": "text", "value": "4"}]},
        {"role": "assistant", "content": [{"type": "reasoning", "value": "Report."}, {"type": "text", "value": "You rolled 4."}]},
    ], "tools": json.dumps([{"type": "function", "function": {"name": "roll", "parameters": {}}}])}
    conversation = load_conversation(record)
    assert conversation.format == "sharegpt"
    call, result, reply = conversation.messages[1:]
    assert call["tool_calls"][0]["function"] == {"name": "roll", "arguments": '{"sides": 6}'}
    assert call["reasoning_content"] == "I should call roll."
    assert result == {"role": "tool", "content": "4", "tool_call_id": "call_1", "meta": {"id": "m2", "kind": "history"}}
    assert reply["content"] == "You rolled 4." and reply["reasoning_content"] == "Report."
    assert conversation.tools[0]["function"]["name"] == "roll"


def test_dialogstudio_dialogs() -> None:
    data = {"Set--train--1": {"original dialog info": {"model": "gpt-3.5-turbo"}, "log": [
        {"turn id": 1, "user utterance": "Hi", "system response": "Hello"},
        {"turn id": 2, "user utterance": "Bye", "system response": ""}]},
        "Set--train--2": {"log": []}}
    conversation = load_conversation(data)
    assert conversation.format == "sharegpt" and conversation.model == "gpt-3.5-turbo"
    assert [(m["role"], m["content"]) for m in conversation.messages] == [("user", "Hi"), ("assistant", "Hello"), ("user", "Bye")]
    assert "2 dialogs" in conversation.warnings[0]


# --- plain text -------------------------------------------------------------------------------


def test_transcript_turns_span_lines_and_labels_ignore_case_and_bold() -> None:
    conversation = load("transcript.txt")
    assert roles(conversation) == ["user", "assistant", "user", "assistant", "system"]
    assert conversation.messages[0]["content"] == "Can you help me plan a trip?\nI have two weeks\nand a small budget."
    assert conversation.messages[3]["content"] == "Then book early: cherry-blossom season fills up."
    assert [m["meta"]["line"] for m in conversation.messages] == [1, 4, 6, 7, 8]
    assert "empty turn" in conversation.warnings[0]


def test_human_assistant_transcript() -> None:
    conversation = load("hh_transcript.txt")
    assert [(m["role"], m["content"]) for m in conversation.messages] == [
        ("user", "What is the capital of France?"), ("assistant", "Paris."),
        ("user", "And of Spain?"), ("assistant", "Madrid.")]
    assert conversation.warnings == []


def test_named_speakers_transcript() -> None:
    conversation = load("names_transcript.txt")
    assert [(m["role"], m["meta"]["speaker"]) for m in conversation.messages] == [
        ("user", "Alice"), ("assistant", "Bob"), ("user", "Alice"), ("assistant", "Bob")]
    assert conversation.messages[2]["content"].endswith("continues Alice's turn.")
    assert "'Alice' as the user" in conversation.warnings[0]


@pytest.mark.parametrize(
    "text",
    [
        "Note: bring snacks.\nNote: bring water.\nWarning: it may rain.",
        "Step 1: open the box.\nStep 2: read the manual.",
        "Dear team,\nAlice: wrote this.\nBob: agreed.\nAlice: thanks.\nBob: sure.",
        "Time: 10:30\nPlace: the park",
    ],
)
def test_labels_that_are_not_speakers_give_one_user_message(text: str) -> None:
    conversation = load_conversation(text)
    assert roles(conversation) == ["user"]
    assert conversation.messages[0]["content"] == text
    assert "No speaker labels" in conversation.warnings[0]


def test_text_before_the_first_label_is_a_system_message() -> None:
    conversation = load_conversation("A chat between a curious user and an AI.\n\nUser: hi\nAI: hello")
    assert roles(conversation) == ["system", "user", "assistant"]
    assert "before the first speaker label" in conversation.warnings[0]


def test_hh_rlhf_record_reads_the_chosen_transcript() -> None:
    conversation = load_conversation({"chosen": "\n\nHuman: hi\n\nAssistant: hello", "rejected": "\n\nHuman: hi\n\nAssistant: go away"})
    assert conversation.format == "text"
    assert conversation.messages[1]["content"] == "hello"
    assert "'rejected'" in conversation.warnings[0]


# --- sources: bytes, paths ------------------------------------------------------------------


def test_bytes_with_a_bom_and_utf16_are_read() -> None:
    text = "User: café?\nAssistant: oui"
    for data in (b"\xef\xbb\xbf" + text.encode(), text.encode("utf-16")):
        assert [m["content"] for m in load_conversation(data).messages] == ["café?", "oui"]


def test_paths_as_str_or_pathlike() -> None:
    assert load_conversation_file(str(DATA / "card_v1.json")).character.name == "Megumin"
    assert load_conversation_file(DATA / "card_v1.json").character.name == "Megumin"
    # a str given to load_conversation that names an existing file is that file
    assert load_conversation(str(DATA / "card_v1.json")).character.name == "Megumin"


def test_conversation_is_a_frozen_value() -> None:
    conversation = load("hh_transcript.txt")
    with pytest.raises(AttributeError):
        conversation.format = "openai"  # type: ignore[misc]
    assert conversation.persona is None and conversation.memory == [] and conversation.tools == []


def test_sharegpt_preference_record_ends_with_the_chosen_reply() -> None:
    record = {"conversations": [{"from": "human", "value": "Pick one"}],
              "chosen": {"from": "gpt", "value": "Good answer"}, "rejected": {"from": "gpt", "value": "Bad answer"}}
    conversation = load_conversation(record)
    assert [(m["role"], m["content"], m["meta"]["id"]) for m in conversation.messages] == [
        ("user", "Pick one", "m0"), ("assistant", "Good answer", "chosen")]
    assert "rejected reply" in conversation.warnings[0]


def test_bracketed_prose_is_text_not_broken_json() -> None:
    conversation = load_conversation("[Scene: a tavern at night]\nUser: hi\nAssistant: hello")
    assert conversation.format == "text"
    assert roles(conversation) == ["system", "user", "assistant"]


def test_a_str_naming_an_existing_file_is_read_as_that_file(tmp_path, monkeypatch) -> None:
    path = tmp_path / "chat.json"
    path.write_text('[{"role": "user", "content": "Hi from the file"}]')
    conversation = load_conversation(str(path))
    assert conversation.format == "openai" and conversation.messages[0]["content"] == "Hi from the file"
    assert contextfit.inputs.formats.detect_format(str(path)) == "openai"
    monkeypatch.chdir(tmp_path)
    assert load_conversation("chat.json").messages[0]["content"] == "Hi from the file"
    # Anything else stays pasted text: a missing file, several lines, a folder.
    assert load_conversation(str(tmp_path / "missing.json")).messages[0]["content"].endswith("missing.json")
    assert load_conversation(f"User: {path}\nAssistant: ok").format == "text"
    assert load_conversation(str(tmp_path)).format == "text"
