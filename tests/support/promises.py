"""The promises of every fit, checked from the outside: the budget holds by an independent
recount, nothing protected is lost, no group is split, every decision is one of SPEC's reasons."""

from __future__ import annotations

import contextfit
from contextfit.fitting import results as r
from support.conversations import groups, link_ids, lumpy_counter, protected_indices, word_count_counter


def share_budget(messages, share: float) -> int:
    """A budget between the protected tokens (share 0) and all tokens (share 1);
    a negative share makes it smaller than the protected blocks."""
    protected = word_count_counter([messages[i] for i in sorted(protected_indices(messages))])
    return max(0, int(protected + share * (word_count_counter(messages) - protected)) - (share < 0))


def shift_or_refusal(messages, counter, budget, strategy, **options):
    """``shift_context`` without interceptors, or the ``TokenBudgetExceeded`` it raised."""
    try:
        return contextfit.shift_context(messages, counter, budget, strategy=strategy, interceptors=(), **options)
    except contextfit.TokenBudgetExceeded as exc:
        return exc


def check_promises(messages, counter, budget, strategy, result):
    """Every promise of a fit (or of its refusal), checked independently of the host."""
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
    # A compressed block that stands for one input (a cleared tool result) keeps
    # its place and its tool links, so its group is whole with it.
    standing = set()
    for decision in result.decisions:
        if decision.index is None and decision.reason == r.COMPRESSED and len(decision.sources) == 1:
            source = decision.sources[0]
            assert source not in protected and source not in kept_index
            assert link_ids(decision.message) == link_ids(messages[source])
            standing.add(source)
    sent = kept_index | standing
    # No group is split.
    for group in groups(messages):
        assert group <= sent or not (group & sent), f"group {sorted(group)} split"
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
