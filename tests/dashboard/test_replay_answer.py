"""The Replay page says the answer: Compare's sentence, costs at volume, Compare's plans and counts."""

from __future__ import annotations

import html
import io
import json
import re

import pytest
from support.charts import prompt_tokens
from support.paths import REPO, shared_path
from support.charts import replay_table
from streamlit.testing.v1 import AppTest

import contextfit
from contextfit.cli import main
from contextfit.dashboard import agent_rounds, answer_box, state, verdict
from contextfit.dashboard import replay as views
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard.setup import ReplaySetup, Setup, suggested_setup
from contextfit.inputs.samples import SAMPLES, load_sample
from contextfit.replays.answer import recommendation_for
from contextfit.replays.recommend import PRIORITIES
from contextfit.replays.volume import DAYS_PER_MONTH, DEFAULT_CONVERSATIONS_PER_DAY


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=240)


def answer_of(at: AppTest) -> str:
    """The sentence in the Replay page's answer box."""
    boxes = [element.proto.body for element in at.get("html") if "contextfit-answer" in element.proto.body]
    assert len(boxes) == 1
    text = re.sub(r"<[^>]+>", "", boxes[0].split("</style>")[-1]).removeprefix("Recommendation")
    return html.unescape(text)


def compare_settings(conversation, **chosen):
    """The settings Compare plans a conversation with by default (its sidebar's suggestion and options)."""
    suggested = suggested_setup(conversation)
    return suggested.replace(**{**state.compare_settings({}), **chosen})


def cli(*args: str) -> str:
    out = io.StringIO()
    assert main(list(args), out) == 0
    return out.getvalue()


@pytest.mark.parametrize("key", [sample.key for sample in SAMPLES])
def test_replay_says_the_sentence_compare_and_fit_recommend_say(key):
    at = app()
    at.query_params["sample"] = key
    at.switch_page("pages/replay.py").run()
    assert not at.exception and not at.error
    conversation = load_sample(key)
    setup = compare_settings(conversation)
    expected = recommendation_for(conversation, setup.settings, strategies=setup.strategies)
    assert answer_of(at) == expected.sentence
    printed = cli("fit", str(REPO / "contextfit" / "data" / "samples" / f"{key}.json"), "--recommend",
                  "--model", setup.model, "--limit", str(setup.context_limit), "--reserve", str(setup.response_reserve))
    assert printed.splitlines()[0] == expected.sentence


def test_replay_says_compares_sentence_for_an_uploaded_fixture():
    path = shared_path("sillytavern", "chats_2023", "Megumin_1673323621108.jsonl")
    at = app()
    at.session_state["source.kind"], at.session_state["source.paste"] = "paste", path.read_text(encoding="utf-8")
    at.switch_page("pages/replay.py").run()
    at.number_input(key="limit").set_value(300).run()  # small: the strategies differ
    at.number_input(key="reserve").set_value(60).run()
    assert not at.exception and not at.error
    conversation = contextfit.load_conversation(path.read_bytes())
    expected = recommendation_for(conversation, Setup.of("gpt-4o", 300, 60, **state.compare_settings({})).settings)
    assert answer_of(at) == expected.sentence
    printed = json.loads(cli("fit", str(path), "--recommend", "--json", "--limit", "300", "--reserve", "60"))
    assert printed["sentence"] == expected.sentence


@pytest.mark.parametrize("priority", PRIORITIES)
@pytest.mark.parametrize("key", [sample.key for sample in SAMPLES])
def test_the_replays_answer_is_recommendation_for_under_every_priority(key, priority):
    # the replay's outcomes, among Compare's strategies (not the stable_prefix lines): the same decision
    conversation = load_sample(key)
    setup = ReplaySetup.of("gpt-4o", 1_200, 300)  # stable_prefix variants replayed too
    result = views.run(*views.conversation_input(conversation, setup), setup)
    assert any("+stable_prefix" in label for label in result.totals)
    mine = views.answer(result, setup.strategies, priority)
    theirs = recommendation_for(conversation, setup.settings, strategies=setup.strategies, priority=priority)
    assert mine.sentence == theirs.sentence and mine.strategy == theirs.strategy
    assert [o.label for o in mine.outcomes] == list(setup.strategies)


