"""The benchmark's smoke paths still run, and judge contextfit correct: ``python -m bench...`` as processes.

The bench's own functions (paired ratios, targets, reports) are tested beside it, in
``bench/tests``: :func:`test_the_bench_s_own_tests_pass` runs them as one process.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from support.bench import run_bench
from support.paths import REPO
from support.synthetic import synthetic


def test_synthetic_conversations_are_seeded_and_shaped():
    chat = synthetic(300)
    assert chat.messages == synthetic(300).messages
    assert len(chat.messages) == 300 and chat.messages[-1]["role"] == "user"
    results = [m for m in chat.messages if m["role"] == "tool"]
    calls = [m for m in chat.messages if m.get("tool_calls")]
    assert calls and any(len(m["tool_calls"]) > 1 for m in calls)
    after_call = {chat.messages[i + 1].get("tool_call_id") for i, m in enumerate(chat.messages[:-1]) if m.get("tool_calls")}
    assert any(r["tool_call_id"] not in after_call for r in results), "some results are not next to their call"


def test_smoke_run_writes_results_and_finds_contextfit_correct(tmp_path):
    out = run_bench("bench", "--sizes", "100", "--runs", "1", "--no-external", "--no-fixtures", "--no-memory",
                    "--out", str(tmp_path))
    data = json.loads((tmp_path / "bench-quick.json").read_text())
    rows = [row for case in data["cases"] for row in case["rows"]]
    fits = [row for row in rows if row["family"] == "contextfit"]
    assert len(fits) == 2 * 12 and all(row["seconds"] for row in rows)  # 2 budgets x (5 strategies + lazy truncate) x cold, warm
    for row in fits:
        verdict = row["verdict"]
        assert verdict["error"] is None and not verdict["over_budget"], row
        assert verdict["split_groups"] == 0 and verdict["lost_protected"] == 0, row
    # Cold all-counted fits carry a floor run timed before each run; warm refits their own first fit.
    for row in fits:
        paired = row["mode"] == "warm" or row["counts_excluded"]
        assert len(row["paired"]) == (len(row["seconds"]) if paired else 0), row
        assert all(seconds > 0 for seconds in row["paired"])
    assert "## Targets\n" in (tmp_path / "bench-quick.md").read_text()
    assert (tmp_path / "bench-quick.html").stat().st_size > 0
    assert "| contextfit truncate cold |" in out


def test_fast_engine_bench_prints_every_issue_19_target(tmp_path):
    out = run_bench("bench.fast", "--messages", "200", "--runs", "1", "--no-cold", "--out", str(tmp_path))
    data = json.loads((tmp_path / "fast.json").read_text())
    names = [target["target"] for target in data["targets"]]
    langchain = importlib.util.find_spec("langchain_core") is not None  # requirements-bench.txt
    assert len(names) == 2 * 4 + 1 + 4  # and the session's refit, its share of a cold fit, and the same for plans
    assert all(t["measured"] is not None for t in data["targets"] if "session" in t["target"])
    assert set(data["info"]["cpu_targets"]) == {t["target"] for t in data["targets"] if "session" in t["target"]}
    assert all(target["measured"] is not None for target in data["targets"] if langchain or "floor" in target["target"])
    assert data["info"].get("engine_total_equals_tiktoken", True) is True
    assert "| contextfit truncate lazy cold into 128k: >= 20x faster than LangChain memoized |" in out
    from bench.fast import COLD_STRATEGIES

    per_strategy = {row["strategy"]: row["x_truncate"] for row in data["perStrategy"]}
    assert list(per_strategy) == list(COLD_STRATEGIES) and per_strategy["truncate"] == 1.0
    assert "fact-ledger" in per_strategy and "| fact-ledger |" in out and "cold x truncate (paired)" in out
    assert all(row["refit_x_truncate"] is not None for row in data["perStrategy"])


def test_the_profiles_bench_prints_every_exact_profile_against_the_floor(tmp_path):
    out = run_bench("bench.profiles", "--messages", "200", "--runs", "1", "--only", "deepseek", "--only", "o200k",
                    "--out", str(tmp_path))
    data = json.loads((tmp_path / "profiles.json").read_text())
    assert [row["profile"] for row in data["rows"]] == ["o200k_base", "deepseek"]
    assert data["rows"][0]["met"] is None and isinstance(data["rows"][1]["met"], bool)
    assert "| deepseek |" in out and "Load average at the start" in out


def test_the_retention_bench_runs_small(tmp_path):
    printed = run_bench("bench.retention", "--lengths", "20", "--seeds", "1", "--no-held-out", "--no-real",
                        "--out", str(tmp_path))
    assert "| fact-ledger | 15% |" in printed and "published for naive truncation: 14.3%" in printed
    assert "| strategy | start | middle | end | not sent |" in printed
    saved = json.loads((tmp_path / "retention.json").read_text())
    placed = saved["placement"]["fact-ledger"]
    assert placed["prompts"] == 1 and sum(placed[where] for where in ("start", "middle", "end", "notSent")) > 0
    assert {row["strategy"] for row in saved["rows"]} >= {"truncate", "summarize", "fact-ledger"}


def test_a_smoke_run_of_the_retention_bench_writes_no_results_and_a_named_file_gets_them(tmp_path):
    from contextfit.retention import results, runner

    before = results.RESULTS.read_bytes()
    small = ("--lengths", "20", "--seeds", "1", "--no-held-out", "--no-real", "--out", str(tmp_path))
    run_bench("bench.retention", *small)
    assert results.RESULTS.read_bytes() == before  # the shipped file is the full protocol's only
    run_bench("bench.retention", *small, "--results", str(tmp_path / "small.json"))
    measured = results.load(tmp_path / "small.json")
    assert measured.lengths == (20,) and measured.held_out == ()
    assert measured.rows() == runner.rows_of(runner.measure(lengths=(20,), seeds=(1,)))


def test_the_bench_s_own_tests_pass():
    """bench/tests: the bench's functions, which only the bench's own tests may import."""
    done = subprocess.run([sys.executable, "-m", "pytest", "bench/tests", "-q", "-p", "no:cacheprovider"], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
