"""Real recorded tool-call traffic fits with every strategy, groups whole."""

from __future__ import annotations

import json

import pytest
from conftest import SHARED_FIXTURES, shared_params, shared_path
from conversations import groups, protected_indices

import contextfit

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual"]
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
    for budget in sorted({protected, (protected + total) // 2, total - 1, total}):
        result = contextfit.shift_context(messages, counter, budget, strategy=strategy, interceptors=())
        assert counter(result.kept) <= budget
        kept = {i for i, m in enumerate(messages) if any(m is k for k in result.kept)}
        assert protected_indices(messages) <= kept
        for group in groups(messages):
            assert group <= kept or not group & kept, f"{path.stem}: group {sorted(group)} split at budget {budget}"


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
