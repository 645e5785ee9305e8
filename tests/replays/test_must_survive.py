"""Must-survive facts by default: what the conversation marks as mattering, without typing anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO, shared_path

from contextfit.inputs.formats import load_conversation_file
from contextfit.inputs.samples import load_sample
from contextfit.errors import InvalidSettings
from contextfit.replays.facts import contains_word, declared_facts, entities, fact_report
from contextfit.replays.must_survive import as_facts, must_survive
from contextfit.replays.run import ENTITY_RULE, replay

SAMPLES = REPO / "contextfit" / "data" / "samples"


def _names(items):
    return [(item.name, item.rule) for item in items]


def test_the_roleplay_sample_marks_its_names_its_constant_lore_and_what_its_last_turns_refer_back_to():
    items = must_survive(load_sample("roleplay"))
    assert _names(items) == [("Mara Quill", "character name"), ("Tomas Venn", "persona name"),
                             ("lore “Greywater Isle”", "required lore"), ("Saltwitch", "referred back to")]
    assert items[2].fact["text"].startswith("Greywater Isle is a wind-scoured rock") and items[2].source == "lorebook:0"
    assert items[3].why == "turn 10 refers back to it"
    assert as_facts(items)[0] == {"text": "Mara Quill", "name": "Mara Quill"}


def test_pins_count_the_conversations_own_and_compares_hand_edits():
    support = load_sample("support_chat")
    assert _names(must_survive(support))[0] == ("pinned account", "pinned")
    items = must_survive(support, overrides={"m3": {"pinned": True}, "account": {"pinned": False}})
    assert ("pinned m3", "pinned") in _names(items) and ("pinned account", "pinned") not in _names(items)
    assert next(item for item in items if item.name == "pinned m3").fact == {"message": "m3", "name": "pinned m3"}
    # a pinned block that is no message (a memory) must be sent: its text is the fact
    roleplay = must_survive(load_sample("roleplay"), overrides={"memory:2": {"pinned": True}})
    memory = next(item for item in roleplay if item.name == "pinned memory:2")
    assert memory.fact["text"].startswith("Mara lost her brother Eamon")


def test_a_tool_result_a_later_turn_quotes_must_survive_and_clearing_it_loses_it():
    chat = [{"role": "user", "content": "Where is my parcel?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "track", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Parcel ZX-4471 left the Leeds depot. " + "Scan log. " * 120},
            {"role": "assistant", "content": "It is parcel ZX-4471, on its way."},
            {"role": "user", "content": "Thanks. And the weather?"}]
    items = must_survive(chat)
    assert _names(items) == [("track result m2", "quoted tool result")]
    assert items[0].why == "turn 1 quotes it (“ZX-4471”)" and items[0].fact == {"message": "m2", "name": "track result m2"}
    result = replay(chat, model="gpt-4o", context_limit=320, response_reserve=60,
                    strategies=["truncate", {"strategy": "clear-tool-results", "options": {"keep": 0}}])
    assert result.fact_rule == "default-facts"
    last = {label: rows[-1].facts for label, rows in result.turns.items()}
    assert [(f.name, f.status) for f in last["clear-tool-results+keep=0"]] == [("track result m2", "lost")]


def test_a_fact_the_latest_turn_refers_back_to_in_a_memory_alone_is_followed():
    chat = [{"role": "user", "content": "Hello there, tell me a story about the sea."},
            {"role": "assistant", "content": "Once upon a time."}, {"role": "user", "content": "Did Eamon ever come back?"}]
    memory = ["Mara lost her brother Eamon to the sea.", "The sea story continues: " + "waves and storms and the sea " * 20]
    items = must_survive(chat, memory=memory)
    assert _names(items) == [("Eamon", "referred back to")]  # said in no earlier message: the memory holds it
    assert items[0].fact == {"text": "Eamon", "name": "Eamon", "besides": True}
    result = replay(chat, model="gpt-4o", memory=memory, context_limit=150, response_reserve=20, strategies=["truncate"])
    # in force from the first request (the memory is assembled with it), where the memory could not be sent; at the
    # second the question names Eamon, but a fact it refers back to must be sent besides it: the memory is not
    assert [[(f.name, f.status) for f in turn.facts] for turn in result.turns["truncate"]] == [
        [("Eamon", "lost")], [("Eamon", "lost")]]
    roomy = replay(chat, model="gpt-4o", memory=memory, context_limit=600, response_reserve=20, strategies=["truncate"])
    assert roomy.totals["truncate"].retention == 1.0


def test_cjk_text_has_entities_and_boundaries_where_it_had_none():
    assert entities("2日目は清水寺とメアリーの金閣寺に行きたい。") == ["日目", "清水寺", "メアリー", "金閣寺"]
    assert entities("我想去北京的故宫博物院看看") == ["北京", "故宫博物院"]
    assert contains_word("清水寺と金閣寺に行きたい", "金閣寺") and contains_word("第42号", "42")
    assert not contains_word("order 1423", "42")  # latin boundaries as before


def _kyoto():
    chat = [{"role": "system", "content": "あなたは京都の旅行案内係です。"}]
    chat += [{"role": "user", "content": "金閣寺に行きたいです。" + "詳しく教えてください。" * 25},
             {"role": "assistant", "content": "はい。"},
             {"role": "user", "content": "伏見稲荷大社はどうですか？" + "詳しく。" * 20},
             {"role": "assistant", "content": "朝が空いています。"},
             {"role": "user", "content": "では金閣寺は何時に開きますか？"}]
    return chat


def test_a_japanese_chat_gets_default_facts_and_the_replay_follows_them():
    chat = _kyoto()
    items = must_survive(chat)
    assert ("金閣寺", "referred back to") in _names(items)
    result = replay(chat, model="gpt-4o", context_limit=300, response_reserve=50, strategies=["truncate"])
    assert result.fact_rule == "default-facts" and "金閣寺" in [fact.name for fact in result.facts]
    states = [{f.name: f.status for f in turn.facts}.get("金閣寺") for turn in result.turns["truncate"]]
    # not in force while only the question says it; then lost: turn 1, the only message that said it, is
    # dropped, and the question that asks about it again does not keep it
    assert states == [None, "lost", "lost"]
    # the entity rule, turn by turn, finds the term too (it found nothing in CJK text)
    by_rule = replay(chat, model="gpt-4o", context_limit=300, response_reserve=50, strategies=["truncate"],
                     facts=ENTITY_RULE)
    assert [f.name for f in by_rule.turns["truncate"][-1].facts] == ["金閣寺"]


def test_contextfit_replay_json_follows_the_roleplay_samples_facts_without_any_declared():
    script = Path(sys.executable).with_name("contextfit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "contextfit"]
    done = subprocess.run([*command, "replay", str(SAMPLES / "roleplay.json"), "--json"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["factRule"] == "default-facts"
    assert [fact["name"] for fact in answer["facts"]] == ["Mara Quill", "Tomas Venn", "lore “Greywater Isle”", "Saltwitch"]
    for label, turns in answer["turns"].items():
        assert all(len(turn["facts"]) >= 3 for turn in turns), label  # the names and the lore from the first turn
    assert answer["recommendation"]["strategy"] in answer["strategies"]


def test_an_uploaded_sillytavern_chat_gets_its_facts():
    conversation = load_conversation_file(shared_path("sillytavern", "chats_2023", "Megumin_1673323621108.jsonl"))
    items = must_survive(conversation)
    assert items and all(len(item.name) <= 80 for item in items)
    result = replay(conversation, model="gpt-4o", strategies=["truncate"])
    assert result.fact_rule == "default-facts" and [fact.name for fact in result.facts] == [item.name for item in items]


def test_a_fact_declared_besides_must_be_sent_apart_from_the_question_that_names_it():
    chat = [{"role": "user", "content": "My order is ORD-7731. " + "Some detail. " * 60},
            {"role": "assistant", "content": "Noted."}, {"role": "user", "content": "Where is ORD-7731?"}]
    plain = replay(chat, model="gpt-4o", context_limit=200, response_reserve=50, strategies=["truncate"],
                   facts=["ORD-7731"]).turns["truncate"][-1]
    besides = replay(chat, model="gpt-4o", context_limit=200, response_reserve=50, strategies=["truncate"],
                     facts=[{"text": "ORD-7731", "besides": True}]).turns["truncate"][-1]
    # the first message is dropped: the question still names the order, but does not keep what was said of it
    assert [(f.name, f.status) for f in plain.facts] == [("ORD-7731", "verbatim")]
    assert [(f.name, f.status) for f in besides.facts] == [("ORD-7731", "lost")]
    with pytest.raises(InvalidSettings, match=r"facts\[0\]\.besides applies to a text or regex fact"):
        declared_facts([{"message": 0, "besides": True}])
    with pytest.raises(InvalidSettings, match=r"facts\[0\]\.besides must be true or false"):
        declared_facts([{"text": "x", "besides": "yes"}])
    # an audit reads it alike: the generation's question is no keeper of what it refers back to
    kept = chat[1:]
    assert fact_report(declared_facts([{"text": "ORD-7731", "besides": True}]), chat, kept) == [
        {"name": "ORD-7731", "status": "lost"}]
    assert fact_report(declared_facts(["ORD-7731"]), chat, kept) == [{"name": "ORD-7731", "status": "verbatim"}]
