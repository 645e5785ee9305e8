"""The Replay page as a demo shows it: ties, side-by-side bars, overlapping lines, links
without their conversation, nothing fitting, a cache that never hits. Each case is one a new
user met in a first demo (the numbers were right; what they were shown was not)."""

from __future__ import annotations

import json
import re

from support.paths import REPO
from support.charts import replay_table
from streamlit.testing.v1 import AppTest

import contextfit
from contextfit.inputs.samples import load_sample
from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from contextfit.replays.run import TurnResult, replay, totals_of
from contextfit.inputs.samples import sample_text
from contextfit.dashboard import exports, facts_box, replay_charts
from contextfit.dashboard import replay as views
from contextfit.dashboard.setup import ReplaySetup, suggested_setup
from contextfit.dashboard.verdict import replay_verdict

ALL = ("truncate", "summarize", "vector-recall", "manual", "clear-tool-results")


def _sample_replay(key: str, model: str | None = None, limit: int | None = None, stable: bool = True):
    conversation = contextfit.load_conversation(sample_text(key))
    suggested = suggested_setup(conversation)
    setup = ReplaySetup.of(model or suggested.model, limit or suggested.context_limit,
                              min(suggested.response_reserve, (limit or suggested.context_limit) - 1), ALL,
                              stable_prefix=stable)
    messages, settings = views.conversation_input(conversation, setup)
    return views.run(messages, settings, setup)


def test_every_strategy_tied_for_the_best_is_named():
    # the coding agent at its suggested limit: four strategies cost the same; the verdict named the first
    result = _sample_replay("coding_agent")
    cheapest = min(t.total_cost for t in result.totals.values())
    tied = [label for label, t in result.totals.items() if abs(t.total_cost - cheapest) < 1e-12]
    assert len(tied) >= 2
    assert result.winners()["cheapest"] == tied
    assert result.verdict()["cheapest"] == tied[0]  # the API's single label: the earlier strategy
    text = replay_verdict(result, "")
    assert text.startswith(f"Cheapest: {', '.join(tied[:-1])} and {tied[-1]} ($")
    marked = [row["strategy"] for row in views.totals_rows(result) if "cheapest" in row["verdict"]]
    assert marked == tied
    assert result.to_dict()["winners"]["cheapest"] == tied


def test_ties_are_equal_within_float_rounding_and_all_equal_is_no_winner():
    def rows(cost: float) -> list[TurnResult]:
        from contextfit.tokens.prices import RequestCost

        return [TurnResult(1, 0, "x", 10, 1, 0, 0, 0, 0, 0, 0, 1, RequestCost(cost, 0.0, 0.0, 0.0), ())]

    result = _sample_replay("support_chat", limit=4000, stable=False)
    totals = {"a": totals_of("a", rows(0.1 + 0.2)), "b": totals_of("b", rows(0.3)), "c": totals_of("c", rows(0.4))}
    object.__setattr__(result, "totals", totals)
    assert result.winners()["cheapest"] == ["a", "b"]
    totals["c"] = totals_of("c", rows(0.3))
    assert result.winners()["cheapest"] == [] and result.verdict()["cheapest"] is None
    assert "Cheapest: all equal ($0.3000)" in replay_verdict(result, "")


def _page(sample: str = "coding_agent") -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.query_params["sample"] = sample
    return at.switch_page("pages/replay.py").run()


def test_the_turn_bars_share_one_token_axis_and_say_what_their_colours_mean():
    # each strategy's bars had an axis of its own: a 1,567-token bar looked longer than a 1,717 one
    at = _page()
    assert not at.exception and not at.error
    bars = [html.proto.body for html in at.get("html") if 'class="contextfit-budget"' in html.proto.body]
    tops = {re.search(r'data-top="(\d+)"', body)[1] for body in bars}
    assert len(bars) == len(BUILTIN_STRATEGIES) + 3 and len(tops) == 1  # Compare's HTML bars (3: stable_prefix), one axis
    assert any("contextfit-legend" in html.proto.body for html in at.get("html"))


def test_the_line_charts_list_every_strategy_at_a_turn_and_share_one_legend():
    # identical lines lay on each other and a hover named one strategy; each chart repeated an
    # 8-name legend taller than its plot
    result = _sample_replay("support_chat")
    for metric in ("prompt", "cost", "cache", "retention"):
        figure = replay_charts.lines_figure(result, metric)
        assert figure.layout.hovermode == "x unified" and figure.layout.showlegend is False
    legend = replay_charts.lines_legend_html(result)
    assert all(label in legend for label in result.turns) and legend.count("line-swatch") == len(result.turns)
    assert legend.count("3px dotted") == 3  # the stable_prefix variants are dotted, as their lines
    lost = [trace for trace in replay_charts.lines_figure(result, "retention").data if trace.mode == "markers"]
    assert len(lost) >= 2 and all(trace.hovertemplate.startswith("× ") for trace in lost)


