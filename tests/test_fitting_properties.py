"""Properties of every fit, for every strategy, over random conversations."""

from __future__ import annotations

import copy

import pytest
from conversations import conversations, groups, lumpy_counter, protected_indices, word_count_counter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import contextfit
from contextfit import results as r

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual"]
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _budget(messages, share: float) -> int:
    """A budget between the protected tokens (share 0) and all tokens (share 1);
    a negative share makes it smaller than the protected blocks."""
    protected = word_count_counter([messages[i] for i in sorted(protected_indices(messages))])
    return max(0, int(protected + share * (word_count_counter(messages) - protected)) - (share < 0))


def _fit(messages, counter, budget, strategy, **options):
    try:
        return contextfit.shift_context(messages, counter, budget, strategy=strategy, interceptors=(), **options)
    except contextfit.TokenBudgetExceeded as exc:
        return exc


def _check(messages, counter, budget, strategy, result):
    protected = protected_indices(messages)
    protected_tokens = counter([messages[i] for i in sorted(protected)])
    if isinstance(result, contextfit.TokenBudgetExceeded):
        assert result.code == "TOKEN_BUDGET_EXCEEDED"
        assert protected_tokens > budget, "raised although the protected blocks fit"
        assert result.budget == budget and result.protected_tokens > budget
        return
    assert protected_tokens <= budget or counter is lumpy_counter
    # The budget holds by an independent recount with the caller's function.
    assert counter(result.kept) <= budget
    assert result.tokens == counter(result.kept)
    # Every input message is in kept or excluded, exactly once, in order.
    kept_inputs = [m for m in result.kept if any(m is x for x in messages)]
    assert len(kept_inputs) + len(result.excluded) == len(messages)
    order = [next(i for i, x in enumerate(messages) if x is m) for m in kept_inputs]
    assert order == sorted(order)
    order = [next(i for i, x in enumerate(messages) if x is m) for m in result.excluded]
    assert order == sorted(order)
    kept_index = set(next(i for i, x in enumerate(messages) if x is m) for m in kept_inputs)
    # Nothing protected is lost.
    assert protected <= kept_index
    # No group is split.
    for group in groups(messages):
        assert group <= kept_index or not (group & kept_index), f"group {sorted(group)} split"
    # Added blocks are marked and counted.
    for block in result.kept:
        if not any(block is x for x in messages):
            meta = block.get("meta", {})
            assert meta.get("kind") == "summary" or meta.get("compressed") is True
            assert block in result.truncated
    # Decisions: one per input message plus inserted blocks, with spec reasons.
    decisions = list(result.decisions)
    assert len(decisions) == len(messages) + len(result.truncated)
    # The tuple rows the pipeline reads say exactly what the Decision objects say.
    assert [
        (d.index, d.id, d.role, d.kind, d.tokens, d.included, d.reason, d.group, d.origin, d.sources, d.message)
        for d in decisions
    ] == list(result.decisions.rows())
    for decision in decisions:
        if decision.index is None:
            continue
        assert decision.included == (decision.index in kept_index)
        assert decision.reason in (r.INCLUDED_REASONS if decision.included else r.EXCLUDED_REASONS)
        if decision.included:
            assert isinstance(decision.tokens, int)
        if decision.index in protected:
            assert decision.reason in r.PROTECTED_REASONS


@SETTINGS
@given(conversations(), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES))
def test_every_fit_keeps_the_promises(messages, share, strategy):
    budget = _budget(messages, share)
    before = copy.deepcopy(messages)
    result = _fit(messages, word_count_counter, budget, strategy)
    assert messages == before, "the input was mutated"
    _check(messages, word_count_counter, budget, strategy, result)


@SETTINGS
@given(conversations(), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES))
def test_fits_are_deterministic(messages, share, strategy):
    budget = _budget(messages, share)
    first = _fit(messages, word_count_counter, budget, strategy)
    second = _fit(copy.deepcopy(messages), word_count_counter, budget, strategy)
    if isinstance(first, Exception):
        assert type(first) is type(second) and first.protected_tokens == second.protected_tokens
        return
    assert first.kept == second.kept and first.excluded == second.excluded
    assert [d.reason for d in first.decisions] == [d.reason for d in second.decisions]
    assert first.diagnostics == second.diagnostics


@SETTINGS
@given(conversations(), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES))
def test_a_counter_that_is_not_additive_is_still_obeyed(messages, share, strategy):
    budget = _budget(messages, share)
    result = _fit(messages, lumpy_counter, budget, strategy)
    if isinstance(result, Exception):
        # Per-message parts of the protected blocks over-fill the budget, or
        # the counter's own total of them does.
        protected = [messages[i] for i in sorted(protected_indices(messages))]
        assert word_count_counter(protected) > budget or lumpy_counter(protected) > budget
        return
    assert lumpy_counter(result.kept) <= budget
    _check(messages, lumpy_counter, budget, strategy, result)


