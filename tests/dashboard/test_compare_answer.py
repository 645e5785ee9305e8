"""Compare's answer, in the package: the recommendation as the CLI says it, its costs at volume, the
editable must-survive list, the window bars by category, why strategies coincide, Squeeze, an agent
run's requests, and what changed since the previous turn."""

from __future__ import annotations

import io
import json

import pytest
from support.paths import shared_path

import contextfit
from contextfit import cli
from contextfit.dashboard import alike, answer_view, category_bar, charts, compare_view, diff, fact_list, rounds
from contextfit.dashboard import state, turn_diff, verdict
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard.setup import Setup, suggested_setup
from contextfit.inputs.formats import load_conversation, load_conversation_file
from contextfit.inputs.samples import SAMPLES, load_sample, sample_text
from contextfit.pipeline.plan import BUILTIN_STRATEGIES, PromptPlan
from contextfit.errors import ContextfitError
from contextfit.pipeline.settings import PlanSettings
from contextfit.replays.answer import recommendation_for
from contextfit.replays.volume import DAYS_PER_MONTH

AGENT_RUN = ("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json")


def cli_sentence(path, setup: Setup, *extra: str) -> str:
    out = io.StringIO()
    assert cli.main(["fit", str(path), "--strategy", "all", "--recommend", "--limit", str(setup.context_limit),
                     "--reserve", str(setup.response_reserve), *extra], out=out) == 0
    return out.getvalue().splitlines()[0]


@pytest.mark.parametrize("sample", [s.key for s in SAMPLES])
def test_the_answer_is_the_sentence_the_cli_prints(sample, tmp_path):
    path = tmp_path / f"{sample}.json"
    path.write_text(sample_text(sample))
    conversation = load_sample(sample)
    setup = suggested_setup(conversation)
    listed = fact_list.fact_list(conversation, setup.settings)
    answer = answer_view.cached_recommendation({}, conversation, sample, setup.settings, BUILTIN_STRATEGIES,
                                               listed.facts())
    assert listed.facts() is None  # nothing edited: the recommendation finds the defaults itself, as the CLI does
    assert answer.sentence == cli_sentence(path, setup)
    for priority in ("cost", "cache"):
        assert answer.redecide(priority).sentence == cli_sentence(path, setup, "--priority", priority)


def test_the_answer_for_an_uploaded_agent_run_is_the_cli_s():
    path = shared_path(*AGENT_RUN)
    conversation = load_conversation_file(path)
    setup = Setup.of(suggested_setup(conversation).model, 700, 100)
    answer = answer_view.cached_recommendation({}, conversation, "upload", setup.settings, BUILTIN_STRATEGIES, None)
    assert answer.sentence == cli_sentence(path, setup)


def test_the_recommendation_is_kept_and_decided_again_without_fitting(monkeypatch):
    conversation = load_sample("support_chat")
    setup = suggested_setup(conversation)
    kept: dict = {}
    first = answer_view.cached_recommendation(kept, conversation, "s", setup.settings, BUILTIN_STRATEGIES, None)
    calls = []
    monkeypatch.setattr(answer_view, "recommendation_for", lambda *a, **k: calls.append(k["facts"]) or first)
    cheapest = answer_view.cached_recommendation(kept, conversation, "s", setup.settings, BUILTIN_STRATEGIES, None, "cost")
    assert not calls and cheapest.priority == "cost" and cheapest.outcomes == first.outcomes
    assert cheapest.sentence == recommendation_for(conversation, setup.settings, priority="cost").sentence
    # another input (a fact unticked) is worked out again
    answer_view.cached_recommendation(kept, conversation, "s", setup.settings, BUILTIN_STRATEGIES, ["x"])
    assert calls == [["x"]]


