"""The recommendation: one decision under a priority, ties said as ties, a plan that drops the
question or a pinned block never recommended, and the Lost lines in words."""

from __future__ import annotations

import pytest
from support.paths import shared_path

import contextfit
from contextfit import FitSession
from contextfit.errors import InvalidSettings
from contextfit.inputs.formats import load_conversation_file
from contextfit.inputs.samples import load_sample
from contextfit.pipeline.plan import PlanBlock
from contextfit.pipeline.settings import PlanSettings
from contextfit.replays.answer import recommend, recommendation_for
from contextfit.replays.losses import Losses, losses
from contextfit.replays.recommend import Outcome, Totals, decide
from contextfit.replays.run import replay

ROLEPLAY = load_sample("roleplay")


def outcome(label, *, tokens=1000, cost=0.004, facts=(), cache=None, band=0.0, losses_=None, error=None, totals=None):
    return Outcome(label, error=error, losses=losses_ or Losses(dropped=("turn 1",)), prompt_tokens=tokens, band=band,
                   has_question=True, facts=tuple(facts), cost_request=cost, cached_share=cache, totals=totals)


# -- the decision, on evidence made by hand


def test_each_priority_ranks_by_its_own_measure():
    keeper = outcome("keeper", cost=0.006, facts=[("A", "verbatim"), ("B", "summary")], cache=0.1)
    cheap = outcome("cheap", cost=0.002, facts=[("A", "verbatim"), ("B", "lost")], cache=0.2)
    cached = outcome("cached", cost=0.004, facts=[("A", "lost"), ("B", "lost")], cache=0.9)
    evidence = [keeper, cheap, cached]
    assert decide(evidence, "retention").strategy == "keeper"
    assert decide(evidence, "cost").strategy == "cheap"
    assert decide(evidence, "cache").strategy == "cached"
    answer = decide(evidence)  # retention is the default
    assert answer.strategy == "keeper" and answer.runner_up == "cheap" and answer.priority == "retention"
    assert answer.sentence == (
        "Ship keeper: it keeps your question and all 2 must-survive facts where cheap keeps 1 of them, reads 10% of "
        "its prompt from the cache where cheap reads 20%, sends as many tokens as cheap and costs $4.00 more per "
        "1,000 conversations; it loses turn 1.")
    assert answer.loses == "loses turn 1" and answer.cost_per_1000_conversations == pytest.approx(6.0)
    assert set(answer.to_dict()) >= {"strategy", "priority", "sentence", "loses", "costPer1000Conversations"}


def test_equal_scores_are_a_tie_with_no_strategy():
    same = [outcome("a"), outcome("b"), outcome("c", cost=0.005)]
    answer = decide(same, "cost")
    assert answer.strategy is None and answer.tied == ("a", "b") and answer.loses is None
    assert answer.cost_per_1000_conversations is None
    # a and b send the same prompt (the same tokens, the same losses): the room still gets an answer
    assert answer.sentence.startswith("Any of a and b will do: they send the same prompt here — each keeps")
    assert "loses turn 1" in answer.sentence
    apart = [outcome("a"), outcome("b", losses_=Losses(dropped=("turn 2",)))]  # equal figures, different losses
    assert decide(apart, "cost").sentence.startswith("No single answer for cost: a and b tie")


def test_a_near_tie_within_the_count_band_is_a_tie_and_outside_it_is_not():
    low, high = outcome("low", tokens=1000, cost=0.00400), outcome("high", tokens=1030, cost=0.00412)
    assert decide([low, high], "cost").strategy == "low"  # exact counts: 3% apart is a difference
    banded = [outcome("low", tokens=1000, cost=0.00400, band=0.05), outcome("high", tokens=1030, cost=0.00412, band=0.05)]
    tie = decide(banded, "cost")
    assert tie.strategy is None and "within the count band of the approximate profile" in tie.sentence
    wide = [outcome("low", tokens=1000, cost=0.0040, band=0.05), outcome("high", tokens=1200, cost=0.0048, band=0.05)]
    assert decide(wide, "cost").strategy == "low"  # 17% apart: beyond a 5% band


