"""The replay at its edges: what a hostile tester (or an unlucky demo) runs into, on every face."""

from __future__ import annotations

import io
import json

import pytest
from support.api import LOCAL
from support.paths import REPO
from fastapi.testclient import TestClient
from streamlit.testing.v1 import AppTest

import contextfit
from contextfit import FitSession
from contextfit.serving.api import create_app
from contextfit.serving.providers import EchoProvider
from contextfit.dashboard import audit_view
from contextfit.dashboard import replay as views
from contextfit.dashboard.setup import ReplaySetup, Setup
from contextfit.cli import main


@pytest.fixture
def client(store):
    with TestClient(create_app(store, {"echo": EchoProvider()}), base_url=LOCAL) as test_client:
        yield test_client

# the first request's protected current input (108 tokens) cannot fit a 60-token budget; the second one can
BIG_FIRST = [{"role": "user", "content": "hi there " * 50}, {"role": "assistant", "content": "x"},
             {"role": "user", "content": "ok"}]


def test_turns_that_no_strategy_can_fit_are_named_in_the_notes():
    result = contextfit.replay(BIG_FIRST, model="gpt-4o", context_limit=60, response_reserve=0,
                               strategies=["truncate", "summarize"])
    failed = [note for note in result.notes if "could not be fitted" in note]
    assert len(failed) == 1  # one note for the strategies that failed the same turns
    assert "turn 1 of 2" in failed[0] and "Under truncate and summarize," in failed[0]
    assert "The protected context alone needs 108 tokens but the budget is 60" in failed[0]


def test_a_replay_where_every_turn_failed_says_so_and_not_why_nothing_was_cached():
    # it said "No request reaches the 1,024 tokens ... (the largest is 0)": true, and beside the point
    result = contextfit.replay(BIG_FIRST[:1], model="gpt-4o", context_limit=60, response_reserve=0,
                               strategies=["truncate"])
    assert result.totals["truncate"].failed_turns == 1
    assert not any("caches it" in note for note in result.notes)
    assert "Under truncate, no turn could be fitted; at turn 1: The protected context alone needs 108 tokens" in " ".join(
        result.notes)


def test_a_regex_fact_stopped_by_its_time_limit_is_said_and_not_called_absent():
    chat = [{"role": "user", "content": "a" * 50_000 + "!"}, {"role": "assistant", "content": "x"},
            {"role": "user", "content": "a" * 30 + "!"}]
    result = contextfit.replay(chat, model="gpt-4o", strategies=["truncate"], facts=["/(a+)+$/", "x"])
    assert any(d["code"] == "LOREBOOK_KEY_TIMEOUT" for d in result.diagnostics)
    stopped = [note for note in result.notes if "/(a+)+$/" in note]
    assert stopped and "time" in stopped[0]  # the CLI and the API print the notes
    # the page said "No message holds “/(a+)+$/”, so no turn checks it": the search was stopped, not empty
    assert not any("No message holds" in note and "(a+)" in note for note in views.fact_notes(result))


def test_regex_facts_stopped_for_the_same_reason_make_one_note():
    # 300 regex facts over a 1,000-turn chat drew 208 warnings on the page, one per stopped fact
    chat = [{"role": "user", "content": "a" * 50_000 + "!"}, {"role": "assistant", "content": "x"},
            {"role": "user", "content": "a" * 30 + "!"}]
    facts = [f"/(a+)+{i}$/" for i in range(12)]
    result = contextfit.replay(chat, model="gpt-4o", strategies=["truncate"], facts=facts)
    stopped = [note for note in result.notes if "not searched for everywhere" in note]
    assert len(result.diagnostics) == 12 and stopped == [
        "12 regex facts were not searched for everywhere, to stay within the regex time and size limits (the "
        "diagnostics say which limit stopped each): " + ", ".join(facts[:10]) + " and 2 more. Where one was not, it "
        "counts as not found, so a turn may show it lost while it is sent."]


