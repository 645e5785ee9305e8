"""Every cache keyed by text stays within its byte budget and keeps no large text alive."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

import contextfit
from contextfit import text
from contextfit.fitting import analysis, relevance
from contextfit.tokens.chat_counter import TokenCounter
from contextfit.fitting.counting import counting_for
from contextfit.memo import DIGEST_FROM, TextMemo, digest
from contextfit.fitting.strategies import summarize
from contextfit.tokens.tokenizers import PROFILES, Tokenizer, get_tokenizer


def distinct_texts(count: int, size: int) -> list[str]:
    """``count`` different texts of about ``size`` characters, with sentences and words."""
    base = "The wolves of Eldoria came down the river at night. Nobody slept in the tavern! "
    return [f"Text number {n}: " + (base + f"word{n} ") * (size // (len(base) + 8)) for n in range(count)]


def retained(build) -> tuple[int, object]:
    """Bytes still allocated after ``build()`` returns (tracemalloc), and its result."""
    gc.collect()
    tracemalloc.start()
    try:
        result = build()
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return current, result


def test_memo_accounts_for_what_it_really_holds() -> None:
    def fill() -> TextMemo[int]:
        memo: TextMemo[int] = TextMemo(max_bytes=2_000_000)
        for n, piece in enumerate(distinct_texts(3_000, 60) + distinct_texts(300, 9_000)):
            memo.put(piece, n)
        return memo

    held, memo = retained(fill)
    assert memo.nbytes <= memo.max_bytes
    assert held <= memo.max_bytes  # the estimate is not optimistic
    assert held >= memo.nbytes // 3  # nor wildly pessimistic


def test_long_texts_are_keyed_by_digest_and_short_ones_by_themselves() -> None:
    memo: TextMemo[int] = TextMemo(max_bytes=1_000_000)
    long_text = "x" * DIGEST_FROM
    memo.put(long_text, 1)
    memo.put("short", 2)
    assert memo.lookup(digest(long_text)) == 1 and memo.lookup(long_text) is None
    assert memo.lookup("short") == 2
    assert (memo.get(long_text), memo.get("short"), memo.get("y" * DIGEST_FROM)) == (1, 2, None)


def test_an_entry_over_a_quarter_of_the_budget_is_not_kept() -> None:
    memo: TextMemo[tuple] = TextMemo(max_bytes=40_000)
    assert memo.put("big", ("value",), value_bytes=20_000) == ("value",)
    assert memo.get("big") is None and memo.nbytes == 0


def test_token_counts_of_distinct_large_texts_keep_none_of_them_alive() -> None:
    # The issue: the server grew by each distinct 6 MB message it counted.
    tokenizer = Tokenizer(PROFILES["o200k_base"], get_tokenizer("o200k_base").encoding)

    def count_many() -> list[int]:
        return [tokenizer.count(piece) for piece in distinct_texts(30, 1_000_000)]  # each text dies after its count

    held, counts = retained(count_many)
    assert len(counts) == 30 and tokenizer._cache.nbytes <= tokenizer._cache.max_bytes
    assert held < 1_000_000  # 30 MB counted; only 30 small entries and the list remain


def test_token_count_cache_stays_under_its_byte_bound(monkeypatch) -> None:
    tokenizer = Tokenizer(PROFILES["cl100k_base"], get_tokenizer("cl100k_base").encoding)
    tokenizer._cache.max_bytes = 200_000
    counts = [tokenizer.count(piece) for piece in distinct_texts(2_000, 300)]
    assert tokenizer._cache.nbytes <= 200_000
    assert counts == [get_tokenizer("cl100k_base").count(piece) for piece in distinct_texts(2_000, 300)]


def test_per_message_counts_of_a_plain_callable_stay_under_their_bound() -> None:
    counter = TokenCounter(get_tokenizer("o200k_base"))

    def plain(messages):  # a caller's own function: counted per message, cached by content
        return counter(messages)

    counting = counting_for(plain)
    counting.state.counts.max_bytes = 300_000
    for piece in distinct_texts(400, 5_000):
        counting.count_message({"role": "user", "content": piece})
    assert counting.state.counts.nbytes <= 300_000


def test_fold_cache_stays_under_its_bound_and_skips_giant_words(monkeypatch) -> None:
    text.clear_caches()
    monkeypatch.setattr(text, "FOLDED_BYTES", 100_000)
    for n in range(5_000):
        text.words(f"alpha{n} beta{n} gamma{n}")
    assert 0 < text.folded_bytes() <= 100_000
    before = text.folded_bytes()
    assert text.words("y" * 100_000) == ["y" * 100_000]
    assert text.folded_bytes() == before


def test_summary_and_relevance_caches_stay_under_their_bounds(monkeypatch) -> None:
    # From empty: what an earlier test left in a cache this chat never adds to
    # (tool lines) would be over the lowered bound with nothing here to evict it.
    contextfit.caches.clear_caches(vocabularies=False)
    monkeypatch.setattr(summarize._TEXT_UNITS, "max_bytes", 1_000_000)
    monkeypatch.setattr(summarize._LINE_UNITS, "max_bytes", 200_000)
    monkeypatch.setattr(relevance._BAGS, "max_bytes", 300_000)
    for n, piece in enumerate(distinct_texts(60, 20_000)):
        chat = [{"role": "system", "content": "Narrate."}]
        chat += [{"role": "user" if i % 2 else "assistant", "content": f"{i} {piece}"} for i in range(6)]
        chat += [{"role": "system", "content": f"Lore {n}: {piece[:3_000]}", "meta": {"kind": "lorebook"}}]
        chat += [{"role": "user", "content": f"What about the wolves {n}?"}]
        counter = contextfit.token_counter("gpt-4o")
        budget = counter(chat) // 3
        contextfit.shift_context(chat, counter, budget, strategy="summarize", summary_scan_chars=200_000)
        contextfit.shift_context(chat, counter, budget, strategy="vector-recall")
    assert summarize._TEXT_UNITS.nbytes <= 1_000_000
    assert summarize._LINE_UNITS.nbytes <= 200_000
    assert relevance._BAGS.nbytes <= 300_000
    assert counter.tokenizer._cache.nbytes <= counter.tokenizer._cache.max_bytes
    state = counting_for(counter).state
    assert state.summary_line_costs.nbytes <= state.summary_line_costs.max_bytes


def test_kept_analyses_stay_under_their_byte_bound(monkeypatch) -> None:
    monkeypatch.setattr(analysis, "PREFIX_BYTES", 3_000_000)
    counter = TokenCounter(get_tokenizer("o200k_base"))
    for piece in distinct_texts(12, 1_000_000):
        chat = [{"role": "assistant", "content": piece}, {"role": "user", "content": "and then?"}]
        contextfit.shift_context(chat, counter, 50)
    kept = counting_for(counter).state.prefixes
    assert 1 <= len(kept) <= 3 and all(facts.nbytes > 900_000 for facts in kept)  # each holds its 1 MB text
    assert sum(facts.nbytes + facts.derived_bytes for facts in kept) <= 3_000_000


@pytest.mark.parametrize("strategy", ["truncate", "summarize"])
def test_distinct_large_previews_do_not_grow_memory(monkeypatch, strategy: str) -> None:
    # The soak in small: with every cache given 256 KB, 16 distinct
    # 1 MB previews after a warm-up leave no more than those budgets behind.
    counter = contextfit.token_counter("gpt-4o")
    state = counting_for(counter).state
    state.prefixes = []
    for memo in (counter.tokenizer._cache, summarize._TEXT_UNITS, summarize._LINE_UNITS, relevance._BAGS,
                 state.summary_line_costs, state.counts):
        memo.clear()
        monkeypatch.setattr(memo, "max_bytes", 256_000)
    monkeypatch.setattr(text, "FOLDED_BYTES", 256_000)
    monkeypatch.setattr(analysis, "PREFIX_BYTES", 3_000_000)  # two or three of these analyses
    plan = lambda piece: contextfit.plan_prompt(  # noqa: E731
        [{"role": "assistant", "content": piece}, {"role": "user", "content": "Go on."}],
        model="gpt-4o", context_strategy=strategy, context_limit=4_000, response_reserve=1_000,
    )
    for piece in distinct_texts(10, 1_000_000):
        plan(piece)

    def more() -> None:  # each text is made here (traced) and dropped after its preview
        for index in range(10, 26):
            plan(f"{index} " + distinct_texts(1, 1_000_000)[0])

    held, _ = retained(more)
    # 16 MB of new text went through; what may stay: the analyses kept (3 MB) and the budgets above.
    assert held < 6_000_000
