"""Where the Compare page's conversation comes from: samples, pastes, uploads, several files, the URL."""

from __future__ import annotations

import json

from support.paths import TEST_DATA, shared_path

import contextfit
from contextfit.inputs.samples import load_sample
from contextfit.dashboard import sources
from contextfit.dashboard.sources import Source, UploadedBytes, combine, read_part


def uploaded(path, name=None) -> UploadedBytes:
    return UploadedBytes(name or path.name, path.read_bytes())


def card_png():
    return uploaded(shared_path("sillytavern", "default_Seraphina_staging_v2_ccv3.png"))


def eldoria():
    return uploaded(shared_path("sillytavern", "Eldoria_release.json"))


def chat():
    return uploaded(TEST_DATA / "formats" / "sillytavern_chat.jsonl")  # a Seraphina chat bound to "Eldoria"


def fingerprint(plan):
    return [(b.id, b.kind, b.content, b.tokens, b.reason) for b in plan.blocks]


def plan(conversation, **settings):
    return contextfit.plan_prompt(
        conversation.messages, model="gpt-4o", character=conversation.character, lorebook=conversation.lorebook,
        persona=conversation.persona, memory=conversation.memory, **settings,
    )


# -- what each file is ------------------------------------------------------------------


def test_each_file_is_read_as_the_part_it_is():
    parts = {p.file.name: p.part for p in map(read_part, [
        card_png(), eldoria(), chat(), uploaded(shared_path("sillytavern", "Megumin_2023.png")),
        uploaded(shared_path("sillytavern", "default_Seraphina_staging.chara_v2.extracted.json")),
        uploaded(shared_path("dialogstudio", "sharegpt_original_example.json")),
        UploadedBytes("my persona.txt", b"Alex, a travelling healer."),
        UploadedBytes("notes.txt", b"User: hi\nAssistant: hello"),
    ])}
    assert parts == {
        "default_Seraphina_staging_v2_ccv3.png": "card", "Eldoria_release.json": "lorebook",
        "sillytavern_chat.jsonl": "chat", "Megumin_2023.png": "card",
        "default_Seraphina_staging.chara_v2.extracted.json": "card", "sharegpt_original_example.json": "chat",
        "my persona.txt": "persona", "notes.txt": "chat",
    }
    broken = read_part(UploadedBytes("broken.json", b'{"messages": ['))
    assert broken.part is None and broken.error.code == "INVALID_CONVERSATION"


# -- several files as one conversation --------------------------------------------------


def test_card_chat_world_info_and_persona_combine_as_a_hand_written_bundle_would():
    persona = UploadedBytes("persona.txt", "Alex, a travelling healer.\n".encode())
    files = [card_png(), chat(), eldoria(), persona]
    combined = combine([read_part(f) for f in files])
    conversation = combined.conversation
    assert combined.caption == (
        "Combined, as a contextfit bundle would be: chat sillytavern_chat.jsonl (5 messages) + card Seraphina "
        "(default_Seraphina_staging_v2_ccv3.png) + World Info Eldoria_release.json (4 entries) + persona (persona.txt)."
    )
    assert combined.notes == () and conversation.format == "contextfit"
    bundle = {
        "contextfit": "conversation",
        "messages": contextfit.load_conversation(chat().data).messages,
        "character": json.loads(shared_path("sillytavern", "default_Seraphina_staging.ccv3_v3.extracted.json").read_text()),
        "lorebook": json.loads(eldoria().data),
        "persona": "Alex, a travelling healer.",
    }
    by_hand = contextfit.load_conversation(json.dumps(bundle))
    for settings in ({}, {"context_limit": 1400, "response_reserve": 200}):
        assert fingerprint(plan(conversation, **settings)) == fingerprint(plan(by_hand, **settings))
    blocks = plan(conversation)
    assert {"character", "persona", "lorebook"} <= {b.kind for b in blocks.blocks}
    assert any(b.id.startswith("lorebook:") and "glade" in b.content.lower() for b in blocks.blocks)
    # Every file's import notes stay, named by file.
    assert any(w.startswith("sillytavern_chat.jsonl: ") for w in conversation.warnings)


def test_a_card_and_a_lorebook_without_a_chat_use_the_cards_first_message():
    combined = combine([read_part(card_png()), read_part(eldoria())])
    assert [m["meta"]["id"] for m in combined.conversation.messages] == ["first_mes"]
    assert "its first message as the chat" in combined.caption
    assert len(combined.conversation.lorebook.entries) == 4 and combined.conversation.character.name == "Seraphina"


