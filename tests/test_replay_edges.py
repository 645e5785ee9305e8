"""The replay at its edges: what a hostile tester (or an unlucky demo) runs into, on every face."""

from __future__ import annotations

import contextfit
from contextfit.views import replay as views

# the first request's protected current input (108 tokens) cannot fit a 60-token budget; the second one can
BIG_FIRST = [{"role": "user", "content": "hi there " * 50}, {"role": "assistant", "content": "x"},
             {"role": "user", "content": "ok"}]


def test_turns_that_no_strategy_can_fit_are_named_in_the_notes():
    result = contextfit.replay(BIG_FIRST, model="gpt-4o", context_limit=60, response_reserve=0,
                               strategies=["truncate", "summarize"])
    failed = [note for note in result.notes if "could not be fitted" in note]
    assert len(failed) == 1  # one note for the strategies that failed the same turns
    assert "turn 1 of 2" in failed[0] and "truncate, summarize" in failed[0]
    assert "The protected context alone needs 108 tokens but the budget is 60" in failed[0]


def test_a_replay_where_every_turn_failed_says_so_and_not_why_nothing_was_cached():
    # it said "No request reaches the 1,024 tokens ... (the largest is 0)": true, and beside the point
    result = contextfit.replay(BIG_FIRST[:1], model="gpt-4o", context_limit=60, response_reserve=0,
                               strategies=["truncate"])
    assert result.totals["truncate"].failed_turns == 1
    assert not any("caches it" in note for note in result.notes)
    assert "Under truncate, no turn could be fitted: The protected context alone needs 108 tokens" in " ".join(result.notes)


def test_a_regex_fact_stopped_by_its_time_limit_is_said_and_not_called_absent():
    chat = [{"role": "user", "content": "a" * 50_000 + "!"}, {"role": "assistant", "content": "x"},
            {"role": "user", "content": "a" * 30 + "!"}]
    result = contextfit.replay(chat, model="gpt-4o", strategies=["truncate"], facts=["/(a+)+$/", "x"])
    assert any(d["code"] == "LOREBOOK_KEY_TIMEOUT" for d in result.diagnostics)
    stopped = [note for note in result.notes if "/(a+)+$/" in note]
    assert stopped and "time" in stopped[0]  # the CLI and the API print the notes
    # the page said "No message holds “/(a+)+$/”, so no turn checks it": the search was stopped, not empty
    assert not any("No message holds" in note and "(a+)" in note for note in views.fact_notes(result))