def test_costs_at_volume_read_like_money_and_are_hand_computed():
    conversation = load_sample("roleplay")
    setup = suggested_setup(conversation)
    answer = recommendation_for(conversation, setup.settings)
    view = answer_view.answer_view(answer, 25_000)
    outcome = answer.outcome(answer.strategy)
    per_request = outcome.cost_request
    assert per_request is not None and per_request > 0
    month = per_request * 25_000 * DAYS_PER_MONTH  # one request per conversation (the plans of one request)
    assert view.costs.endswith("a month at 25,000 conversations a day")
    assert f"${month / 1000:.1f}K a month" in view.costs  # a few thousand dollars: "$3.7K"
    for said in view.columns.values():
        assert said.cost.startswith("$") and " a request · $" in said.cost and said.lost.startswith("Lost:")
        assert "None" not in said.cost + said.lost


def test_a_strategy_that_drops_the_question_is_never_crowned_and_says_so():
    # an agent in the middle of its loop: the chat ends on tool results, so nothing protects the question
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "weather", "arguments": f'{{"city": "{city}"}}'}}
             for i, city in enumerate(["Paris", "Rome"])]
    chat = [{"role": "system", "content": "You are a weather agent."},
            {"role": "user", "content": "What is the weather in Paris and in Rome? " + "Please be thorough. " * 20},
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c0", "content": "Paris: sunny, 24C. " * 10},
            {"role": "tool", "tool_call_id": "c1", "content": "Rome: rain, 18C. " * 10}]
    settings = PlanSettings(model="gpt-4o", context_limit=400, response_reserve=100)
    plans = dict(session_for(load_conversation(chat)).plans(settings, strategies=["truncate", "summarize"]))
    answer = recommendation_for(chat, settings, strategies=["truncate", "summarize"])
    assert answer.not_recommended == {"truncate": "drops your question",
                                      "summarize": "folds your question into its summary"}
    rows = verdict.verdict_rows(plans, recommendation=answer)
    assert not set().union(*verdict.best_cells(rows).values())  # the fewer tokens crown neither
    assert ("Never highlighted: truncate, which drops your question and summarize, which folds your question into its "
            "summary.") in verdict.caption(rows, answer)
    view = answer_view.answer_view(answer, 1000)
    assert view.strategy is None and view.costs is None and view.sentence.startswith("No strategy can be shipped")
    assert view.columns["summarize"].refusal == "Not recommended: it folds your question into its summary."


def test_the_verdict_caption_says_the_reply_is_in_the_cost():
    conversation = load_sample("support_chat")
    setup = suggested_setup(conversation)
    plans = dict(session_for(conversation).plans(setup.settings, strategies=setup.strategies))
    answer = recommendation_for(conversation, setup.settings)
    said = verdict.caption(verdict.verdict_rows(plans, recommendation=answer), answer)
    assert "and the reply (replies: the mean of the conversation’s" in said and "billed on top" not in said
    assert verdict.HEADERS["cost"] == "cost / request"


# -- the must-survive list -----------------------------------------------------------------


def test_the_list_starts_from_what_the_conversation_marks_and_follows_the_edits():
    conversation = load_sample("roleplay")
    settings = suggested_setup(conversation).settings
    listed = fact_list.fact_list(conversation, settings)
    names = [item.name for item in listed.items]
    assert names[:2] == ["Mara Quill", "Tomas Venn"] and not listed.edited and listed.facts() is None
    assert listed.summary().startswith(f"Must-survive facts: {len(names)}, found in the conversation — Mara Quill")
    edits = fact_list.edits_after(listed, {"edited_rows": {1: {"follow": False}}, "added_rows": [{"fact": "Orrin"}]})
    assert edits == {"off": ["Tomas Venn"], "added": ["Orrin"]}
    edited = fact_list.fact_list(conversation, settings, edits)
    facts = edited.facts()
    assert edited.edited and facts[-1] == "Orrin" and not any(isinstance(f, dict) and f.get("name") == "Tomas Venn"
                                                             for f in facts)
    # the recommendation follows the edited list: Orrin is a fact now, Tomas Venn is not
    answer = recommendation_for(conversation, settings, facts=facts)
    followed = {name for name, _ in answer.outcomes[0].facts}
    assert "Orrin" in followed and "Tomas Venn" not in followed
    # a pin made on Compare joins the defaults (the list is worked out again each run)
    pinned = fact_list.fact_list(conversation, settings.replace(overrides={"m3": {"pinned": True}}), edits)
    assert "pinned m3" in [item.name for item in pinned.items] and "pinned m3" not in names


