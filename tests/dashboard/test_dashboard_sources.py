"""The Compare page's "Conversation" section through AppTest: picks, several files, a lorebook
alone, and the user's conversation surviving Source switches, page switches and the URL."""

from __future__ import annotations

import json

import pytest
from support.charts import EVERY_STRATEGY, chart_count
from support.paths import REPO, TEST_DATA, shared_path
from streamlit.testing.v1 import AppTest

from contextfit.inputs.formats import list_conversations
from contextfit.inputs.samples import load_sample
from contextfit.limits import MAX_LISTED_CONVERSATIONS

CHAT = [{"role": "system", "content": "Be brief."}] + [
    {"role": "user" if i % 2 else "assistant", "content": f"turn {i} about the harbour"} for i in range(1, 8)
]


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=120)


def rows(at) -> list[tuple[str, str]]:
    """The edit table's (id, kind) rows: the blocks of the conversation on the page."""
    table = at.dataframe[-1].value
    return list(zip(table["id"], table["kind"]))


def clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def upload(at, *paths_or_files) -> AppTest:
    files = []
    for item in paths_or_files:
        name, data = (item.name, item.read_bytes()) if hasattr(item, "read_bytes") else item
        files.append((name, data, "application/octet-stream"))
    at.sidebar.radio[0].set_value("Upload").run()
    at.get("file_uploader")[0].set_value(files).run()
    clean(at)
    return at


def captions(at) -> list[str]:
    return [caption.value for caption in at.caption]


def test_a_file_of_several_conversations_offers_a_pick_and_shows_the_one_picked():
    path = shared_path("dialogstudio", "sharegpt_original_example.json")
    at = upload(app().run(), path)
    picker = next(s for s in at.sidebar.selectbox if s.label == "Conversation in sharegpt\\_original\\_example.json")
    assert len(picker.options) == 5
    assert picker.options[1].startswith("#2 · How to tell if a customer segment is well segmented?")
    assert picker.options[1].endswith(" · 2 messages")
    assert len(rows(at)) == 10  # the first conversation: 10 messages
    picker.set_value(2).run()
    clean(at)
    third = list_conversations(path.read_bytes())[2].conversation
    assert [row[0] for row in rows(at)] == [m["meta"]["id"] for m in third.messages]
    assert not any("only the first" in text.value for text in at.text)  # no import note hides the others
    assert chart_count(at) == EVERY_STRATEGY
    # The pick survives a page switch.
    at.switch_page("pages/models.py").run()
    at.switch_page("pages/compare.py").run()
    clean(at)
    assert [row[0] for row in rows(at)] == [m["meta"]["id"] for m in third.messages]


def test_a_card_a_chat_and_a_lorebook_uploaded_together_are_one_conversation():
    card = shared_path("sillytavern", "default_Seraphina_staging_v2_ccv3.png")
    book = shared_path("sillytavern", "Eldoria_release.json")
    at = upload(app().run(), card, TEST_DATA / "formats" / "sillytavern_chat.jsonl", book)
    assert not at.error
    assert (
        "Combined, as a contextfit bundle would be: chat sillytavern\\_chat.jsonl (5 messages) + card Seraphina "
        "(default\\_Seraphina\\_staging\\_v2\\_ccv3.png) + World Info Eldoria\\_release.json (4 entries)."
    ) in captions(at)
    kinds = {kind for _, kind in rows(at)}
    assert {"character", "lorebook", "history"} <= kinds
    assert chart_count(at) == EVERY_STRATEGY
    assert at.query_params["upload"] == [card.name, "sillytavern_chat.jsonl", book.name]


def test_two_chats_say_which_one_is_used_and_the_other_can_be_picked():
    megumin = shared_path("sillytavern", "chats_2023", "Megumin_1673323621108.jsonl")
    aqua = shared_path("sillytavern", "chats_2023", "Aqua_1673181146000.jsonl")
    at = upload(app().run(), megumin, aqua)
    assert "2 chat files: using Megumin\\_1673323621108.jsonl, not Aqua\\_1673181146000.jsonl." in captions(at)
    assert len(rows(at)) == 3
    chooser = next(s for s in at.sidebar.selectbox if s.label == "Chat file to use")
    chooser.set_value(aqua.name).run()
    clean(at)
    assert len(rows(at)) == 1 and "2 chat files: using Aqua\\_1673181146000.jsonl, not Megumin\\_1673323621108.jsonl." in captions(at)


def test_a_world_info_file_alone_is_explained_and_can_join_a_samples_chat():
    book = shared_path("sillytavern", "Eldoria_release.json")
    at = upload(app().run(), book)
    assert not at.error and chart_count(at) == (0, 0, 0, 0) and not at.dataframe  # no empty charts
    assert at.info[0].value.startswith("Eldoria\\_release.json is a World Info file (a lorebook): 4 entries.")
    join = at.selectbox(key="source_lore_with")
    join.set_value("roleplay").run()
    clean(at)
    assert "Combined: sample roleplay with World Info Eldoria\\_release.json (in place of its own lorebook)." in captions(at)
    assert chart_count(at) == EVERY_STRATEGY
    sample_ids = [b["meta"]["id"] for b in load_sample("roleplay").messages]
    assert [i for i, _ in rows(at) if i in sample_ids]  # the sample's chat, with this lorebook
    assert not any(i.startswith("lorebook:") and i not in ("lorebook:0", "lorebook:1", "lorebook:2", "lorebook:3")
                   for i, _ in rows(at))


