"""contextfit's own bundle format: a chat with everything around it."""

from __future__ import annotations

import json

import pytest

import contextfit
from contextfit.inputs.formats import detect_format

CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Bot", "description": "A bot.", "first_mes": "Hi."}}


def test_a_bundle_carries_every_part():
    bundle = {
        "contextfit": "conversation",
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "character": CARD,
        "persona": "A tester.",
        "lorebook": {"entries": {"0": {"uid": 0, "key": ["hi"], "content": "Greetings matter."}}},
        "memory": ["fact", {"content": "weighted", "relevance": 0.4}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "settings": {"contextLimit": 4000, "responseReserve": 500},
    }
    conversation = contextfit.load_conversation(json.dumps(bundle))
    assert conversation.format == "contextfit" and conversation.model == "gpt-4o-mini"
    assert conversation.character.name == "Bot" and conversation.persona == "A tester."
    assert len(conversation.lorebook.entries) == 1 and conversation.memory[1]["relevance"] == 0.4
    assert conversation.tools and conversation.settings == {"contextLimit": 4000, "responseReserve": 500}
    assert conversation.messages[0]["meta"]["id"] == "m0"


def test_messages_with_a_persona_are_a_bundle_without_the_marker():
    assert detect_format(json.dumps({"messages": [{"role": "user", "content": "x"}], "persona": "p"})) == "contextfit"
    assert detect_format(json.dumps({"messages": [{"role": "user", "content": "x"}]})) == "openai"


@pytest.mark.parametrize(
    ("part", "value", "where"),
    [("persona", 3, "$.persona"), ("memory", [1], "$.memory[0]"), ("settings", [], "$.settings"), ("character", "x", "$.character")],
)
def test_a_bad_part_is_named(part, value, where):
    bundle = {"contextfit": "conversation", "messages": [{"role": "user", "content": "x"}], part: value}
    with pytest.raises(contextfit.InvalidConversation) as caught:
        contextfit.load_conversation(json.dumps(bundle))
    assert caught.value.location == where
