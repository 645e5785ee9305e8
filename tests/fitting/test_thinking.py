"""``keep_thinking``: older turns' reasoning is dropped before whole turns (issue 15)."""

from __future__ import annotations

import copy
import json

import pytest
from support.paths import shared_path
from support.conversations import word_count_counter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.promises import check_promises, share_budget, shift_or_refusal
from support.reasoning import THOUGHT, chats_with_reasoning, claude_chat

import contextfit
from contextfit.fitting import results as r
from contextfit.inputs.formats import load_conversation
from contextfit.inputs.messages import kind_of

COUNTER = contextfit.token_counter("claude-sonnet-4")


def fit(chat, budget, strategy="truncate", **options):
    return contextfit.shift_context(chat, COUNTER, budget, strategy=strategy, interceptors=(), template="anthropic", **options)


def thinking_parts(messages) -> int:
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for p in m["content"] if p.get("type") in ("thinking", "redacted_thinking"))


@pytest.mark.parametrize("strategy", ["truncate", "summarize", "clear-tool-results"])
def test_by_default_older_reasoning_goes_before_any_turn(strategy):
    chat = claude_chat()
    total = COUNTER(chat)
    one_thought = COUNTER.count_message({"role": "assistant", "content": [{"type": "thinking", "thinking": THOUGHT}]})
    result = fit(chat, total - 2 * one_thought, strategy)
    assert result.excluded == [chat[2], chat[4], chat[6]]  # each replaced by its copy without the thinking
    assert all(d.reason != r.OVER_BUDGET for d in result.decisions)  # no turn was dropped
    assert thinking_parts(result.kept) < thinking_parts(chat)
    # the oldest reasoning went first, and the current tool-use turn kept its thinking
    stripped = [d.sources[0] for d in result.decisions if d.index is None and d.reason == r.COMPRESSED]
    assert stripped == sorted(stripped) and stripped[0] == 2
    assert result.kept[-2] is chat[-2] and thinking_parts([chat[-2]]) == 1
    assert COUNTER(result.kept) <= total - 2 * one_thought


def test_keep_thinking_true_drops_turns_as_before():
    chat = claude_chat()
    one_thought = COUNTER.count_message({"role": "assistant", "content": [{"type": "thinking", "thinking": THOUGHT}]})
    result = fit(chat, COUNTER(chat) - 2 * one_thought, keep_thinking=True)
    assert result.truncated == [] and any(d.reason == r.OVER_BUDGET for d in result.decisions)


def test_keep_thinking_false_drops_all_older_reasoning_even_when_it_fits():
    chat = claude_chat()
    result = fit(chat, COUNTER(chat), keep_thinking=False)
    assert thinking_parts(result.kept) == 1  # only the current tool-use turn's
    assert all(d.reason != r.OVER_BUDGET for d in result.decisions)
    plan = contextfit.plan_prompt(chat, model="claude-sonnet-4", keep_thinking=False)
    sent = [p for m in plan.provider_messages for p in m["content"] if p.get("type") == "thinking"]
    assert len(sent) == 1


@pytest.mark.parametrize("strategy", ["truncate", "summarize"])
def test_keep_thinking_false_drops_older_reasoning_for_each_strategy(strategy):
    chat = claude_chat()
    result = fit(chat, COUNTER(chat), strategy, keep_thinking=False)
    assert thinking_parts(result.kept) == 1 and not any(d.reason == r.OVER_BUDGET for d in result.decisions)
    assert [d.reason for d in result.decisions if d.index is None] == [r.COMPRESSED] * 5


def test_summarize_summarizes_what_still_does_not_fit_without_the_reasoning():
    chat = claude_chat(8)
    for i, message in enumerate(chat[1:17]):  # sentences worth quoting in a summary
        if message["role"] == "user":
            message["content"] = f"Question {i}: why does the ledger parser reject the date column of export {i}?"
        else:
            message["content"][1]["text"] = f"Answer {i}: the parser expects four digit years in export {i}."
    one_thought = COUNTER.count_message({"role": "assistant", "content": [{"type": "thinking", "thinking": THOUGHT}]})
    thinned = COUNTER(chat) - 8 * one_thought  # every older turn's reasoning gone: it would just fit
    result = fit(chat, thinned - 150, "summarize", summary_tokens=80)
    assert COUNTER(result.kept) <= thinned - 150
    assert thinking_parts(result.kept) == 1  # all older reasoning went first
    summary = next(m for m in result.kept if kind_of(m) == "summary")
    assert "thinking" not in str(summary) and "Let me think" not in summary["content"]
    summarized = [d.index for d in result.decisions if d.reason == r.SUMMARIZED and d.index is not None]
    compressed = [d.sources[0] for d in result.decisions if d.reason == r.COMPRESSED]
    assert compressed and set(compressed) <= set(summarized)  # a message sent without its reasoning
    assert any(i not in compressed for i in summarized)  # and history folded into the summary
    # the same with keep_thinking=True: no message loses its reasoning, turns are summarized whole
    whole = fit(chat, thinned - 150, "summarize", summary_tokens=80, keep_thinking=True)
    assert not any(d.reason == r.COMPRESSED for d in whole.decisions)


def test_bad_keep_thinking_is_refused():
    with pytest.raises(contextfit.ContextfitError) as caught:
        fit(claude_chat(), 10_000, keep_thinking="yes")
    assert caught.value.code == "INVALID_SETTINGS"


