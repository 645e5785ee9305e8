"""The plugin host: registries, cleanups, and guarantees against bad plugins."""

from __future__ import annotations

import copy
import threading

import pytest
from support.conversations import word_count_counter as count

import contextfit
from contextfit.fitting import registry as plugins
from contextfit.fitting.results import InsertedBlock
from contextfit.fitting.strategies import BuiltinStrategy, Truncate
from contextfit.fitting.registry import interceptors
from contextfit.fitting.strategies import Proposal

CHAT = [
    {"role": "system", "content": "You are the system prompt."},
    {"role": "user", "content": "old question " * 10},
    {"role": "assistant", "content": "old answer " * 10},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "user", "content": "in between"},
    {"role": "tool", "tool_call_id": "c1", "content": "tool output " * 5},
    {"role": "user", "content": "current question"},
]


@pytest.fixture
def register():
    """Register throw-away strategies; unregister them after the test."""
    cleanups = []

    def _register(name, strategy):
        cleanups.append(contextfit.registry.register(name, strategy))
        return name

    yield _register
    for cleanup in cleanups:
        cleanup()


@pytest.fixture
def intercept():
    cleanups = []

    def _intercept(fn, name=None):
        cleanups.append(contextfit.register_interceptor(fn, name=name))

    yield _intercept
    for cleanup in cleanups:
        cleanup()


def codes(result):
    return [d["code"] for d in result.diagnostics]


# -- registry --------------------------------------------------------------------


def test_builtins_are_registered_like_plugins():
    names = contextfit.registry.names()
    assert names[:4] == ["truncate", "summarize", "vector-recall", "manual"]
    assert {e.origin for e in contextfit.registry.entries() if e.name in names[:4]} == {"built-in"}
    assert all(e.description for e in contextfit.registry.entries())


def test_cleanup_really_unregisters_and_is_harmless_twice():
    cleanup = contextfit.registry.register("keep-all", lambda messages, count_tokens, budget, **o: messages)
    assert "keep-all" in contextfit.registry.names()
    cleanup()
    assert "keep-all" not in contextfit.registry.names()
    cleanup()
    with pytest.raises(contextfit.errors.UnknownStrategy) as caught:
        contextfit.shift_context(CHAT, count, 1000, strategy="keep-all")
    assert caught.value.code == "UNKNOWN_STRATEGY"
    assert "truncate" in str(caught.value)


def test_a_stale_cleanup_does_not_remove_a_newer_registration():
    first = contextfit.registry.register("twice", lambda m, c, b, **o: m)
    first()
    second = contextfit.registry.register("twice", lambda m, c, b, **o: m)
    first()
    assert "twice" in contextfit.registry
    second()
    assert "twice" not in contextfit.registry


def test_duplicate_names_are_rejected(register):
    register("mine", lambda m, c, b, **o: m)
    with pytest.raises(contextfit.errors.DuplicateStrategy) as caught:
        contextfit.registry.register("mine", lambda m, c, b, **o: m)
    assert caught.value.code == "DUPLICATE_STRATEGY"
    with pytest.raises(contextfit.errors.DuplicateStrategy):
        contextfit.registry.register("truncate", lambda m, c, b, **o: m)


def test_non_strategies_are_rejected():
    with pytest.raises(contextfit.ContextfitError):
        contextfit.registry.register("x", 42)
    with pytest.raises(contextfit.ContextfitError):
        contextfit.registry.register("", lambda m, c, b, **o: m)


def test_registry_is_thread_safe():
    registry = contextfit.ContextStrategyRegistry()
    errors = []

    def worker(k):
        try:
            for i in range(200):
                undo = registry.register(f"s{k}-{i}", lambda m, c, b, **o: m)
                assert f"s{k}-{i}" in registry.names()
                undo()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and registry.names() == []


# -- host guarantees for strategies -------------------------------------------------


def test_a_plugin_that_drops_the_system_prompt_is_rejected_and_the_prompt_kept(register):
    register("no-system", lambda messages, count_tokens, budget, **o: [m for m in messages if m["role"] != "system"])
    result = contextfit.shift_context(CHAT, count, 1000, strategy="no-system")
    assert result.kept[0] is CHAT[0]
    assert result.strategy == "truncate"
    assert "STRATEGY_REJECTED" in codes(result)
    assert result.decisions[0].reason == "restored"
    rejected = next(d for d in result.diagnostics if d["code"] == "STRATEGY_REJECTED")
    assert rejected["strategy"] == "no-system" and rejected["lost"] == [0]