def test_a_link_whose_conversation_is_not_here_keeps_its_other_choices():
    # the limit came back as the sample's 2,200 and the facts were dropped without a word
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    for key, value in {"source": "current", "limit": "3000", "facts": "ORD-7731"}.items():
        at.query_params[key] = value
    at.switch_page("pages/replay.py").run()
    assert not at.exception
    assert at.number_input(key="limit").value == 3000
    assert at.text_area(key="replay_facts").value == "ORD-7731"
    assert at.selectbox(key="source_sample_menu").value == "roleplay"  # a sample meanwhile
    assert any("with the link's other choices" in info.value for info in at.info)


def test_when_nothing_fits_the_page_says_so_once():
    at = _page("roleplay")
    at.number_input(key="limit").set_value(1).run()
    assert not at.exception
    table = replay_table(at).value
    assert set(table["cache hit rate"]) == {"—"} and set(table["retention"]) == {"—"}
    assert table["tokens sent"].isna().all()
    assert any("budget 0 tokens" in caption.value or "budget 1 token ·" in caption.value for caption in at.caption)
    failed = [warning.value for warning in at.warning if "no turn could be fitted; at turn 1:" in warning.value]
    assert len(failed) == 1 and " and clear-tool-results+stable\\_prefix, no turn" in failed[0]  # listed as said
    cost = replay_charts.lines_figure(_sample_replay("roleplay", limit=1), "cost")
    assert all(value is None for trace in cost.data for value in trace.y)  # no $0 line drawn for what was not sent
    # the empty charts show no axes (-1 to 4 "US dollars"), the caption claims no highlight, and the
    # "One turn" view says once, naming the turn, what eight equal boxes said without it
    assert cost.layout.xaxis.visible is False and cost.layout.yaxis.visible is False
    assert not any("highlighted" in caption.value for caption in at.caption)
    turn = at.slider(key="replay_turn").value
    assert [error.value.split(":")[0] for error in at.error] == [f"No strategy can fit turn {turn}"]


def test_a_cache_that_never_hits_is_explained():
    result = _sample_replay("roleplay", model="gpt-4o-mini")
    never = [label for label, t in result.totals.items() if t.cache_hit_rate == 0]
    assert never
    [note] = [note for note in result.notes if "no turn reads from the cache" in note]
    assert all(label in note for label in never) and "1,024 tokens" in note


def test_the_caption_says_its_rules_in_words():
    result = _sample_replay("support_chat")
    text = views.rules_text(result)
    assert "automatic-prefix" not in text and "default-entities" not in text
    assert text == ("prompt cache: automatic prefix caching · facts: 3 found in the conversation (pins, names, "
                    "required lore, quoted tool results, what the latest turns refer back to)")
    entity_rule = replay(load_sample("support_chat"), model="gpt-4o-mini", strategies=["truncate"], facts="entities")
    assert views.rules_text(entity_rule).endswith("facts: the default rule (entities the latest message repeats)")


def test_the_turn_shown_is_in_the_link_and_survives_a_page_switch():
    # the slider went back to the last turn after a switch to Compare and back, or a reload
    at = _page("support_chat")
    at.slider(key="replay_turn").set_value(4).run()
    assert at.query_params["turn"] == "4"  # AppTest gives a single value as a str
    at.switch_page("pages/compare.py").run()
    at.switch_page("pages/replay.py").run()
    assert not at.exception and at.slider(key="replay_turn").value == 4
    linked = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    linked.query_params["sample"], linked.query_params["turn"] = "support_chat", "3"
    linked.switch_page("pages/replay.py").run()
    assert not linked.exception and linked.slider(key="replay_turn").value == 3
    far = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    far.query_params["sample"], far.query_params["turn"] = "support_chat", "999"
    far.switch_page("pages/replay.py").run()  # past the last turn: the last
    assert not far.exception and far.slider(key="replay_turn").value == far.slider(key="replay_turn").max