def _many_facts_result(count: int):
    chat = [{"role": "user", "content": " ".join(f"k{i:04d}" for i in range(0, count, 2)) + " " + "pad " * 300},
            {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and now?"}]
    setup = ReplaySetup.of("gpt-4o", 300, 50, ("truncate",), stable_prefix=False,
                              facts=tuple(f"k{i:04d}" for i in range(count)))
    messages, settings = views.conversation_input(chat, setup)
    return views.run(messages, settings, setup)


def test_a_thousand_declared_facts_no_message_holds_make_one_note_not_a_thousand():
    # the page drew one warning box per fact: 500 boxes before the charts
    notes = views.fact_notes(_many_facts_result(1000))
    assert len(notes) == 1
    assert notes[0].startswith("No message holds 500 of the declared facts") and "“k0001”" in notes[0]
    assert "and 490 more" in notes[0] and len(notes[0]) < 400
    assert views.fact_notes(_many_facts_result(4)) == ["No message holds “k0001”, so no turn checks it.",
                                                       "No message holds “k0003”, so no turn checks it."]


def test_the_facts_a_turn_lost_are_named_in_a_line_of_bounded_length():
    result = _many_facts_result(1000)
    summary = views.turn_summary(result, "truncate", 2)
    assert len(result.turns["truncate"][1].lost) == 500  # the first message is dropped at turn 2
    assert summary["lost_text"].startswith("k0000, k0002") and summary["lost_text"].endswith("and 490 more")


ROUTER = [{"role": "system", "content": "You are a support agent."},
          {"role": "user", "content": "My router AX55 drops wifi. " * 30},
          {"role": "assistant", "content": "Which firmware?"},
          {"role": "user", "content": "Firmware 1.2.4."}, {"role": "assistant", "content": "Update to 1.2.5."}]


def test_a_conversation_that_declares_facts_is_replayed_with_them(tmp_path):
    # the Replay page read a bundle's settings.facts; replay() and `contextfit replay` used the entity rule
    bundle = {"contextfit": "conversation", "messages": ROUTER, "settings": {"facts": ["AX55"], "contextLimit": 400,
                                                                             "responseReserve": 100}}
    conversation = contextfit.load_conversation(json.dumps(bundle))
    result = contextfit.replay(conversation, model="gpt-4o", strategies=["truncate"])
    assert result.fact_rule == "declared" and [fact.name for fact in result.facts] == ["AX55"]
    chosen = contextfit.replay(conversation, model="gpt-4o", strategies=["truncate"], facts=["1.2.4"])
    assert [fact.name for fact in chosen.facts] == ["1.2.4"]  # the caller's own facts come first
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(bundle))
    out = io.StringIO()
    assert main(["replay", str(path), "--strategy", "truncate", "--json"], out) == 0
    assert json.loads(out.getvalue())["facts"] == [{"name": "AX55", "text": "AX55"}]


def test_the_api_replays_a_stored_chat_with_its_declared_facts(client):
    # the Audit page's "what if" replays a chat with its facts; the API used the entity rule
    chat_id = client.post("/api/v2/chats", json={"model": "gpt-4o", "messages": ROUTER, "settings": {
        "facts": ["AX55"], "contextLimit": 400, "responseReserve": 100}}).json()["id"]
    data = client.post("/api/v2/replay", json={"chatId": chat_id, "strategies": ["truncate"]}).json()
    assert data["factRule"] == "declared" and data["facts"] == [{"name": "AX55", "text": "AX55"}]
    body = {"chatId": chat_id, "strategies": ["truncate"], "facts": ["1.2.4"]}
    data = client.post("/api/v2/replay", json=body).json()
    assert [fact["name"] for fact in data["facts"]] == ["1.2.4"]  # the request's own facts come first
    inline = {"messages": ROUTER, "settings": {"facts": ["AX55"]}, "strategies": ["truncate"]}
    assert client.post("/api/v2/replay", json=inline).json()["factRule"] == "declared"


def _page() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=180)


def test_a_reload_of_a_replay_of_the_pasted_conversation_says_the_conversation_is_gone():
    # the pasted conversation lives in the session: a reload (a new session) showed a sample, with no word
    at = _page()
    at.query_params["source"] = "current"
    at.query_params["limit"] = "3000"
    at.switch_page("pages/replay.py").run()
    assert not at.exception
    assert at.radio(key="source_radio").value == "Sample"
    assert any("pasted or uploaded in another browser session" in info.value for info in at.info)
    assert at.number_input(key="limit").value == 3000  # the link's other choices


def test_a_link_to_a_chat_that_is_not_stored_says_so_before_showing_another(tmp_path, monkeypatch):
    # it replayed the first stored chat instead, under the link's address, with no word
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    setup = Setup.of(model="gpt-4o", context_limit=400, response_reserve=100)
    shown = audit_view.send_with_echo(contextfit.load_conversation(json.dumps(ROUTER)), setup, "truncate",
                                     store=str(tmp_path / "chats.db"))
    at = _page()
    at.query_params["source"] = "chat:chat_deleted"
    at.switch_page("pages/replay.py").run()
    assert not at.exception
    assert at.selectbox(key="source_chat_menu").value == shown
    assert any("chat\\_deleted" in warning.value and "not" in warning.value for warning in at.warning)  # as typed
    at.number_input(key="limit").set_value(900).run()  # said once
    assert not any("chat\\_deleted" in warning.value for warning in at.warning)


