"""The shared settings (contextfit.dashboard.state) and the Compare page's safety: settings that
survive page switches and reruns, the URL, bounds that follow each other, no traceback from any
widget, the default sample at work, the Squeeze button, and where a summary lands."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from support.charts import EVERY_STRATEGY, chart_count, prompt_tokens
from support.paths import REPO
from streamlit.testing.v1 import AppTest

import contextfit
from contextfit.dashboard import compare_view, editor
from contextfit.dashboard import state as compare_state
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard.setup import Setup, suggested_setup
from contextfit.fitting.strategies import ContextStrategy
from contextfit.inputs.samples import load_sample, sample_text
from contextfit.tokens.models import list_models

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results"]
MODELS = [info.id for info in list_models()]
CHAT = [{"role": "system", "content": "Be brief."}] + [
    {"role": "user" if i % 2 else "assistant", "content": f"Turn {i} is about the harbour bell and the storm. " * 6}
    for i in range(1, 13)
]  # ends on an assistant reply


def suggest(model):
    return SimpleNamespace(model=model or "gpt-4o", context_limit=128_000, response_reserve=16_384)


def settle(state, query=None, input_key=1):
    return compare_state.settle(state, conversation=input_key, suggest=suggest, models=MODELS, names=STRATEGIES, query=query)


def plan_one(conversation, setup, name):
    return contextfit.plan_prompt(conversation, setup.settings, context_strategy=name)


# -- logic ------------------------------------------------------------------------------


def test_a_limit_at_or_below_the_reserve_lowers_the_reserve_with_a_note():
    state = {}
    assert settle(state) == []
    assert (state["limit"], state["reserve"]) == (128_000, 16_384)
    for limit, reserve in ((8000, 2000), (1, 0), (2, 0)):
        state["limit"], state["reserve"] = limit, 16_384
        notes = settle(state)
        assert state["reserve"] == reserve < state["limit"]
        assert len(notes) == 1 and notes[0].startswith("Response reserve lowered from 16,384") and "Raise the limit" in notes[0]
    assert compare_state.reserve_max(8000) == 7999 and compare_state.reserve_max(1) == 0


def test_settings_are_kept_and_a_new_conversation_brings_its_defaults():
    state = {}
    settle(state)
    state.update(model="claude-sonnet-4", strategies=["manual"], summary_tokens=50, relevance_window=2, user_name="Ann")
    settle(state)  # the model changed: its own limits
    state.update(limit=9000, reserve=1000)
    settle(state)
    state["overrides"] = {"m1": {"pinned": True}}
    before = {key: state[key] for key in compare_state.KEPT if key in state}
    compare_state.keep(state)  # the top of a run on another page: saved again, so Streamlit keeps them
    assert settle(state) == []
    assert {key: state[key] for key in compare_state.KEPT if key in state} == before
    assert state["overrides"] == {"m1": {"pinned": True}}
    settle(state, input_key=2)  # a new conversation: its defaults and no edits, the strategies stay
    assert state["overrides"] == {} and state["model"] == "gpt-4o" and state["limit"] == 128_000
    assert state["strategies"] == ["manual"]


def test_the_url_is_read_once_and_bad_values_are_ignored_with_a_note():
    state = {}
    query = {"model": "gpt-4o-mini", "limit": "9000", "reserve": "1000", "strategies": "manual,truncate",
             "priority": "cache", "per_day": "250"}
    assert settle(state, query) == []
    assert (state["model"], state["limit"], state["reserve"], state["strategies"]) == ("gpt-4o-mini", 9000, 1000, ["manual", "truncate"])
    assert (state["priority"], state["conversations_per_day"]) == ("cache", 250)
    assert compare_state.link_of(state) == query
    state["limit"] = 7000
    settle(state, query)  # read once per session: the user's edit stays
    assert state["limit"] == 7000

    bad = {"model": "gpt-9", "limit": "1e9", "reserve": "12", "strategies": "nope", "priority": "speed", "per_day": "0"}
    state = {}
    notes = settle(state, bad)
    assert len(notes) == 5 and state["model"] == "gpt-4o" and state["limit"] == 128_000 and state["strategies"] == STRATEGIES
    assert (state["priority"], state["conversations_per_day"]) == ("retention", 1_000)  # the defaults
    assert notes[3] == "Ignored priority='speed' from the link: one of retention, cost, cache is expected."
    url = compare_state.read_link({"limit": "100", "reserve": "100"}, MODELS, STRATEGIES)
    assert (url.limit, url.reserve) == (100, None) and "below the limit" in url.notes[0]
    url = compare_state.read_link({"limit": ["1", "<script>"], "reserve": "٣"}, MODELS, STRATEGIES)
    assert url.limit is None and url.reserve is None and len(url.notes) == 2


def test_a_conversation_brings_its_facts_and_its_last_turn_and_a_link_its_own_once():
    state = {}
    query = {"facts": "ORD-7731", "stable": "0", "turn": "4", "limit": "3000"}
    assert compare_state.settle(state, conversation="a", suggest=suggest, models=MODELS, names=STRATEGIES,
                                facts="Mara", query=query) == []
    # the link's choices win over the first conversation's own, once
    assert (state["replay_facts"], state["replay_stable"], state["replay_turn"], state["limit"]) == ("ORD-7731", False, 4, 3000)
    assert compare_state.link_of(state, replay=True) == {
        "model": "gpt-4o", "limit": "3000", "reserve": "750", "strategies": ",".join(STRATEGIES),
        "stable": "0", "facts": "ORD-7731", "turn": "4"}
    state.update(replay_facts="typed", replay_turn=2)
    settle(state, query, input_key="a")  # the same conversation: the user's own stay
    assert (state["replay_facts"], state["replay_turn"]) == ("typed", 2)
    compare_state.settle(state, conversation="b", suggest=suggest, models=MODELS, names=STRATEGIES, facts="Zenith")
    assert state["replay_facts"] == "Zenith" and "replay_turn" not in state  # its facts, its last turn
    assert state["replay_stable"] is False  # not the conversation's: it stays
    assert "facts" not in compare_state.link_of({**state, "replay_facts": "x" * 1001}, replay=True)


def test_keep_saves_every_setting_again_and_nothing_else():
    class Recording(dict):
        def __init__(self, *args):
            super().__init__(*args)
            self.set = []

        def __setitem__(self, key, value):
            self.set.append(key)
            super().__setitem__(key, value)

    state = Recording({"limit": 900, "replay_facts": "ORD", "paste": "[...]", "source_files": ["x"], "send-manual": True})
    compare_state.keep(state)
    assert state.set == ["limit", "replay_facts"] and state["limit"] == 900  # never an uploader's or a button's key


def test_odd_widget_values_are_repaired():
    state = {"summary_tokens": -5, "relevance_window": 10**12, "user_name": "x" * 5000, "strategies": ["gone", "manual"],
             "priority": "fastest", "conversations_per_day": -3}
    settle(state)
    assert (state["priority"], state["conversations_per_day"]) == ("retention", 1)
    state["conversations_per_day"] = None  # the box emptied: its default
    settle(state)
    assert state["conversations_per_day"] == 1_000
    assert state["summary_tokens"] == 0 and state["relevance_window"] == compare_state.MAX_RELEVANCE_WINDOW
    assert len(state["user_name"]) == compare_state.MAX_USER_NAME and state["strategies"] == ["manual"]
    state["user_name"] = "Ann\ud800"
    assert settle(state) == ["A broken character (a lone surrogate) in the user name was replaced by \ufffd."]
    assert state["user_name"] == "Ann\ufffd"


def test_the_default_sample_shows_every_strategy_at_work():
    conversation = load_sample("roleplay")
    setup = suggested_setup(conversation)
    plans = {name: plan_one(conversation, setup, name) for name in STRATEGIES}
    assert len({plan.prompt_tokens for plan in plans.values()}) == len(STRATEGIES)
    assert plans["summarize"].summary is not None and plans["summarize"].summary.content.strip()
    reasons = {name: {block.reason for block in plan.blocks} for name, plan in plans.items()}
    assert "manual" in reasons["manual"] and "low_relevance" in reasons["vector-recall"]
    assert "compressed" in reasons["clear-tool-results"]
    assert not compare_view.everything_fits(plans)


def test_squeeze_makes_the_strategies_work_when_everything_fits():
    conversation = load_sample("roleplay")
    roomy = Setup.of("gpt-4o", 128_000, 16_384)
    plans = {name: plan_one(conversation, roomy, name) for name in STRATEGIES}
    assert compare_view.everything_fits(plans)
    replan = compare_view.replanner(session_for(conversation), Setup(roomy.settings, tuple(STRATEGIES)))
    note, squeeze = compare_view.fits_view(plans, replan)
    assert note == compare_view.fits_note(plans) and squeeze.limit < 128_000
    # the reserve keeps its share of the window (16,384 of 128,000): not 16,384 of a window of a few thousand
    assert squeeze.reserve == pytest.approx(squeeze.limit * 16_384 / 128_000, abs=1)
    squeezed = Setup.of("gpt-4o", squeeze.limit, squeeze.reserve)
    plans = {name: plan_one(conversation, squeezed, name) for name in STRATEGIES}
    assert not compare_view.everything_fits(plans) and compare_view.fits_view(plans, replan) is None
    assert all(any(not block.included for block in plan.blocks) for plan in plans.values())
    assert len({plan.prompt_tokens for plan in plans.values()}) >= 3 and plans["summarize"].summary is not None
    alone = {"truncate": contextfit.plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o")}
    assert compare_view.fits_view(alone, replan)[1] is None  # nothing could ever be dropped


def test_what_is_the_current_input_when_the_chat_ends_on_a_reply():
    assert compare_view.current_input_note(contextfit.load_conversation(CHAT)).startswith(
        "The chat ends on an assistant message: no user input is pending"
    )
    assert compare_view.current_input_note(contextfit.load_conversation(CHAT[:-1])) is None
    assert compare_view.current_input_note(load_sample("roleplay")) is None


def summary_index(plan) -> int:
    return next(i for i, block in enumerate(plan.blocks) if block.reason == "summary")


def test_the_summary_never_lands_after_the_newest_reply():
    plan = contextfit.plan_prompt(CHAT, model="gpt-4o", context_strategy="summarize", context_limit=700, response_reserve=100)
    newest = next(i for i, block in enumerate(plan.blocks) if block.id == "m12")
    assert plan.summary is not None and summary_index(plan) == newest - 1
    assert plan.provider_messages[-1]["role"] == "assistant"
    # With a character card, its post-history instructions come after the chat: the summary stays before the reply.
    roleplay = load_sample("roleplay")
    ends_on_reply = contextfit.load_conversation(
        {**json.loads(sample_text("roleplay")), "messages": list(roleplay.messages[:-1])}
    )
    plan = contextfit.plan_prompt(ends_on_reply, model="gpt-4o", context_strategy="summarize", context_limit=1600, response_reserve=400)
    kinds = [(block.role, block.reason) for block in plan.blocks]
    last_history = max(i for i, block in enumerate(plan.blocks) if block.kind == "history")
    assert plan.summary is not None and summary_index(plan) < last_history, kinds
    # A chat that ends on a tool result: the summary goes before the call, never between it and its result.
    tools = CHAT + [
        {"role": "user", "content": "Check the tide."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "tide", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "Low tide at 4."},
    ]  # fmt: skip
    plan = contextfit.plan_prompt(tools, model="gpt-4o", context_strategy="summarize", context_limit=700, response_reserve=100)
    call = next(i for i, block in enumerate(plan.blocks) if block.id == "m14")
    assert summary_index(plan) == call - 1


# -- the page ---------------------------------------------------------------------------


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=120)


def pasted(chat=None) -> AppTest:
    """The app with a plain chat pasted (no suggested settings: gpt-4o's own, a 16,384 reserve)."""
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    at.text_area(key="paste").set_value(json.dumps(chat or CHAT)).run()
    return at


def clean(at: AppTest) -> None:
    assert not at.exception, at.exception[0].value if at.exception else ""
    assert not at.get("progress"), "the progress bar is cleared"


def test_a_limit_below_the_reserve_explains_itself_instead_of_a_traceback():
    at = pasted()
    assert at.sidebar.number_input(key="reserve").value == 16_384
    at.sidebar.number_input(key="limit").set_value(8000).run()
    clean(at)
    assert not at.error
    assert at.warning[0].value.startswith("Response reserve lowered from 16,384 to 2,000")
    assert at.sidebar.number_input(key="reserve").value == 2000
    assert chart_count(at) == EVERY_STRATEGY  # the budget bars, block charts and fate matrix, all HTML


def widget(at, key):
    return at.sidebar.number_input(key=key) if key in ("limit", "reserve", "summary_tokens", "relevance_window") else at.sidebar.text_input(key=key)


EXTREMES = [
    ("limit", 1),
    ("limit", compare_state.MAX_LIMIT),
    ("reserve", 0),
    ("reserve", 2199),  # the sample's limit minus one
    ("summary_tokens", 0),
    ("summary_tokens", compare_state.MAX_SUMMARY_TOKENS),
    ("relevance_window", compare_state.MAX_RELEVANCE_WINDOW),
    ("user_name", ""),
    ("user_name", "y" * compare_state.MAX_USER_NAME),
    ("user_name", "\u202eAnn\u0000{{char}}\U0001f600\u0301"),
]


@pytest.mark.parametrize(("key", "value"), EXTREMES, ids=[f"{key}={str(value)[:12]!r}" for key, value in EXTREMES])
def test_no_widget_value_shows_a_traceback(key, value):
    at = app().run()
    widget(at, key).set_value(value).run()
    clean(at)
    assert len(at.subheader) >= 5  # every strategy has its column, with a plan or its error


def test_no_strategy_and_a_model_switch_after_editing_the_limit():
    at = app().run()
    at.sidebar.multiselect(key="strategies").set_value([]).run()
    clean(at)
    assert "Choose at least one strategy" in at.info[0].value
    at.sidebar.multiselect(key="strategies").set_value(["truncate", "manual"]).run()
    at.sidebar.number_input(key="limit").set_value(300).run()
    at.sidebar.selectbox(key="model").set_value("claude-sonnet-4").run()
    clean(at)
    assert at.sidebar.number_input(key="limit").value == 2200  # the sample suggests its own limit and reserve
    at.sidebar.number_input(key="limit").set_value(100).run()
    at.sidebar.selectbox(key="model").set_value("gpt-4o-mini").run()
    clean(at)
    assert at.sidebar.number_input(key="reserve").value < at.sidebar.number_input(key="limit").value


@pytest.mark.parametrize("edit", [{"pinned": True}, {"manualExcluded": True}, {"relevance": 0.0}, {"relevance": 1.0},
                                  {"pinned": True, "manualExcluded": True}])
def test_an_edit_on_every_block_shows_no_traceback(edit):
    at = app().run()
    conversation = load_sample("roleplay")
    rows = editor.editor_rows(conversation, suggested_setup(conversation), {})
    at.session_state["overrides"] = {row["id"]: dict(edit) for row in rows}
    at.run()
    clean(at)
    assert len(at.subheader) >= 5


def test_a_strategy_that_raises_shows_no_traceback():
    class Broken(ContextStrategy):
        description = "Raises."

        def propose(self, view, budget, **options):
            raise RuntimeError("kaput")

    cleanup = contextfit.registry.register("broken-test", Broken())
    try:
        at = app().run()
        at.sidebar.multiselect(key="strategies").set_value(["broken-test", "truncate"]).run()
        clean(at)
        assert [s.value for s in at.subheader if s.value != "Verdict"][:2] == ["broken-test", "truncate"]
    finally:
        cleanup()


def test_settings_and_edits_survive_a_page_switch_and_the_url_follows():
    at = app().run()
    at.sidebar.selectbox(key="model").set_value("gpt-4o-mini").run()
    at.sidebar.number_input(key="limit").set_value(2000).run()
    at.sidebar.number_input(key="reserve").set_value(300).run()
    at.sidebar.multiselect(key="strategies").set_value(["summarize", "truncate"]).run()
    at.sidebar.number_input(key="summary_tokens").set_value(64).run()
    at.sidebar.number_input(key="relevance_window").set_value(3).run()
    at.sidebar.text_input(key="user_name").set_value("Tomas").run()
    at.sidebar.radio(key="priority").set_value("cost").run()
    at.sidebar.number_input(key="conversations_per_day").set_value(250).run()
    at.session_state["overrides"] = {"m1": {"pinned": True}}
    at.run()
    expected = {"model": "gpt-4o-mini", "limit": 2000, "reserve": 300, "strategies": ["summarize", "truncate"],
                "summary_tokens": 64, "relevance_window": 3, "user_name": "Tomas", "priority": "cost",
                "conversations_per_day": 250}
    metrics = prompt_tokens(at)
    assert {key: at.query_params[key] for key in compare_state.LINK_KEYS if key in at.query_params} == {
        "model": "gpt-4o-mini", "limit": "2000", "reserve": "300", "strategies": "summarize,truncate",
        "priority": "cost", "per_day": "250"}
    for page in ("pages/models.py", "pages/audit.py", "pages/plugins.py"):
        at.switch_page(page).run()
        clean(at)
        at.switch_page("pages/compare.py").run()
        clean(at)
        assert {key: at.session_state[key] for key in expected} == expected, page
        assert at.session_state["overrides"] == {"m1": {"pinned": True}}
        assert prompt_tokens(at) == metrics
    at.run()  # and a plain rerun
    assert {key: at.session_state[key] for key in expected} == expected


def test_settings_survive_send_with_echo_and_the_way_back(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    at = app().run()
    at.sidebar.number_input(key="limit").set_value(1900).run()
    at.sidebar.multiselect(key="strategies").set_value(["manual"]).run()
    at.button(key="send-manual").click().run()
    clean(at)
    assert at.title[0].value == "Audit"
    at.switch_page("pages/compare.py").run()
    assert at.sidebar.number_input(key="limit").value == 1900
    assert at.sidebar.multiselect(key="strategies").value == ["manual"]


def test_a_shared_link_reopens_the_comparison_and_bad_values_get_one_line():
    at = app()
    at.query_params.update({"model": "gpt-4o-mini", "limit": "1900", "reserve": "300", "strategies": "manual,truncate"})
    at.run()
    clean(at)
    assert not at.warning
    assert (at.sidebar.selectbox(key="model").value, at.sidebar.number_input(key="limit").value,
            at.sidebar.number_input(key="reserve").value) == ("gpt-4o-mini", 1900, 300)
    assert [s.value for s in at.subheader if s.value != "Verdict"][:2] == ["manual", "truncate"]
    at = app()
    at.query_params.update({"model": "<b>gpt</b>", "limit": "-4", "reserve": "lots", "strategies": "nope"})
    at.run()
    clean(at)
    assert len(at.warning) == 4 and all(w.value.startswith("Ignored") for w in at.warning)
    assert at.sidebar.number_input(key="limit").value == 2200  # the sample's own
    assert at.query_params["limit"] == "2200"


def test_the_first_load_shows_the_strategies_at_work_and_squeeze_when_everything_fits():
    at = app().run()
    clean(at)
    tokens = prompt_tokens(at)[:5]
    assert len(set(tokens)) == 5
    assert not any(b.key == "squeeze" for b in at.button)
    at.sidebar.number_input(key="limit").set_value(128_000).run()
    assert at.info[0].value.startswith("Everything fits")
    assert len(set(prompt_tokens(at))) == 2  # all alike but manual, which drops the aside marked by hand
    at.button(key="squeeze").click().run()
    clean(at)
    limit, reserve = at.sidebar.number_input(key="limit").value, at.sidebar.number_input(key="reserve").value
    assert limit < 128_000 and reserve < limit / 4  # the reserve scaled with the window, not 16,384 of it
    assert reserve == pytest.approx(limit / 8, abs=2)  # 400 of 128,000 would leave a reply 5 tokens: an eighth
    assert not any(b.key == "squeeze" for b in at.button)
    assert len(set(prompt_tokens(at))) >= 3


def test_a_chat_ending_on_a_reply_says_what_the_current_input_is():
    at = pasted()
    clean(at)
    assert any(c.value.startswith("The chat ends on an assistant message") for c in at.caption)


def test_an_approximate_model_shows_each_strategys_band_under_its_count():
    at = app().run()
    at.sidebar.multiselect(key="strategies").set_value(["truncate", "manual"]).run()
    at.sidebar.selectbox(key="model").set_value("claude-sonnet-4").run()
    clean(at)
    bands = [caption.value for caption in at.caption if caption.value.startswith("tokenizer ")]
    assert len(bands) == 2 and all("(approximate, up to " in band and "about " in band for band in bands)
    shown = prompt_tokens(at)
    assert [band.rsplit("up to ", 1)[1].rstrip(")") for band in bands] == shown  # the count shown is the upper end
    at.sidebar.selectbox(key="model").set_value("gpt-4o-mini").run()
    # o200k_base: exact, but for the sample's tool-call turns, a shape no recorded count covers (counted high)
    conversation, setup = load_sample("roleplay"), Setup.of("gpt-4o-mini", 2200, 400)
    expected = [compare_view.column(name, plan_one(conversation, setup, name)).tokenizer for name in ("truncate", "manual")]
    assert [c.value for c in at.caption if c.value.startswith("tokenizer ")] == expected
    assert all(text.startswith("tokenizer o200k_base · ") and "about " not in text for text in expected)


def test_the_tool_result_cap_box_caps_every_strategy_and_replay_follows_it():
    at = app()
    at.query_params["sample"] = "coding_agent"
    at.run()
    clean(at)
    uncapped = prompt_tokens(at)
    box = at.number_input(key=compare_state.TOOL_RESULT_CAP)
    assert box.value == 0 and "2,500 is a good start" in box.help  # off by default, a sensible value shown
    box.set_value(20).run()
    clean(at)
    settings = suggested_setup(load_sample("coding_agent")).replace(**compare_state.compare_settings(at.session_state))
    assert settings.settings.options["tool_result_cap"] == 20
    plans = dict(session_for(load_sample("coding_agent")).plans(settings.settings, strategies=settings.strategies))
    capped = [block for block in plans["truncate"].blocks if block.reason == "compressed" and block.role == "tool"]
    assert capped, "a tool result over 20 tokens is sent as its head and tail"
    assert prompt_tokens(at) == [f"{plan.prompt_tokens:,}" for plan in plans.values()] != uncapped
    at.switch_page("pages/replay.py").run()  # Replay plans with Compare's options: its last request is this plan
    assert not at.exception and not at.error
    assert compare_state.compare_settings(at.session_state)["tool_result_cap"] == 20