def test_presentation_mode_carries_over_from_compare():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.session_state["presentation"] = True  # turned on on Compare
    at.query_params["sample"] = "support_chat"
    at.switch_page("pages/replay.py").run()
    assert not at.exception
    assert any(".contextfit-lines-legend" in html.proto.body for html in at.get("html"))  # the larger CSS
    assert at.table and not at.dataframe  # HTML, which that CSS enlarges
    # the grid's short headers and no verdict column (it came back in the HTML table, cut off at 1280)
    shown = at.table[1].value  # after the answer's costs
    assert "verdict" not in list(shown.columns) and "failed" in list(shown.columns)
    layouts = [json.loads(chart.proto.spec)["layout"] for chart in at.get("plotly_chart")]
    assert {layout["font"]["size"] for layout in layouts} == {16}  # the line charts' text too (page CSS cannot reach)
    assert {layout[axis]["tickfont"]["size"] for layout in layouts for axis in ("xaxis", "yaxis")} == {15}


def test_the_stored_chat_source_without_a_chat_says_how_to_make_one(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "empty.db"))  # a database of its own: no chat in it
    at = _page("support_chat")
    at.sidebar.radio(key="source_radio").set_value("Stored chat").run()
    assert not at.exception
    assert any("“Send” button on Compare strategies" in info.value and "pick a sample" in info.value for info in at.info)


def test_the_turns_csv_writes_dollars_out():
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(exports.turns_csv(_sample_replay("support_chat")))))
    assert rows and not [row for row in rows if "e-" in row["total $"] or len(row["total $"]) > 16]
    assert float(rows[-1]["total $"]) > 0


def test_compare_and_replay_share_their_conversation_model_and_limits():
    # Compare showed gpt-4o at 900 tokens; Replay opened at the sample's gpt-4o-mini and 1,100, saying nothing
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.query_params["sample"] = "support_chat"
    at.run()
    at.selectbox(key="model").set_value("gpt-4o").run()
    at.number_input(key="limit").set_value(900).run()
    at.number_input(key="reserve").set_value(100).run()
    at.switch_page("pages/replay.py").run()
    assert not at.exception and at.selectbox(key="source_sample_menu").value == "support_chat"
    assert (at.selectbox(key="model").value, at.number_input(key="limit").value,
            at.number_input(key="reserve").value) == ("gpt-4o", 900, 100)
    assert "budget 800 tokens" in next(c.value for c in at.caption if " · prompt cache: " in c.value)
    at.number_input(key="limit").set_value(1500).run()  # changed here: Compare shows it too
    at.switch_page("pages/compare.py").run()
    assert not at.exception and at.number_input(key="limit").value == 1500
    assert any("1,400-token budget" in caption.value for caption in at.caption)


def test_a_fact_pinned_to_a_message_the_chat_lacks_is_left_out_not_the_replay():
    at = _page("support_chat")
    at.text_area(key="replay_facts").input('5521-774\n{"text": "AX55", "message": 99}').run()
    assert not at.exception and not at.error
    assert any(w.value.replace("\\", "").startswith("INVALID_SETTINGS: line 2 of the facts is pinned to message 99")
               for w in at.warning)
    assert "1 declared fact" in next(c.value for c in at.caption if " · prompt cache: " in c.value)


def test_when_no_strategy_fits_any_turn_the_verdict_and_charts_say_so():
    result = _sample_replay("roleplay", limit=1)
    assert replay_verdict(result, "") == "No strategy could fit any turn, so none can be compared: the notes say why."
    rows = views.totals_rows(result)
    assert all(row["first loss (turn)"] is None for row in rows)  # a turn that sent nothing lost nothing drawn
    for metric in ("cost", "retention"):
        figure = replay_charts.lines_figure(result, metric)
        assert [a.text for a in figure.layout.annotations] == [
            "No strategy could fit any turn:<br>nothing was sent (see the notes above)."]
    assert not [trace for trace in replay_charts.lines_figure(result, "retention").data if trace.mode == "markers"]


def test_one_strategy_reads_as_one():
    at = _page("support_chat")
    at.multiselect(key="strategies").set_value(["manual"]).run()
    at.checkbox(key="replay_stable").uncheck().run()
    assert not at.exception
    assert not [c for c in at.caption if c.value.startswith("Best value")]
    assert any(m.value.endswith("to compare it with others.") for m in at.markdown)


def test_the_turn_is_in_the_link_from_the_first_load():
    at = _page("support_chat")
    assert at.query_params["turn"] == "21"


def _entity_rule_replay(key: str):
    """A sample's replay under the entity rule, turn by turn (its own facts, found by default, hold from the first)."""
    conversation = load_sample(key)
    setup = suggested_setup(conversation)
    return replay(conversation, model=setup.model, context_limit=setup.context_limit,
                  response_reserve=setup.response_reserve, strategies=ALL, facts="entities")


