"""The Replay page: its logic (contextfit.dashboard.replay, facts_box, replay_charts) and the page through AppTest."""

from __future__ import annotations

import json

import pytest
from support.paths import REPO
from support.charts import replay_table
from streamlit.testing.v1 import AppTest

import contextfit
from contextfit.inputs.samples import SAMPLES, sample_text
from contextfit.dashboard import exports, facts_box, replay_charts, sources, state
from contextfit.dashboard import replay as views
from contextfit.dashboard.audit_view import send_with_echo
from contextfit.dashboard.markdown import plain
from contextfit.dashboard.setup import ReplaySetup, Setup, suggested_setup

CHAT = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Order ORD-7731 is late. " * 40},
    {"role": "assistant", "content": "Checking with the courier. " * 40},
    {"role": "user", "content": "Any news on ORD-7731?"},
    {"role": "assistant", "content": "Not yet."},
]


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=180)


def pasted(at: AppTest, messages: list[dict]) -> AppTest:
    """``at`` with ``messages`` pasted as the sidebar's conversation (before its first run)."""
    at.session_state["source.kind"], at.session_state["source.paste"] = "paste", json.dumps(messages)
    return at


def replay_page_of(messages: list[dict]) -> AppTest:
    """The Replay page run once on ``messages`` pasted as the sidebar's conversation."""
    return pasted(app(), messages).switch_page("pages/replay.py").run()


def _result(**choices):
    setup = ReplaySetup.of("gpt-4o", 400, 100, ("truncate", "summarize"), **choices)
    messages, settings = views.conversation_input(CHAT, setup)
    return setup, messages, settings, views.run(messages, settings, setup)


def test_views_draw_every_strategy_and_mark_the_losses():
    setup, messages, settings, result = _result()
    assert list(result.totals) == ["truncate", "summarize", "truncate+stable_prefix", "summarize+stable_prefix"]
    rows = views.totals_rows(result)
    assert [row["strategy"] for row in rows] == list(result.totals)
    assert any("cheapest" in row["verdict"] for row in rows)
    cost = replay_charts.lines_figure(result, "cost")
    truncate = replay_charts.series(result, "truncate")
    assert list(cost.data[0].y) == pytest.approx(truncate["cost"])
    assert truncate["cost"][-1] == pytest.approx(result.totals["truncate"].total_cost)
    retention = replay_charts.lines_figure(result, "retention")
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


@pytest.mark.parametrize("sample", [None, "roleplay", "coding_agent"])
def test_a_stored_chat_replays_as_the_api_reads_it(tmp_path, sample):
    # a stored chat is read as the conversation it was stored from (its card, lorebook, persona, memory and
    # tools come back from its settings): the replay is the one the API's stored-chat input makes
    from contextfit.serving.generation import preview_request
    from contextfit.serving.store import open_store

    conversation = contextfit.load_conversation(sample_text(sample) if sample else json.dumps(CHAT))
    store = str(tmp_path / "chats.db")
    chat_id = send_with_echo(conversation, Setup.of("gpt-4o", 1500, 300), "summarize", store=store)
    opened = open_store(store)
    chat = opened.get_chat(chat_id)
    setup = ReplaySetup.of("gpt-4o", 1500, 300, ("truncate", "summarize", "manual"))
    shown = views.run(*views.conversation_input(sources.chat_conversation(chat), setup), setup)
    messages, resolved = preview_request(opened, {}, chat_id=chat_id, model="gpt-4o",
                                         settings={"contextLimit": 1500, "responseReserve": 300})
    assert shown.to_dict() == views.run(messages, resolved.settings, setup).to_dict()
    assert suggested_setup(sources.chat_conversation(chat)).context_limit == 1500  # the chat's own limits


