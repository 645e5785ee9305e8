"""Reasoning as its own kind: sent, dropped and counted as each provider does (issue 15)."""

from __future__ import annotations

import copy
import csv
import io
import json

import pytest
from support.paths import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.reasoning import THOUGHT, chats_with_reasoning, claude_chat

import contextfit
from contextfit.fitting import results as r
from contextfit.pipeline import session as session_module
from contextfit.inputs.messages import explicit_id
from contextfit.inputs.formats import load_conversation
from contextfit.serving.audit import audit_from_plan
from contextfit.tokens import reasoning
from contextfit.tokens.sent import sent_counter
from contextfit.dashboard import charts, editor, exports
from contextfit.dashboard.setup import suggested_setup
from contextfit.tokens.models import get_model

SETTINGS = settings(max_examples=examples(80), suppress_health_check=[HealthCheck.too_slow])


def sent_tokens(plan) -> int:
    """The count of exactly what the plan sends, by an independent render of it."""
    counter = contextfit.token_counter(plan.model)
    system = counter.count_message({"role": "system", "content": plan.provider_system}) if plan.provider_system else 0
    return counter(plan.provider_messages) + system + plan.tools_tokens


def thinking_sent(plan) -> int:
    return sum(1 for m in plan.provider_messages if isinstance(m.get("content"), list)
               for p in m["content"] if p.get("type") in ("thinking", "redacted_thinking"))


def thinking_parts(message) -> int:
    content = message.get("content")
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") in ("thinking", "redacted_thinking")) \
        if isinstance(content, list) else 0


def plan_id(message, position):
    """The id a plan gives input message ``position``: its own, else ``m<position>`` (assembly's)."""
    return str(explicit_id(message)) if explicit_id(message) is not None else f"m{position}"


def rows(plan, kind="reasoning"):
    return [b for b in plan.blocks if b.kind == kind]


def test_claude_drops_earlier_turns_thinking_and_sends_the_current_tool_use_turns():
    chat = claude_chat(3)  # three answered turns with thinking, then a tool-use turn
    plan = contextfit.plan_prompt(chat, model="claude-sonnet-4")
    assert thinking_sent(plan) == 1  # only the current tool-use turn's
    assert plan.prompt_tokens == sent_tokens(plan)
    found = rows(plan)
    assert [(b.included, b.reason) for b in found] == [(False, r.NOT_SENT)] * 3 + [(True, r.CURRENT_INPUT)]
    # each row stands just before its message, named after it
    for row in found:
        answer = plan.blocks[row.index + 1]
        assert row.id == f"{answer.id}:reasoning" and row.role == "assistant" and THOUGHT.strip() in row.content
    # the rows add up to what is sent: the reasoning's tokens are not in its message's row too
    base = contextfit.token_counter("claude-sonnet-4").base_tokens
    assert sum(b.tokens for b in plan.blocks if b.included) + base == plan.prompt_tokens
    # what is not sent is not counted: the earlier thinking costs nothing in the prompt
    everything = sent_counter(contextfit.token_counter("claude-sonnet-4"), "anthropic")(chat)
    assert everything - plan.prompt_tokens == pytest.approx(sum(b.tokens for b in found if not b.included), abs=3)


def test_claude_models_that_keep_earlier_thinking_are_sent_it_and_count_it():
    chat = claude_chat(3)
    plan = contextfit.plan_prompt(chat, model="claude-opus-4-5")
    assert thinking_sent(plan) == 4 and plan.prompt_tokens == sent_tokens(plan)
    assert all(b.included for b in rows(plan))
    base = contextfit.token_counter("claude-opus-4-5").base_tokens
    assert sum(b.tokens for b in plan.blocks if b.included) + base == plan.prompt_tokens
    # keep_thinking drops it when the budget needs: the row says the message went without it
    one = next(b.tokens for b in rows(plan))
    tight = contextfit.plan_prompt(chat, model="claude-opus-4-5", context_limit=plan.prompt_tokens - one + 1000,
                                   response_reserve=1000)
    assert thinking_sent(tight) == 3 and all(b.reason != r.OVER_BUDGET for b in tight.blocks)
    dropped = [b for b in rows(tight) if not b.included]
    assert [b.reason for b in dropped] == [r.SUMMARIZED] and dropped[0].id == "m2:reasoning"