def test_the_verdict_says_at_how_many_turns_a_fact_was_in_force():
    # the role-play sample's entity rule finds a fact at one user turn of twelve, whose tool round (a request of its
    # own) answers the same message: two requests of 14; "all equal (100.0%)" read as every turn
    result = _entity_rule_replay("roleplay")
    in_force = sum(1 for row in result.turns["truncate"] if row.facts)
    assert (in_force, len(result.requests), len(result.user_turns)) == (2, 14, 12)
    assert "(100.0%, at the 2 turns of 14 with a fact in force)" in replay_verdict(result, "")
    chat = [{"role": "user", "content": "My order ORD-1 is late."}, {"role": "assistant", "content": "Sorry."},
            {"role": "user", "content": "Where is ORD-1?"}, {"role": "assistant", "content": "In transit."},
            {"role": "user", "content": "Thanks."}]
    one = replay(chat, model="gpt-4o", strategies=["truncate", "manual"], facts="entities")
    assert "(100.0%, at the one turn of 3 with a fact in force)" in replay_verdict(one, "")  # not "the 1 of 3 turns"
    by_default = _sample_replay("roleplay")  # the facts it marks (the names, the lore) are in force at every turn
    assert all(row.facts for row in by_default.turns["truncate"]) and "with a fact in force" not in replay_verdict(
        by_default, "")
    support = _entity_rule_replay("support_chat")
    assert (sum(1 for row in support.turns["truncate"] if row.facts), len(support.requests)) == (7, 21)
    assert "at the 7 turns of 21 with a fact in force)" in replay_verdict(support, "")


def test_a_limit_past_the_model_s_window_is_said():
    at = _page("support_chat")
    at.selectbox(key="model").select("gpt-4o").run()
    at.number_input(key="limit").set_value(1_000_000).run()
    assert not at.exception
    assert any("is more than gpt-4o takes (128,000)" in w.value for w in at.warning)
    at.number_input(key="limit").set_value(128_000).run()
    assert not [w for w in at.warning if "is more than" in w.value]


def _one_at_a_time(facts):
    """The first way usable_facts worked: each fact tried after those kept, a check per prefix."""
    from contextfit.replays.facts import declared_facts

    kept, positions, errors = [], [], []
    for position, fact in enumerate(facts):
        try:
            declared_facts([*kept, fact])
        except contextfit.errors.InvalidSettings as error:
            where = [*positions, position]
            errors.append(re.sub(r"facts\[(\d+)\]", lambda m: f"facts[{where[int(m[1])]}]", str(error)))
            continue
        kept.append(fact)
        positions.append(position)
    return kept, errors


def test_usable_facts_keeps_and_refuses_as_checking_one_at_a_time_did():
    # the same answer without a check of every kept prefix: a 1,000-line box with one bad line took 1.9 s a rerun
    import random

    rng = random.Random(11)
    pool = ["ORD-7731", "courier", "/zenith/i", "/([a-z/", {"message": 2}, {"text": "AX55", "name": "box"},
            {"text": "courier", "name": "box"}, {"regex": "/ORD-[0-9]+/"}, {"text": 5}, {"nope": 1}, "message 2",
            {"text": "ORD-7731", "message": 1}, "a" * 90, "a" * 91]
    for _ in range(300):
        facts = tuple(rng.choice(pool) for _ in range(rng.randint(0, 9)))
        kept, errors = facts_box.usable_facts(facts)
        assert (list(kept), [str(error) for error in errors]) == _one_at_a_time(facts), facts


def test_a_reload_of_compares_sample_opens_it_without_a_warning():
    # F5 on Replay showing Compare's conversation, the role-play sample, said it "was pasted or
    # uploaded ... in another session" and fell back to a sample without saying it was the same one
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180).run()  # Compare first: its sample
    at.switch_page("pages/replay.py").run()
    assert at.radio(key="source_radio").value == "Sample"
    at.number_input(key="limit").set_value(3000).run()
    link = dict(at.query_params)
    assert link["sample"] == "roleplay" and link["limit"] == "3000"
    reloaded = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)  # a new session
    for key, value in link.items():
        reloaded.query_params[key] = value
    reloaded.switch_page("pages/replay.py").run()
    assert not reloaded.exception and not _link_notes(reloaded)
    assert reloaded.radio(key="source_radio").value == "Sample"
    assert reloaded.selectbox(key="source_sample_menu").value == "roleplay"
    assert reloaded.number_input(key="limit").value == 3000


def test_a_link_to_compares_sample_opens_it_on_both_pages():
    # Replay's former link to Compare's conversation, a sample: the sample, on Compare too
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.query_params["source"] = "current:coding_agent"
    at.run()
    assert not at.exception and at.selectbox(key="source_sample_menu").value == "coding_agent"
    at.switch_page("pages/replay.py").run()
    assert not at.exception and not _link_notes(at)
    assert at.radio(key="source_radio").value == "Sample"
    assert at.selectbox(key="source_sample_menu").value == "coding_agent"