def test_the_page_replays_the_first_sample():
    at = app().run()  # Compare opens on the first sample: Replay starts from that conversation
    at.switch_page("pages/replay.py").run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Replay"
    assert at.radio(key="source_radio").value == "Sample"  # the sidebar's conversation, as on Compare
    conversation = contextfit.load_conversation(sample_text(SAMPLES[0].key))
    setup = suggested_setup(conversation)
    expected = contextfit.replay(conversation, model=setup.model, context_limit=setup.context_limit,
                                 response_reserve=setup.response_reserve,
                                 strategies=ReplaySetup.of(setup.model, 1, 0).strategy_entries())
    table = replay_table(at).value
    assert list(table["strategy"]) == list(expected.totals)
    assert list(table["tokens sent"]) == [totals.tokens_sent for totals in expected.totals.values()]
    assert len(at.get("plotly_chart")) >= 4


def test_the_audit_page_opens_a_replay_of_its_chat(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    conversation = contextfit.load_conversation(json.dumps(CHAT))
    setup = Setup.of("gpt-4o", 400, 100)
    chat_id = send_with_echo(conversation, setup, "truncate", store=str(tmp_path / "chats.db"))
    at = app().run()
    at.switch_page("pages/audit.py").run()
    at.button(key="audit-replay").click().run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Replay"
    assert at.selectbox(key="source_chat_menu").value == chat_id
    assert replay_table(at).value["strategy"][0] == "truncate"
    # the "what if" starts from the chat's own model and limits (it started at gpt-4o, 32,000 and 4,000)
    assert (at.selectbox(key="model").value, at.number_input(key="limit").value,
            at.number_input(key="reserve").value) == ("gpt-4o", 400, 100)


def test_a_stored_chat_is_replayed_with_its_own_model_limits_and_facts(tmp_path, monkeypatch):
    from contextfit.serving.store import open_store

    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    setup = Setup.of("gpt-4o-mini", 600, 50)
    chat_id = send_with_echo(contextfit.load_conversation(json.dumps(CHAT)), setup, "truncate",
                             store=str(tmp_path / "chats.db"))
    store = open_store(str(tmp_path / "chats.db"))
    facts = ["ORD-7731", {"text": "courier", "message": 2}]
    chat = store.update_chat(chat_id, settings={**store.get_chat(chat_id).settings, "facts": facts})
    store.close()
    assert facts_box.facts_from_text(facts_box.facts_to_text(facts)) == tuple(facts)
    at = app()
    at.session_state["source.kind"], at.session_state["source.chat"] = "chat", chat.id  # as a link opens it
    at.switch_page("pages/replay.py").run()
    assert not at.exception and not at.error
    assert (at.selectbox(key="model").value, at.number_input(key="limit").value,
            at.number_input(key="reserve").value) == ("gpt-4o-mini", 600, 50)
    assert at.text_area(key="replay_facts").value == 'ORD-7731\n{"text": "courier", "message": 2}'
    assert "declared" in _turns(at) and "gpt-4o-mini" in _turns(at)
    # what the user then changes stays while the chat does
    at.number_input(key="limit").set_value(900).run()
    assert at.number_input(key="limit").value == 900 and "ORD-7731" in at.text_area(key="replay_facts").value


def _turns(at) -> str:
    return next(caption.value for caption in at.caption if " · prompt cache: " in caption.value)


def test_the_replay_shows_the_compare_pages_conversation_and_keeps_it():
    # Compare shows the support chat: Replay replays that chat, and stays on it when the page reruns
    at = app().run()
    at.selectbox(key="source_sample_menu").select("support_chat").run()
    at.switch_page("pages/replay.py").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="source_sample_menu").value == "support_chat"
    assert _turns(at).startswith("21 turns")
    at.slider(key="replay_turn").set_value(1).run()
    assert at.selectbox(key="source_sample_menu").value == "support_chat" and _turns(at).startswith("21 turns")