@SETTINGS
@given(conversations(), st.floats(-0.15, 1.1), st.sampled_from(["truncate", "manual"]))
def test_skipping_excluded_counts_changes_nothing_but_the_counts(messages, share, strategy):
    budget = _budget(messages, share)
    full = _fit(messages, word_count_counter, budget, strategy)
    lean = _fit(messages, word_count_counter, budget, strategy, count_excluded=False)
    if isinstance(full, Exception):
        assert isinstance(lean, contextfit.TokenBudgetExceeded)
        return
    assert full.kept == lean.kept and full.tokens == lean.tokens
    for a, b in zip(full.decisions, lean.decisions):
        assert a.reason == b.reason
        assert b.tokens is None or b.tokens == a.tokens
        if b.included:
            assert b.tokens == a.tokens


@SETTINGS
@given(conversations(max_turns=30), st.floats(0.2, 1.1), st.sampled_from(STRATEGIES))
def test_growing_a_chat_refits_like_a_fresh_fit(messages, share, strategy):
    budget = _budget(messages, share)
    """The cached analysis of a prefix gives the same answer as a cold fit."""
    counter = lambda ms: word_count_counter(ms)  # noqa: E731  (a fresh counter: a cold cache)
    for cut in (len(messages) // 2, len(messages)):
        _fit(messages[:cut], word_count_counter, budget, strategy)
        warm = _fit(messages[:cut], word_count_counter, budget, strategy)
        cold = _fit(messages[:cut], counter, budget, strategy)
        if isinstance(cold, Exception):
            assert isinstance(warm, contextfit.TokenBudgetExceeded)
            continue
        assert warm.kept == cold.kept
        assert [d.reason for d in warm.decisions] == [d.reason for d in cold.decisions]


@SETTINGS
@given(
    conversations(max_turns=30),
    st.floats(0.2, 1.1),
    st.sampled_from(STRATEGIES),
    st.lists(st.sampled_from(["whole", "prefix", "other", "edited"]), min_size=2, max_size=6),
)
def test_branching_and_editing_a_chat_refits_like_a_fresh_fit(messages, share, strategy, order):
    """One counter sees the chat, a shorter one, a regenerated last message and
    an in-place edit, in any order: each fit answers like a cold one."""
    budget = _budget(messages, share)
    cut = max(1, len(messages) - 2)
    shared = copy.deepcopy(messages)  # the fits below may edit it in place
    other = {"role": "user", "content": "a regenerated turn with new words " * 3}
    counter = lambda ms: word_count_counter(ms)  # noqa: E731  (one counter: one cache for this example)
    for step in order:
        if step == "edited":
            shared[0]["content"] = str(shared[0].get("content") or "") + " edited in place"
            chat = shared
        else:
            chat = {"whole": shared, "prefix": shared[:cut], "other": [*shared[:cut], other]}[step]
        warm = _fit(chat, counter, budget, strategy)
        cold = _fit(copy.deepcopy(chat), lambda ms: word_count_counter(ms), budget, strategy)
        if isinstance(cold, Exception):
            assert isinstance(warm, contextfit.TokenBudgetExceeded)
            continue
        assert warm.kept == cold.kept and warm.tokens == cold.tokens
        assert [(d.reason, d.tokens) for d in warm.decisions] == [(d.reason, d.tokens) for d in cold.decisions]
        assert warm.truncated == cold.truncated


@SETTINGS
@given(conversations(max_turns=30), st.floats(0.2, 1.1), st.sampled_from(STRATEGIES))
def test_a_lean_fit_then_a_counted_one_counts_everything(messages, share, strategy):
    budget = _budget(messages, share)
    counter = lambda ms: word_count_counter(ms)  # noqa: E731
    _fit(messages, counter, budget, "truncate", count_excluded=False)
    counted = _fit(messages, counter, budget, strategy)
    cold = _fit(messages, lambda ms: word_count_counter(ms), budget, strategy)
    if isinstance(cold, Exception):
        assert isinstance(counted, contextfit.TokenBudgetExceeded)
        return
    assert counted.kept == cold.kept and counted.tokens == cold.tokens
    assert [d.tokens for d in counted.decisions] == [d.tokens for d in cold.decisions]


def test_an_edited_message_is_noticed_by_the_cache():
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "a b c"}, {"role": "user", "content": "d"}]
    contextfit.shift_context(chat, word_count_counter, 100)
    chat[1]["meta"] = {"pinned": True}
    chat[1]["content"] = "a b c " * 50
    result = contextfit.shift_context(chat, word_count_counter, 1000)
    assert result.decisions[1].reason == "pinned"
    assert result.decisions[1].tokens == word_count_counter([chat[1]]) - 3


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_budget_exceeded_carries_the_numbers(strategy):
    chat = [{"role": "system", "content": "word " * 100}, {"role": "user", "content": "hi"}]
    with pytest.raises(contextfit.TokenBudgetExceeded) as caught:
        contextfit.shift_context(chat, word_count_counter, 50, strategy=strategy)
    assert caught.value.code == "TOKEN_BUDGET_EXCEEDED"
    assert caught.value.protected_tokens == word_count_counter(chat)
    assert caught.value.budget == 50
