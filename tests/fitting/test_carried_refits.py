"""A session's refits of summarize and vector-recall start from truncate's walk
carried from the last fit (strategies/carried_walk.py) and build the recall query from
each recent message's cached words: the answers stay a fresh fit's, exactly."""

from __future__ import annotations

import copy

from support.conversations import WORDS, lumpy_counter, word_count_counter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.sessions import fit_or_refusal, growth, walk_outcome

import contextfit
from contextfit.fitting import relevance
from contextfit.pipeline.session import FitSession
from contextfit.fitting.strategies import recall, summarize

SETTINGS = settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow])

VARIANTS = [
    ("summarize", {}),
    ("summarize", {"summary_tokens": 30}),
    ("summarize", {"stable_prefix": True}),
    ("summarize", {"stable_prefix": True, "low_water": 0.5, "summary_scan_chars": 200}),
    ("summarize", {"keep_thinking": False}),
    ("vector-recall", {}),
    ("vector-recall", {"relevance_window": 2}),
    ("vector-recall", {"query": "wolf river"}),
    ("truncate", {}),
    ("clear-tool-results", {"keep": 1, "clear_at_least": 5}),
]


@SETTINGS
@given(growth(), st.floats(0.05, 1.1), st.booleans(), st.sampled_from([word_count_counter, lumpy_counter]),
       st.sampled_from(VARIANTS))
def test_a_growing_session_fits_like_a_fresh_fit_at_one_budget(chat, share, count_excluded, count, variant):
    """The replay's case: one budget, the chat appended to (and its last
    message regenerated now and then); every refit checked against a fresh
    ``shift_context`` of a copy, excluded messages and reasons included."""
    strategy, options = variant
    messages, cuts, edits = chat
    counter = lambda ms: count(ms)  # noqa: E731 - a counter of its own: a fresh cache
    budget = int(share * word_count_counter(messages))
    session = FitSession(messages[:cuts[0]])
    for end, edit in zip([*cuts[1:], len(messages)], edits):
        for _ in range(1 + edit):
            warm = fit_or_refusal(session.fit, counter, budget, strategy, count_excluded=count_excluded, **options)
            cold = fit_or_refusal(contextfit.shift_context, copy.deepcopy(session.messages), lambda ms: count(ms),
                        budget, strategy, count_excluded=count_excluded, **options)
            assert walk_outcome(warm, count_excluded) == walk_outcome(cold, count_excluded)
            if edit and len(session):
                session.edit(-1, {"role": "assistant", "content": "regenerated " * (1 + len(session) % 7)})
        session.extend(messages[len(session):end])


def _long_chat(turns: int) -> list[dict]:
    chat = [{"role": "system", "content": "Be brief."},
            {"role": "system", "content": "Wolves howl at night in the north.", "meta": {"kind": "lorebook"}},
            {"role": "system", "content": "Bread needs flour and water.", "meta": {"kind": "memory"}}]
    for turn in range(turns):
        words = " ".join(WORDS[(turn + k) % len(WORDS)] for k in range(12))
        chat += [{"role": "user", "content": f"Tell me about {words}. What of wolves?"},
                 {"role": "assistant", "content": f"Sure. {words} is topic {turn}. Rivers run. Wolves sleep by day."}]
    return chat


def _count_calls(monkeypatch, module, name: str) -> list:
    calls: list = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_summarize_and_vector_recall_refits_reuse_the_carried_walk(monkeypatch):
    """After one appended turn at the same budget, neither walks the kept
    history again (no ``fill_newest``), and both answer a fresh fit's."""
    chat = _long_chat(40)
    counter = contextfit.token_counter("gpt-4o")
    budget = counter(chat) // 3
    session = FitSession(chat[:-2])
    for strategy in ("summarize", "vector-recall"):
        session.fit(counter, budget, strategy)
    session.extend(chat[-2:])
    for module, strategy in ((summarize, "summarize"), (recall, "vector-recall")):
        calls = _count_calls(monkeypatch, module, "fill_newest")
        warm = session.fit(counter, budget, strategy)
        assert calls == []
        cold = contextfit.shift_context(copy.deepcopy(chat), contextfit.token_counter("gpt-4o"), budget, strategy)
        assert walk_outcome(warm) == walk_outcome(cold)
        assert warm.excluded and any(d.reason == "low_relevance" for d in warm.decisions) == (strategy == "vector-recall")


def test_vector_recall_counts_the_words_of_each_recent_message_once(monkeypatch):
    """The query is the recent messages joined: its word counts are built from
    each message's cached counts, so a refit counts the new message's words
    alone (before, every refit counted the whole joined query again)."""
    chat = _long_chat(12)
    counter = contextfit.token_counter("gpt-4o")
    session = FitSession(chat[:-1])
    session.fit(counter, counter(chat) // 3, "vector-recall")
    counted = _count_calls(monkeypatch, relevance, "_count_words")
    session.append(chat[-1])
    session.fit(counter, counter(chat) // 3, "vector-recall")
    assert [args[0] for args in counted] == [chat[-1]["content"]]


@settings(max_examples=examples(200))
@given(st.lists(st.text(alphabet=st.sampled_from(list("aZσΣς' ’\n.x1_é-İ")), max_size=30), max_size=6))
def test_the_joined_bag_is_the_bag_of_the_joined_text_in_the_same_order(texts):
    # the order matters: the query vector's norm sums its weights in that order
    assert list(relevance.joined_bag(texts).items()) == list(relevance._count_words("\n".join(texts)).items())
