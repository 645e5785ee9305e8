"""A replay appends each turn to a FitSession: every turn must still be what
planning that prefix from scratch gives, for every strategy (stable_prefix too)."""

from __future__ import annotations

import pytest
from support.conversations import WORDS, chats_with_long_results, conversations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.replays import check_against_fresh_plans

import contextfit
from contextfit.pipeline.plan import plan_prompt
from contextfit.replays.run import request_positions

def _with_entities(draw, chat: list[dict]) -> list[dict]:
    """Sprinkle identifiers, numbers and names that later user turns refer back to."""
    names = ["ORD-1234", "Ada Lovelace", "42", "parse_args()", "Zenith\nExpress", "v2"]
    out = []
    for message in chat:
        if isinstance(message.get("content"), str) and draw(st.booleans()):
            message = {**message, "content": message["content"] + " " + draw(st.sampled_from(names))}
        out.append(message)
    return out


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data(), conversations(max_turns=16), st.integers(60, 400), st.sampled_from(["gpt-4o", "claude-sonnet-4"]))
def test_replay_matches_planning_every_prefix_from_scratch(data, chat, budget, model):
    chat = _with_entities(data.draw, chat)
    if not request_positions(chat):
        chat = [*chat, {"role": "user", "content": "Any news on " + " ".join(WORDS[:3]) + "?"}]
    check_against_fresh_plans(chat, model, budget + 100, 100)


@settings(max_examples=examples(25), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chats_with_long_results(max_turns=16), st.integers(300, 1500))
def test_a_replay_with_capped_results_matches_planning_every_prefix(chat, budget):
    """The capped copies and their analysis are carried from request to request: each request must
    still be what planning that prefix from scratch with the cap gives."""
    if not request_positions(chat):
        chat = [*chat, {"role": "user", "content": "Any news?"}]
    check_against_fresh_plans(chat, "gpt-4o", budget + 100, 100)


def test_replay_matches_fresh_plans_when_earlier_reasoning_is_dropped():
    # o3 drops the reasoning of earlier turns: appending the next user message changes an earlier block
    chat = [{"role": "system", "content": "Be brief."}]
    for turn in range(6):
        chat += [{"role": "user", "content": f"Question {turn} about ORD-{turn}?"},
                 {"role": "assistant", "content": f"Answer {turn}.", "reasoning_content": "think " * (40 + turn)}]
    chat.append({"role": "user", "content": "And ORD-3?"})
    check_against_fresh_plans(chat, "o3", 700, 100)


def test_a_session_strips_earlier_reasoning_after_an_append():
    session = contextfit.FitSession([{"role": "user", "content": "Hi"},
                                     {"role": "assistant", "content": "Hello", "reasoning_content": "greet " * 50}])
    session.plan("truncate", model="o3")
    session.append({"role": "user", "content": "Bye"})
    assert session.plan("truncate", model="o3").prompt_tokens == plan_prompt(session.messages, model="o3").prompt_tokens


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4"])
def test_long_synthetic_chat_matches_fresh_plans(model):
    from support.synthetic import synthetic

    chat = synthetic(160).messages
    check_against_fresh_plans(chat, model, 6000, 1000)