def _link_notes(at: AppTest) -> list[str]:
    """The page's warnings about its link (the replay's own notes, such as the cache's, aside)."""
    return [w.value for w in at.warning if "link" in w.value or "pasted" in w.value]


def test_an_emptied_number_box_goes_back_to_the_suggestion_on_both_pages():
    # clearing the context limit to type another made it 1, lowered the reserve to 0 and filled
    # the page with errors (the box read as its minimum)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180).run()  # Compare, the role-play sample
    at.number_input(key="limit").set_value(5000).run()
    at.number_input(key="limit").set_value(None).run()
    assert not at.exception and not at.error
    assert at.number_input(key="limit").value == 2200 and at.number_input(key="reserve").value == 400
    assert any("context limit box was emptied: back to 2,200" in w.value for w in at.warning)
    at.number_input(key="reserve").set_value(None).run()
    assert at.number_input(key="reserve").value == 400 and at.number_input(key="limit").value == 2200
    at.number_input(key="summary_tokens").set_value(None).run()  # the options go back to their defaults
    assert not at.exception and at.number_input(key="summary_tokens").value == 0
    at.switch_page("pages/replay.py").run()
    at.number_input(key="limit").set_value(3000).run()
    at.number_input(key="limit").set_value(None).run()
    assert not at.exception and not at.error
    assert at.number_input(key="limit").value == 2200 and at.number_input(key="reserve").value == 400
    assert any("context limit box was emptied: back to 2,200" in w.value for w in at.warning)
    at.number_input(key="reserve").set_value(None).run()
    assert not at.exception and at.number_input(key="reserve").value == 400


def test_facts_too_long_for_the_link_are_said_to_stay_out_of_it():
    # a 3,000-character fact left the URL, and a reload opened the replay without it, unsaid
    at = _page("roleplay")
    at.text_area(key="replay_facts").set_value("Mara Quill " * 300).run()
    assert not at.exception and "facts" not in at.query_params
    assert any("too long for the page's address" in caption.value for caption in at.sidebar.caption)
    at.text_area(key="replay_facts").set_value("Mara Quill").run()
    assert at.query_params["facts"] in ("Mara Quill", ["Mara Quill"])
    assert not any("too long for the page's address" in caption.value for caption in at.sidebar.caption)


def test_a_strategy_keeps_its_line_colour_whichever_others_are_replayed():
    # taking summarize out turned vector-recall orange and manual green
    def colours(strategies):
        setup = ReplaySetup.of("gpt-4o", 2200, 400, strategies, stable_prefix=True)
        messages, settings = views.conversation_input(contextfit.load_conversation(sample_text("roleplay")), setup)
        result = views.run(messages, settings, setup)
        return {trace.name: trace.line.color for trace in replay_charts.lines_figure(result, "prompt").data}

    every, fewer = colours(ALL), colours(("vector-recall", "manual", "truncate"))
    assert {name: every[name] for name in fewer} == fewer
    assert every["truncate+stable_prefix"] == every["truncate"]  # the variant is its strategy's line, dotted
    assert len({every[name] for name in ALL}) == len(ALL)


def test_a_reserve_lowered_for_a_tiny_limit_comes_back_with_the_limit():
    # limit 1 lowered the reserve to 0; putting the limit back left it at 0, unsaid (Compare and Replay)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180).run()
    for page, limit, reserve in ((None, "limit", "reserve"), ("pages/replay.py", "limit", "reserve")):
        if page:
            at.switch_page(page).run()
        at.number_input(key=limit).set_value(2200).run()
        at.number_input(key=reserve).set_value(400).run()
        at.number_input(key=limit).set_value(1).run()
        assert at.number_input(key=reserve).value == 0
        at.number_input(key=limit).set_value(300).run()  # still too small for 400: it stays lowered
        assert at.number_input(key=reserve).value == 0
        at.number_input(key=limit).set_value(1000).run()
        assert not at.exception and at.number_input(key=reserve).value == 400
        assert any("Response reserve back to 400" in warning.value for warning in at.warning)
        at.number_input(key=limit).set_value(1).run()
        at.number_input(key=limit).set_value(300).run()
        at.number_input(key=reserve).set_value(100).run()  # the user's own choice since: it stays
        at.number_input(key=limit).set_value(2000).run()
        assert at.number_input(key=reserve).value == 100
        assert not any("back to" in warning.value for warning in at.warning)