@pytest.mark.parametrize(
    ("model", "keeps"),
    [("claude-sonnet-4", False), ("claude-3-5-haiku", False), ("claude-opus-4-1", False), ("claude-sonnet-4-5", False),
     ("claude-haiku-4-5", False), ("claude-opus-4-5", True), ("claude-sonnet-4-6", True), ("claude-opus-5", True),
     ("claude-haiku-5-5", True), ("gpt-4o", False), ("o3", False), ("deepseek-v3", False), ("gemini-2.5-pro", False)],
)
def test_which_models_keep_earlier_turns_reasoning(model, keeps):
    info = get_model(model)
    assert reasoning.keeps_earlier_reasoning(info.id, info.provider) is keeps


def test_deepseek_reasoning_content_of_earlier_turns_is_not_sent_nor_counted():
    lines = shared_path("llama-factory", "reason_tool_use_demo_50.jsonl").read_text().splitlines()
    messages = load_conversation(lines[1]).messages  # two tool-use turns, each with reasoning_content
    plan = contextfit.plan_prompt(messages, model="deepseek-v3")
    sent = [m for m in plan.provider_messages if m.get("reasoning_content")]
    current = reasoning.current_turn_start(messages)
    assert len(sent) == sum(1 for m in messages[current:] if m.get("reasoning_content")) == 2
    assert plan.prompt_tokens == sent_tokens(plan)
    assert [b.reason for b in rows(plan) if not b.included] == [r.NOT_SENT] * 2
    # a new user question makes every turn an earlier one
    later = contextfit.plan_prompt([*messages, {"role": "user", "content": "Thanks."}], model="deepseek-v3")
    assert not any(m.get("reasoning_content") for m in later.provider_messages)
    assert all(not b.included for b in rows(later)) and len(rows(later)) == 4


def test_openai_reasoning_items_count_only_in_the_current_turn():
    chat = [
        {"role": "user", "content": "What is 17 * 23?"},
        {"role": "assistant", "content": "391.", "reasoning": "17 * 23 = 17 * 20 + 17 * 3 = 340 + 51 = 391. " * 20},
        {"role": "user", "content": "Look up the weather."},
        {"role": "assistant", "content": None, "reasoning": "The user wants the weather; call the tool. " * 20,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny."},
    ]
    plan = contextfit.plan_prompt(chat, model="o3")
    assert [bool(m.get("reasoning")) for m in plan.provider_messages] == [False, False, False, True, False]
    assert plan.prompt_tokens == sent_tokens(plan)
    assert [(b.id, b.included, b.reason) for b in rows(plan)] == [("m1:reasoning", False, r.NOT_SENT),
                                                                   ("m3:reasoning", True, r.WITHIN_BUDGET)]
    assert all(b.tokens > 100 for b in rows(plan))


def test_reasoning_rows_reach_the_csv_the_audit_and_the_chart():
    plan = contextfit.plan_prompt(claude_chat(2), model="claude-sonnet-4")
    table = list(csv.DictReader(io.StringIO(exports.blocks_csv(plan))))
    assert [row["reason"] for row in table if row["kind"] == "reasoning"] == [r.NOT_SENT, r.NOT_SENT, r.CURRENT_INPUT]
    audit = audit_from_plan(plan, chat_id="c", provider="echo")
    assert [b.kind for b in audit.blocks].count("reasoning") == 3
    assert sum(b.tokens for b in audit.blocks if b.included) <= audit.prompt_tokens
    figure = charts.budget_figure(plan)
    hovers = " ".join(trace.hovertemplate for trace in figure.data if trace.hovertemplate)
    assert "protected · reasoning" in hovers and "excluded: not sent (the provider drops it) · reasoning" in hovers
    assert all(trace.x[0] >= 0 for trace in figure.data)  # the overhead bar is not negative
    # reasoning rows are not editable blocks
    conversation = contextfit.load_conversation(json.dumps(claude_chat(2)))
    editable = editor.editor_rows(conversation, suggested_setup(conversation), {"truncate": plan})
    assert editable and not any(row["id"].endswith(":reasoning") for row in editable)


@pytest.mark.parametrize("strategy", ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results"])
def test_every_strategy_plans_reasoning_rows_within_budget(strategy):
    chat = claude_chat(6)
    full = contextfit.plan_prompt(chat, model="claude-opus-4-5")
    limit = full.prompt_tokens // 2 + 1000
    plan = contextfit.plan_prompt(chat, model="claude-opus-4-5", context_strategy=strategy, context_limit=limit,
                                  response_reserve=1000)
    assert plan.prompt_tokens == sent_tokens(plan) <= plan.budget
    assert [b.index for b in plan.blocks] == list(range(len(plan.blocks)))
    assert thinking_sent(plan) == sum(1 for b in rows(plan) if b.included)


def test_odd_reasoning_values_do_not_break_a_plan():
    chat = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": None}, {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "Greet back."}]}, {"type": "text", "text": "Hello."}],
         "reasoning_details": [{"type": "reasoning.text", "text": "say hello"}, 7]},
        {"role": "user", "content": "Bye"},
    ]
    for model in ("gpt-4o", "claude-sonnet-4", "claude-opus-4-5"):
        plan = contextfit.plan_prompt(chat, model=model)
        assert plan.prompt_tokens == sent_tokens(plan)
        (row,) = rows(plan)
        assert "Greet back." in row.content and "say hello" in row.content
    assert reasoning.strip_reasoning({"role": "assistant", "content": "x"}) is None
    assert reasoning.current_turn_start([]) == 0
    assert reasoning.current_turn_start([{"role": "assistant", "content": "x"}]) == 0