def test_the_replay_offers_a_pasted_conversation():
    at = app().run()
    at.radio(key="source_radio").set_value("Paste").run()
    at.text_area(key="paste").input(json.dumps(CHAT)).run()
    at.switch_page("pages/replay.py").run()
    at.slider(key="replay_turn").set_value(1).run()
    assert at.radio(key="source_radio").value == "Paste" and at.text_area(key="paste").value == json.dumps(CHAT)
    assert _turns(at).startswith("2 turns")


def test_a_new_conversation_brings_its_own_model_and_limits():
    # the support sample asks for gpt-4o-mini at 1,100 tokens; before, the first sample's 2,200 stayed
    at = app()
    at.switch_page("pages/replay.py").run()
    at.selectbox(key="source_sample_menu").select("support_chat").run()
    expected = suggested_setup(contextfit.load_conversation(sample_text("support_chat")))
    assert at.selectbox(key="model").value == expected.model
    assert at.number_input(key="limit").value == expected.context_limit
    assert at.number_input(key="reserve").value == expected.response_reserve
    at.number_input(key="limit").set_value(3000).run()  # the user's own edit stays while the chat does
    at.text_area(key="replay_facts").input("ORD-7731").run()
    assert at.number_input(key="limit").value == 3000


def test_the_replay_choices_survive_a_visit_to_another_page():
    at = app()
    at.switch_page("pages/replay.py").run()
    at.selectbox(key="source_sample_menu").select("support_chat").run()
    at.number_input(key="limit").set_value(3000).run()
    at.text_area(key="replay_facts").input("ORD-7731").run()
    at.switch_page("pages/models.py").run()
    at.switch_page("pages/replay.py").run()
    assert at.selectbox(key="source_sample_menu").value == "support_chat"
    assert at.number_input(key="limit").value == 3000
    assert at.text_area(key="replay_facts").value == "ORD-7731"
    assert _turns(at).startswith("21 turns") and "declared" in _turns(at)


def test_charts_with_nothing_to_draw_say_why():
    # a model without prices has no cost; declared facts no message holds are never in force:
    # before, the cost and retention charts were drawn empty, with no word of why
    setup = ReplaySetup.of("gemini-2.0-flash", 600, 100, ("truncate",), stable_prefix=False, facts=("never said",))
    messages, settings = views.conversation_input(CHAT, setup)
    result = views.run(messages, settings, setup)
    assert result.prices is None
    cost = replay_charts.lines_figure(result, "cost")
    assert [a.text for a in cost.layout.annotations] == ["No prices for gemini-2.0-flash<br>in the catalog: no cost."]
    retention = replay_charts.lines_figure(result, "retention")
    assert [a.text for a in retention.layout.annotations] == ["No fact in force at any turn."]
    assert not replay_charts.lines_figure(result, "prompt").layout.annotations


def test_declared_facts_no_turn_checks_are_named():
    setup = ReplaySetup.of("gpt-4o", 600, 100, ("truncate",), stable_prefix=False,
                              facts=("/usr/bin/", "never said", "/ORD-[0-9]+/"))
    messages, settings = views.conversation_input(CHAT, setup)
    notes = views.fact_notes(views.run(messages, settings, setup))
    assert notes == ["No message holds “/usr/bin/”, so no turn checks it.",
                     "No message holds “never said”, so no turn checks it."]


def _warnings(at) -> list[str]:
    return [warning.value.replace("\\", "") for warning in at.warning]  # markdown-escaped


def test_a_fact_written_as_a_regex_that_does_not_compile_is_left_out_with_its_error():
    # one bad line took the whole replay away (a demo typing a fact lost the page); its suggested
    # fix was no JSON ({"text": '/(ORD-7731/'})
    at = replay_page_of(CHAT)
    at.text_area(key="replay_facts").input("ORD-7731\n/(ORD-7731/").run()
    assert not at.exception and not at.error
    [warning] = [w for w in _warnings(at) if "does not compile" in w]
    assert warning.startswith("INVALID_SETTINGS: line 2 of the facts is written as a /regex/")
    assert '{"text": "/(ORD-7731/"}' in warning and warning.endswith("The line is left out until it is fixed.")
    assert "Over the whole conversation" in [header.value for header in at.subheader]  # the replay is drawn, with the good fact
    assert "1 declared" in _turns(at)