def test_the_costs_read_like_money_at_the_users_volume():
    at = app()
    at.query_params["sample"] = "roleplay"
    at.switch_page("pages/replay.py").run()
    costs = next(table.value for table in at.table if "lost" in table.value.columns)
    conversation = load_sample("roleplay")
    answer = recommendation_for(conversation, compare_settings(conversation).settings)
    volumes = answer.volumes(DEFAULT_CONVERSATIONS_PER_DAY)
    assert list(costs["strategy"]) == list(volumes)
    month = f"per month at {DEFAULT_CONVERSATIONS_PER_DAY:,} a day"
    for _, row in costs.iterrows():
        volume = volumes[row["strategy"]]
        assert row["per 1,000 conversations"] == contextfit.amounts.money_short(volume.per_1000)
        assert row[month] == contextfit.amounts.money_month(volume.per_request * DEFAULT_CONVERSATIONS_PER_DAY
                                                             * DAYS_PER_MONTH)
        assert re.fullmatch(r"\$[\d,.]+K?", row["per 1,000 conversations"]) and row["lost"].startswith(
            ("Lost:", "Keeps everything", "Nothing"))
    assert not costs.isna().to_numpy().any() and "None" not in costs.to_string()
    # the priority in Compare's words ("Priority: keep the most of what matters · …"), not its id
    caption = next(c.value for c in at.caption if c.value.startswith("Priority: keep the most of what matters; "))
    assert f"{DEFAULT_CONVERSATIONS_PER_DAY:,} conversations a day" in caption


def test_replay_plans_with_compares_pins_exclusions_and_strategy_options():
    # Compare's hand edits and "Strategy options" (summary size, relevance window, user name): Replay's
    # last request is Compare's plan (the options were ignored: truncate read 1,781 against Compare's 1,783)
    at = app().run()
    at.number_input(key="summary_tokens").set_value(100).run()
    at.number_input(key="relevance_window").set_value(1).run()
    at.text_input(key="user_name").set_value("Alexandra Konstantinopoulou").run()
    at.session_state[state.OVERRIDES] = {"m3": {"manualExcluded": True}, "lorebook:3": {"pinned": True},
                                         "memory:1": {"relevance": 0.95}}
    at.run()
    assert not at.exception
    compared = dict(zip(at.session_state[state.STRATEGIES], prompt_tokens(at)))  # each column's exact count
    shown = verdict.verdict_rows(dict(session_for(load_sample("roleplay")).plans(
        Setup.of("gpt-4o", 2_200, 400).replace(**state.compare_settings(at.session_state)).settings)))
    assert compared == {row.strategy: f"{row.prompt_tokens:,}" for row in shown}
    at.switch_page("pages/replay.py").run()
    assert not at.exception and not at.error
    last = {label.value.strip("*"): metric.value for label, metric in zip(
        [m for m in at.markdown if m.value.startswith("**")], at.metric)}
    assert {name: last[name] for name in compared} == compared
    counts = [c.value.split(" · ", 1)[1] for c in at.caption if " · dropped " in c.value]
    assert counts[:len(shown)] == [f"dropped {row.dropped:,} · summarized {row.summarized:,} · compressed "
                                   f"{row.compressed:,}" for row in shown]  # the verdict's one count
    unedited = ReplaySetup.of("gpt-4o", 2_200, 400, stable_prefix=False)
    plain = views.run(*views.conversation_input(load_sample("roleplay"), unedited), unedited)
    assert any(f"{plain.turns[name][-1].prompt_tokens:,}" != tokens for name, tokens in compared.items())


def test_presentation_mode_puts_the_answer_first_in_large_html():
    at = app()
    at.session_state["presentation"] = True
    at.query_params["sample"] = "support_chat"
    at.switch_page("pages/replay.py").run()
    assert not at.exception
    assert at.table and not at.dataframe  # HTML tables, which the presentation CSS enlarges
    css = next(e.proto.body for e in at.get("html") if ".contextfit-answer" in e.proto.body and "font-size" in
               e.proto.body and "!important" in e.proto.body)
    assert ".contextfit-answer" in css and "white-space: normal" in css  # larger, and wrapped tables
    main = [element for element in at.main if element.type in ("html", "table", "subheader", "markdown")]
    first_table = next(index for index, element in enumerate(main) if element.type == "table")
    answer = next(index for index, element in enumerate(main)
                  if element.type == "html" and "contextfit-answer\"" in element.proto.body)
    assert answer < first_table and "lost" in at.table[0].value.columns  # the answer, then its costs