def test_two_chats_or_two_cards_say_which_one_is_used_and_offer_the_other():
    megumin = uploaded(shared_path("sillytavern", "chats_2023", "Megumin_1673323621108.jsonl"))
    aqua = uploaded(shared_path("sillytavern", "chats_2023", "Aqua_1673181146000.jsonl"))
    megumin_card = uploaded(shared_path("sillytavern", "Megumin_2023.png"))
    parts = [read_part(f) for f in (megumin, aqua, card_png(), megumin_card)]
    combined = combine(parts)
    assert combined.notes == (
        "2 chat files: using Megumin_1673323621108.jsonl, not Aqua_1673181146000.jsonl.",
        "2 card files: using default_Seraphina_staging_v2_ccv3.png, not Megumin_2023.png.",
    )
    assert combined.choices == {"chat": (megumin.name, aqua.name), "card": (card_png().name, megumin_card.name)}
    picked = combine(parts, {"chat": aqua.name, "card": megumin_card.name})
    assert picked.conversation.character.name == "Megumin"
    assert picked.conversation.messages == contextfit.load_conversation(aqua.data).messages
    assert picked.notes[0] == "2 chat files: using Aqua_1673181146000.jsonl, not Megumin_1673323621108.jsonl."


def test_an_unreadable_file_is_named_and_the_rest_combine():
    parts = [read_part(f) for f in (UploadedBytes("broken.json", b"{"), chat(), eldoria())]
    combined = combine(parts)
    assert combined.notes[0].startswith("broken.json could not be read (INVALID_CONVERSATION): ")
    assert combined.conversation.lorebook is not None and len(combined.conversation.messages) == 5
    assert combine([read_part(UploadedBytes("broken.json", b"{"))]).conversation is None


def test_a_dataset_among_the_files_gives_the_picked_conversation():
    dataset = uploaded(shared_path("dialogstudio", "sharegpt_original_example.json"))
    parts = [read_part(dataset), read_part(eldoria())]
    third = combine(parts, conversation_index=2).conversation
    assert third.messages == sources.list_conversations(dataset.data)[2].conversation.messages
    assert third.messages != sources.list_conversations(dataset.data)[0].conversation.messages
    assert third.lorebook is not None


# -- a World Info file alone ------------------------------------------------------------


def test_a_world_info_file_alone_is_explained_and_joins_a_samples_chat():
    (entry,) = sources.list_conversations(eldoria().data)
    alone = entry.conversation
    assert sources.is_lorebook_only(alone) and not sources.is_lorebook_only(load_sample("roleplay"))
    text = sources.lorebook_summary(alone.lorebook, "Eldoria_release.json")
    assert text.startswith("Eldoria_release.json is a World Info file (a lorebook)")
    assert "4 entries" in text and "Keys: eldoria, wood, forest, magical forest, shadowfang, beast, monster, monsters and 7 more." in text
    sample = load_sample("roleplay")
    joined = sources.with_lorebook(sample, alone, "sample roleplay", "Eldoria_release.json")
    assert joined.conversation.lorebook is alone.lorebook and joined.conversation.messages == sample.messages
    assert joined.conversation.character == sample.character
    assert joined.caption == "Combined: sample roleplay with World Info Eldoria_release.json (in place of its own lorebook)."


# -- the URL ----------------------------------------------------------------------------


def test_the_url_names_a_sample_or_the_uploads_and_is_read_back():
    conversation = load_sample("coding_agent")
    source = Source("coding_agent", "sample", b"", conversation, "sample:coding_agent")
    assert source.query == {"sample": ["coding_agent"]}
    assert sources.read_query(source.query).sample == "coding_agent"
    files = (chat(), eldoria())
    upload = Source("sillytavern_chat.jsonl + Eldoria_release.json", "upload", files, conversation, "upload:x")
    assert upload.query == {"upload": ["sillytavern_chat.jsonl", "Eldoria_release.json"]}
    assert sources.read_query(upload.query, [f.name for f in files]) == sources.QueryChoice("upload", uploads=tuple(upload.query["upload"]))
    missing = sources.read_query(upload.query)
    assert missing.kind == "upload" and missing.note.startswith("The link names the upload sillytavern_chat.jsonl, Eldoria_release.json,")
    assert Source("pasted text", "paste", b"x", conversation, "paste:x").query == {}
    assert sources.read_query({}) == sources.QueryChoice()
    assert sources.read_query({"sample": ["../../etc/passwd"]}).sample == "roleplay"