def test_a_paste_survives_switching_the_source_away_and_back():
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    at.text_area(key="paste").set_value(json.dumps(CHAT)).run()
    pasted = rows(at)
    at.sidebar.radio[0].set_value("Sample").run()
    assert rows(at) != pasted
    at.sidebar.radio[0].set_value("Paste").run()
    clean(at)
    assert at.text_area(key="paste").value == json.dumps(CHAT)
    assert rows(at) == pasted


@pytest.mark.parametrize("page", ["pages/audit.py", "pages/models.py"])
def test_a_paste_and_an_upload_survive_a_page_switch(page, tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    at.text_area(key="paste").set_value(json.dumps(CHAT)).run()
    pasted = rows(at)
    at.switch_page(page).run()
    at.switch_page("pages/compare.py").run()
    clean(at)
    assert at.sidebar.radio[0].value == "Paste" and at.text_area(key="paste").value == json.dumps(CHAT)
    assert rows(at) == pasted

    chat = TEST_DATA / "formats" / "sillytavern_chat.jsonl"
    upload(at, chat)
    uploaded = rows(at)
    assert at.query_params.get("upload") in (chat.name, [chat.name])
    at.switch_page(page).run()
    at.switch_page("pages/compare.py").run()
    clean(at)
    assert at.sidebar.radio[0].value == "Upload" and rows(at) == uploaded
    assert "Using sillytavern\\_chat.jsonl (uploaded). Drop files above to replace them." in captions(at)
    assert at.query_params.get("upload") in (chat.name, [chat.name])
    at.button(key="source_clear").click().run()
    clean(at)
    assert not at.dataframe and at.info[0].value == "Upload a file (or several) to compare strategies."


def test_send_with_echo_and_back_keeps_the_upload(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    at = upload(app().run(), TEST_DATA / "formats" / "sillytavern_chat.jsonl")
    uploaded = rows(at)
    at.button(key="send-truncate").click().run()
    assert at.title[0].value == "Audit"
    at.switch_page("pages/compare.py").run()
    clean(at)
    assert rows(at) == uploaded


def test_a_link_to_a_sample_opens_it_and_a_link_to_an_upload_says_it_is_gone():
    at = app()
    at.query_params["sample"] = "coding_agent"
    at.run()
    clean(at)
    assert at.sidebar.selectbox[0].value == "coding_agent"
    ids = [i for i, _ in rows(at)]
    assert all(m["meta"]["id"] in ids for m in load_sample("coding_agent").messages)
    at.sidebar.selectbox[0].set_value("support_chat").run()
    assert at.query_params["sample"] in ("support_chat", ["support_chat"])

    gone = app()
    gone.query_params["upload"] = "chat.jsonl"
    gone.run()
    clean(gone)
    assert gone.sidebar.radio[0].value == "Upload"
    assert [i.value for i in gone.info] == ["The link names the upload chat.jsonl, which is not in this browser session: upload it again."]
    assert chart_count(gone) == (0, 0, 0, 0)

    unknown = app()
    unknown.query_params["sample"] = "nope"
    unknown.run()
    clean(unknown)
    assert unknown.info[0].value.startswith("There is no sample 'nope'")
    assert chart_count(unknown) == EVERY_STRATEGY


def test_a_dataset_larger_than_the_menu_says_how_many_are_listed():
    line = json.dumps({"conversations": [{"from": "human", "value": "hello"}, {"from": "gpt", "value": "hi"}]})
    at = upload(app().run(), ("many.jsonl", "\n".join([line] * (MAX_LISTED_CONVERSATIONS + 1)).encode()))
    picker = next(s for s in at.sidebar.selectbox if s.label == "Conversation in many.jsonl")
    assert len(picker.options) == MAX_LISTED_CONVERSATIONS
    assert "many.jsonl holds 1,001 conversations; the menu lists the first 1,000." in captions(at)


def test_hostile_names_in_a_link_or_a_file_are_shown_as_text():
    at = app()
    at.query_params["upload"] = "![x](http://example.invalid/t.png) <b>**"
    at.run()
    clean(at)
    assert at.info[0].value == (
        "The link names the upload !\\[x\\](http://example.invalid/t.png) \\<b\\>\\*\\*, which is not in this "
        "browser session: upload it again."
    )
    name = "[a](javascript:alert(1))_**.json"
    at = upload(app().run(), (name, json.dumps([{"conversations": [{"from": "human", "value": "x"}]}] * 2).encode()))
    assert any(s.label == "Conversation in \\[a\\](javascript:alert(1))\\_\\*\\*.json" for s in at.sidebar.selectbox)


def test_the_chosen_sample_survives_a_page_switch_and_is_in_the_url():
    at = app().run()
    at.sidebar.selectbox[0].set_value("support_chat").run()
    chosen = rows(at)
    assert at.query_params["sample"] in ("support_chat", ["support_chat"])
    at.switch_page("pages/plugins.py").run()
    at.switch_page("pages/compare.py").run()
    clean(at)
    assert at.sidebar.selectbox[0].value == "support_chat" and rows(at) == chosen