def test_a_fact_typed_twice_is_left_out_and_the_warning_says_which_line():
    # by the box's lines: it said "facts[3] repeats facts[0]", counting from 0 and skipping the blank line
    at = replay_page_of(CHAT)
    at.text_area(key="replay_facts").input("ORD-7731\nnever said\n\nsomething\nORD-7731").run()
    assert not at.exception and not at.error
    assert "INVALID_SETTINGS: line 5 of the facts repeats line 1 of the facts; give each fact once. " \
           "The line is left out until it is fixed." in _warnings(at)
    assert "3 declared" in _turns(at)


def test_a_fact_the_replay_refuses_is_named_by_its_line_in_the_box():
    at = replay_page_of(CHAT)
    at.text_area(key="replay_facts").input('\nORD-7731\n\n{"text": 5}').run()
    assert not at.exception and not at.error
    assert "INVALID_SETTINGS: line 4 of the facts: its text must be a non-empty string, got 5. " \
           "The line is left out until it is fixed." in _warnings(at)


def test_a_line_that_looks_like_json_but_is_not_is_said_to_be_read_as_text():
    at = replay_page_of(CHAT)
    at.text_area(key="replay_facts").input("{'text': 'ORD-7731'}\n{\"text\": \"Mara\"\n{{char}}").run()
    assert not at.exception and not at.error
    said = [w for w in _warnings(at) if "is written like a JSON object but is not valid JSON" in w]
    assert [w.split(" of the facts")[0] for w in said] == ["Line 1", "Line 2"]  # a line cut short too; {{char}} is text


def test_the_verdict_table_and_the_lost_facts_read_as_typed():
    at = replay_page_of(CHAT)
    at.number_input(key="limit").set_value(600).run()
    at.number_input(key="reserve").set_value(100).run()
    at.text_area(key="replay_facts").input("/is la*te*/").run()
    assert not at.exception and not at.error
    table = replay_table(at).value
    # whole turn numbers, or nothing (they were floats: "2.0" beside "NaN")
    assert str(table["first drop (turn)"].dtype) == "Int64" and str(table["first loss (turn)"].dtype) == "Int64"
    assert table["first loss (turn)"].tolist()[0] == 2
    # the fact's name as typed, not read as Markdown (its asterisks made "te" italic)
    assert any("lost: " + plain("/is la*te*/") in caption.value for caption in at.caption)


def test_a_one_turn_chat_reads_as_one_turn():
    at = replay_page_of(CHAT[:2])
    assert not at.exception and not at.error
    assert _turns(at).startswith("1 turn ·")  # not "1 turns"
    assert len(at.get("plotly_chart")) >= 4 and not at.slider  # no slider for a single turn


def test_moving_the_turn_slider_draws_the_same_replay_again_and_an_edit_replays(monkeypatch):
    runs = []
    real = views.run
    monkeypatch.setattr(views, "run", lambda *args: runs.append(1) or real(*args))
    at = replay_page_of(CHAT)
    assert not at.exception and len(runs) == 1
    at.slider(key="replay_turn").set_value(1).run()
    assert not at.exception and len(runs) == 1  # another turn of the replay it has
    assert any(metric.label == "Prompt tokens" for metric in at.metric)
    at.number_input(key="limit").set_value(600).run()
    assert len(runs) == 2  # a new budget: a new replay
    at.text_area(key="replay_facts").input("ORD-7731").run()
    assert len(runs) == 3 and not at.exception


@pytest.mark.parametrize("model, approximate", [("claude-sonnet-4", True), ("gpt-4o", False)])
def test_the_page_says_when_the_counts_are_approximate(model, approximate):
    at = replay_page_of(CHAT)
    at.selectbox(key="model").select(model).run()
    assert not at.exception
    said = [info.value for info in at.info if "are approximate" in info.value]
    assert len(said) == (1 if approximate else 0)
    if approximate:
        assert said[0].startswith(f"Token counts for {model} are approximate")


