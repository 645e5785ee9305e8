"""Files that hold several conversations: every record listed and readable on its own."""

from __future__ import annotations

import json

import pytest
from support.paths import TEST_DATA, shared_path

import contextfit
from contextfit.inputs.formats import FileConversation, list_conversations, load_conversation
from contextfit.limits import MAX_LISTED_CONVERSATIONS
from contextfit.dashboard.sources import chosen


def messages(conversation):
    return [(m["role"], m.get("content")) for m in conversation.messages]


def test_a_sharegpt_dataset_lists_every_conversation_each_as_loading_it_alone_would():
    path = shared_path("llama-factory", "glaive_toolcall_en_demo.json")
    records = json.loads(path.read_text())
    found = list_conversations(path.read_bytes())
    assert len(found) == len(records) == 300
    for index in (0, 1, 150, 299):
        alone = load_conversation(json.dumps(records[index]))
        entry = found[index]
        assert entry.index == index and entry.location == f"$[{index}]" and entry.error is None
        assert messages(entry.conversation) == messages(alone) and entry.conversation.tools == alone.tools
        first_user = next(m["content"] for m in alone.messages if m["role"] == "user").splitlines()[0]
        assert entry.label.startswith(f"#{index + 1} · {first_user[:40]}")
        assert entry.label.endswith(f" · {len(alone.messages)} messages")
    # Loading the whole file still reads the first record only, and says so.
    assert "only the first" in load_conversation(path.read_bytes()).warnings[0]
    assert not any("only the first" in w for e in found for w in e.conversation.warnings)


def test_json_lines_records_name_their_line():
    path = shared_path("llama-factory", "reason_tool_use_demo_50.jsonl")
    found = list_conversations(path)
    assert len(found) == 50 and found[2].location == "line 3: $"
    assert all(entry.conversation.format == "sharegpt" and entry.conversation.messages for entry in found)


def test_dialogstudio_dialogs_and_sharegpt_records_of_the_same_chats_get_the_same_labels():
    sharegpt = list_conversations(shared_path("dialogstudio", "sharegpt_original_example.json"))
    dialogs = list_conversations(shared_path("dialogstudio", "sharegpt_converted_example_dialogstudio.json"))
    assert len(sharegpt) == len(dialogs) == 5
    assert dialogs[1].location == '$["ShareGPT--train--2"]'
    assert [e.label.split(" · ")[1] for e in dialogs] == [e.label.split(" · ")[1] for e in sharegpt]


def test_hh_rlhf_chosen_transcripts_are_listed_one_by_one():
    found = list_conversations(shared_path("dialogstudio", "hh_rlhf_original_examples.json"))
    assert len(found) == 5 and found[3].location == "$.chosen[3]"
    assert all("The 'rejected' transcripts are not included." in e.conversation.warnings for e in found)
    assert found[1].label.startswith("#2 · How much alcohol")


@pytest.mark.parametrize("name", ["chats_2023/Megumin_1673323621108.jsonl", "default_Seraphina_release_v2.png",
                                  "Eldoria_release.json"])
def test_a_file_of_one_conversation_is_one_entry(name):
    path = shared_path("sillytavern", *name.split("/"))
    (entry,) = list_conversations(path.read_bytes())
    alone = load_conversation(path.read_bytes())
    assert entry.index == 0 and entry.error is None
    assert entry.conversation == alone


def test_an_unreadable_record_keeps_its_place_and_the_others_load():
    found = list_conversations((TEST_DATA / "formats" / "sharegpt_three.jsonl").read_bytes())
    assert [e.error is None for e in found] == [True, False, True]
    assert found[1].error.code == "INVALID_CONVERSATION" and found[1].error.location == "line 2: $.conversations[0].from"
    assert found[1].label.startswith("#2 · unreadable: ")
    assert found[2].label == "#3 · Name three primes. · 5 messages"  # first non-empty line of the first user turn
    assert chosen(found, 2).messages[0]["role"] == "system"
    with pytest.raises(contextfit.InvalidConversation, match="wizard"):
        chosen(found, 1)


def test_plain_text_bundles_and_bad_input():
    (entry,) = list_conversations(b"User: hi\nAssistant: hello")
    assert isinstance(entry, FileConversation) and entry.conversation.format == "text"
    bundle = {"contextfit": "conversation", "messages": [{"role": "user", "content": "a"}], "persona": "p"}
    (entry,) = list_conversations(json.dumps(bundle))
    assert entry.conversation.persona == "p"
    with pytest.raises(contextfit.InvalidConversation, match="Line 1 is not valid JSON"):
        list_conversations(b'[{"conversations": [}')
    with pytest.raises(contextfit.InvalidConversation, match="limit"):
        list_conversations(b"User: " + b"x" * 200, max_bytes=100)
    (entry,) = list_conversations(b'[{"conversations": [{"from": "human", "value": "only one"}]}]')
    assert entry.label == "only one · 1 message"  # a single conversation needs no number


def test_a_huge_dataset_lists_its_first_records_and_counts_the_rest():
    path = shared_path("llama-factory", "glaive_toolcall_en_demo.json")
    found = list_conversations(path.read_bytes(), max_records=2)
    assert [e.index for e in found] == [0, 1] and {e.total for e in found} == {300}
    assert list_conversations(path.read_bytes())[0].total == 300 <= MAX_LISTED_CONVERSATIONS
    line = json.dumps({"conversations": [{"from": "human", "value": "hi"}]})
    many = "\n".join([line] * (MAX_LISTED_CONVERSATIONS + 5)).encode()
    found = list_conversations(many)
    assert len(found) == MAX_LISTED_CONVERSATIONS and found[-1].total == MAX_LISTED_CONVERSATIONS + 5
    for wrong in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="max_records"):
            list_conversations(many, max_records=wrong)