def test_no_cell_of_the_replays_tables_reads_none():
    at = app()
    at.query_params["sample"] = "roleplay"
    at.switch_page("pages/replay.py").run()
    at.number_input(key="limit").set_value(1).run()  # nothing fits: every number is missing
    assert not at.exception
    table = replay_table(at)
    assert set(table.value["cache hit rate"]) == {"—"}
    assert table.proto.placeholder == "—"  # the grid draws a missing number (tokens sent, first loss) as "—"
    costs = next(table.value for table in at.table if "lost" in table.value.columns)
    assert "None" not in costs.to_string() and not costs.isna().to_numpy().any()
    assert set(costs["per 1,000 conversations"]) == {"—"} and all(costs["lost"].str.startswith("No plan"))


def test_an_agent_runs_requests_show_their_user_turn_and_tool_round():
    at = app()
    at.query_params["sample"] = "coding_agent"
    at.switch_page("pages/replay.py").run()
    assert not at.exception and "Requests per user turn" in [h.value for h in at.subheader]
    conversation = load_sample("coding_agent")
    chosen = compare_settings(conversation)
    setup = ReplaySetup(chosen.settings, chosen.strategies)  # the page's, stable_prefix variants included
    result = views.run(*views.conversation_input(conversation, setup), setup)
    table = next(frame.value for frame in at.dataframe if "sent after" in frame.value.columns)
    rows = result.turns["truncate"]
    assert [row for row in table["sent after"] if row.startswith(("tool round", "the user"))] == [
        agent_rounds.request_label(row) for row in rows]
    assert "tool round 1" in set(table["sent after"])
    totals = table[table["request"].str.startswith("user turn")]
    expected = [total for total in result.user_turn_totals()["truncate"] if total.requests > 1]
    assert list(totals["prompt tokens"]) == [f"{total.prompt_tokens:,}" for total in expected]  # the package's totals
    assert list(totals["sent after"]) == [f"{total.requests:,} requests" for total in expected]
    assert any(c.value.startswith(f"Request {len(rows):,} of {len(rows):,}: user turn ") for c in at.caption)
    plain = app()
    plain.query_params["sample"] = "support_chat"  # no tool results: nothing to say
    plain.switch_page("pages/replay.py").run()
    assert "Requests per user turn" not in [h.value for h in plain.subheader]


def test_the_requests_of_a_recorded_agent_run_each_have_a_row():
    # pydantic-ai's complex agent run: billed as three requests (one user message, two tool rounds)
    path = shared_path("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json")
    conversation = contextfit.load_conversation(path.read_bytes())
    setup = ReplaySetup.of("gpt-4o", 128_000, 16_384, ("truncate", "summarize"), stable_prefix=False)
    result = views.run(*views.conversation_input(conversation, setup), setup)
    shown = agent_rounds.view(result)
    assert shown.shown and shown.caption.startswith("Every model call is a request: 3 requests over 1 user turn, 2 ")
    table = shown.rows["truncate"]
    assert [row["sent after"] for row in table] == ["the user message", "tool round 1", "tool round 2", "3 requests"]
    tokens = [row.prompt_tokens for row in result.turns["truncate"]]
    assert table[-1]["prompt tokens"] == f"{sum(tokens):,}" and all(cell != "None" for row in table
                                                                      for cell in row.values())


def test_the_answer_box_escapes_and_marks_the_chosen_strategy():
    conversation = load_sample("roleplay")
    answer = recommendation_for(conversation, compare_settings(conversation).settings)
    rows = answer_box.volume_rows(answer)
    styles = answer_box.volume_styles(answer, rows)
    marked = [row["strategy"] for row, style in zip(rows, styles) if style["strategy"]]
    assert marked == [answer.strategy]
    assert sum(bool(cell) for style in styles for cell in style.values()) == 1


def test_replay_follows_compares_must_survive_list_with_compares_user_name(monkeypatch):
    """The persona's fact is the user name Compare's options set: a fact ticked off there under
    that name stays off on Replay (the list was built without Compare's options, so it came back)."""
    from contextfit.dashboard import facts_box

    boxes = []
    read_box = facts_box.read_box
    monkeypatch.setattr(facts_box, "read_box", lambda text: boxes.append(text) or read_box(text))
    at = app().run()
    at.text_input(key="user_name").set_value("Ann").run()
    at.session_state[state.MUST_SURVIVE] = {"off": ["Ann"], "added": []}
    at.run()
    assert not at.exception
    at.switch_page("pages/replay.py").run()
    assert not at.exception and not at.error
    followed = boxes[-1].splitlines()
    assert followed and "Ann" not in followed and "Tomas Venn" not in followed, followed