@SETTINGS
@given(chats_with_reasoning(), st.floats(0.3, 1.1), st.sampled_from(["claude-sonnet-4", "claude-opus-4-5", "gpt-4o", "deepseek-v3"]),
       st.sampled_from(["truncate", "summarize", "clear-tool-results"]), st.sampled_from([None, False, True]))
def test_plans_with_reasoning_keep_every_promise(messages, share, model, strategy, keep):
    full = contextfit.plan_prompt(messages, model=model)
    limit = max(int(full.prompt_tokens * share), 50) + 1000
    try:
        plan = contextfit.plan_prompt(messages, model=model, context_strategy=strategy, context_limit=limit,
                                      response_reserve=1000, keep_thinking=keep)
    except contextfit.TokenBudgetExceeded:
        return
    # what is counted is exactly what is sent, within the budget
    assert plan.prompt_tokens == sent_tokens(plan) <= plan.budget
    assert [b.index for b in plan.blocks] == list(range(len(plan.blocks)))
    found = rows(plan)
    # one reasoning row per block whose message carries reasoning: an input message (whether the provider
    # is sent its reasoning or not), or a compressed copy that still does
    given = {plan_id(m, i): m for i, m in enumerate(messages)}
    carriers = [b for b in plan.blocks if b.kind != reasoning.REASONING
                and (reasoning.has_reasoning(b.message) or reasoning.has_reasoning(given.get(b.id, {})))]
    assert [row.id.removesuffix(":reasoning") for row in found] == list(dict.fromkeys(b.id for b in carriers))
    for row in found:
        assert plan.blocks[row.index + 1].id == row.id.removesuffix(":reasoning")
        assert row.tokens is None or row.tokens >= 0
        if row.reason == r.NOT_SENT:
            assert not row.included
    # a reasoning row is included exactly when its message is sent with it
    sent_reasoning = sum(1 for m in plan.provider_messages if reasoning.has_reasoning(m))
    if plan.template == "openai":
        assert sent_reasoning == sum(1 for b in found if b.included)
    else:  # Claude: every thinking part sent belongs to an included row's message
        assert thinking_sent(plan) == sum(thinking_parts(plan.blocks[b.index + 1].message) for b in found if b.included)
    if not reasoning.keeps_earlier_reasoning(*(lambda info: (info.id, info.provider))(get_model(model))):
        start = reasoning.current_turn_start(messages)
        earlier = {plan_id(m, i) for i, m in enumerate(messages[:start])}
        assert not earlier & {b.id.removesuffix(":reasoning") for b in found if b.included}