@pytest.mark.parametrize("lost, why", [
    (Losses(question="drops your question"), "drops your question"),
    (Losses(question="folds your question into its summary"), "folds your question into its summary"),
    (Losses(pinned=("m3",)), "drops the pinned block m3"),
])
def test_a_plan_that_loses_the_question_or_a_pinned_block_is_never_recommended(lost, why):
    # the cheapest, keeping every fact, with the best cache: it would win every priority
    tempting = outcome("tempting", cost=0.001, facts=[("A", "verbatim")], cache=0.9, losses_=lost)
    honest = outcome("honest", cost=0.009, facts=[("A", "lost")], cache=0.0)
    for priority in ("retention", "cost", "cache"):
        answer = decide([tempting, honest], priority)
        assert answer.strategy == "honest", priority
        assert answer.not_recommended == {"tempting": why}
    assert decide([tempting], "cost").strategy is None
    assert decide([tempting]).sentence.startswith(f"No strategy can be shipped as it stands: tempting {why}.")


def test_a_strategy_that_could_not_fit_is_never_recommended():
    answer = decide([outcome("broken", cost=0.0, error="TOKEN_BUDGET_EXCEEDED: no room"), outcome("fine")])
    assert answer.strategy == "fine" and "the only choice: broken could not fit" in answer.sentence


def test_the_same_evidence_gives_the_same_sentence_and_an_unknown_priority_is_refused():
    evidence = [outcome("a", cost=0.003), outcome("b", cost=0.004)]
    assert {decide(evidence, "cost").sentence for _ in range(3)} == {decide(list(evidence), "cost").sentence}
    with pytest.raises(InvalidSettings, match="priority must be one of retention, cost, cache"):
        decide(evidence, "speed")


def test_a_replay_decides_over_every_request():
    everywhere = Totals(requests=12, retention=0.75, tokens_sent=15_000, cost=0.047, cache_hit_rate=0.0)
    evidence = [outcome("a", facts=[("A", "verbatim")], totals=everywhere),
                outcome("b", facts=[("A", "lost")], totals=Totals(12, 0.5, 14_000, 0.046, 0.0))]
    answer = decide(evidence, "retention", "conversation")
    assert answer.basis == "conversation" and answer.cost_per_1000_conversations == pytest.approx(47.0)
    assert "keeps your question and 75% of the must-survive facts over the 12 requests where b keeps 50%" in answer.sentence


# -- on real plans


def _agent_chat():
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "weather", "arguments": f'{{"city": "{city}"}}'}}
             for i, city in enumerate(["Paris", "Rome"])]
    return [{"role": "system", "content": "You are a weather agent."},
            {"role": "user", "content": "What is the weather in Paris and in Rome this weekend? " + "Please be thorough. " * 20},
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c0", "content": "Paris: sunny, 24C. " * 10},
            {"role": "tool", "tool_call_id": "c1", "content": "Rome: rain, 18C. " * 10}]


def test_an_agent_mid_loop_whose_question_every_strategy_drops_gets_no_recommendation():
    # the chat ends on tool results: the question is not the current input, so nothing protects it
    plans = dict(FitSession(_agent_chat()).plans(model="gpt-4o", context_limit=400, response_reserve=100))
    assert not plans["truncate"].blocks[1].included and plans["summarize"].blocks[1].reason == "summarized"
    answer = recommend(plans)
    assert answer.strategy is None
    assert answer.not_recommended["summarize"] == "folds your question into its summary"
    assert answer.not_recommended["truncate"] == "drops your question"
    # a strategy that clears the tool results instead keeps it, and is the one to ship
    cleared = {"strategy": "clear-tool-results", "label": "clear all", "options": {"keep": 0}}
    answer = recommendation_for(_agent_chat(), model="gpt-4o", context_limit=400, response_reserve=100,
                                strategies=["truncate", "summarize", cleared])
    assert answer.strategy == "clear all"
    assert answer.sentence.startswith("Ship clear all (the only choice: truncate drops your question and summarize "
                                      "folds your question into its summary): it keeps your question")


def test_the_recorded_agent_run_at_a_tight_limit_is_never_recommended():
    path = shared_path("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json")
    answer = recommendation_for(load_conversation_file(path), model="gpt-4o", context_limit=430, response_reserve=50)
    assert answer.strategy is None
    assert set(answer.not_recommended.values()) == {"drops your question", "folds your question into its summary"}


def test_recommendation_for_is_the_latest_request_priced_with_the_one_before():
    answer = recommendation_for(ROLEPLAY, model="gpt-4o")
    full = replay(ROLEPLAY, model="gpt-4o")
    assert answer.basis == full.recommendation.basis == "request"
    assert answer.sentence == full.recommendation.sentence  # Compare's answer is Replay's: the faces agree
    assert full.recommend(basis="conversation").basis == "conversation"  # the longer view, asked for
    with pytest.raises(InvalidSettings, match="needs a replay of every request"):
        replay(ROLEPLAY, model="gpt-4o", last=2).recommend(basis="conversation")
    for label in full.totals:
        mine, whole = answer.outcome(label), full.recommendation.outcome(label)
        # the two-request replay prices the latest request as the whole replay does
        assert mine.cost_request == pytest.approx(whole.cost_request) and mine.prompt_tokens == whole.prompt_tokens
        assert mine.lost_line() == whole.lost_line()
    assert recommend(full).sentence == full.recommendation.sentence  # a replay decides over what it replayed
    assert recommend(answer, "cost").sentence == decide(answer.outcomes, "cost", "request").sentence