def test_a_bad_line_is_left_out_with_a_note_and_unticking_everything_is_said():
    conversation = load_sample("support_chat")
    settings = suggested_setup(conversation).settings
    listed = fact_list.fact_list(conversation, settings, {"off": [], "added": ["/([a-z/", "ORD-7731"]})
    assert listed.facts()[-1] == "ORD-7731" and "/([a-z/" not in listed.facts()
    assert len(listed.notes) == 1 and "does not compile" in listed.notes[0]
    everything = fact_list.fact_list(conversation, settings, {"off": [i.name for i in listed.items], "added": []})
    assert everything.facts() == [] and "none followed" in everything.summary()


def test_a_conversation_that_declares_facts_lists_those():
    bundle = {"contextfit": "conversation", "settings": {"facts": ["AX55", {"text": "harbour", "name": "the harbour"}]},
              "messages": [{"role": "user", "content": "AX55 at the harbour?"}]}
    listed = fact_list.fact_list(load_conversation(json.dumps(bundle)), PlanSettings(model="gpt-4o"))
    assert [item.name for item in listed.items] == ["AX55", "the harbour"] and listed.declared
    assert listed.summary().startswith("Must-survive facts: 2, as the conversation declares them")


def test_the_list_s_edits_are_reset_by_a_new_conversation_and_carried_by_the_link():
    def suggest(model):
        from types import SimpleNamespace

        return SimpleNamespace(model=model or "gpt-4o", context_limit=8000, response_reserve=1000)

    kept: dict = {}
    query = {"unfollow": "Tomas Venn", "follow": "Orrin\nORD-7731", "present": "1"}
    state.settle(kept, conversation="a", suggest=suggest, models=["gpt-4o"], names=["truncate"], query=query)
    assert kept[state.MUST_SURVIVE] == {"off": ["Tomas Venn"], "added": ["Orrin", "ORD-7731"]}
    assert kept[state.PRESENTATION] is True
    link = state.link_of(kept)
    assert (link["unfollow"], link["follow"], link["present"]) == ("Tomas Venn", "Orrin\nORD-7731", "1")
    state.settle(kept, conversation="b", suggest=suggest, models=["gpt-4o"], names=["truncate"])
    assert kept[state.MUST_SURVIVE] == {"off": [], "added": []} and "follow" not in state.link_of(kept)
    kept[state.MUST_SURVIVE] = {"off": [], "added": ["x" * 1200]}
    assert "follow" not in state.link_of(kept)  # too long for an address (the page says so)


# -- the glanceable layer ------------------------------------------------------------------


def test_each_window_bar_is_the_whole_window_by_category_never_in_a_fate_colour():
    conversation = load_sample("roleplay")
    setup = suggested_setup(conversation)
    for name in BUILTIN_STRATEGIES:
        plan = contextfit.plan_prompt(conversation, setup.settings, context_strategy=name)
        view = category_bar.window_view(plan)
        assert sum(s.tokens for s in view.stretches) == plan.context_limit
        sent = [s for s in view.stretches if s.category not in (category_bar.FREE, category_bar.RESERVE)]
        assert sum(s.tokens for s in sent) == plan.prompt_tokens
        assert view.headline.startswith(("1.7K of 2.2K tokens", "1.8K of 2.2K tokens"))
    colours = {color.lower() for _, color in category_bar.CATEGORIES.values()} | {category_bar.OTHER[1].lower(),
                                                                                   category_bar.FRAMING[1].lower()}
    assert not colours & {color.lower() for color in charts.FATE_COLORS.values()}
    assert not colours & {shade.color.lower() for shade in charts.SHADES.values()}


def test_a_window_bar_escapes_what_it_shows():
    plan = contextfit.plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o", context_strategy="truncate")
    html = category_bar.window_html(plan)
    assert "<script" not in html and 'data-category="history"' in html and "128K tokens" in html


# -- strategies that coincide, and Squeeze ---------------------------------------------------