def test_a_link_to_a_chat_when_none_is_stored_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    at = _page()
    at.query_params["source"] = "chat:chat_deleted"
    at.switch_page("pages/replay.py").run()
    assert not at.exception
    assert any("chat\\_deleted" in warning.value for warning in at.warning)
    assert any("No stored chat yet" in info.value for info in at.info)


@pytest.mark.parametrize("text, expected", [
    ("Ich habe gestern mit Jürgen Müller gesprochen.", ["Jürgen Müller"]),
    ("The parcel for Élodie is in Zürich now.", ["Élodie", "Zürich"]),
    ("We asked Zoë and Łukasz about ÖBB tickets.", ["ÖBB", "Zoë", "Łukasz"]),
    ("Ada Lovelace met NASA at 42 Main St.", ["NASA", "42", "Lovelace", "Main St"]),  # ASCII: as before
])
def test_capitalized_names_and_capitals_beyond_ascii_are_entities(text, expected):
    # the rule's names were [A-Z][a-z]+ words: "Müller", "Zoë", "Élodie" were no entities at all
    from contextfit.replays.facts import entities

    assert entities(text) == expected


def test_the_default_rule_follows_a_name_beyond_ascii_through_a_replay():
    chat = [{"role": "user", "content": "Bitte schicke das Paket an Frau Müller. " + "Danke. " * 200},
            {"role": "assistant", "content": "Gern."}, {"role": "user", "content": "Hat Frau Müller es bekommen?"}]
    result = contextfit.replay(chat, model="gpt-4o", context_limit=200, response_reserve=50, strategies=["truncate"],
                               facts="entities")
    facts = [state.name for state in result.turns["truncate"][1].facts]
    assert "Frau Müller" in facts and result.totals["truncate"].retention == 0.0
    # the default list finds the name too (the latest turn refers back to it), and follows it from its first mention
    result = contextfit.replay(chat, model="gpt-4o", context_limit=200, response_reserve=50, strategies=["truncate"])
    assert result.fact_rule == "default-facts" and [fact.name for fact in result.facts] == ["Frau Müller"]


SHORT_TURNS = [message for i in range(200) for message in (
    {"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"})]


def test_a_long_label_is_refused_not_repeated_in_every_turn(client):
    # each turn's row carries its strategy's label: an 876 KB body (eight 100,000-character labels,
    # 1,000 turns) was answered with 806 MB of JSON, 1.7 GB of memory in the server
    body = {"messages": SHORT_TURNS, "strategies": [{"strategy": "truncate", "label": "L" * 100_000}]}
    response = client.post("/api/v2/replay", json=body)
    assert response.status_code == 422, response.text[:200]
    error = response.json()["error"]
    assert error["code"] == "INVALID_SETTINGS" and "strategies[0].label" in error["message"]
    assert len(response.content) < 1_000


def test_a_label_made_of_a_long_option_is_shortened(client):
    body = {"messages": SHORT_TURNS,
            "strategies": [{"strategy": "vector-recall", "options": {"query": "q" * 100_000}}]}
    response = client.post("/api/v2/replay", json=body)
    assert response.status_code == 200, response.text[:200]
    (label,) = response.json()["strategies"]
    assert label.startswith("vector-recall+query=qqq") and len(label) <= 80
    assert len(response.content) < 500_000


def test_a_long_fact_is_named_short_in_every_turn(client):
    fact = "F" * 100_000
    body = {"messages": [{"role": "user", "content": fact}, *SHORT_TURNS[1:]], "facts": [fact],
            "strategies": ["truncate"]}
    response = client.post("/api/v2/replay", json=body)
    assert response.status_code == 200, response.text[:200]
    data = response.json()
    names = {state["name"] for turn in data["turns"]["truncate"] for state in turn["facts"]}
    assert len(names) == 1 and len(names.pop()) <= 80
    assert data["facts"][0]["text"] == fact  # the fact itself is whole, once
    assert len(response.content) < 1_000_000
    named = {**body, "facts": [{"text": "F", "name": "N" * 1_000}]}
    response = client.post("/api/v2/replay", json=named)
    assert response.status_code == 422 and "facts[0].name" in response.json()["error"]["message"]


def test_cli_replay_of_one_turn_reads_one_turn(tmp_path):
    # the page's caption was fixed to "1 turn"; the CLI's header still read "1 turns"
    path = tmp_path / "one.json"
    path.write_text(json.dumps([{"role": "user", "content": "Hi"}]))
    out = io.StringIO()
    assert main(["replay", str(path), "--strategy", "truncate"], out) == 0
    assert out.getvalue().startswith(f"{path}: 1 turn, model gpt-4o")