def test_a_link_opens_the_same_replay_and_the_page_keeps_its_link():
    # a reload started over from the defaults: the page kept nothing in its URL
    at = app()
    at.switch_page("pages/replay.py").run()
    at.selectbox(key="source_sample_menu").select("support_chat").run()
    at.number_input(key="limit").set_value(3000).run()
    at.multiselect(key="strategies").set_value(["truncate", "summarize"]).run()
    at.checkbox(key="replay_stable").uncheck().run()
    at.text_area(key="replay_facts").input("ORD-7731\n/zenith/i").run()
    assert not at.exception
    link = {key: at.query_params[key][0] if isinstance(at.query_params[key], list) else at.query_params[key]
            for key in ("sample", *state.LINK_KEYS) if key in at.query_params}
    assert link == {"sample": "support_chat", "model": at.selectbox(key="model").value, "limit": "3000",
                    "reserve": str(at.number_input(key="reserve").value), "strategies": "truncate,summarize",
                    "stable": "0", "facts": "ORD-7731\n/zenith/i", "turn": str(at.slider(key="replay_turn").value)}
    reloaded = app()  # a new session with that URL
    for key, value in link.items():
        reloaded.query_params[key] = value
    reloaded.switch_page("pages/replay.py").run()
    assert not reloaded.exception and not [w for w in reloaded.warning if "from the link" in w.value]
    assert reloaded.selectbox(key="source_sample_menu").value == "support_chat"
    assert reloaded.number_input(key="limit").value == 3000
    assert reloaded.multiselect(key="strategies").value == ["truncate", "summarize"]
    assert reloaded.checkbox(key="replay_stable").value is False
    assert reloaded.text_area(key="replay_facts").value == "ORD-7731\n/zenith/i"
    assert list(replay_table(reloaded).value["strategy"]) == ["truncate", "summarize"]


def test_a_link_with_values_the_page_cannot_take_says_so_and_draws_the_rest():
    at = app()
    for key, value in {"sample": "gone", "limit": "-5", "strategies": "nope,truncate", "stable": "x"}.items():
        at.query_params[key] = value
    at.switch_page("pages/replay.py").run()
    assert not at.exception
    warnings = [warning.value for warning in at.warning]
    assert [info.value for info in at.info if "gone" in info.value] == [
        "There is no sample 'gone' (the link names it); samples: roleplay, coding\\_agent, support\\_chat."]
    assert any("limit='-5'" in text for text in warnings) and any("'nope'" in text for text in warnings)
    assert any("stable='x'" in text for text in warnings)
    assert at.multiselect(key="strategies").value == ["truncate"]
    assert replay_table(at).value["strategy"][0] == "truncate"


def test_the_page_draws_a_progress_bar_while_it_replays_and_removes_it(monkeypatch):
    reports = []
    real = views.ProgressBar.__call__
    monkeypatch.setattr(views.ProgressBar, "__call__", lambda bar, done, total: reports.append((done, total))
                        or real(bar, done, total))
    at = replay_page_of(CHAT)
    assert not at.exception
    assert reports[0] == (0, 2) and reports[-1] == (2, 2)
    assert not at.get("progress")  # the bar is gone once the replay is drawn
    reports.clear()
    at.slider(key="replay_turn").set_value(1).run()
    assert reports == [] and not at.get("progress")  # the kept replay: no bar at all


