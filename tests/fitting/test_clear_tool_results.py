"""``clear-tool-results``: old tool output is replaced by placeholders before turns are dropped."""

from __future__ import annotations

import json

import pytest
from support.paths import shared_path
from support.conversations import groups, link_ids, protected_indices

import contextfit
from contextfit.fitting import results as r
from contextfit.inputs.formats import load_conversation
from contextfit.pipeline.settings import plan_options
from contextfit.pipeline.plan import BUILTIN_STRATEGIES

OUTPUT = "def handler(request):\n    return compute(request.body)\n" * 40  # ~600 tokens of file text


def agent_chat(turns: int = 6, tool: str = "read_file") -> list[dict]:
    chat = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(turns):
        chat += [
            {"role": "user", "content": f"Open file {i}."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": tool, "arguments": json.dumps({"path": f"src/f{i}.py"})}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"# file {i}\n" + OUTPUT},
            {"role": "assistant", "content": f"File {i} defines a handler."},
        ]
    return [*chat, {"role": "user", "content": "Which file should I change?"}]


COUNTER = contextfit.token_counter("gpt-4o")
RESULT_TOKENS = COUNTER.tokenizer.count(agent_chat()[3]["content"])  # 405: what one result costs


def fit(chat, budget, **options):
    return contextfit.shift_context(chat, COUNTER, budget, strategy="clear-tool-results", interceptors=(), **options)


def cleared_sources(result) -> list[int]:
    return [d.sources[0] for d in result.decisions if d.index is None and d.reason == r.COMPRESSED]


def test_it_is_a_builtin_the_dashboard_compares_by_default():
    assert "clear-tool-results" in contextfit.registry.names()
    assert "clear-tool-results" in BUILTIN_STRATEGIES


def test_the_coding_agent_sample_shows_it_at_work():
    from contextfit.inputs.samples import load_sample
    from contextfit.dashboard.sessions import session_for
    from contextfit.dashboard.setup import suggested_setup

    sample = load_sample("coding_agent")
    plans = dict(session_for(sample).plans(suggested_setup(sample).settings))
    clearing, truncate = plans["clear-tool-results"], plans["truncate"]
    compressed = [b for b in clearing.blocks if b.reason == r.COMPRESSED]
    assert compressed and all(b.role == "tool" and "[tool result cleared:" in b.content for b in compressed)
    # every call is still sent, each with its (cleared) result, where truncate drops them
    def sent_calls(plan):
        return {c["id"] for m in plan.provider_messages for c in m.get("tool_calls") or []}

    def sent_results(plan):
        return {m["tool_call_id"] for m in plan.provider_messages if m.get("role") == "tool"}

    assert sent_calls(clearing) == sent_results(clearing) and len(sent_calls(clearing)) > len(sent_calls(truncate))
    assert not any(b.reason == r.OVER_BUDGET for b in clearing.blocks)
    assert clearing.prompt_tokens <= clearing.budget


def test_a_prompt_that_fits_is_sent_as_it_is():
    chat = agent_chat()
    result = fit(chat, COUNTER(chat))
    assert result.kept == chat and result.truncated == []


def test_old_results_become_placeholders_oldest_first_and_the_newest_stay():
    chat = agent_chat()
    total = COUNTER(chat)
    budget = total - RESULT_TOKENS * 3 // 2  # two results' worth of clearing
    result = fit(chat, budget)
    tool_rows = [i for i, m in enumerate(chat) if m["role"] == "tool"]
    assert cleared_sources(result) == tool_rows[:2]
    # every call keeps a result: the cleared ones are compressed blocks in the same place
    assert len(result.kept) == len(chat)
    for source, block in zip(tool_rows[:2], result.truncated):
        assert block["tool_call_id"] == chat[source]["tool_call_id"]
        assert block["meta"]["compressed"] is True
        assert block["content"].startswith("[tool result cleared: read_file returned ")
        original = int(block["content"].split()[-2])
        assert abs(original - COUNTER.tokenizer.count(chat[source]["content"])) <= 2
        assert result.kept[source] is block
    reasons = {d.index: d.reason for d in result.decisions if d.index is not None}
    assert [reasons[i] for i in tool_rows[:2]] == [r.SUMMARIZED] * 2
    assert all(reasons[i] == r.WITHIN_BUDGET for i in tool_rows[2:])
    assert result.tokens <= budget
    # truncate had to drop whole turns for the same budget
    truncated = contextfit.shift_context(chat, COUNTER, budget, interceptors=())
    assert len(truncated.excluded) > 0 and len(result.excluded) == 2


def test_keep_protects_the_newest_results_and_then_it_truncates():
    chat = agent_chat()
    tool_rows = [i for i, m in enumerate(chat) if m["role"] == "tool"]
    result = fit(chat, COUNTER(chat) // 2, keep=3)
    assert set(cleared_sources(result)) <= set(tool_rows[:3])
    assert not {m["tool_call_id"] for m in result.truncated} & {chat[i]["tool_call_id"] for i in tool_rows[3:]}
    # clearing three results was not enough: the oldest turns are dropped like truncate
    assert any(d.reason == r.OVER_BUDGET for d in result.decisions)
    assert COUNTER(result.kept) <= COUNTER(chat) // 2


def test_exclude_tools_are_never_cleared():
    chat = agent_chat(tool="memory")
    result = fit(chat, COUNTER(chat) - 1000, exclude_tools=["memory"])
    assert cleared_sources(result) == []
    assert any(d.reason == r.OVER_BUDGET for d in result.decisions)  # it fell back to truncating


def test_clear_at_least_clears_in_steps_so_the_prefix_stays_stable():
    chat = agent_chat(turns=8)
    budget = COUNTER(chat) - 100
    assert len(cleared_sources(fit(chat, budget))) == 1
    stepped = fit(chat, budget, clear_at_least=RESULT_TOKENS * 5 // 2)
    assert len(cleared_sources(stepped)) == 3  # a step of two and a half results needs three
    grown = [*chat[:-1], {"role": "assistant", "content": "I will check."}, {"role": "user", "content": "Go on, please?"}]
    assert cleared_sources(fit(grown, budget, clear_at_least=RESULT_TOKENS * 5 // 2)) == cleared_sources(stepped)


def test_clear_inputs_empties_the_arguments_of_cleared_calls():
    chat = agent_chat()
    result = fit(chat, COUNTER(chat) - RESULT_TOKENS * 3 // 2, clear_inputs=True)
    calls = [m for m in result.truncated if m.get("tool_calls")]
    assert [c["tool_calls"][0]["id"] for c in calls] == ["c0", "c1"]
    assert all(c["tool_calls"][0]["function"]["arguments"] == "{}" for c in calls)
    assert all(m["tool_calls"][0]["function"]["arguments"] != "{}" for m in result.kept if m.get("tool_calls") and m not in calls)


def test_a_custom_placeholder_fills_tool_and_tokens_and_leaves_other_braces():
    chat = agent_chat()
    result = fit(chat, COUNTER(chat) - 500, placeholder="{cleared} {tool}: {tokens} tokens {0}")
    assert result.truncated[0]["content"].startswith("{cleared} read_file: ")
    assert result.truncated[0]["content"].endswith(" tokens {0}")


@pytest.mark.parametrize("options", [{"keep": -1}, {"keep": "3"}, {"clear_at_least": True}, {"exclude_tools": "read_file"},
                                     {"clear_inputs": "yes"}, {"placeholder": ""}])
def test_bad_options_are_refused_clearly(options):
    with pytest.raises(contextfit.ContextfitError) as caught:
        fit(agent_chat(), 2000, **options)
    assert caught.value.code == "INVALID_SETTINGS" and next(iter(options)) in str(caught.value)


def test_anthropic_tool_result_parts_are_cleared_and_the_request_stays_valid():
    chat = [{"role": "system", "content": "Agent."}]
    for i in range(5):
        chat += [
            {"role": "user", "content": f"Read {i}."},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                                              {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"n": i}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": OUTPUT}]},
            {"role": "assistant", "content": "Read it."},
        ]
    chat.append({"role": "user", "content": "Summarise."})
    full = contextfit.plan_prompt(chat, model="claude-sonnet-4")
    plan = contextfit.plan_prompt(chat, model="claude-sonnet-4", context_strategy="clear-tool-results",
                                  context_limit=full.prompt_tokens + 64_000 - 900, response_reserve=64_000)
    assert plan.prompt_tokens <= plan.budget
    compressed = [b for b in plan.blocks if b.reason == "compressed"]
    assert compressed and all(b.fate == "compressed" for b in compressed)
    results = [p for m in plan.provider_messages for p in m["content"] if p.get("type") == "tool_result"]
    uses = [p["id"] for m in plan.provider_messages for p in m["content"] if p.get("type") == "tool_use"]
    assert [p["tool_use_id"] for p in results] == uses == [f"t{i}" for i in range(5)]
    assert results[0]["content"].startswith("[tool result cleared: read returned")


def test_settings_json_reaches_the_strategy():
    options = plan_options({"contextStrategy": "clear-tool-results", "keep": 1, "excludeTools": ["x"],
                            "clearAtLeast": 10, "clearInputs": True, "placeholder": "gone"})
    chat = agent_chat()
    plan = contextfit.plan_prompt(chat, model="gpt-4o", context_limit=COUNTER(chat) + 16_384 - 1000,
                                  response_reserve=16_384, **options)
    assert plan.strategy == "clear-tool-results"
    assert [b.content for b in plan.blocks if b.reason == "compressed" and b.role == "tool"][0] == "gone"


# -- real recorded tool traffic -----------------------------------------------------

def _glaive() -> list[dict]:
    """The glaive tool-call demo records one after another: one long tool-heavy chat."""
    records = json.loads(shared_path("llama-factory", "glaive_toolcall_en_demo.json").read_text())
    chat: list[dict] = []
    for number, record in enumerate(records[:40]):
        for message in load_conversation(record).messages:
            message = dict(message, meta={})
            for key in ("tool_call_id",):
                if key in message:
                    message[key] = f"r{number}_{message[key]}"
            if message.get("tool_calls"):
                message["tool_calls"] = [{**call, "id": f"r{number}_{call['id']}"} for call in message["tool_calls"]]
            chat.append(message)
    return chat


def _check_fit(messages, counter, budget, **options):
    result = contextfit.shift_context(messages, counter, budget, strategy="clear-tool-results", interceptors=(), **options)
    assert counter(result.kept) <= budget
    kept = {i for i, m in enumerate(messages) if any(m is k for k in result.kept)}
    sent = kept | set(cleared_sources(result))
    assert protected_indices(messages) <= kept
    for group in groups(messages):
        assert group <= sent or not group & sent, f"group {sorted(group)} split at budget {budget}"
    for block in result.truncated:  # a cleared block keeps its links
        source = next(d.sources[0] for d in result.decisions if d.message is block)
        assert link_ids(block) == link_ids(messages[source])
    return result


@pytest.mark.parametrize("keep", [0, 3])
def test_llama_factory_glaive_traffic_clears_before_it_drops(keep):
    chat = _glaive()
    counter = contextfit.token_counter("gpt-4o")
    total = counter(chat)
    observations = [i for i, m in enumerate(chat) if m["role"] == "tool"]
    assert len(observations) >= 20
    for budget in (total * 9 // 10, total * 2 // 3, total // 3):
        result = _check_fit(chat, counter, budget, keep=keep)
        truncated = contextfit.shift_context(chat, counter, budget, interceptors=())
        # clearing keeps at least as many of the conversation's messages as truncate does
        assert len(result.kept) >= len(truncated.kept)
    result = _check_fit(chat, counter, total * 9 // 10, keep=keep)
    assert cleared_sources(result) and not set(cleared_sources(result)) & set(observations[len(observations) - keep:])


def test_llama_factory_reasoning_tool_lines_fit():
    lines = shared_path("llama-factory", "reason_tool_use_demo_50.jsonl").read_text().splitlines()
    counter = contextfit.token_counter("gpt-4o")
    for line in lines[:20]:
        messages = load_conversation(line).messages
        total = counter(messages)
        protected = counter([messages[i] for i in sorted(protected_indices(messages))])
        for budget in {protected, (protected + total) // 2, total - 1}:
            if budget >= protected:
                _check_fit(messages, counter, budget, keep=0)


def test_a_counter_that_is_not_additive_never_gets_half_a_cleared_group():
    """The host's recount cuts more; a cleared result goes with its call, never alone."""
    chat = agent_chat(turns=8)

    def crowded(messages):  # each message costs more the more there are
        return COUNTER(messages) + len(messages) ** 2

    for budget in range(COUNTER(chat) - 2000, COUNTER(chat), 150):
        result = _check_fit(chat, crowded, budget, keep=1)
        assert crowded(result.kept) <= budget
        sent_links = [link_ids(m) for m in result.kept]
        calls = {link for m in result.kept if m.get("tool_calls") for link in link_ids(m)}
        results = {link for m in result.kept if m["role"] == "tool" for link in link_ids(m)}
        assert calls == results, sent_links
