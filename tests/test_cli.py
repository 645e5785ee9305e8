"""The command line, through its real entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import TEST_DATA, shared_path

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger"]


def contextfit(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("contextfit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "contextfit"]
    return subprocess.run([*command, *args], capture_output=True, text=True, input=stdin, timeout=120)


def test_fit_prints_a_table_and_budget_bar_per_strategy():
    path = shared_path("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json")
    done = contextfit("fit", str(path), "--limit", "900", "--reserve", "200")
    assert done.returncode == 0, done.stderr
    for name in STRATEGIES:
        assert f"\n{name} — " in done.stdout
    assert done.stdout.count("[") >= 4 and "▁" in done.stdout  # bars with the reserve band
    assert "o200k_base" in done.stdout


def test_fit_json_is_one_plan_per_strategy():
    path = TEST_DATA / "formats" / "openai_tools.json"
    done = contextfit("fit", str(path), "--json", "--model", "gpt-4o-mini")
    assert done.returncode == 0, done.stderr
    plans = json.loads(done.stdout)
    assert list(plans) == STRATEGIES
    for plan in plans.values():
        assert plan["promptTokens"] <= plan["budget"] and plan["model"] == "gpt-4o-mini"


def test_one_strategy_from_standard_input():
    chat = json.dumps([{"role": "user", "content": "Hello there"}])
    done = contextfit("fit", "-", "--strategy", "summarize", "--json", stdin=chat)
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)) == ["summarize"]


def test_bad_input_is_a_clear_error_not_a_traceback(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"},')
    done = contextfit("fit", str(bad))
    assert done.returncode == 2
    assert "INVALID_CONVERSATION" in done.stderr and "Traceback" not in done.stderr
    done = contextfit("fit", str(tmp_path / "missing.json"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    done = contextfit("fit", str(TEST_DATA / "formats" / "openai_tools.json"), "--model", "gpt-0")
    assert done.returncode == 2 and "UNKNOWN_MODEL" in done.stderr


def test_a_budget_too_small_exits_non_zero():
    chat = json.dumps([{"role": "system", "content": "rules " * 300}, {"role": "user", "content": "hi"}])
    done = contextfit("fit", "-", "--limit", "300", "--reserve", "100", stdin=chat)
    assert done.returncode == 1
    assert "truncate: TOKEN_BUDGET_EXCEEDED" in done.stdout
    assert done.stderr.startswith("contextfit: truncate: The protected context alone needs")


def test_models_lists_the_catalog():
    done = contextfit("models")
    assert done.returncode == 0
    assert "gpt-4o" in done.stdout and "claude-sonnet-4" in done.stdout and "(approximate)" in done.stdout


@pytest.mark.parametrize("args", [["fit"], ["nonsense"]])
def test_usage_errors(args):
    done = contextfit(*args)
    assert done.returncode == 2 and "usage:" in done.stderr


def test_fit_on_a_bundle_with_catastrophic_regex_keys_finishes_with_a_note(tmp_path):
    bundle = {
        "contextfit": "conversation",
        "messages": [{"role": "user", "content": "a" * 40 + "b"}],
        "lorebook": {"entries": {
            "0": {"uid": 0, "key": ["/(a+)+$/"], "content": "Reported key."},
            "1": {"uid": 1, "key": ["/(a|a)+$/"], "content": "Slow in every engine."},
        }},
    }
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    done = contextfit("fit", str(path), "--strategy", "truncate")  # re took minutes here, ignoring SIGTERM
    assert done.returncode == 0, done.stderr
    assert "note: LOREBOOK_KEY_TIMEOUT" in done.stdout and "Slow in every engine." not in done.stdout