def test_the_turns_csv_holds_every_turn_of_every_strategy_as_numbers():
    import csv
    import io

    formula = '=HYPERLINK("http://example.com")'
    chat = [CHAT[0], {"role": "user", "content": f"My code is {formula} today."}, {"role": "assistant", "content": "Ok."},
            *CHAT[1:]]
    setup = ReplaySetup.of("gpt-4o", 500, 100, ("truncate", "summarize"), stable_prefix=False,
                              facts=(formula, "ORD-7731"))
    messages, settings = views.conversation_input(chat, setup)
    result = views.run(messages, settings, setup)
    rows = list(csv.DictReader(io.StringIO(exports.turns_csv(result))))
    assert tuple(rows[0]) == exports.TURN_COLUMNS
    turns = [turn for each in result.turns.values() for turn in each]
    assert [(row["strategy"], int(row["turn"])) for row in rows] == [(turn.strategy, turn.turn) for turn in turns]
    for row, turn in zip(rows, turns):
        assert int(row["prompt tokens"]) == turn.prompt_tokens and int(row["cache read"]) == turn.cache_read
        assert float(row["total $"]) == pytest.approx(turn.cost.total)
        assert row["lost facts"] == "; ".join(turn.lost).replace("=", "'=", 1 if turn.lost[:1] == [formula] else 0)
    assert any(row["lost facts"].startswith("'=HYPERLINK") for row in rows)  # lost: quoted, never a formula
    assert not any(value.startswith("=") for row in rows for value in row.values())
    assert json.loads(exports.replay_json(result)) == json.loads(json.dumps(result.to_dict()))


def test_the_turns_csv_of_a_model_without_prices_and_of_a_failed_turn_leaves_cells_empty():
    import csv
    import io

    setup = ReplaySetup.of("gpt-4o", 60, 10, ("truncate",), stable_prefix=False)
    messages, settings = views.conversation_input(CHAT, setup)
    result = views.run(messages, settings, setup)
    rows = list(csv.DictReader(io.StringIO(exports.turns_csv(result))))
    failed = [row for row in rows if row["error"]]
    assert failed and all(row["prompt tokens"] == "" and row["total $"] == "" for row in failed)
    assert failed[0]["error"] == "TOKEN_BUDGET_EXCEEDED"


def test_the_page_offers_the_replay_for_download():
    at = replay_page_of(CHAT)
    assert not at.exception
    labels = [button.proto.label for button in at.get("download_button")]
    assert labels == ["Turns (CSV)", "Replay (JSON)"]
    # a download does not run the page again (on a 1,042-turn chat that redrew the turn's eight plans)
    assert all(button.proto.ignore_rerun for button in at.get("download_button"))


def test_a_long_replay_reads_its_large_numbers_with_separators():
    from support.synthetic import synthetic_turns
    from contextfit.replays.run import request_positions

    chat = synthetic_turns(1000)  # 1,000 user messages, and the tool rounds the model answers: more requests
    at = pasted(app(), chat)
    at.session_state["strategies"] = ["truncate"]
    at.switch_page("pages/replay.py").run()
    assert not at.exception
    requests = len(request_positions(chat))
    assert requests > 1000 and _turns(at).startswith(f"{requests:,} turns ·")  # the caption read "1000 turns"
    columns = json.loads(replay_table(at).proto.columns)
    assert columns["tokens sent"]["type_config"]["format"] == "localized"  # 94,562,889, not 94562889


def test_a_reserve_at_or_above_the_limit_is_lowered_and_said_as_on_compare():
    # the engine's refusal named response_reserve and context_limit, words the page does not show
    at = replay_page_of(CHAT)
    at.number_input(key="reserve").set_value(4000).run()
    at.number_input(key="limit").set_value(1000).run()
    assert not at.exception and not at.error
    assert any("Response reserve lowered from 4,000 to 250" in warning.value for warning in at.warning)
    assert at.number_input(key="reserve").value == 250 and "budget 750 tokens" in _turns(at)
    at.number_input(key="limit").set_value(1).run()  # the widget's extreme: no prompt can be built
    assert not at.exception
    assert [error.value.split(": ", 2)[:2] for error in at.error] == [  # once for every plan, naming the turn
        [f"No strategy can fit turn {at.slider(key='replay_turn').value}", "TOKEN_BUDGET_EXCEEDED"]]
    assert at.number_input(key="reserve").value == 0
    assert any("no turn could be fitted" in warning.value for warning in at.warning)


