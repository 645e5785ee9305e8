"""Must-survive facts in a generation's audit: the chat's ``facts`` setting, checked against what is sent."""

from __future__ import annotations

import anyio
import pytest
from support.api import LOCAL
from support.chats import fact_chat
from fastapi.testclient import TestClient

import contextfit
from contextfit.replays.facts import declared_facts, fact_report
from contextfit.serving.api import create_app
from contextfit.serving.audit import PromptContextAudit, audit_from_plan
from contextfit.serving.generation import check_chat_settings
from contextfit.serving.providers import EchoProvider
from contextfit.pipeline.settings import settings_for


FACTS = ["ORD-7731", "/zenith\\s+express/i", {"message": "courier", "name": "the courier message"}, "never said"]


def _chat() -> list[dict]:
    return fact_chat()[:6]  # the support chat of tests/replays/test_replay.py, up to its last request ("Any news?")


def _states(strategy: str) -> list[tuple[str, str]]:
    chat = _chat()
    plan = contextfit.plan_prompt(chat, model="gpt-4o", context_limit=400, response_reserve=100,
                                  context_strategy=strategy)
    audit = audit_from_plan(plan, chat_id="c", provider="echo", facts=declared_facts(FACTS), messages=chat)
    return [(fact["name"], fact["status"]) for fact in audit.to_dict()["facts"]]


def test_the_audit_says_which_declared_facts_are_sent():
    # Budget 300 (gpt-4o): system 10 + "Any news?" 7 + priming 3 = 20; the 133-token reply about Zenith
    # Express fits, the 191-token courier message and the first exchange (the order number) do not.
    # "never said" is in no message: not in force, not reported.
    assert _states("truncate") == [("ORD-7731", "lost"), ("/zenith\\s+express/i", "verbatim"),
                                   ("the courier message", "lost")]
    # summarize quotes the dropped sentences: the order number and the courier message survive in its summary
    assert _states("summarize") == [("ORD-7731", "summary"), ("/zenith\\s+express/i", "verbatim"),
                                    ("the courier message", "summary")]


def test_the_audit_agrees_with_the_replay_of_the_same_turn():
    chat = _chat()
    result = contextfit.replay(chat, model="gpt-4o", context_limit=400, response_reserve=100,
                               strategies=["truncate", "summarize"], facts=FACTS)
    for strategy in ("truncate", "summarize"):
        last = result.turns[strategy][-1]
        assert [(f.name, f.status) for f in last.facts] == _states(strategy)


def test_no_facts_no_report_and_old_audits_read_back():
    assert fact_report([], _chat(), _chat()) == []
    plan = contextfit.plan_prompt(_chat(), model="gpt-4o")
    data = audit_from_plan(plan, chat_id="c", provider="echo").to_dict()
    assert data["facts"] == []
    del data["facts"]  # an audit stored before facts existed
    assert PromptContextAudit.from_dict(data).facts == []


@pytest.mark.parametrize("facts", [["ok", 5], [{"text": "a", "regex": "/a/"}], [{"bogus": 1}], "text"])
def test_bad_facts_in_chat_settings_are_refused(facts):
    with pytest.raises(contextfit.errors.InvalidSettings):
        check_chat_settings("gpt-4o", {"facts": facts})


def test_a_generation_records_the_facts_of_its_chat(store):
    with TestClient(create_app(store, {"echo": EchoProvider()}), base_url=LOCAL) as client:
        body = {"messages": _chat(), "settings": {"contextLimit": 400, "responseReserve": 100, "facts": FACTS}}
        created = client.post("/api/v2/chats", json=body)
        assert created.status_code == 201, created.text
        chat_id = created.json()["id"]
        response = client.post(f"/api/v2/chats/{chat_id}/generate")
        assert response.status_code == 200, response.text
        expected = [{"name": "ORD-7731", "status": "lost"}, {"name": "/zenith\\s+express/i", "status": "verbatim"},
                    {"name": "the courier message", "status": "lost"}]
        assert response.json()["audit"]["facts"] == expected
        assert client.get(f"/api/v2/chats/{chat_id}/context-audit").json()["facts"] == expected
        bad = client.post("/api/v2/chats", json={"messages": _chat(), "settings": {"facts": [{"bogus": 1}]}})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "INVALID_SETTINGS"


