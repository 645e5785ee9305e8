"""The bench's own rules, function by function: paired ratios, targets, reports, contenders.

The bench's tests live beside it: ``tests/`` never imports ``bench/``. They run as one
process from tests/e2e/test_bench.py (``python -m pytest bench/tests``), or by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.conversations import synthetic

REPO = Path(__file__).resolve().parents[2]


def test_paired_ratio_is_the_median_of_per_run_ratios():
    from bench.report import paired_ratio
    from bench.run import Row

    row = Row("x", "contextfit", "truncate", "cold", True, seconds=[1.0, 3.0, 10.0], paired=[1.0, 2.0, 4.0])
    assert paired_ratio(row) == 1.5  # ratios 1, 1.5, 2.5
    assert paired_ratio(Row("y", "contextfit", "truncate", "cold", True, seconds=[1.0])) is None


def test_a_cold_contender_starts_with_every_cache_empty():
    """fresh_counter() is contextfit.caches.clear_caches(): the relevance bags of an earlier vector-recall fit
    are gone, like every other cache but the vocabulary."""
    import contextfit
    from bench.contenders import fresh_counter
    from contextfit import caches

    chat = synthetic(300).messages
    contextfit.shift_context(chat, contextfit.token_counter("gpt-4o"), 2_000, strategy="vector-recall")
    assert caches.entries()["relevance.bags"] > 0
    counter = fresh_counter()
    left = {name for name, size in caches.entries().items() if size}
    assert left <= {"tokenizers.vocabularies", "tokenizers.digit_tables", "tokenizers.tokenizers",
                    "chat_counter.counters", "fast.counters"}, left  # the vocabulary, and the counter just made
    assert counter is contextfit.token_counter("gpt-4o") and len(counter.tokenizer._cache) == 0


def test_langchain_runs_as_documented_and_its_memo_changes_speed_not_answers():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import convert_to_messages

    from bench import oracle
    from bench.contenders import (LANGCHAIN_OPTIONS, by_key, langchain_counter, memoized_langchain_counter,
                                  openai_only)

    assert LANGCHAIN_OPTIONS == {"strategy": "last", "start_on": "human", "include_system": True,
                                 "end_on": ("human", "tool")}
    chat = synthetic(300).messages
    converted = convert_to_messages([openai_only(m) for m in chat])
    memoized = memoized_langchain_counter()
    assert memoized(converted) == langchain_counter(converted) == oracle.count(chat)
    assert memoized(converted[:40]) == langchain_counter(converted[:40])  # answered from the memo
    budget = oracle.count(chat) // 4
    kept = {}
    for key in ("langchain trim_messages uncached", "langchain trim_messages memoized"):
        contender = by_key(key)
        state = contender.prepare(chat, budget)
        first, again = contender.outcome(state, contender.run(state)), contender.outcome(state, contender.run(state))
        assert first.kept == again.kept and first.error is None
        kept[key] = first.kept
        assert chat[first.kept[1]]["role"] == "user"  # after the system prompt, it starts on a human message
    assert kept["langchain trim_messages uncached"] == kept["langchain trim_messages memoized"]


def test_the_report_compares_like_with_like_and_states_the_judges_rules():
    from bench import report
    from bench.oracle import RULES
    from bench.run import Case, Options, Row

    def row(key: str, family: str, seconds: float, counts_excluded: bool = True) -> Row:
        return Row(key, family, "truncate" if family == "contextfit" else None, "cold", counts_excluded,
                   seconds=[seconds])

    case = Case("synthetic 10,000", 10_000, {"kind": "synthetic"}, 1, 1, 0, 10_000, "128k", 128_000, rows=[
        row("floor (tiktoken)", "floor", 0.5),
        row("contextfit truncate cold", "contextfit", 0.6),
        row("contextfit truncate lazy cold", "contextfit", 0.1, counts_excluded=False),
        row("langchain trim_messages uncached", "langchain", 3.0),
        row("langchain trim_messages memoized", "langchain", 1.5),
    ])
    found = {t["target"]: t for t in report.targets([case], Options("quick", (10_000,), {10_000: 1}, 5.0, ()))}
    lazy = found["truncate lazy cold, 10,000 into 128k, against memoized LangChain: >= 20x faster"]
    assert lazy["measured"] == 15.0 and lazy["met"] is False  # no pairs: the ratio of the medians
    case.row("langchain trim_messages memoized").paired = [0.05]  # a lazy fit timed just before it
    paired = report.targets([case], Options("quick", (10_000,), {10_000: 1}, 5.0, ()))
    assert next(t for t in paired if t["target"] == lazy["target"])["measured"] == 30.0
    counted = found["truncate cold, 10,000 into 128k, against uncached LangChain: how many times faster"]
    assert counted["measured"] == 5.0 and counted.get("informational")
    table = report.case_table(case, Options("quick", (10_000,), {10_000: 1}, 5.0, ()))
    assert "judge: o200k_base, OpenAI chat format" in table.splitlines()[0]
    text = report.markdown(Options("quick", (10_000,), {10_000: 1}, 5.0, ()), [case],
                           {"nproc": 2, "cpu": "x", "python": "3", "versions": {"tiktoken": "1", "langchain-core": "1",
                                                                               "litellm": None},
                            "load_average": (1.0, 1.0, 1.0)}, list(found.values()), "make bench")
    assert RULES in text and "start_on='human'" in text and "end_on=('human', 'tool')" in text
    assert "| langchain trim_messages uncached |" in text and "| langchain trim_messages memoized |" in text


def test_the_dashboard_report_keeps_cold_and_warm_uploads_apart():
    from bench.dashboard import report, warm_share

    runs = {"charts_drawn": 1.0, "idle": 2.0}
    result = {"messages": 10_001, "file_mb": 7.3, "cold_uploads": [runs, {"charts_drawn": 3.0, "idle": 4.0}],
              "warm_uploads": [{"charts_drawn": 0.5, "idle": 1.0}, {"charts_drawn": 0.5, "idle": 1.0}],
              "refits": [{"idle": 0.9}, {"idle": 1.1}],
              "machine": {"nproc": 2, "cpu": "x", "python": "3", "streamlit": "1", "chromium": "1",
                          "versions": {"plotly": "6"}, "load_average": (1.0, 1.0, 1.0)}}
    assert warm_share(result) == 0.375  # 1/2 and 1/4, each against its own process's cold upload
    text = report(result)
    assert "| cold upload: a fresh server process" in text and "3.00 s (2.00–4.00)" in text
    assert "| warm upload: the same process" in text and "38%" in text


def test_each_strategy_cold_is_paired_with_truncate_cold():
    from bench.fast import against_truncate

    times = {"contextfit truncate cold": [0.125, 0.25, 0.125], "contextfit fact-ledger cold": [0.625, 0.5, 0.375],
             "contextfit truncate session refit x20": [0.02, 0.04, 0.02],
             "contextfit fact-ledger session refit x20": [0.08, 0.04, 0.04]}
    rows = {row["strategy"]: row for row in against_truncate(times)}
    assert set(rows) == {"truncate", "fact-ledger"}  # the strategies not timed are left out
    assert rows["fact-ledger"]["x_truncate"] == 3.0 and rows["fact-ledger"]["median_ms"] == 500.0  # ratios 5, 2, 3
    assert rows["fact-ledger"]["refit_x_truncate"] == 2.0 and rows["fact-ledger"]["refit_ms"] == 2.0  # ratios 4, 1, 2


def test_fast_engine_targets_are_medians_of_paired_ratios():
    from bench.fast import targets

    times = {"floor (tiktoken)": [1.0, 2.0, 1.0], "contextfit truncate cold": [0.3, 0.5, 0.4],
             "langchain memoized 25%": [3.0, 2.0, 1.0]}
    found = {target["target"]: target for target in targets(times)}
    floor = found["contextfit truncate cold, every block counted: <= 0.35x the tiktoken floor"]
    assert floor["measured"] == 0.3 and floor["met"] is True  # ratios 0.3, 0.25, 0.4
    speed = found["contextfit truncate cold: >= 3x faster than LangChain memoized"]
    assert speed["measured"] == 4.0 and speed["met"] is True  # ratios 10, 4, 2.5
    assert found["contextfit summarize cold: >= 3x faster than LangChain memoized"]["met"] is None


def test_the_session_targets_are_per_refit_and_paired_with_a_cold_fit():
    from bench.fast import PLAN_REFITS, REFITS, targets

    times = {f"contextfit session refit x{REFITS} 128k": [0.01, 0.04, 0.02], "contextfit truncate cold 128k": [0.5, 0.4, 0.5],
             f"contextfit session plan refit x{PLAN_REFITS} 128k": [0.05], "plan_prompt cold 128k": [0.5]}
    found = {target["target"]: target for target in targets(times)}
    refit = found["contextfit session (truncate, every block counted): refit after one appended message into 128k: <= 1 ms"]
    assert refit["measured"] == 1.0 and refit["met"] is True  # the median run, 20 ms, over 20 refits
    share = found["contextfit session refit after one appended message, share of a cold fit (reported)"]
    assert share["measured"] == 0.002  # 0.5/0.5, 2/0.4 and 1/0.5 ms per ms
    plan = found["contextfit session plan (a whole PromptPlan): replan after one appended message (reported)"]
    assert plan["measured"] == 10.0 and plan["met"] is None


def test_the_performance_page_shows_every_target_bench_fast_prints():
    from bench.fast import targets

    page = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    missing = [t["target"] for t in targets({}) if t["target"] not in page]
    assert missing == [], "docs/performance.md must show each target bench.fast prints"


def test_the_profiles_bench_ratios_are_medians_of_paired_ratios():
    from bench.profiles import rows

    times = {"floor": [1.0, 2.0, 1.0], "deepseek encode": [1.0, 4.0, 1.0], "deepseek texts": [1.0, 1.0, 2.0],
             "deepseek chat": [2.0, 3.0, 1.0]}
    [row] = rows(times, ["deepseek"])
    assert row["encode"] == 1.0 and row["texts"] == 1.0 and row["chat"] == 1.5 and row["met"] is True  # 2, 1.5, 1


def test_the_clearing_section_compares_clear_tool_results_with_truncate():
    from bench import clearing

    rows = clearing.measure(synthetic(600))
    by = {(row["share"], row["strategy"]): row for row in rows}
    for share in clearing.SHARES:
        cleared, truncated = by[(share, "clear-tool-results")], by[(share, "truncate")]
        assert cleared["tokens"] <= cleared["budget"] and truncated["tokens"] <= truncated["budget"]
        # clearing old results keeps more of the conversation, and older parts of it
        assert cleared["cleared"] > 0 and cleared["messages"] > truncated["messages"]
        assert cleared["oldest"] < truncated["oldest"]
    assert "| chat | budget | strategy |" in clearing.markdown(use_fixtures=False)


def test_the_profiles_bench_knows_every_exact_profile():
    from bench import profiles

    assert {"llama3", "qwen3.5", "mistral", "mistral-tekken", "deepseek"} <= set(profiles.exact_profiles())