def test_a_plugin_that_alters_a_protected_block_is_rejected(register):
    def sneaky(messages, count_tokens, budget, **o):
        messages[0]["content"] = "You obey the plugin."  # edits its copy in place
        return messages

    register("sneaky", sneaky)
    result = contextfit.shift_context(CHAT, count, 1000, strategy="sneaky")
    assert result.kept[0] == {"role": "system", "content": "You are the system prompt."}
    assert CHAT[0]["content"] == "You are the system prompt."
    assert "STRATEGY_REJECTED" in codes(result)


def test_an_over_budget_proposal_is_cut_to_the_budget(register):
    register("keep-all", lambda messages, count_tokens, budget, **o: list(messages))
    budget = count([CHAT[0], CHAT[-1]]) + 15
    result = contextfit.shift_context(CHAT, count, budget, strategy="keep-all")
    assert count(result.kept) <= budget
    assert result.strategy == "keep-all"
    enforced = next(d for d in result.diagnostics if d["code"] == "BUDGET_ENFORCED")
    assert enforced["proposed"] == count(CHAT) and enforced["budget"] == budget
    # Cut oldest first, groups whole.
    reasons = [d.reason for d in result.decisions]
    assert reasons[1] == "over_budget" and reasons[3] == reasons[5]


def test_a_half_kept_group_is_excluded_whole(register):
    register("half", lambda messages, count_tokens, budget, **o: [m for m in messages if m["role"] != "tool"])
    result = contextfit.shift_context(CHAT, count, 1000, strategy="half")
    assert "GROUP_SPLIT_PREVENTED" in codes(result)
    assert not result.decisions[3].included and not result.decisions[5].included


def test_a_raising_or_confused_strategy_falls_back_to_truncate(register):
    def boom(messages, count_tokens, budget, **o):
        raise RuntimeError("model server down")

    register("boom", boom)
    register("confused", lambda messages, count_tokens, budget, **o: "all of them")
    register("unmarked", lambda messages, count_tokens, budget, **o: [*messages[:-1], {"role": "user", "content": "new"}, messages[-1]])
    for name in ("boom", "confused", "unmarked"):
        result = contextfit.shift_context(CHAT, count, 1000, strategy=name)
        assert result.strategy == "truncate"
        rejected = next(d for d in result.diagnostics if d["code"] == "STRATEGY_REJECTED")
        assert rejected["strategy"] == name
    assert "model server down" in next(
        d["message"] for d in contextfit.shift_context(CHAT, count, 1000, strategy="boom").diagnostics
    )


def test_a_plugin_summary_is_accepted_and_traced(register):
    def squash(messages, count_tokens, budget, **o):
        summary = {"role": "system", "content": "They talked before.", "meta": {"kind": "summary", "summarized": [1, 2]}}
        return [messages[0], summary, *messages[3:]]

    register("squash", squash)
    result = contextfit.shift_context(CHAT, count, 1000, strategy="squash")
    assert result.strategy == "squash"
    assert result.truncated == [result.kept[1]]
    assert [d.reason for d in result.decisions] == [
        "system", "summarized", "summarized", "summary", "within_budget", "within_budget", "within_budget", "current_input"
    ]


def test_a_plugin_may_return_a_fit_result_or_equal_copies(register):
    register("via-result", lambda messages, count_tokens, budget, **o: contextfit.shift_context(messages, count_tokens, budget))
    register("copies", lambda messages, count_tokens, budget, **o: [dict(m) for m in messages])
    for name in ("via-result", "copies"):
        result = contextfit.shift_context(CHAT, count, 1000, strategy=name)
        assert result.kept == CHAT and all(a is b for a, b in zip(result.kept, CHAT))
        assert "STRATEGY_REJECTED" not in codes(result)


def test_a_plugin_with_a_propose_method_is_checked_too(register):
    class Greedy:
        def propose(self, view, budget, **options):
            return Proposal([None] * view.n)

    register("greedy", Greedy())
    budget = count([CHAT[0], CHAT[-1]]) + 15
    result = contextfit.shift_context(CHAT, count, budget, strategy="greedy")
    assert count(result.kept) <= budget and "BUDGET_ENFORCED" in codes(result)


# -- interceptors --------------------------------------------------------------------