def _replay_past_the_limit(store) -> float:
    """Seconds from a replay's request to its worker going idle, past a 0.5 s limit (asserts the 503)."""
    import time

    from contextfit.serving.api.limits import ServerLimits

    app = create_app(store, {"echo": EchoProvider()}, limits=ServerLimits(request_seconds=0.5))
    turns = [message for i in range(800) for message in (
        {"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"})]
    body = {"messages": turns, "strategies": [{"strategy": name, "label": f"{name}{k}"} for k in range(4)
                                              for name in ("truncate", "summarize", "vector-recall", "manual")]}
    with TestClient(app, base_url=LOCAL) as client:
        started = time.monotonic()
        response = client.post("/api/v2/replay", json=body)
        assert response.status_code == 503 and response.json()["error"]["code"] == "REQUEST_TIMEOUT"
        assert app.state.pool.idle.wait(timeout=1.5), "the replay ran on after its answer"
        return time.monotonic() - started


def test_a_replay_past_the_servers_time_limit_stops_and_frees_its_worker(store):
    # it was answered 503 REQUEST_TIMEOUT at the limit, but its thread replayed on to the end (a 5,000-turn
    # chat with 16 labels: minutes), holding a worker; the pool counts on the work ending soon after the limit
    _replay_past_the_limit(store)


@pytest.mark.perf
def test_a_replay_past_the_limit_frees_its_worker_within_two_and_a_half_seconds(store):
    assert _replay_past_the_limit(store) < 2.5


# tool definitions of about 320 tokens: more than a 200-token budget on their own
BIG_TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "d " * 300,
                                               "parameters": {"type": "object"}}}]
TOOL_CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "hello"}, {"role": "user", "content": "again"}]


def test_tools_over_the_budget_fail_every_turn_and_the_replay_is_still_returned(tmp_path, client):
    # The whole replay raised before its first turn (the CLI exited 2 with no table, the API
    # answered 422), where a system prompt over the budget is recorded turn by turn.
    conversation = contextfit.Conversation(messages=TOOL_CHAT, tools=BIG_TOOLS)
    with pytest.raises(contextfit.TokenBudgetExceeded, match="tool definitions alone need"):
        contextfit.plan_prompt(conversation, model="gpt-4o", context_limit=300, response_reserve=100)
    result = contextfit.replay(conversation, model="gpt-4o", context_limit=300, response_reserve=100,
                               strategies=["truncate", "summarize"])
    for label in ("truncate", "summarize"):
        assert result.totals[label].failed_turns == 2
        assert all(row.error == "TOKEN_BUDGET_EXCEEDED" and "tool definitions alone" in row.error_message
                   for row in result.turns[label])
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": TOOL_CHAT, "tools": BIG_TOOLS}))
    out = io.StringIO()
    assert main(["replay", str(path), "--limit", "300", "--reserve", "100", "--strategy", "truncate"], out) == 1
    assert "no turn could be fitted; at turn 1: The tool definitions alone need" in out.getvalue()
    body = {"messages": TOOL_CHAT, "tools": BIG_TOOLS, "model": "gpt-4o", "strategies": ["truncate"],
            "settings": {"contextLimit": 300, "responseReserve": 100}}
    answer = client.post("/api/v2/replay", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["totals"]["truncate"]["failedTurns"] == 2
    # Compare still names the error for each strategy
    plans = dict(FitSession(conversation).plans(model="gpt-4o", context_limit=300, response_reserve=100, strategies=["truncate", "manual"]))
    assert all(isinstance(plan, contextfit.TokenBudgetExceeded) for plan in plans.values())


def test_an_earlier_message_with_the_latest_ones_id_still_counts_for_the_entity_rule():
    # The default rule leaves the latest message out of what it searches; every sent user
    # block with its id was left out, so ORD-1234 read as lost though both messages were sent.
    chat = [{"role": "user", "content": "My order is ORD-1234.", "id": "u"}, {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Where is ORD-1234?", "id": "u"}]
    row = contextfit.replay(chat, model="gpt-4o", strategies=["truncate"]).turns["truncate"][-1]
    assert [(fact.name, fact.status) for fact in row.facts] == [("ORD-1234", "verbatim")]
    chat[0]["content"] = "My order is on its way."  # only the latest message says it: not in force
    assert contextfit.replay(chat, model="gpt-4o", strategies=["truncate"]).turns["truncate"][-1].facts == ()
