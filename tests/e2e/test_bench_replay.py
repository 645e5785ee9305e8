"""bench/replay.py's smoke path: it replays, times both sides (in one process and in fresh processes) and
reports the ratios (no timing asserted). ``python -m bench.replay`` runs as a process; its ``--json``
measurements follow its report on standard output."""

from __future__ import annotations

import json

from support.bench import run_bench
from support.paths import REPO
from support.synthetic import synthetic_turns


def replay_bench(*args: str) -> tuple[str, dict]:
    """``python -m bench.replay args --json``: the report, and the measurements."""
    out = run_bench("bench.replay", *args, "--json")
    report, measured = out.split("\n{\n", 1)
    return report, json.loads("{\n" + measured)


def test_the_replay_bench_reports_cold_and_warm_ratios():
    messages = synthetic_turns(12)  # bench.replay's conversation(12)
    assert sum(1 for m in messages if m["role"] == "user") >= 12 and messages[-1]["role"] == "user"
    text, result = replay_bench("--turns", "12", "--runs", "1", "--fresh-runs", "0", "--limit", "6000",
                                "--strategies", "truncate,summarize")
    assert result["user_turns"] == 12 and len(result["runs"]) == 1
    run = result["runs"][0]
    assert run["ratio_cold"] == run["replay_cold"] / run["cold_fit"] > 0
    assert result["user_turns"] == 12 and result["turns"] >= 12  # each tool round the model answers is a request
    assert "cold ratio" in text and "target <= 3x" in text and f"{2 * result['turns']} fits" in text
    assert f"12 turns, {result['turns']} requests" in text
    # what the tokenizers counted: the cold fit counts every message once; the replay too, and its summaries
    cold, replayed = run["tokenized_cold_fit"], run["tokenized_replay"]
    assert cold["texts"] > 0 and cold["chars"] > 0
    assert replayed["texts"] > cold["texts"] and replayed["chars"] >= cold["chars"]
    assert f"the cold replay {replayed['chars']:,} characters in {replayed['texts']:,} texts" in text


def test_the_replay_bench_replays_the_strategies_asked_for():
    text = run_bench("bench.replay", "--turns", "3", "--runs", "1", "--fresh-runs", "0", "--strategies", "truncate,manual",
                     "--json")
    assert "2 strategies = 6 fits" in text
    assert '"strategies": [\n    "truncate",\n    "manual"\n  ]' in text


def test_the_replay_bench_prints_both_readings_of_cold_and_each_strategy():
    text, result = replay_bench("--turns", "3", "--runs", "1", "--fresh-runs", "1")
    strategies = result["strategies"]  # the default: every strategy the bench replays
    run = result["fresh"]["runs"][0]
    assert run["cold_cpu"] > 0 and run["replay_cpu"] > 0 and run["cold_wall"] > 0 and run["replay_wall"] > 0
    assert run["ratio_cpu"] == run["replay_cpu"] / run["cold_cpu"]
    assert "fresh replay / fresh cold fit (wall)" in text and "fresh replay / fresh cold fit (CPU)" in text
    assert str(run["load_before"]) in text
    # the start-up both sides pay, and what the target leaves the replay's work per turn
    assert 0 < run["startup_cpu"] and f"| {run['startup_cpu']:.3f} |" in text
    allowed = 3 * run["cold_cpu"] - run["startup_cpu"]
    assert f"3x the fresh cold fit leaves the replay's work {allowed:.3f} s after its start-up: " \
           f"{allowed / 3 * 1000:.2f} ms per turn" in text
    line = next(line for line in text.splitlines() if line.startswith("CPU per fit in the cold replay"))
    assert all(f"{name} " in line for name in strategies)
    assert set(result["runs"][0]["cpu_per_strategy"]) == set(strategies)


def test_the_replay_bench_compares_two_trees_run_by_run():
    # this tree against itself: both columns are made and printed, with the load of each run
    text = run_bench("bench.replay", "--turns", "3", "--runs", "1", "--fresh-runs", "0", "--tree", str(REPO))
    rows = [line for line in text.splitlines() if line.startswith("| 1 |")]
    assert [row.split(" | ")[1] for row in rows] == ["this tree", "before"]
    assert "median, this tree: in-process ratio" in text and "median, before: in-process ratio" in text
    assert "first in-process runs (the fast counting engine loaded on the way), before: CPU ratio" in text
