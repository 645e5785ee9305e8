"""bench/replay.py's smoke path: it replays, times both sides and reports the ratio (no timing asserted)."""

from __future__ import annotations

from bench import replay as bench_replay


def test_the_replay_bench_reports_cold_and_warm_ratios():
    messages = bench_replay.conversation(12)
    assert sum(1 for m in messages if m["role"] == "user") >= 12 and messages[-1]["role"] == "user"
    result = bench_replay.measure(turns=12, runs=1, limit=6_000, strategies=("truncate", "summarize"))
    assert result["turns"] == 12 and len(result["runs"]) == 1
    run = result["runs"][0]
    assert run["ratio_cold"] == run["replay_cold"] / run["cold_fit"] > 0
    text = bench_replay.report(result)
    assert "cold ratio" in text and "target <= 3x" in text and "24 fits" in text