def _grown_like_fresh(messages, model, limit, pieces, edits):
    """A session grown ``pieces`` messages at a time (and edited at ``edits``) plans every step like a fresh plan."""
    strategies = ["truncate", "summarize", "clear-tool-results"]
    keywords = {"model": model, "context_limit": limit, "response_reserve": 100}
    session, mirror, done = contextfit.FitSession(), [], 0
    for step, piece in enumerate(pieces):
        if done >= len(messages):
            break
        session.extend(messages[done: done + piece])
        mirror += copy.deepcopy(messages[done: done + piece])
        done += piece
        edit = edits.get(step)
        if edit is not None:  # the edited message gains or loses its reasoning: the blocks after it change
            index = edit % len(mirror)
            changed = copy.deepcopy(mirror[index])
            if reasoning.has_reasoning(changed):
                changed = reasoning.strip_reasoning(changed)
            elif changed.get("role") == "assistant":
                changed["reasoning_content"] = "reconsider " * 5
            session.edit(index, changed)
            mirror[index] = changed
        warm = {name: plan.to_dict() if isinstance(plan, contextfit.PromptPlan) else plan.code
                for name, plan in session.plans(strategies=strategies, **keywords)}
        cold = {name: plan.to_dict() if isinstance(plan, contextfit.PromptPlan) else plan.code
                for name, plan in dict(contextfit.FitSession(copy.deepcopy(mirror)).plans(strategies=strategies, **keywords)).items()}
        assert warm == cold, f"after {done} messages"


@SETTINGS
@given(chats_with_reasoning(), st.lists(st.integers(1, 4), min_size=1, max_size=30),
       st.sampled_from(["claude-sonnet-4", "claude-opus-4-5", "gpt-4o", "o3"]), st.floats(0.3, 1.2),
       st.dictionaries(st.integers(0, 29), st.integers(0, 10_000), max_size=2))
def test_a_session_grown_a_few_messages_at_a_time_plans_reasoning_like_a_fresh_plan(messages, pieces, model, share,
                                                                                     edits):
    # A new user message drops the reasoning of the turn before it: the session strips those blocks
    # where they stand, and keeps the rest of what it assembled and analysed.
    pieces = pieces + [len(messages)]  # the rest at the end
    limit = max(int(contextfit.plan_prompt(messages, model=model).prompt_tokens * share), 40) + 100
    _grown_like_fresh(messages, model, limit, pieces, edits)


def test_a_claude_tool_use_turn_grown_message_by_message_plans_like_a_fresh_plan():
    # The tool-use turn keeps its thinking while its results arrive, and loses it at the next question.
    chat = claude_chat(4)
    chat += [{"role": "assistant", "content": [{"type": "thinking", "thinking": THOUGHT, "signature": "sig"},
                                               {"type": "text", "text": "Fixed."}]},
             {"role": "user", "content": "Thanks. Next?"}]
    for model in ("claude-sonnet-4", "claude-opus-4-5"):
        for limit in (300, 5000):
            _grown_like_fresh(chat, model, limit, [1] * len(chat), {})


def test_a_replay_of_a_chat_with_reasoning_assembles_it_once(monkeypatch):
    # Each turn used to assemble (and analyse) the whole chat again once any message carried
    # reasoning: a 1,000-turn chat stitched from the shared fixtures took 9.8 ms a turn, 3.0 without.
    prepared = []
    inner = session_module.prepare
    monkeypatch.setattr(session_module, "prepare", lambda *args: prepared.append(1) or inner(*args))
    chat = [{"role": "system", "content": "Be brief."}]
    for turn in range(30):
        chat += [{"role": "user", "content": f"Question {turn} about ORD-{turn}?"},
                 {"role": "assistant", "content": f"Answer {turn}.", "reasoning_content": "think " * (10 + turn)}]
    chat.append({"role": "user", "content": "And ORD-3?"})
    for model in ("o3", "claude-sonnet-4", "claude-opus-4-5"):
        prepared.clear()
        result = contextfit.replay(chat, model=model, context_limit=900, response_reserve=100)
        assert len(prepared) == 1
        last = contextfit.plan_prompt(chat, model=model, context_limit=900, response_reserve=100)
        assert result.turns["truncate"][-1].prompt_tokens == last.prompt_tokens
