"""A replay appends each turn to a FitSession: every turn must still be what
planning that prefix from scratch gives, for every strategy (stable_prefix too)."""

from __future__ import annotations

import pytest
from conversations import WORDS, chats_with_long_results, conversations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import contextfit
from contextfit.pipeline.plan import plan_prompt
from contextfit.replays.run import ENTITY_RULE, replay, request_positions, variants
from contextfit.replays.facts import contains_word, entities
from contextfit.inputs import messages as msg
from contextfit.tokens.sent import sent_counter, trace

VARIANTS = ["truncate", "summarize", "clear-tool-results", "vector-recall", "manual",
            {"strategy": "truncate", "options": {"stable_prefix": True}},
            {"strategy": "summarize", "options": {"stable_prefix": True}},
            {"strategy": "clear-tool-results", "options": {"stable_prefix": True}},
            # options of the refits that carry truncate's walk (test_carried_refits.py)
            {"strategy": "summarize", "options": {"summary_tokens": 30, "summary_scan_chars": 300}},
            {"strategy": "vector-recall", "options": {"relevance_window": 2}},
            {"strategy": "clear-tool-results", "options": {"keep": 1, "clear_at_least": 20, "exclude_tools": ["lookup"]}},
            # capped results, carried from request to request (fitting/result_cap.py)
            {"strategy": "truncate", "options": {"tool_result_cap": 40}},
            {"strategy": "clear-tool-results", "options": {"tool_result_cap": 60}}]


def _common(a: list, b: list) -> int:
    j = 0
    while j < min(len(a), len(b)) and a[j] == b[j]:
        j += 1
    return j


def _check_against_fresh_plans(chat: list[dict], model: str, limit: int, reserve: int) -> None:
    result = replay(chat, model=model, context_limit=limit, response_reserve=reserve, strategies=VARIANTS,
                    facts=ENTITY_RULE)  # the entity rule, turn by turn: the oracle below is its slow form
    requests = request_positions(chat)
    for variant in VARIANTS:
        name = variant if isinstance(variant, str) else variant["strategy"]
        options = {} if isinstance(variant, str) else variant["options"]
        label = variants([variant])[0].label
        previous = None
        for turn, position in zip(result.turns[label], requests):
            try:
                plan = plan_prompt(chat[: position + 1], model=model, context_limit=limit, response_reserve=reserve,
                                   context_strategy=name, **options)
            except contextfit.ContextfitError as exc:
                assert turn.error == exc.code
                previous = None
                continue
            assert turn.error is None
            assert (turn.prompt_tokens, turn.sent_blocks) == (plan.prompt_tokens, len(plan.fit.kept))
            # the cache prefix, the slow way: whole provider messages from the start, the blocks fully inside them
            if previous is None:
                assert turn.shared_tokens == 0
            else:
                traced = trace(plan.fit.kept, plan.template)
                j = _common(previous.provider_messages, plan.provider_messages)
                inside = {p for s in traced.sources[:j] for p in s} - {p for s in traced.sources[j:] for p in s}
                counter = sent_counter(contextfit.token_counter(model), plan.template)
                shared = sum(counter.count_message(plan.fit.kept[p]) for p in inside)
                if previous.provider_system == plan.provider_system:  # Anthropic's system text comes first
                    shared += sum(counter.count_message(plan.fit.kept[p]) for p in traced.system_sources)
                elif plan.provider_system is not None or previous.provider_system is not None:
                    shared = 0
                assert turn.shared_tokens == min(shared, plan.prompt_tokens - counter.base_tokens)
            # the default entity rule, the slow way: the whole earlier text, every sent block; a tool
            # round's request reads its turn's user message
            anchor = next((p for p in range(position, -1, -1) if chat[p].get("role") == "user" and not any(
                isinstance(part, dict) and str(part.get("type", "")).endswith("tool_result")
                for part in (chat[p]["content"] if isinstance(chat[p].get("content"), list) else ()))), position)
            earlier = "\n".join(msg.message_text(m) for m in chat[:anchor])
            in_force = [e for e in entities(msg.message_text(chat[anchor])) if contains_word(earlier, e)]
            assert [fact.name for fact in turn.facts] == in_force
            current = msg.explicit_id(chat[anchor]) or f"m{anchor}"
            plain = "\n".join(msg.message_text(b) for b in plan.fit.kept if msg.kind_of(b) != msg.SUMMARY
                              and not (msg.message_id(b, -1) == current and msg.role_of(b) == "user"))
            summary = "\n".join(msg.message_text(b) for b in plan.fit.kept if msg.kind_of(b) == msg.SUMMARY)
            assert [fact.status for fact in turn.facts] == [
                "verbatim" if contains_word(plain, e) else "summary" if contains_word(summary, e) else "lost"
                for e in in_force]
            previous = plan


def _with_entities(draw, chat: list[dict]) -> list[dict]:
    """Sprinkle identifiers, numbers and names that later user turns refer back to."""
    names = ["ORD-1234", "Ada Lovelace", "42", "parse_args()", "Zenith\nExpress", "v2"]
    out = []
    for message in chat:
        if isinstance(message.get("content"), str) and draw(st.booleans()):
            message = {**message, "content": message["content"] + " " + draw(st.sampled_from(names))}
        out.append(message)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data(), conversations(max_turns=16), st.integers(60, 400), st.sampled_from(["gpt-4o", "claude-sonnet-4"]))
def test_replay_matches_planning_every_prefix_from_scratch(data, chat, budget, model):
    chat = _with_entities(data.draw, chat)
    if not request_positions(chat):
        chat = [*chat, {"role": "user", "content": "Any news on " + " ".join(WORDS[:3]) + "?"}]
    _check_against_fresh_plans(chat, model, budget + 100, 100)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chats_with_long_results(max_turns=16), st.integers(300, 1500))
def test_a_replay_with_capped_results_matches_planning_every_prefix(chat, budget):
    """The capped copies and their analysis are carried from request to request: each request must
    still be what planning that prefix from scratch with the cap gives."""
    if not request_positions(chat):
        chat = [*chat, {"role": "user", "content": "Any news?"}]
    _check_against_fresh_plans(chat, "gpt-4o", budget + 100, 100)


def test_replay_matches_fresh_plans_when_earlier_reasoning_is_dropped():
    # o3 drops the reasoning of earlier turns: appending the next user message changes an earlier block
    chat = [{"role": "system", "content": "Be brief."}]
    for turn in range(6):
        chat += [{"role": "user", "content": f"Question {turn} about ORD-{turn}?"},
                 {"role": "assistant", "content": f"Answer {turn}.", "reasoning_content": "think " * (40 + turn)}]
    chat.append({"role": "user", "content": "And ORD-3?"})
    _check_against_fresh_plans(chat, "o3", 700, 100)


def test_a_session_strips_earlier_reasoning_after_an_append():
    session = contextfit.FitSession([{"role": "user", "content": "Hi"},
                                     {"role": "assistant", "content": "Hello", "reasoning_content": "greet " * 50}])
    session.plan("truncate", model="o3")
    session.append({"role": "user", "content": "Bye"})
    assert session.plan("truncate", model="o3").prompt_tokens == plan_prompt(session.messages, model="o3").prompt_tokens


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4"])
def test_long_synthetic_chat_matches_fresh_plans(model):
    from bench.conversations import synthetic

    chat = synthetic(160).messages
    _check_against_fresh_plans(chat, model, 6000, 1000)