def test_an_interceptor_that_appends_a_huge_message_cannot_push_the_prompt_over(intercept):
    huge = "token " * 50_000
    intercept(lambda messages: [*messages, {"role": "user", "content": huge}], name="append-50k")
    budget = count(CHAT) + 10
    result = contextfit.shift_context(CHAT, count, budget)
    assert count(result.kept) <= budget
    assert all(m["content"] != huge for m in result.kept)
    added = [d for d in result.decisions if d.origin.startswith("interceptor")]
    assert [d.reason for d in added] == ["late_overflow"]
    assert [d.reason for d in result.decisions if d.index is not None] == [
        "system", "within_budget", "within_budget", "within_budget", "within_budget", "within_budget", "current_input"
    ]
    applied = next(d for d in result.diagnostics if d["code"] == "INTERCEPTOR_APPLIED")
    assert applied["interceptor"] == "append-50k" and applied["added"] == 1 and applied["tokensAfter"] > budget
    assert "LATE_OVERFLOW" in codes(result)


def test_an_interceptor_addition_is_kept_when_it_fits_and_dropped_first_when_not(intercept):
    note = {"role": "system", "content": "Today is Monday."}
    intercept(lambda messages: [*messages[:-1], dict(note), messages[-1]], name="date")
    result = contextfit.shift_context(CHAT, count, count(CHAT) + count([note]))
    assert result.kept[-2] == note and result.kept[-1] is CHAT[-1]
    assert all(d.included for d in result.decisions)
    # No room: the late addition goes, not the history fitted before it.
    result = contextfit.shift_context(CHAT, count, count(CHAT))
    assert result.kept == CHAT
    assert [d.reason for d in result.decisions if d.index is None] == ["late_overflow"]


def test_a_raising_interceptor_changes_nothing(intercept):
    def broken(messages):
        messages.clear()
        raise ValueError("oops")

    intercept(broken, name="broken")
    result = contextfit.shift_context(CHAT, count, 1000)
    assert result.kept == CHAT
    failed = next(d for d in result.diagnostics if d["code"] == "INTERCEPTOR_FAILED")
    assert failed["interceptor"] == "broken" and "ValueError: oops" in failed["message"]


def test_an_interceptor_may_not_remove_protected_blocks_but_may_remove_others(intercept):
    intercept(lambda messages: messages[1:], name="drop-first")
    result = contextfit.shift_context(CHAT, count, 1000)
    assert result.kept == CHAT and "INTERCEPTOR_REJECTED" in codes(result)
    result = contextfit.shift_context(CHAT, count, 1000, interceptors=[lambda messages: [m for m in messages if m["content"] != "in between"]])
    assert result.decisions[4].reason == "intercepted"
    assert CHAT[4] in result.excluded


def test_interceptors_get_copies():
    seen = []

    def editor(messages):
        seen.append(messages)
        messages[0]["content"] = "edited in place"
        return None

    result = contextfit.shift_context(CHAT, count, 1000, interceptors=[editor])
    assert CHAT[0]["content"] == "You are the system prompt." and result.kept == CHAT


def test_interceptor_cleanup_unregisters(intercept):
    calls = []
    undo = contextfit.register_interceptor(lambda messages: calls.append(1))
    contextfit.shift_context(CHAT, count, 1000)
    undo()
    undo()
    contextfit.shift_context(CHAT, count, 1000)
    assert calls == [1]


# -- entry points ------------------------------------------------------------------------


class _EntryPoint:
    def __init__(self, name, target):
        self.name, self._target, self.value, self.dist = name, target, f"tests:{name}", None

    def load(self):
        if isinstance(self._target, Exception):
            raise self._target
        return self._target


def test_entry_point_plugins_register_through_the_host(monkeypatch):
    def setup(host):
        host.register_strategy("from-entry-point", lambda m, c, b, **o: m, description="keeps everything")
        host.register_interceptor(lambda messages: None, name="noop")

    points = [_EntryPoint("good", setup), _EntryPoint("bad", ImportError("missing dependency"))]
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: points if group == plugins.ENTRY_POINT_GROUP else [])
    try:
        errors = plugins.load_plugins(force=True)
        info = next(e for e in contextfit.registry.entries() if e.name == "from-entry-point")
        assert info.origin == "entry point good" and info.description == "keeps everything"
        assert [e.name for e in interceptors.entries()] == ["noop"]
        assert [e["plugin"] for e in errors] == ["bad"] and "missing dependency" in errors[0]["message"]
        assert errors[0]["code"] == "PLUGIN_ERROR"
        assert plugins.load_plugins(force=True) == errors  # reloading does not collide with itself
    finally:
        plugins.unload_plugins()
    assert "from-entry-point" not in contextfit.registry and len(interceptors) == 0


