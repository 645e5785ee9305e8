"""The Replay page: its logic (contextfit.views.replay) and the page through AppTest."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from streamlit.testing.v1 import AppTest

import contextfit
from contextfit.inputs.samples import get_sample, sample_text
from contextfit.views import dashboard
from contextfit.views import replay as views

CHAT = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Order ORD-7731 is late. " * 40},
    {"role": "assistant", "content": "Checking with the courier. " * 40},
    {"role": "user", "content": "Any news on ORD-7731?"},
    {"role": "assistant", "content": "Not yet."},
]


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=180)


def _result(**choices):
    setup = views.ReplaySetup("gpt-4o", 400, 100, ("truncate", "summarize"), **choices)
    messages, settings = views.conversation_input(CHAT, setup)
    return setup, messages, settings, views.run(messages, settings, setup)


def test_views_draw_every_strategy_and_mark_the_losses():
    setup, messages, settings, result = _result()
    assert list(result.totals) == ["truncate", "summarize", "truncate+stable_prefix", "summarize+stable_prefix"]
    rows = views.totals_rows(result)
    assert [row["strategy"] for row in rows] == list(result.totals)
    assert any("cheapest" in row["verdict"] for row in rows)
    cost = views.lines_figure(result, "cost")
    truncate = views.series(result, "truncate")
    assert list(cost.data[0].y) == pytest.approx(truncate["cost"])
    assert truncate["cost"][-1] == pytest.approx(result.totals["truncate"].total_cost)
    retention = views.lines_figure(result, "retention")
    markers = [trace for trace in retention.data if trace.mode == "markers"]
    lost_turns = [turn.turn for turn in result.turns["truncate"] if turn.lost]
    assert lost_turns and list(markers[0].x) == lost_turns and "ORD-7731" in markers[0].text[0]


def test_turn_plans_are_the_compare_view_of_that_turn():
    setup, messages, settings, result = _result(stable_prefix=False)
    plans = views.turn_plans(messages, settings, result, 2, setup)
    for label, plan in plans.items():
        assert plan.prompt_tokens == result.turns[label][1].prompt_tokens
        expected = contextfit.plan_prompt(CHAT[:4], model="gpt-4o", context_limit=400, response_reserve=100,
                                          context_strategy=label)
        assert [b.reason for b in plan.blocks] == [b.reason for b in expected.blocks]


def test_current_conversation_is_read_defensively():
    read = contextfit.load_conversation
    conversation = read(json.dumps(CHAT))
    assert views.current_conversation({"conversation": conversation}, read) is conversation
    assert len(views.current_conversation({"paste": json.dumps(CHAT)}, read).messages) == 5
    assert views.current_conversation({"paste": "{not json"}, read) is None
    assert views.current_conversation({"conversation": "a string, not a conversation"}, read) is None
    assert views.current_conversation({}, read) is None


def test_the_page_replays_the_first_sample():
    at = app().run()
    at.switch_page("pages/replay.py").run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Replay"
    conversation = contextfit.load_conversation(sample_text(get_sample(at.selectbox(key="replay_sample").value).key))
    setup = dashboard.suggested_setup(conversation)
    expected = contextfit.replay(conversation, model=setup.model, context_limit=setup.context_limit,
                                 response_reserve=setup.response_reserve,
                                 strategies=views.ReplaySetup(setup.model, 1, 0).strategy_entries())
    table = at.dataframe[0].value
    assert list(table["strategy"]) == list(expected.totals)
    assert list(table["tokens sent"]) == [totals.tokens_sent for totals in expected.totals.values()]
    assert len(at.get("plotly_chart")) >= 4


def test_the_audit_page_opens_a_replay_of_its_chat(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    conversation = contextfit.load_conversation(json.dumps(CHAT))
    setup = dashboard.Setup(model="gpt-4o", context_limit=400, response_reserve=100)
    chat_id = dashboard.send_with_echo(conversation, setup, "truncate", store=str(tmp_path / "chats.db"))
    at = app().run()
    at.switch_page("pages/audit.py").run()
    at.button(key="audit-replay").click().run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Replay"
    assert at.selectbox(key="replay_chat_choice").value == chat_id
    assert at.dataframe[0].value["strategy"][0] == "truncate"