def test_the_verdict_says_when_strategies_tie_or_only_one_was_replayed():
    # it read "Cheapest: — · best retention: — · best cache: —", as if nothing had been replayed
    setup = ReplaySetup.of("gpt-4o", 100_000, 1_000, ("truncate", "summarize"), stable_prefix=False,
                              facts=("ORD-7731",))
    messages, settings = views.conversation_input(CHAT, setup)
    result = views.run(messages, settings, setup)  # room for everything: every strategy sends the same
    cost = views.money(result.totals["truncate"].total_cost)
    assert views.verdict_text(result) == (f"Cheapest: all equal ({cost}) · best retention: all equal (100.0%) · "
                                          "best cache: all equal (0.0%)")
    at = replay_page_of(CHAT)
    at.multiselect(key="strategies").set_value(["truncate"]).run()
    at.checkbox(key="replay_stable").uncheck().run()
    assert not at.exception
    assert any(markdown.value == "Only truncate was replayed: choose more strategies in the sidebar to compare it "
               "with others." for markdown in at.markdown)


def test_the_turn_axis_reads_whole_turns_with_separators():
    # two turns read "1, 1.5, 2"; a long chat's read "1000"
    setup, messages, settings, result = _result()
    for metric in ("prompt", "cost", "cache", "retention"):
        axis = replay_charts.lines_figure(result, metric).layout.xaxis
        assert axis.tickformat == ",d" and axis.dtick == 1


def test_small_costs_read_as_dollars_with_four_figures_each():
    # a two-word turn cost "$2.5e-05"; a column read "$0.0456" under "$0.04579"
    assert [views.money(value) for value in (2.5e-05, 0.0456, 0.045791, 0.0038, 0.0, 1234.5)] == [
        "$0.00002500", "$0.04560", "$0.04579", "$0.003800", "$0", "$1,234.50"]


def test_a_link_the_page_wrote_before_the_pages_shared_their_conversation_still_opens():
    # Replay's links named their conversation "source=sample:…", "source=chat:…" or "source=current"
    at = app()
    at.query_params["source"], at.query_params["limit"] = "sample:support_chat", "3000"
    at.switch_page("pages/replay.py").run()
    assert not at.exception and at.selectbox(key="source_sample_menu").value == "support_chat"
    assert at.number_input(key="limit").value == 3000 and "source" not in at.query_params
    # a pasted or uploaded conversation is not in a new session: said, with a sample meanwhile
    # (it said only "pasted" and "paste it there again" to someone who had uploaded a file)
    at = app()
    at.query_params["source"] = "current"
    at.switch_page("pages/replay.py").run()
    assert not at.exception and at.radio(key="source_radio").value == "Sample"
    assert any("pasted or uploaded in another browser session" in info.value and "paste or upload it again"
               in info.value for info in at.info)


def test_an_empty_retention_chart_under_the_entity_rule_says_what_to_do():
    # small talk: nothing pinned, no card, no lore, no entity a later turn refers back to (CJK terms are
    # entities now: the Japanese chat this test used has some), so the chart only said "No fact in force"
    chat = [{"role": "system", "content": "be kind."}]
    for line, reply in (("hello there", "hi!"), ("how are you today?", "fine, thanks."), ("nice weather", "indeed.")):
        chat += [{"role": "user", "content": line}, {"role": "assistant", "content": reply}]
    setup = ReplaySetup.of("gpt-4o", 4000, 500, ("truncate",), stable_prefix=False)
    messages, settings = views.conversation_input(chat, setup)
    result = views.run(messages, settings, setup)
    assert result.fact_rule == "default-entities"
    retention = replay_charts.lines_figure(result, "retention")
    assert [a.text for a in retention.layout.annotations] == [
        "No fact in force at any turn:<br>type the facts to follow<br>in the sidebar (Must-survive facts)."]