# -- the Lost lines


def test_the_lost_lines_of_the_roleplay_sample_say_turns_lore_and_memories():
    plans = dict(FitSession(ROLEPLAY).plans(PlanSettings.from_keywords(model="gpt-4o")))
    lines = {name: losses(plan).line() for name, plan in plans.items()}
    assert lines["truncate"] == "Lost: lore “The Lamp of Orrin”, “The Drowned Bell”, 2 example chats and memories 1–2."
    assert lines["summarize"] == ("Lost: lore “The Lamp of Orrin”, “The Drowned Bell”, 2 example chats and memories "
                                  "1–4. Folded into the summary: the greeting and turn 1.")
    assert lines["manual"].endswith("2 example chats and part of turn 9.")  # the out-of-character aside
    assert lines["clear-tool-results"] == ("Lost: lore “The Lamp of Orrin”, “The Drowned Bell”. Cleared (placeholder "
                                           "sent): the read_ledger result of turn 2.")
    assert lines["fact-ledger"].endswith("Folded into the ledger: the greeting.")  # its block of facts, not a summary
    assert losses(plans["summarize"]).words() == ("loses lore “The Lamp of Orrin”, “The Drowned Bell”, 2 example chats "
                                                  "and memories 1–4, and folds the greeting and turn 1 into its summary")


def test_one_memory_lost_is_quoted_cut_at_a_word():
    memory = PlanBlock(0, "memory:1", "system", "memory", "Tomas promised his sister he would be home before the winter.",
                       14, False, "low_relevance", message={"role": "system", "content": "…", "meta": {"kind": "memory"}})

    class Plan:
        blocks = [memory]

    assert losses(Plan()).line() == "Lost: memory 1 (“Tomas promised his sister he would be…”)."


def test_a_lost_fact_and_a_lost_pin_are_named():
    block = PlanBlock(0, "m0", "user", "history", "Pinned: ORD-7", 5, False, "over_budget",
                      message={"role": "user", "content": "Pinned: ORD-7", "pinned": True})
    question = PlanBlock(1, "m1", "user", "history", "Where?", 3, True, "current_input",
                         message={"role": "user", "content": "Where?"})

    class Plan:
        blocks = [block, question]

    found = losses(Plan(), ["ORD-7"])
    assert found.refusal == "drops the pinned block m0"
    assert found.line() == "Lost: the pinned block m0. Facts no longer sent: “ORD-7”."


def test_a_capped_tool_result_is_said_capped_and_a_cleared_one_cleared():
    chat = load_sample("coding_agent")
    capped = contextfit.plan_prompt(chat, model="gpt-4o", context_strategy="truncate", tool_result_cap=50)
    line = losses(capped).line()
    assert "Capped (head and tail sent): 4 tool results of turn 1." in line and "Cleared" not in line
    assert "sends only the head and tail of 4 tool results of turn 1" in losses(capped).words()
    assert losses(capped).to_dict()["capped"] == ["4 tool results of turn 1"]
    # clear-tool-results clearing results of a capped conversation: those it cleared read cleared
    cleared = contextfit.plan_prompt(chat, model="gpt-4o", context_strategy="clear-tool-results", tool_result_cap=50,
                                     context_limit=1000, response_reserve=100)
    said = losses(cleared)
    assert said.cleared == ("the read_file result of turn 1",) and said.capped == ("3 tool results of turn 1",)


def test_the_cache_priority_says_when_the_cache_decides_nothing():
    even = [outcome("a", cost=0.003, cache=0.0), outcome("b", cost=0.004, cache=0.0)]
    answer = decide(even, "cache")
    assert answer.strategy == "a" and answer.sentence.endswith(
        "; no strategy reads more from the prompt cache than another here (0% each), so cost decided.")
    assert ". " not in answer.sentence  # one sentence still
    uneven = [outcome("a", cost=0.003, cache=0.0), outcome("b", cost=0.004, cache=0.5)]
    assert decide(uneven, "cache").strategy == "b" and "so cost decided" not in decide(uneven, "cache").sentence
    assert "so cost decided" not in decide(even, "cost").sentence