def test_the_audit_page_shows_the_facts(tmp_path, monkeypatch):
    from support.paths import REPO
    from streamlit.testing.v1 import AppTest

    from contextfit.serving.generation import generate
    from contextfit.serving.store import open_store

    database = str(tmp_path / "chats.db")
    opened = open_store(database)
    chat_id = opened.create_chat(messages=_chat(), settings={"contextLimit": 400, "responseReserve": 100,
                                                              "facts": FACTS}).id
    anyio.run(lambda: generate(opened, {"echo": EchoProvider()}, chat_id))
    opened.close()
    monkeypatch.setenv("CONTEXTFIT_DB", database)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    at.switch_page("pages/audit.py").run()
    assert not at.exception
    assert "Must-survive facts" in [header.value for header in at.subheader]
    shown = at.dataframe[0].value
    assert list(shown["name"]) == ["ORD-7731", "/zenith\\s+express/i", "the courier message"]
    assert list(shown["status"]) == ["lost", "verbatim", "lost"]


def test_a_fact_the_character_card_holds_is_in_force_from_the_first_turn():
    # "Mara Quill", the role-play character's name, was said to be in no message and checked at no
    # turn, though the card that holds it is sent with every request
    from contextfit.inputs.samples import sample_text

    conversation = contextfit.load_conversation(sample_text("roleplay"))
    assert not any("Mara Quill" in (m.get("content") or "") for m in conversation.messages)
    result = contextfit.replay(conversation, model="gpt-4o", context_limit=2200, response_reserve=400,
                               strategies=["truncate"], facts=["Mara Quill", "never said"])
    rows = result.turns["truncate"]
    assert [[(s.name, s.status) for s in row.facts] for row in rows] == [[("Mara Quill", "verbatim")]] * len(rows)
    # the audit of a generation: the card is among the blocks sent
    plan = contextfit.plan_prompt(conversation, model="gpt-4o", context_limit=2200, response_reserve=400)
    kept = [block.message for block in plan.blocks if block.included]
    assert fact_report(declared_facts(["Mara Quill"]), conversation.messages, kept) == [
        {"name": "Mara Quill", "status": "verbatim"}]
    assert fact_report(declared_facts(["Mara Quill"]), conversation.messages, conversation.messages) == []


def test_a_fact_written_with_a_macro_is_looked_for_as_the_prompt_says_it():
    # "{{char}}" typed as a fact was lost at every turn, everything sent: the prompt says "Mara Quill"
    from contextfit.pipeline.plan import macro_names
    from contextfit.inputs.samples import sample_text

    conversation = contextfit.load_conversation(sample_text("roleplay"))
    result = contextfit.replay(conversation, model="gpt-4o", context_limit=100_000, response_reserve=400,
                               strategies=["truncate"], facts=["{{char}}", "{{user}}'s map"])
    states = {(s.name, s.status) for row in result.turns["truncate"] for s in row.facts}
    assert ("{{char}}", "verbatim") in states and not any(status == "lost" for _, status in states)
    assert result.facts[0].name == "{{char}}" and result.facts[0].text == "Mara Quill"
    # a generation's audit fills them in too, in the facts and in the messages
    plan = contextfit.plan_prompt(conversation, model="gpt-4o", context_limit=100_000, response_reserve=400)
    names = macro_names(settings_for(conversation, None, {"model": "gpt-4o"})[1])
    assert names["char"] == "Mara Quill"
    audit = audit_from_plan(plan, chat_id="c", provider="echo", facts=declared_facts(["{{char}}"]),
                            messages=conversation.messages, names=names)
    assert audit.to_dict()["facts"] == [{"name": "{{char}}", "status": "verbatim"}]
    unfilled = audit_from_plan(plan, chat_id="c", provider="echo", facts=declared_facts(["{{char}}"]),
                               messages=conversation.messages)
    assert unfilled.to_dict()["facts"] == [{"name": "{{char}}", "status": "lost"}]  # as before, without the names


def test_a_generation_fills_the_macros_of_its_facts(store):
    chat = [{"role": "user", "content": "Where is {{char}}?"}, {"role": "assistant", "content": "Here."},
            {"role": "user", "content": "Good."}]
    settings = {"charName": "Mara Quill", "userName": "Kael", "facts": ["{{char}}", "Kael", "{{user}}"]}
    with TestClient(create_app(store, {"echo": EchoProvider()}), base_url=LOCAL) as client:
        created = client.post("/api/v2/chats", json={"messages": chat, "settings": settings})
        assert created.status_code == 201, created.text
        response = client.post(f"/api/v2/chats/{created.json()['id']}/generate")
        assert response.status_code == 200, response.text
        # "{{char}}" is in force (a message says it) and sent as "Mara Quill"; no message says the user's name
        assert response.json()["audit"]["facts"] == [{"name": "{{char}}", "status": "verbatim"}]