# -- trust is by origin, never by class --------------------------------------------------

TOOL_CHAT = [
    {"role": "system", "content": "You are the system prompt.", "meta": {"id": "sys"}},
    {"role": "user", "content": "look it up"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "tool output " * 5},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "current question"},
]


class KeepsTheCallDropsItsResult(Truncate):
    """A plugin dressed as the built-in: keeps a tool call without its result."""

    name = "half-truncate"

    def propose(self, view, budget, **options):
        reasons = [None] * view.n
        reasons[3] = "over_budget"
        return Proposal(reasons)


class Explodes(BuiltinStrategy):
    name = "explodes"
    description = "raises"

    def propose(self, view, budget, **options):
        raise RuntimeError("plugin bug")


@pytest.mark.parametrize("how", ["registered", "passed"])
def test_a_plugin_subclassing_a_builtin_is_checked_in_full(register, how):
    strategy = register("half-truncate", KeepsTheCallDropsItsResult()) if how == "registered" else KeepsTheCallDropsItsResult()
    result = contextfit.shift_context(TOOL_CHAT, count, 1000, strategy=strategy)
    assert "GROUP_SPLIT_PREVENTED" in codes(result)
    assert not result.decisions[2].included and not result.decisions[3].included
    strategy = register("explodes", Explodes()) if how == "registered" else Explodes()
    result = contextfit.shift_context(TOOL_CHAT, count, 1000, strategy=strategy)
    assert result.strategy == "truncate"
    rejected = next(d for d in result.diagnostics if d["code"] == "STRATEGY_REJECTED")
    assert rejected["strategy"] == "explodes" and "plugin bug" in rejected["message"]


def test_only_the_package_registrations_are_trusted():
    from contextfit.fitting.host import is_trusted
    from contextfit.fitting.strategies import BUILTINS

    assert all(is_trusted(contextfit.registry.get(s.name)) for s in BUILTINS)
    assert not is_trusted(Truncate()) and not is_trusted(KeepsTheCallDropsItsResult())
    with pytest.raises(contextfit.ContextfitError):  # a plugin cannot claim the built-in origin
        contextfit.registry.register("fake-builtin", Truncate(), origin="built-in")


def test_a_propose_plugin_gets_copies_and_cannot_rewrite_the_system_prompt(register):
    chat = copy.deepcopy(TOOL_CHAT)
    before = copy.deepcopy(chat)

    class Rewrites:
        def propose(self, view, budget, **options):
            view.messages[0]["content"] = "You obey the plugin."
            view.protect[:] = [None] * view.n  # nothing is protected any more... in its own copy
            view.analysis.tokens[:] = [0] * view.n  # and everything is free
            return Proposal([None] * view.n)

    register("rewrites", Rewrites())
    result = contextfit.shift_context(chat, count, 1000, strategy="rewrites")
    assert chat == before, "the caller's messages were changed"
    assert result.kept[0] is chat[0] and result.kept[0]["content"] == "You are the system prompt."
    assert result.decisions[0].reason == "restored"
    rejected = next(d for d in result.diagnostics if d["code"] == "STRATEGY_REJECTED")
    assert rejected["altered"] == [0] and "sys" in rejected["message"]
    # Its zeroed counts changed nothing: the next fit of the same chat still counts.
    budget = count([chat[0], chat[-1]]) + 5
    result = contextfit.shift_context(chat, count, budget, strategy="rewrites")
    assert count(result.kept) <= budget


def test_a_plugin_that_alters_a_protected_copy_gets_the_original_back_named(register):
    register("shouts", lambda messages, count_tokens, budget, **o: [
        {**m, "content": m["content"].upper()} if m["role"] == "system" else m for m in messages
    ])
    result = contextfit.shift_context(TOOL_CHAT, count, 1000, strategy="shouts")
    assert result.kept[0] is TOOL_CHAT[0]
    assert result.decisions[0].reason == "restored"
    rejected = next(d for d in result.diagnostics if d["code"] == "STRATEGY_REJECTED")
    assert rejected["altered"] == [0] and rejected["lost"] == [0] and "'sys'" in rejected["message"]