def test_coinciding_strategies_say_why_each_one_did_nothing_of_its_own():
    chat = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {i} about the harbour. " * 12}
            for i in range(12)]
    settings = PlanSettings(model="gpt-4o", context_limit=900, response_reserve=100)
    plans = dict(session_for(load_conversation(chat)).plans(settings, strategies=BUILTIN_STRATEGIES))
    reasons = compare_view.alike_reasons(compare_view.fitted(plans))
    assert reasons["vector-recall"] == "Same prompt as truncate: no lore or memory to rank."
    assert reasons["manual"] == "Same prompt as truncate: nothing is marked by hand for exclusion."
    assert reasons["clear-tool-results"] == "Same prompt as truncate: no tool results to clear."
    # summarize would fold the dropped turns, but not one sentence fits its summary size here: its own note says so
    assert reasons["summarize"] == ("Same prompt as truncate: no summary: no sentence of the dropped history fits the "
                                    "summary size.")
    assert "truncate" not in reasons  # the first of them


def test_clear_tool_results_coinciding_says_its_results_are_within_the_ones_it_keeps_whole():
    from contextfit.fitting.strategies.clear_tool_results import DEFAULT_KEEP

    call = {"id": "c1", "type": "function", "function": {"name": "look_up", "arguments": "{}"}}
    chat = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {i} about the harbour. " * 12}
            for i in range(10)]
    chat += [{"role": "assistant", "content": None, "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c1", "content": "Berth 7."}, {"role": "user", "content": "And?"}]
    plan = contextfit.plan_prompt(chat, model="gpt-4o", context_limit=700, response_reserve=100,
                                  context_strategy="clear-tool-results")
    assert alike.reason("clear-tool-results", plan) == f"one tool result, within the newest {DEFAULT_KEEP} it keeps whole"


def test_squeeze_lowers_the_window_until_two_strategies_differ():
    conversation = load_sample("support_chat")
    plan = contextfit.plan_prompt(conversation, model="gpt-4o", context_limit=128_000, response_reserve=16_384)
    same = {"truncate": plan, "manual": plan}
    asked = []

    def replan(limit, reserve):
        asked.append((limit, reserve))
        if len(asked) < 3:
            return same
        return {"truncate": plan, "manual": contextfit.plan_prompt([{"role": "user", "content": "x"}], model="gpt-4o")}

    found = alike.squeeze(plan, replan)
    assert len(asked) == 3 and (found.limit, found.reserve) == asked[-1]
    assert [limit for limit, _ in asked] == sorted((limit for limit, _ in asked), reverse=True)  # each one smaller
    assert all(reserve == pytest.approx(limit * 16_384 / 128_000, abs=1) for limit, reserve in asked)
    asked.clear()
    never = alike.squeeze(plan, lambda limit, reserve: asked.append(1) or same)
    assert len(asked) == len(alike.SQUEEZE_SHARES) and never is not None  # the smallest, even if they stay alike
    assert never.label.startswith("Squeeze: a ") and "-token window (reserve " in never.label



