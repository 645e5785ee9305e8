"""truncate's walk carried from fit to fit (strategies/carried_walk.py) answers what the plain walk answers."""

from __future__ import annotations

import copy

from support.conversations import lumpy_counter, word_count_counter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.sessions import fit_or_refusal, growth, walk_outcome

import contextfit
from contextfit.fitting import host as fitting
from contextfit.fitting.analysis import ChatAnalysis, FitView
from contextfit.fitting.counting import counting_for
from contextfit.pipeline.session import FitSession
from contextfit.fitting.strategies import carried_walk as walk_module
from contextfit.fitting.strategies.base import fill_newest, room_left, start_reasons

SETTINGS = settings(max_examples=examples(80), suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(growth(), st.floats(0.05, 1.1), st.booleans(), st.sampled_from([word_count_counter, lumpy_counter]))
def test_a_growing_session_truncates_like_a_fresh_fit_at_one_budget(chat, share, count_excluded, count):
    """One budget for every step (the walk is kept per budget), every refit
    checked against a fresh ``shift_context`` of a copy; with a counter that
    is not the sum of its parts too (the host then drops more than the walk)."""
    messages, cuts, edits = chat
    counter = lambda ms: count(ms)  # noqa: E731 - a counter of its own: a fresh cache
    budget = int(share * word_count_counter(messages))
    session = FitSession(messages[:cuts[0]])
    for end, edit in zip([*cuts[1:], len(messages)], edits):
        warm = fit_or_refusal(session.fit, counter, budget, "truncate", count_excluded=count_excluded)
        cold = fit_or_refusal(contextfit.shift_context, copy.deepcopy(session.messages), lambda ms: count(ms),
                    budget, "truncate", count_excluded=count_excluded)
        assert walk_outcome(warm, count_excluded) == walk_outcome(cold, count_excluded)
        if edit and len(session):  # regenerate the last message: the walk before it carries on
            session.edit(-1, {"role": "assistant", "content": "regenerated " * (1 + len(session) % 7)})
            warm = fit_or_refusal(session.fit, counter, budget, "truncate", count_excluded=count_excluded)
            cold = fit_or_refusal(contextfit.shift_context, copy.deepcopy(session.messages), lambda ms: count(ms),
                        budget, "truncate", count_excluded=count_excluded)
            assert walk_outcome(warm, count_excluded) == walk_outcome(cold, count_excluded)
        session.extend(messages[len(session):end] if end > len(session) else [])


def _view(messages, counting):
    facts = ChatAnalysis().extended(messages, counting, True)
    return FitView(messages, facts, counting)


@SETTINGS
@given(growth(), st.lists(st.integers(0, 400), min_size=9, max_size=9))
def test_a_walk_extended_chunk_by_chunk_is_the_walk_made_at_once(chat, budgets):
    """The walk's own state (sums, cut, reasons, lists) after each chunk is
    the one made from nothing, and its reasons are fill_newest's; also when
    the budget moves between two chunks (the cut then moves back too)."""
    messages, cuts, _edits = chat
    counting = counting_for(lambda ms: word_count_counter(ms))
    walk = walk_module.empty_walk()
    for end, budget in zip([*cuts, len(messages)], budgets):
        view = _view(messages[:end], counting)
        room = budget - view.protected_tokens()
        if room < 0:
            continue  # refused before any strategy runs
        walk = walk_module.extend_walk(view, walk if walk.n <= end else walk_module.empty_walk(), room)
        fresh = walk_module.extend_walk(view, walk_module.empty_walk(), room)
        assert walk == fresh
        reasons = start_reasons(view)
        fill_newest(view, reasons, room_left(view, budget))
        assert walk.reasons == reasons
        assert walk.kept == [m for m, reason in zip(view.messages, reasons) if reason is None]
        assert walk.excluded == [m for m, reason in zip(view.messages, reasons) if reason is not None]


def test_a_refit_after_one_append_walks_only_what_changed(monkeypatch):
    """The work of a session's truncate refit: the units from the oldest one the
    new message changed (here the previous current input), not the chat."""
    chat = [{"role": "system", "content": "be brief"}]
    chat += [{"role": "user" if i % 2 else "assistant", "content": f"turn {i} alpha beta"} for i in range(2000)]
    session = FitSession(chat)
    counter = contextfit.token_counter("gpt-4o")
    session.fit(counter, 600)
    walked = []
    original = walk_module.extend_walk

    def spy(view, before, room):
        walk = original(view, before, room)
        first = walk_module._first_changed(view, before)
        walked.append((first, len(walk.roots) - walk_module.bisect_left(before.roots, first)))
        return walk

    monkeypatch.setattr(walk_module, "extend_walk", spy)
    assembled = []
    original_mask = fitting.kept_mask
    monkeypatch.setattr(fitting, "kept_mask", lambda reasons: assembled.append(1) or original_mask(reasons))
    session.append({"role": "assistant", "content": "one more reply"})
    result = session.fit(counter, 600)
    # from the previous current input (2000), which the reply unprotects: two units; no pass over every reason
    assert walked == [(2000, 2)] and assembled == []
    monkeypatch.undo()
    cold = contextfit.shift_context(session.messages, contextfit.token_counter("gpt-4o"), 600, interceptors=())
    assert result.kept == cold.kept and result.excluded == cold.excluded and result.tokens == cold.tokens


def test_a_session_keeps_a_bounded_number_of_walks_and_forgets_those_past_an_edit():
    session = FitSession([{"role": "user", "content": f"turn {i} alpha"} for i in range(40)])
    counter = lambda ms: word_count_counter(ms)  # noqa: E731
    for budget in range(30, 30 + 3 * walk_module.WALKS_KEPT):
        session.fit(counter, budget)
    assert session.held()["walks"] == walk_module.WALKS_KEPT
    session.edit(39, {"role": "user", "content": "edited"})
    assert session.held()["walks"] == 0  # every walk covered the edited message
    assert session.fit(counter, 60).kept == contextfit.shift_context(session.messages, counter, 60).kept
