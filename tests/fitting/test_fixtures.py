"""Real recorded tool-call traffic fits with every strategy, groups whole."""

from __future__ import annotations

import json

import pytest
from support.paths import SHARED_FIXTURES, shared_params, shared_path
from support.conversations import groups, protected_indices

import contextfit
from contextfit.inputs.messages import link_states

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results"]
REQUESTS = shared_params(sorted((SHARED_FIXTURES / "pydantic-ai").glob("*/*.request.json")))


def _messages(path) -> tuple[list[dict], str]:
    body = json.loads(path.read_text())
    messages = list(body["messages"])
    system = body.get("system")
    if system:  # Anthropic keeps the system prompt beside the messages
        text = system if isinstance(system, str) else "\n".join(block.get("text", "") for block in system)
        messages.insert(0, {"role": "system", "content": text})
    model = body.get("model", "gpt-4o")
    return messages, ("gpt-4o" if "claude" not in model else "claude-sonnet-4")


@pytest.mark.parametrize("path", REQUESTS, ids=lambda p: p.stem)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_recorded_tool_traffic_fits_without_splitting_a_group(path, strategy):
    shared_path("pydantic-ai")
    messages, model = _messages(path)
    counter = contextfit.token_counter(model)
    total = counter(messages)
    protected = counter([messages[i] for i in sorted(protected_indices(messages))])
    has_tools = any(m.get("tool_calls") or isinstance(m.get("content"), list) and any(
        str(p.get("type", "")).endswith("tool_use") for p in m["content"]) for m in messages)
    assert not has_tools or [g for g in groups(messages) if len(g) > 1], "a call is linked to its result"
    for budget in sorted({protected, (protected + total) // 2, total - 20, total - 1, total}):
        result = contextfit.shift_context(messages, counter, budget, strategy=strategy, interceptors=())
        assert counter(result.kept) <= budget
        kept = {i for i, m in enumerate(messages) if any(m is k for k in result.kept)}
        assert protected_indices(messages) <= kept
        # a cleared tool result (clear-tool-results) is sent in its original's place
        sent = kept | {d.sources[0] for d in result.decisions if d.index is None and d.reason == "compressed"}
        for group in groups(messages):
            assert group <= sent or not group & sent, f"{path.stem}: group {sorted(group)} split at budget {budget}"


def test_parallel_calls_with_a_late_result_stay_together():
    path = shared_path("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json")
    messages, model = _messages(path)
    counter = contextfit.token_counter(model)
    result = contextfit.shift_context(messages, counter, counter(messages) - 1, interceptors=())
    by_group = {}
    for decision in result.decisions:
        if decision.group is not None:
            by_group.setdefault(decision.group, set()).add(decision.included)
    assert by_group and all(len(states) == 1 for states in by_group.values())


@pytest.mark.parametrize("path", REQUESTS, ids=lambda p: p.stem)
def test_recorded_tool_traffic_clears_results_without_splitting_a_group(path):
    """clear-tool-results with keep=0 at every budget from the protected blocks to the whole chat."""
    shared_path("pydantic-ai")
    messages, model = _messages(path)
    counter = contextfit.token_counter(model)
    total = counter(messages)
    protected = counter([messages[i] for i in sorted(protected_indices(messages))])
    cleared = 0
    for budget in range(protected, total + 1, 3):
        result = contextfit.shift_context(messages, counter, budget, strategy="clear-tool-results", keep=0,
                                          clear_inputs=True, interceptors=())
        assert counter(result.kept) <= budget
        states = link_states(result.kept)
        before = link_states(messages)
        assert all(state == before[link] for link, state in states.items()), f"{path.stem}: half a group at {budget}"
        cleared += len(result.truncated)
    if path.stem.startswith(("test_live_tool_search", "test_deepseek_deferred", "test_tool_use_failed")):
        assert cleared, "the results here are long enough to clear"