def test_squeeze_prefers_a_window_where_one_strategy_at_least_can_be_shipped():
    conversation = load_sample("support_chat")
    plan = contextfit.plan_prompt(conversation, model="gpt-4o", context_limit=128_000, response_reserve=16_384)
    question_only = contextfit.plan_prompt([{"role": "user", "content": "x"}], model="gpt-4o")
    mid_loop = [{"role": "user", "content": "What is the weather in Oslo this week, please?"},  # ends on a result
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 20 degrees, light wind from the west."}]
    no_question = contextfit.plan_prompt(mid_loop, model="gpt-4o", context_limit=50, response_reserve=0)
    less = contextfit.plan_prompt(mid_loop, model="gpt-4o", context_limit=35, response_reserve=0)
    assert alike.losses(no_question).refusal and alike.losses(less).refusal and not alike.losses(question_only).refusal
    asked = []

    def replan(limit, reserve):  # the first two windows differ, but only with plans that drop the question
        asked.append((limit, reserve))
        return {"truncate": less, "manual": no_question if len(asked) < 3 else question_only}

    assert alike.squeeze(plan, replan).limit == asked[2][0] and len(asked) == 3
    asked.clear()
    unshippable = alike.squeeze(plan, lambda limit, reserve: asked.append(limit) or {"a": less, "b": no_question})
    assert unshippable.limit == asked[0]  # none can be shipped anywhere: the first window where they differ


# -- an agent run ----------------------------------------------------------------------------


def test_an_agent_run_names_each_block_s_request_and_the_round_that_overflowed():
    conversation = load_conversation_file(shared_path(*AGENT_RUN))
    whole = contextfit.plan_prompt(conversation, model="gpt-4o", context_limit=128_000, response_reserve=1000)
    requests = rounds.requests_of(whole)
    assert [(r.name, r.trigger) for r in requests] == [
        ("turn 1", "the user's message m0"), ("turn 1 · round 1", "2 tool results"), ("turn 1 · round 2", "1 tool result")]
    assert not any(r.over_budget for r in requests) and rounds.is_agent_run(whole)
    assert [r.whole_prompt for r in requests] == sorted(r.whole_prompt for r in requests)
    # a budget between the second and the third request's prompt: the third overflowed
    limit = (requests[1].whole_prompt + requests[2].whole_prompt) // 2 + 100
    tight = contextfit.plan_prompt(conversation, model="gpt-4o", context_limit=limit, response_reserve=100)
    flagged = [r.number for r in rounds.requests_of(tight) if r.over_budget]
    assert flagged == [3] and rounds.requests_of(tight)[2].to_row()["budget"] == "overflows here"
    named = dict(zip([b.id for b in whole.blocks], rounds.block_requests(whole)))
    assert named["tools"] == rounds.EVERY_REQUEST and named["m0"] == "turn 1"
    assert named["m1"] == "turn 1 · round 1" and named["m4"] == "turn 1 · round 2"
    # the edit table's rows get the column (a row of no plan block: blank), a plain chat's do not
    rows, added = rounds.with_request_column([{"id": "m4"}, {"id": "tools"}, {"id": "gone"}], {"truncate": whole})
    assert added and [row["request"] for row in rows] == ["turn 1 · round 2", rounds.EVERY_REQUEST, ""]
    plain = contextfit.plan_prompt(load_sample("support_chat"), model="gpt-4o")
    assert rounds.with_request_column([{"id": "m0"}], {"failed": ValueError(), "truncate": plain}) == ([{"id": "m0"}], False)


def test_a_chat_without_tool_rounds_is_no_agent_run():
    plan = contextfit.plan_prompt(load_sample("support_chat"), model="gpt-4o")
    assert not rounds.is_agent_run(plan)


# -- what changed since the previous turn ----------------------------------------------------


def test_the_previous_turn_is_the_request_before_the_last_user_message():
    conversation = load_sample("roleplay")
    setup = suggested_setup(conversation)
    found = turn_diff.turn_diff(conversation, setup.settings, "truncate")
    assert isinstance(found.previous, PromptPlan) and found.previous.prompt_tokens < found.latest.prompt_tokens + 500
    added = [line[1:] for line in found.lines if line.startswith("+") and not line.startswith("+++")]
    last_user = conversation.messages[-1]["content"]
    assert last_user.splitlines()[0] in added  # the new question is among the lines added
    assert found.summary().startswith("Under truncate, the prompt ")
    assert turn_diff.turn_diff([{"role": "user", "content": "Hi"}], setup.settings, "truncate") is None
    big = {"role": "system", "content": "Rule. " * 400, "pinned": True}  # nothing fits beside it
    chat = [big, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Again"}]
    with pytest.raises(ContextfitError):  # a request that cannot be planned is said, not taken for "one request"
        turn_diff.turn_diff(chat, PlanSettings(model="gpt-4o", context_limit=300, response_reserve=50), "truncate")


def test_a_diff_table_row_has_no_none_and_separates_thousands():
    row = diff.BlockDifference("m1", "user", "history", 12_345, None, "kept", diff.ABSENT, "within_budget", None).to_row("a", "b")
    assert row["a: tokens"] == "12,345" and row["b: tokens"] == "—" and None not in row.values()
