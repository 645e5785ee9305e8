"""Properties of every fit, for every strategy, over random conversations."""

from __future__ import annotations

import copy
import random

import pytest
from support.conversations import (
    chats_with_long_results,
    conversations,
    groups,
    link_ids,
    link_state,
    lumpy_counter,
    protected_indices,
    responses_conversations,
    word_count_counter,
)
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.promises import check_promises, share_budget, shift_or_refusal

import contextfit
from contextfit.fitting import results as r
from contextfit.fitting.results import InsertedBlock
from contextfit.fitting.strategies import BuiltinStrategy, Truncate
from contextfit.tokens.sent import render
from contextfit.fitting.strategies import Proposal

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger"]
SETTINGS = settings(max_examples=examples(120), suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(conversations(), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES))
def test_every_fit_keeps_the_promises(messages, share, strategy):
    budget = share_budget(messages, share)
    before = copy.deepcopy(messages)
    result = shift_or_refusal(messages, word_count_counter, budget, strategy)
    assert messages == before, "the input was mutated"
    check_promises(messages, word_count_counter, budget, strategy, result)


@SETTINGS
@given(conversations(reuse_ids=True), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES))
def test_reused_tool_call_ids_keep_the_promises(messages, share, strategy):
    """``call_1`` every turn: each call and the results that answer it are a group of their own."""
    budget = share_budget(messages, share)
    check_promises(messages, word_count_counter, budget, strategy, shift_or_refusal(messages, word_count_counter, budget, strategy))


CAPS = [1, 10, 40, 120]


@SETTINGS
@given(chats_with_long_results(), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES), st.sampled_from(CAPS),
       st.sampled_from([word_count_counter, lumpy_counter]))
def test_tool_result_cap_keeps_the_promises(messages, share, strategy, cap, counter):
    """Capped results stand where their originals stood, so the budget, protection and whole
    groups hold for every strategy; a capped result is never longer than its original."""
    budget = share_budget(messages, share)
    before = copy.deepcopy(messages)
    result = shift_or_refusal(messages, counter, budget, strategy, tool_result_cap=cap)
    assert messages == before, "the input was mutated"
    if isinstance(result, contextfit.TokenBudgetExceeded) and counter is lumpy_counter:
        return  # check_promises' protected-token arithmetic is the additive counter's
    check_promises(messages, counter, budget, strategy, result)
    if isinstance(result, Exception):
        return
    for decision in result.decisions:
        if decision.index is None and decision.reason == r.COMPRESSED and "[…" in str(decision.message.get("content")):
            source = decision.sources[0]
            assert counter([decision.message]) < counter([messages[source]])
            assert next(d for d in result.decisions if d.index == source).reason == r.SUMMARIZED
            event("capped")  # --hypothesis-show-statistics: how often a cap cut a result


@SETTINGS
@given(chats_with_long_results(max_turns=30), st.floats(0.2, 1.1), st.sampled_from(STRATEGIES), st.sampled_from(CAPS))
def test_a_capped_chat_refits_like_a_fresh_fit(messages, share, strategy, cap):
    """The capped copies cached in a prefix's analysis give the same answer as a cold fit."""
    budget = share_budget(messages, share)
    counter = lambda ms: word_count_counter(ms)  # noqa: E731  (one counter: one cache for this example)
    for cut in (len(messages) // 2, len(messages)):
        warm = shift_or_refusal(messages[:cut], counter, budget, strategy, tool_result_cap=cap)
        cold = shift_or_refusal(copy.deepcopy(messages[:cut]), lambda ms: word_count_counter(ms), budget, strategy, tool_result_cap=cap)
        if isinstance(cold, Exception):
            assert isinstance(warm, contextfit.TokenBudgetExceeded)
            continue
        assert warm.kept == cold.kept and warm.tokens == cold.tokens
        assert [(d.reason, d.tokens) for d in warm.decisions] == [(d.reason, d.tokens) for d in cold.decisions]


@SETTINGS
@given(conversations(), st.floats(-0.15, 1.1), st.sampled_from(["truncate", "summarize", "clear-tool-results"]),
       st.sampled_from([None, 0.1, 0.5, 0.95]))
def test_stable_prefix_keeps_the_promises(messages, share, strategy, low_water):
    budget = share_budget(messages, share)
    result = shift_or_refusal(messages, word_count_counter, budget, strategy, stable_prefix=True, low_water=low_water)
    check_promises(messages, word_count_counter, budget, strategy, result)
    plain = shift_or_refusal(messages, word_count_counter, budget, strategy)
    if not isinstance(result, Exception) and word_count_counter(messages) <= budget:
        assert result.kept == plain.kept  # nothing is cut without need


@SETTINGS
@given(conversations(), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES))
def test_fits_are_deterministic(messages, share, strategy):
    budget = share_budget(messages, share)
    first = shift_or_refusal(messages, word_count_counter, budget, strategy)
    second = shift_or_refusal(copy.deepcopy(messages), word_count_counter, budget, strategy)
    if isinstance(first, Exception):
        assert type(first) is type(second) and first.protected_tokens == second.protected_tokens
        return
    assert first.kept == second.kept and first.excluded == second.excluded
    assert [d.reason for d in first.decisions] == [d.reason for d in second.decisions]
    assert first.diagnostics == second.diagnostics