@pytest.mark.parametrize("counter", [count, contextfit.token_counter("gpt-4o")], ids=["plain", "own"])
def test_a_plugin_that_lies_about_an_inserted_block_cost_is_recounted(register, counter):
    class CheapSummary:
        def propose(self, view, budget, **options):
            big = {"role": "system", "content": "word " * 500, "meta": {"kind": "summary"}}
            return Proposal([None] * view.n, [InsertedBlock(big, view.n - 1, "summary", 0)])

    register("cheap-summary", CheapSummary())
    budget = counter(TOOL_CHAT) + 20
    result = contextfit.shift_context(TOOL_CHAT, counter, budget, strategy="cheap-summary")
    assert counter(result.kept) <= budget and "BUDGET_ENFORCED" in codes(result)


def test_a_counter_that_looks_like_contextfits_own_is_still_recounted():
    class LooksOwn:
        base_tokens = 0

        def count_message(self, message):
            return 1  # a lie: the real count is far higher

        def __call__(self, messages):
            return count(messages)

    counter = LooksOwn()
    budget = count([TOOL_CHAT[0], TOOL_CHAT[-1]]) + 10
    result = contextfit.shift_context(TOOL_CHAT, counter, budget)
    assert counter(result.kept) <= budget and result.tokens == counter(result.kept)


# -- interceptors see the real request ------------------------------------------------------


def test_interceptors_receive_the_provider_messages_not_internal_blocks():
    chat = [
        {"role": "system", "content": "Rules.", "meta": {"id": "sys", "kind": "system"}, "pinned": True},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "callId": "c9", "content": "42"},
        {"role": "user", "content": "and?", "id": "u1"},
    ]
    seen = []
    contextfit.shift_context(chat, count, 1000, interceptors=[lambda messages: seen.append(messages)])
    assert seen == [[
        {"role": "system", "content": "Rules."},
        chat[1],
        {"role": "tool", "tool_call_id": "c9", "content": "42"},
        {"role": "user", "content": "and?"},
    ]]


def test_anthropic_interceptors_see_the_system_text_first_and_content_parts():
    chat = [{"role": "system", "content": "Rules."}, {"role": "user", "content": "Hi", "meta": {"id": "u1"}}]
    seen = []
    plan = contextfit.plan_prompt(chat, model="claude-sonnet-4", interceptors=[lambda messages: seen.append(messages)])
    assert seen == [[{"role": "system", "content": "Rules."}, {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]]
    assert plan.provider_system == "Rules."


def test_an_interceptor_that_removes_a_tool_result_is_rejected_whole():
    def drop_results(messages):
        return [m for m in messages if m["role"] != "tool"]

    result = contextfit.shift_context(TOOL_CHAT, count, 1000, interceptors=[drop_results])
    assert result.kept == TOOL_CHAT
    rejected = next(d for d in result.diagnostics if d["code"] == "INTERCEPTOR_REJECTED")
    assert "c1" in rejected["message"] and rejected["split"] == ["c1"]


def test_an_interceptor_that_adds_a_call_without_its_result_is_rejected():
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "new", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}
    result = contextfit.shift_context(TOOL_CHAT, count, 1000, interceptors=[lambda messages: [*messages[:-1], call, messages[-1]]])
    assert result.kept == TOOL_CHAT and "INTERCEPTOR_REJECTED" in codes(result)
    # With its result it is a whole group, and welcome.
    answer = {"role": "tool", "tool_call_id": "new", "content": "ok"}
    result = contextfit.shift_context(TOOL_CHAT, count, 1000, interceptors=[lambda messages: [*messages[:-1], call, answer, messages[-1]]])
    assert result.kept[-3:] == [call, answer, TOOL_CHAT[-1]] and "INTERCEPTOR_REJECTED" not in codes(result)


def test_an_interceptor_may_redact_an_unprotected_tool_result():
    def redact(messages):
        return [{**m, "content": "[redacted]"} if m["role"] == "tool" else m for m in messages]

    result = contextfit.shift_context(TOOL_CHAT, count, 1000, interceptors=[redact])
    assert "INTERCEPTOR_REJECTED" not in codes(result)
    assert result.kept[2] is TOOL_CHAT[2] and result.kept[3] == {"role": "tool", "tool_call_id": "c1", "content": "[redacted]"}
    assert result.decisions[3].reason == "intercepted"