def test_deepseek_reasoning_content_of_older_turns_is_not_sent():
    lines = shared_path("llama-factory", "reason_tool_use_demo_50.jsonl").read_text().splitlines()
    messages = [*load_conversation(lines[1]).messages, {"role": "user", "content": "Thanks. And the next one?"}]
    assert sum(1 for m in messages if m.get("reasoning_content")) == 4
    counter = contextfit.token_counter("deepseek-v3")
    result = contextfit.shift_context(messages, counter, counter(messages), keep_thinking=False, interceptors=())
    assert not any(m.get("reasoning_content") for m in result.kept)
    assert len(result.kept) == len(messages) and counter(result.kept) < counter(messages)
    tight = contextfit.shift_context(messages, counter, counter(messages) - 50, interceptors=())
    assert all(d.reason != "over_budget" for d in tight.decisions)  # by default the reasoning went first


SETTINGS = settings(max_examples=examples(80), suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(chats_with_reasoning(), st.floats(-0.15, 1.1), st.sampled_from(["truncate", "summarize", "clear-tool-results"]),
       st.sampled_from([None, False, True]))
def test_keep_thinking_keeps_every_promise(messages, share, strategy, keep):
    budget = share_budget(messages, share)
    before = copy.deepcopy(messages)
    result = shift_or_refusal(messages, word_count_counter, budget, strategy, keep_thinking=keep)
    assert messages == before
    check_promises(messages, word_count_counter, budget, strategy, result)


# -- an agent in the middle of its loop: the chat ends on tool results ------------------------------


def agent_mid_loop() -> list[dict]:
    """An older turn with reasoning, then the current turn: a question and two tool rounds
    (OpenAI shape, DeepSeek-style ``reasoning_content``), ending on the last round's result."""
    call = lambda link: [{"id": link, "type": "function", "function": {"name": "read", "arguments": "{}"}}]  # noqa: E731
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Where is the bug?"},
        {"role": "assistant", "content": "In the handler.", "reasoning_content": THOUGHT},
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": None, "reasoning_content": THOUGHT, "tool_calls": call("c1")},
        {"role": "tool", "tool_call_id": "c1", "content": "def handler(): ..."},
        {"role": "assistant", "content": None, "reasoning_content": THOUGHT, "tool_calls": call("c2")},
        {"role": "tool", "tool_call_id": "c2", "content": "tests: 3 failed"},
    ]


OPENAI_COUNT = contextfit.token_counter("gpt-4o")


@pytest.mark.parametrize("keep", [None, False])
@pytest.mark.parametrize("strategy", ["truncate", "summarize", "clear-tool-results"])
def test_the_current_tool_use_turn_keeps_its_reasoning_mid_loop(strategy, keep):
    """Everything after the last user message is the current turn: with the chat ending on
    tool results its reasoning stays, and older turns give way first (it was dropped first)."""
    chat = agent_mid_loop()
    one_thought = OPENAI_COUNT.count_message({"role": "assistant", "content": None, "reasoning_content": THOUGHT})
    budget = OPENAI_COUNT(chat) - one_thought - 20  # the older turn's reasoning alone is not enough
    result = contextfit.shift_context(chat, OPENAI_COUNT, budget, strategy=strategy, keep_thinking=keep, interceptors=())
    assert OPENAI_COUNT(result.kept) <= budget
    assert any(m is chat[6] for m in result.kept), "the newest round is sent with its reasoning"
    stripped = [d.sources[0] for d in result.decisions if d.index is None and d.reason == r.COMPRESSED]
    assert 4 not in stripped and 6 not in stripped
    assert result.decisions[2].included is False  # the older turn went: its reasoning first, then the rest


def test_the_current_turn_of_a_finished_exchange_is_not_held_back():
    """A chat that ends on a user message has no tool-use turn in flight: reasoning goes as before."""
    chat = [*agent_mid_loop()[:3], {"role": "user", "content": "Thanks."}]
    assert OPENAI_COUNT(chat) > 0
    result = contextfit.shift_context(chat, OPENAI_COUNT, OPENAI_COUNT(chat) - 5, interceptors=())
    assert [d.reason for d in result.decisions if d.index is None] == [r.COMPRESSED]


def test_a_mid_loop_plan_sends_the_current_turns_reasoning():
    """The DeepSeek agent cassette's last request, under a tight limit: the provider view already
    leaves earlier turns' reasoning out; fitting must not strip the current turn's."""
    body = json.loads(shared_path("pydantic-ai", "openai_chat",
                                  "test_deepseek_deferred_capability_with_thinking.request.json").read_text())
    roomy = contextfit.plan_prompt(body["messages"], model="deepseek-reasoner", tools=body["tools"])
    tight = contextfit.plan_prompt(body["messages"], model="deepseek-reasoner", tools=body["tools"],
                                   context_limit=roomy.prompt_tokens - 30 + 8192, response_reserve=8192)
    assert tight.prompt_tokens <= tight.budget < roomy.prompt_tokens
    assert not [block for block in tight.blocks if block.reason == r.COMPRESSED]  # no reasoning stripped
    sent = [m for m in tight.provider_messages if m.get("role") == "assistant"]
    assert sent and sent[-1].get("reasoning_content") == body["messages"][-3]["reasoning_content"]