@SETTINGS
@given(conversations(), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES))
def test_a_counter_that_is_not_additive_is_still_obeyed(messages, share, strategy):
    budget = share_budget(messages, share)
    result = shift_or_refusal(messages, lumpy_counter, budget, strategy)
    if isinstance(result, Exception):
        # Per-message parts of the protected blocks over-fill the budget, or
        # the counter's own total of them does.
        protected = [messages[i] for i in sorted(protected_indices(messages))]
        assert word_count_counter(protected) > budget or lumpy_counter(protected) > budget
        return
    assert lumpy_counter(result.kept) <= budget
    check_promises(messages, lumpy_counter, budget, strategy, result)


@SETTINGS
@given(conversations(), st.floats(-0.15, 4.0), st.sampled_from(STRATEGIES))
@example([{"role": "user", "content": "alpha beta gamma."}, {"role": "user", "content": "alpha."}], 4.0, "summarize")
def test_skipping_excluded_counts_changes_nothing_but_the_counts(messages, share, strategy):
    """``count_excluded=False`` decides exactly as a fit that counts everything
    (the example: a chat that fits whole, summarize reserving room for a
    summary it does not need; the lazy fit summarized it)."""
    budget = share_budget(messages, share)
    # Counters of their own: a counter shared with the full fit would hand the lean one every count.
    full = shift_or_refusal(messages, lambda ms: word_count_counter(ms), budget, strategy)
    lean = shift_or_refusal(messages, lambda ms: word_count_counter(ms), budget, strategy, count_excluded=False)
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
    budget = share_budget(messages, share)
    """The cached analysis of a prefix gives the same answer as a cold fit."""
    counter = lambda ms: word_count_counter(ms)  # noqa: E731  (a fresh counter: a cold cache)
    for cut in (len(messages) // 2, len(messages)):
        shift_or_refusal(messages[:cut], word_count_counter, budget, strategy)
        warm = shift_or_refusal(messages[:cut], word_count_counter, budget, strategy)
        cold = shift_or_refusal(messages[:cut], counter, budget, strategy)
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
    budget = share_budget(messages, share)
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
        warm = shift_or_refusal(chat, counter, budget, strategy)
        cold = shift_or_refusal(copy.deepcopy(chat), lambda ms: word_count_counter(ms), budget, strategy)
        if isinstance(cold, Exception):
            assert isinstance(warm, contextfit.TokenBudgetExceeded)
            continue
        assert warm.kept == cold.kept and warm.tokens == cold.tokens
        assert [(d.reason, d.tokens) for d in warm.decisions] == [(d.reason, d.tokens) for d in cold.decisions]
        assert warm.truncated == cold.truncated


@SETTINGS
@given(conversations(max_turns=30), st.floats(0.2, 1.1), st.sampled_from(STRATEGIES))
def test_a_lean_fit_then_a_counted_one_counts_everything(messages, share, strategy):
    budget = share_budget(messages, share)
    counter = lambda ms: word_count_counter(ms)  # noqa: E731
    shift_or_refusal(messages, counter, budget, "truncate", count_excluded=False)
    counted = shift_or_refusal(messages, counter, budget, strategy)
    cold = shift_or_refusal(messages, lambda ms: word_count_counter(ms), budget, strategy)
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


# -- hostile plugins and interceptors ---------------------------------------------------------
#
# Generated strategies return random subsets, reorderings, altered copies (marked
# or not), edit what they are given, raise, return garbage, or come as a
# ``propose`` object or a subclass of a built-in with random reasons, lying
# inserted blocks and a mutated view. Generated interceptors add, remove,
# alter and reorder provider messages. Whatever they do: the budget holds by
# the caller's counter, nothing protected is lost or altered, no tool group is
# split in what is sent, and the caller's input is unchanged.

HOSTILE = settings(max_examples=examples(1_000), derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
COUNTERS = [word_count_counter, lumpy_counter, contextfit.token_counter("gpt-4o")]
_OUTPUTS = ["subset", "subset", "any-subset", "reorder", "altered", "marked", "in-place", "raise", "garbage", "fit-result"]
_PROPOSALS = ["reasons", "bad-reasons", "lying-insert", "mutate-view", "raise", "super"]


def _altered(message: dict, rng) -> dict:
    copy_ = copy.deepcopy(message)
    copy_["content"] = f"altered {rng.random()}"
    return copy_


def _output(kind: str, rng, messages, count_tokens, budget):
    keep = protected_indices(messages)  # a plugin that knows the rules, and bends the others
    if kind == "any-subset":
        return [m for m in messages if rng.random() < 0.6]
    if kind == "subset":
        return [m for i, m in enumerate(messages) if i in keep or rng.random() < 0.6]
    if kind == "reorder":
        chosen = [m for i, m in enumerate(messages) if i in keep or rng.random() < 0.7]
        rng.shuffle(chosen)
        return chosen
    if kind == "altered":
        return [_altered(m, rng) if rng.random() < 0.3 else m for m in messages]
    if kind == "marked":
        out = []
        for index, m in enumerate(messages):
            roll = rng.random()
            if roll < 0.2:  # a shortened copy, links and all
                out.append({**copy.deepcopy(m), "content": "short", "meta": {"compressed": True, "source": index}})
            elif roll < 0.3:
                out.append({"role": "system", "content": "summary " * rng.randint(1, 300), "meta": {"kind": "summary", "summarized": [index]}})
            elif roll < 0.8:
                out.append(m)
        return out
    if kind == "in-place":
        for m in messages:
            if rng.random() < 0.3:
                m["content"] = "edited in place"
            if rng.random() < 0.1:
                m.setdefault("meta", {})["pinned"] = False
        return messages
    if kind == "raise":
        raise RuntimeError("plugin bug")
    if kind == "garbage":
        return rng.choice(["all", None, 42, [1, 2], [{"role": "user"}], {"kept": messages}])
    return contextfit.shift_context(messages, count_tokens, budget, interceptors=())


def _proposal(kind: str, rng, view, budget, fallback=None):
    n = view.n
    if kind == "raise":
        raise ValueError("propose bug")
    if kind == "super" and fallback is not None:
        proposal = fallback(view, budget)
        for index in range(n):
            if rng.random() < 0.2:
                proposal.reasons[index] = None if proposal.reasons[index] else r.OVER_BUDGET
        return proposal
    if kind == "mutate-view":
        for index in range(n):
            if rng.random() < 0.3:
                view.messages[index]["content"] = "rewritten by the plugin"
        view.protect[:] = [None] * n
        view.analysis.tokens[:] = [0] * n
    choices = [None, None, r.OVER_BUDGET, r.MANUAL, r.LOW_RELEVANCE, r.SUMMARIZED]
    if kind == "bad-reasons":
        choices += ["system", "bogus", 7]
    reasons = [rng.choice(choices) for _ in range(n + (kind == "bad-reasons" and rng.random() < 0.3))]
    for index in view.protected if rng.random() < 0.7 else ():  # mostly keeps what must be kept
        if index < len(reasons):
            reasons[index] = None
    inserted = []
    if kind in ("lying-insert", "mutate-view"):
        for _ in range(rng.randint(1, 3)):
            marked = rng.random() < 0.8
            block = {"role": "system", "content": "summary " * rng.randint(1, 400), "meta": {"kind": "summary"} if marked else {}}
            inserted.append(InsertedBlock(block, rng.randint(-1, n + 1), r.SUMMARY, 0, (rng.randint(-2, n + 2),)))
    return Proposal(reasons, inserted)


@st.composite
def hostile_strategies(draw):
    """A plugin strategy of random form and behaviour (rng-driven, reproducible)."""
    form = draw(st.sampled_from(["callable", "propose", "truncate-subclass", "builtin-subclass"]))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if form == "callable":
        kind = draw(st.sampled_from(_OUTPUTS))

        def strategy(messages, count_tokens, budget, **options):
            return _output(kind, rng, messages, count_tokens, budget)

        return strategy
    kind = draw(st.sampled_from(_PROPOSALS))
    if form == "propose":
        class Proposer:
            def propose(self, view, budget, **options):
                return _proposal(kind, rng, view, budget)

        return Proposer()
    if form == "truncate-subclass":
        class Dressed(Truncate):
            name = "dressed-as-truncate"

            def propose(self, view, budget, **options):
                return _proposal(kind, rng, view, budget, super().propose)

        return Dressed()

    class Pretender(BuiltinStrategy):
        name = "pretender"

        def propose(self, view, budget, **options):
            return _proposal(kind, rng, view, budget)

    return Pretender()


def _links(messages) -> dict[str, tuple[bool, bool]]:
    """For each link id: whether every result answers a call, and every call has a result."""
    return link_state(messages)


def _no_split_group_sent(messages, kept, template):
    """Every link id that was whole in the input is whole or absent in what is
    sent; a half one (an orphan result, a call still waiting) only as it was."""
    before = _links(messages)
    sent = render(kept, template).messages
    for link, state in _links(sent).items():
        if state != (True, True):
            assert before.get(link) == state, f"{template}: link {link} is sent as {state}, was {before.get(link)}"


def _hostile_check(messages, pristine, counter, budget, result, template, *, whole_input_groups=True):
    for code in sorted({d["code"] for d in getattr(result, "diagnostics", [])}) or [type(result).__name__]:
        event(code)  # --hypothesis-show-statistics: how often each host intervention happened
    assert messages == pristine, "the caller's input was changed"
    protected = protected_indices(messages)
    if isinstance(result, contextfit.TokenBudgetExceeded):
        assert counter([messages[i] for i in sorted(protected)]) > budget or word_count_counter(
            [messages[i] for i in sorted(protected)]) > budget
        return
    assert counter(result.kept) <= budget, "over budget by the caller's counter"
    kept_index = {i for i, m in enumerate(messages) if any(k is m for k in result.kept)}
    assert protected <= kept_index, "a protected block was lost"
    kept_inputs = [m for m in result.kept if any(m is x for x in messages)]
    assert len(kept_inputs) + len(result.excluded) == len(messages)
    # An interceptor may replace an unprotected tool result (remove it, add its
    # redacted copy): the input group is then not kept whole, but what is
    # sent still is, and that is what the check below holds it to.
    # A compressed block standing for one input with its links (a capped result) is sent in its place.
    standing = {d.sources[0] for d in result.decisions if d.index is None and d.reason == r.COMPRESSED
                and len(d.sources) == 1 and link_ids(d.message) == link_ids(messages[d.sources[0]])}
    sent = kept_index | standing
    for group in groups(messages) if whole_input_groups else ():
        assert group <= sent or not (group & sent), f"group {sorted(group)} split"
    for template_ in {template, "openai", "anthropic"}:
        _no_split_group_sent(messages, result.kept, template_)


@HOSTILE
@given(conversations(max_turns=14), st.floats(-0.1, 1.1), hostile_strategies(), st.sampled_from(COUNTERS),
       st.sampled_from([None, None, 4]))
def test_no_plugin_strategy_can_break_the_rules(messages, share, strategy, counter, cap):
    budget = share_budget(messages, share)
    pristine = copy.deepcopy(messages)
    try:
        result = contextfit.shift_context(messages, counter, budget, strategy=strategy, interceptors=(),
                                          tool_result_cap=cap)
    except contextfit.TokenBudgetExceeded as exc:
        result = exc
    _hostile_check(messages, pristine, counter, budget, result, "openai")


_OPS = ["add-note", "add-user", "add-huge", "add-call", "add-result", "add-pair", "add-answer", "remove", "alter",
        "swap", "none", "raise", "garbage", "in-place"]


@st.composite
def hostile_interceptors(draw):
    """An interceptor applying random operations to the provider messages it gets."""
    ops = draw(st.lists(st.tuples(st.sampled_from(_OPS), st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=4))

    def interceptor(messages):
        out = list(messages)
        for op, a, b in ops:
            at = int(a * len(out))
            if op == "none":
                return None
            if op == "raise":
                raise RuntimeError("interceptor bug")
            if op == "garbage":
                return "not a list"
            if op == "in-place" and out:
                out[min(at, len(out) - 1)]["content"] = "edited in place"
            elif op == "add-note":
                out.insert(at, {"role": "system", "content": "Note for today."})
            elif op == "add-user":
                out.insert(at, {"role": "user", "content": "an extra user line " * int(1 + b * 20)})
            elif op == "add-huge":
                out.insert(at, {"role": "user", "content": "huge " * 5_000})
            elif op == "add-call":
                out.insert(at, {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"new_{at}", "type": "function", "function": {"name": "g", "arguments": "{}"}}]})
            elif op == "add-result":
                out.insert(at, {"role": "tool", "tool_call_id": f"stray_{at}", "content": "stray"})
            elif op == "add-pair":
                out[at:at] = [
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": f"pair_{at}", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"pair_{at}", "content": "paired " * int(1 + b * 10)},
                ]
            elif op == "add-answer":
                calls = [link for m in out for link in link_ids(m)]
                if calls:
                    out.insert(at, {"role": "tool", "tool_call_id": calls[int(b * len(calls))], "content": "another answer"})
            elif op == "remove" and out:
                del out[min(at, len(out) - 1)]
            elif op == "alter" and out:
                k = min(at, len(out) - 1)
                out[k] = {**out[k], "content": "altered"}
            elif op == "swap" and len(out) > 1:
                j = int(b * len(out))
                k = min(at, len(out) - 1)
                out[k], out[j] = out[j], out[k]
        return out

    return interceptor


@HOSTILE
@given(
    conversations(max_turns=14),
    st.floats(0, 1.1),
    st.lists(hostile_interceptors(), min_size=1, max_size=3),
    st.sampled_from(["truncate", "summarize", "vector-recall", "manual"]),
    st.sampled_from(COUNTERS),
    st.sampled_from(["openai", "anthropic"]),
)
def test_no_interceptor_can_break_the_rules(messages, share, chain, strategy, counter, template):
    budget = share_budget(messages, share)
    pristine = copy.deepcopy(messages)
    try:
        result = contextfit.shift_context(messages, counter, budget, strategy=strategy, interceptors=chain, template=template)
    except contextfit.TokenBudgetExceeded as exc:
        result = exc
    _hostile_check(messages, pristine, counter, budget, result, template, whole_input_groups=False)


def test_a_counter_over_the_sum_of_its_parts_still_gets_the_interceptors_additions_dropped():
    """Found by the hostile property above: with a counter whose total is one
    more than its parts, the parts of an intercepted prompt added up to the
    budget exactly, so the final fit dropped nothing and refused the request,
    naming the protected blocks, although the interceptor's own addition
    could go."""

    def lumpy(messages):
        return sum(len(str(m.get("content") or "").split()) for m in messages) + (1 if len(messages) > 3 else 0)

    chat = [{"role": "system", "content": "s s"}, {"role": "user", "content": "h h h"},
            {"role": "assistant", "content": "a a"}, {"role": "user", "content": "q"}]
    note = {"role": "system", "content": "n n"}
    result = contextfit.shift_context(chat, lumpy, 10, interceptors=[lambda messages: [note, *messages]])
    assert lumpy(result.kept) <= 10
    assert [m["content"] for m in result.kept] == ["s s", "h h h", "a a", "q"]  # the addition went, nothing else
    assert any(d["code"] == "LATE_OVERFLOW" for d in result.diagnostics)


def test_a_counter_over_the_sum_of_its_parts_is_reported_when_more_is_dropped():
    """COUNT_ADJUSTED was appended after the result had copied its diagnostics, so it never reached the caller."""

    def lumpy(messages):
        return sum(len(str(m.get("content") or "").split()) for m in messages) + max(len(messages) - 2, 0)

    chat = [{"role": "user", "content": "word " * 5}, {"role": "assistant", "content": "word " * 5}] * 4
    chat.append({"role": "user", "content": "now"})
    result = contextfit.shift_context(chat, lumpy, 22)  # five messages' parts add up to 21, but count 24
    assert lumpy(result.kept) <= 22 and len(result.kept) == 4
    assert "COUNT_ADJUSTED" in [d["code"] for d in result.diagnostics]


@SETTINGS
@given(responses_conversations(), st.floats(-0.15, 1.1), st.sampled_from(STRATEGIES))
def test_conversations_imported_from_responses_items_keep_the_promises(messages, share, strategy):
    # function_call / function_call_output pairs become tool groups that no strategy splits
    budget = share_budget(messages, share)
    result = shift_or_refusal(messages, word_count_counter, budget, strategy)
    check_promises(messages, word_count_counter, budget, strategy, result)
