"""Every real conversation, card and lorebook in the shared fixtures imports, and what
was recognised is right (message counts, tool calls linked by id, names, lorebook sizes).

The shared folder is optional: each case skips when its file is absent.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from support.paths import SHARED_FIXTURES, shared_path

from contextfit.inputs.formats import Conversation, load_conversation
from contextfit.inputs.messages import link_ids

# file -> (format, number of messages, tool calls linked to their results)
CONVERSATIONS = {
    "pydantic-ai/openai_chat/test_complex_agent_run.request.json": ("openai", 6, 3),
    "pydantic-ai/openai_chat/test_complex_agent_run_in_flow.request.json": ("openai", 6, 3),
    "pydantic-ai/openai_chat/test_deepseek_deferred_capability_with_thinking.request.json": ("openai", 10, 4),
    "pydantic-ai/openai_chat/test_multiple_agent_tool_calls.request.json": ("openai", 7, 2),
    "pydantic-ai/openai_chat/test_tool_use_failed_error.request.json": ("openai", 6, 2),
    "pydantic-ai/anthropic_messages/test_multiple_parallel_tool_calls.request.json": ("anthropic", 4, 4),
    "pydantic-ai/anthropic_messages/test_anthropic_tool_with_thinking.request.json": ("anthropic", 3, 1),
    "pydantic-ai/anthropic_messages/test_anthropic_model_thinking_part_redacted.request.json": ("anthropic", 3, 0),
    "pydantic-ai/anthropic_messages/test_live_tool_search_handoff_anthropic_openai_anthropic.request.json": ("anthropic", 12, 4),
    "pydantic-ai/openai_chat/test_deepseek_deferred_capability_with_thinking.response.json": ("openai", 1, 0),
    "pydantic-ai/openai_chat/test_multiple_agent_tool_calls.response.json": ("openai", 1, 0),
    "pydantic-ai/openai_chat/test_tool_use_failed_error.response.json": ("openai", 1, 0),
    "pydantic-ai/anthropic_messages/test_multiple_parallel_tool_calls.response.json": ("anthropic", 1, 0),
    "pydantic-ai/anthropic_messages/test_anthropic_tool_with_thinking.response.json": ("anthropic", 1, 0),
    "pydantic-ai/anthropic_messages/test_anthropic_model_thinking_part_redacted.response.json": ("anthropic", 1, 0),
    "pydantic-ai/anthropic_messages/test_live_tool_search_handoff_anthropic_openai_anthropic.response.json": ("anthropic", 1, 0),
    "openai-cookbook/chat_token_count_example.json": ("openai", 6, 0),
    "sillytavern/chats_2023/Aqua_1673181146000.jsonl": ("sillytavern-chat", 1, 0),
    "sillytavern/chats_2023/Darkness_1673225255706.jsonl": ("sillytavern-chat", 1, 0),
    "sillytavern/chats_2023/Megumin_1673323621108.jsonl": ("sillytavern-chat", 3, 0),
    "tavernai/City_Explorer_Story_1687599323821.jsonl": ("sillytavern-chat", 1, 0),
    "tavernai/rooms_Konosuba.jsonl": ("sillytavern-chat", 3, 0),
    "llama-factory/glaive_toolcall_en_demo.json": ("sharegpt", 8, 1),
    "llama-factory/reason_tool_use_demo_50.jsonl": ("sharegpt", 3, 0),
    "llama-factory/mllm_demo.json": ("openai", 4, 0),
    "dialogstudio/sharegpt_original_example.json": ("sharegpt", 10, 0),
    "dialogstudio/sharegpt_converted_example_dialogstudio.json": ("sharegpt", 10, 0),
    "dialogstudio/hh_rlhf_original_examples.json": ("text", 6, 0),
}
# file -> (character name, spec, lorebook entries or None)
CARDS = {
    "sillytavern/Megumin_2023.png": ("Megumin", "chara_card_v1", None),
    "sillytavern/default_CodingSensei.png": ("Coding Sensei", "chara_card_v2", None),
    "sillytavern/default_FluxTheCat.png": ("Flux the Cat", "chara_card_v2", None),
    "sillytavern/default_Seraphina_release_v2.png": ("Seraphina", "chara_card_v2", 4),
    "sillytavern/default_Seraphina_staging_v2_ccv3.png": ("Seraphina", "chara_card_v3", 4),
    "sillytavern/default_Seraphina_staging.chara_v2.extracted.json": ("Seraphina", "chara_card_v2", 4),
    "sillytavern/default_Seraphina_staging.ccv3_v3.extracted.json": ("Seraphina", "chara_card_v3", 4),
}
WORLD_INFO = {
    "sillytavern/Eldoria_release.json": 4,
    "sillytavern/Eldoria_staging.json": 4,
    "sillytavern/Toaru_worldinfo_2023.json": 18,
}
# Shared files that are not conversations: tokenizer vectors, VCR cassettes, source notes.
NOT_CONVERSATIONS = (".csv", ".yaml", ".md")


def load_shared(relative: str) -> Conversation:
    return load_conversation(shared_path(*relative.split("/")))


def linked_calls(messages: list[dict]) -> tuple[set[str], set[str]]:
    """(ids of tool calls, ids that tool results answer), part by part.

    One Anthropic message can hold both (``server_tool_use`` and its
    ``*_tool_result`` sit in the same assistant turn), so parts are read one
    by one; the ids are the ones the fitting engine links (``link_ids``).
    """
    calls: set[str] = set()
    results: set[str] = set()
    for message in messages:
        own_calls = {call["id"] for call in message.get("tool_calls") or []}
        own_results = {message["tool_call_id"]} if message.get("tool_call_id") else set()
        for part in message["content"] if isinstance(message.get("content"), list) else []:
            if part.get("type", "").endswith("tool_use"):
                own_calls.add(part["id"])
            elif part.get("type", "").endswith("tool_result"):
                own_results.add(part["tool_use_id"])
        assert own_calls | own_results == set(link_ids(message)[0]), "the engine sees the same links"
        calls |= own_calls
        results |= own_results
    return calls, results


def test_every_shared_conversation_file_is_covered() -> None:
    root = shared_path()
    files = {
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if path.is_file() and not path.name.endswith(NOT_CONVERSATIONS)
    }
    assert files == set(CONVERSATIONS) | set(CARDS) | set(WORLD_INFO)


@pytest.mark.parametrize("relative", sorted(CONVERSATIONS))
def test_shared_conversations_import(relative: str) -> None:
    expected_format, message_count, linked_count = CONVERSATIONS[relative]
    conversation = load_shared(relative)
    assert conversation.format == expected_format
    assert len(conversation.messages) == message_count
    calls, results = linked_calls(conversation.messages)
    assert results <= calls, "every tool result answers a call in the conversation"
    assert len(calls & results) == linked_count
    for message in conversation.messages:
        assert message["meta"]["id"] and message["meta"]["kind"] in ("history", "system")


@pytest.mark.parametrize("relative", sorted(r for r in CONVERSATIONS if r.endswith(".request.json")))
def test_provider_request_messages_are_faithful(relative: str) -> None:
    body = json.loads(shared_path(*relative.split("/")).read_text())
    conversation = load_shared(relative)
    messages = conversation.messages
    if conversation.format == "anthropic" and body.get("system"):
        assert messages[0]["role"] == "system" and messages[0]["meta"]["kind"] == "system"
        messages = messages[1:]
    assert [{k: v for k, v in m.items() if k != "meta"} for m in messages] == body["messages"]
    assert conversation.model == body["model"]
    assert conversation.tools == body.get("tools", [])


def test_deepseek_reasoning_and_null_content_are_untouched() -> None:
    conversation = load_shared("pydantic-ai/openai_chat/test_deepseek_deferred_capability_with_thinking.request.json")
    assistant = conversation.messages[3]
    assert assistant["reasoning_content"].startswith("The user wants to play a dice game.")
    assert conversation.messages[5]["content"] is None
    assert [m["meta"]["kind"] for m in conversation.messages[:3]] == ["system", "system", "history"]


def test_anthropic_server_tools_and_cross_provider_ids() -> None:
    conversation = load_shared(
        "pydantic-ai/anthropic_messages/test_live_tool_search_handoff_anthropic_openai_anthropic.request.json"
    )
    assert conversation.messages[0]["content"] == "Always use get_exchange_rate to answer exchange-rate questions."
    calls, results = linked_calls(conversation.messages)
    assert "srvtoolu_01U7MY7od7kCtLUQAveyY6qx" in calls & results
    assert "call_qp0rFvaLHTVc3Gre8X109sUq" in calls & results


def test_sillytavern_2023_chat_details() -> None:
    conversation = load_shared("sillytavern/chats_2023/Megumin_1673323621108.jsonl")
    assert [m["role"] for m in conversation.messages] == ["assistant", "user", "assistant"]
    assert [m["meta"]["speaker"] for m in conversation.messages] == ["Megumin", "You", "Megumin"]
    assert conversation.messages[1]["meta"]["sendDateIso"] == "2023-04-21T20:03:06.446"
    aqua = load_shared("sillytavern/chats_2023/Aqua_1673181146000.jsonl").messages[0]
    assert aqua["meta"]["sendDate"] == 1674563371558
    assert aqua["meta"]["sendDateIso"] == "2023-01-24T12:29:31.558Z"


def test_tavernai_room_is_a_group_chat() -> None:
    conversation = load_shared("tavernai/rooms_Konosuba.jsonl")
    assert [(m["role"], m["name"]) for m in conversation.messages] == [
        ("assistant", "Megumin"), ("assistant", "Aqua"), ("assistant", "Darkness")]
    story = load_shared("tavernai/City_Explorer_Story_1687599323821.jsonl")
    assert story.messages[0]["meta"]["speaker"] == "City Explorer (Story)"
    assert story.messages[0]["content"].count("\n\n") == 4


def test_glaive_function_calls_and_tools() -> None:
    conversation = load_shared("llama-factory/glaive_toolcall_en_demo.json")
    call = conversation.messages[3]
    assert call["tool_calls"][0]["function"]["name"] == "search_recipes"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {"ingredients": ["chicken", "bell peppers", "rice"]}
    assert conversation.messages[4] | {"content": None} == {
        "role": "tool", "content": None, "tool_call_id": "call_1", "meta": {"id": "m4", "kind": "history"}}
    assert conversation.tools[0]["function"]["name"] == "search_recipes"
    assert "300 conversations" in conversation.warnings[0]


def test_every_glaive_record_links_its_calls() -> None:
    records = json.loads(shared_path("llama-factory", "glaive_toolcall_en_demo.json").read_text())
    total = 0
    for record in records:
        conversation = load_conversation(record)
        calls, results = linked_calls(conversation.messages)
        assert calls == results
        total += len(calls)
    assert total == 211


def test_every_reason_tool_use_line_links_its_calls() -> None:
    lines = shared_path("llama-factory", "reason_tool_use_demo_50.jsonl").read_text().splitlines()
    total_calls = 0
    for line in lines:
        conversation = load_conversation(line)
        calls, results = linked_calls(conversation.messages)
        assert results <= calls
        total_calls += len(calls)
        assert all("reasoning_content" in m for m in conversation.messages if m["role"] == "assistant")
    assert total_calls == 68


def test_hh_rlhf_transcript() -> None:
    conversation = load_shared("dialogstudio/hh_rlhf_original_examples.json")
    assert [m["role"] for m in conversation.messages] == ["user", "assistant"] * 3
    assert conversation.messages[0]["content"] == "what are some pranks with a pen i can do?"


@pytest.mark.parametrize("relative", sorted(CARDS))
def test_shared_cards_import(relative: str) -> None:
    name, spec, entries = CARDS[relative]
    conversation = load_shared(relative)
    assert conversation.format == "character-card"
    card = conversation.character
    assert (card.name, card.spec) == (name, spec)
    assert card.description and card.first_message
    assert conversation.messages[0]["role"] == "assistant"
    assert conversation.messages[0]["content"] == card.first_message
    if entries is None:
        assert conversation.lorebook is None
    else:
        assert len(conversation.lorebook.entries) == entries
        assert conversation.lorebook is card.character_book


def test_png_chunks_match_their_extracted_json() -> None:
    from_png = load_shared("sillytavern/default_Seraphina_staging_v2_ccv3.png").character
    from_json = load_shared("sillytavern/default_Seraphina_staging.ccv3_v3.extracted.json").character
    for field in fields(from_png):
        if field.name != "character_book":
            assert getattr(from_png, field.name) == getattr(from_json, field.name)
    sensei = load_shared("sillytavern/default_CodingSensei.png").character
    assert sensei.tags == ("coding", "utility", "assistant", "sfw")


@pytest.mark.parametrize("relative", sorted(WORLD_INFO))
def test_shared_world_info_imports(relative: str) -> None:
    conversation = load_shared(relative)
    assert conversation.format == "world-info"
    assert conversation.messages == []
    assert len(conversation.lorebook.entries) == WORLD_INFO[relative]


def test_shared_folder_location_is_the_conftest_one() -> None:
    assert shared_path() == SHARED_FIXTURES
