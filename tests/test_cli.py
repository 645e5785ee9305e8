"""The command line, through its real entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import TEST_DATA, shared_path

from contextfit.inputs.samples import sample_text

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


def long_chat(tmp_path) -> Path:
    """A chat of about 9,400 gpt-4o tokens: past gpt-4o's published effective context (NoLiMa: 8,000)."""
    filler = " ".join(["word"] * 100)
    messages = [{"role": "system", "content": "The vault code is 7731."}]
    messages += [{"role": "user" if i % 2 == 0 else "assistant", "content": filler} for i in range(90)]
    messages[45]["content"] = f"The courier is Ilse Brandt. {filler}"
    messages.append({"role": "user", "content": "Is Ilse Brandt still the courier, and what is the vault code?"})
    path = tmp_path / "long.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_fit_says_where_the_facts_land_and_the_effective_context_note(tmp_path):
    path = long_chat(tmp_path)
    courier = '{"text": "Ilse Brandt", "besides": true}'  # the question names it too: it must be sent besides
    done = contextfit("fit", str(path), "--fact", "7731", "--fact", courier)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\nfacts: 1 at the start, 1 in the middle\n") == len(STRATEGIES)
    assert done.stdout.count("note: EFFECTIVE_CONTEXT_EXCEEDED: ") == len(STRATEGIES)
    assert "published effective context of 8,000 tokens (NoLiMa" in done.stdout
    small = contextfit("fit", str(path), "--strategy", "truncate", "--limit", "3000", "--reserve", "500",
                       "--fact", "7731", "--fact", courier)
    assert "\nfacts: 1 at the start, 1 not sent\n" in small.stdout and "EFFECTIVE_CONTEXT" not in small.stdout


def test_fit_json_carries_the_placement_and_the_effective_context(tmp_path):
    done = contextfit("fit", str(long_chat(tmp_path)), "--json", "--strategy", "truncate", "--fact",
                      '{"text": "Ilse Brandt", "besides": true}')
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)["truncate"]
    assert plan["effectiveContext"]["tokens"] == 8000 and plan["effectiveContext"]["exceeded"] is True
    placement = plan["factPlacement"]
    assert placement["rule"] == "declared" and placement["promptTokens"] == plan["promptTokens"]
    assert [(fact["name"], fact["where"]) for fact in placement["facts"]] == [("Ilse Brandt", "middle")]
    # without --fact: the default must-survive facts (what the question refers back to)
    plain = json.loads(contextfit("fit", str(long_chat(tmp_path)), "--json", "--strategy", "truncate").stdout)
    placement = plain["truncate"]["factPlacement"]
    assert placement["rule"] == "default-facts"
    assert [(fact["name"], fact["where"]) for fact in placement["facts"]] == [("Ilse Brandt", "middle")]


def test_a_reader_that_leaves_early_is_not_an_input_error(tmp_path):
    # `contextfit fit … | head -1`: the pipe closes before the output is written
    path = tmp_path / "roleplay.json"
    path.write_text(sample_text("roleplay"))
    command = [sys.executable, "-m", "contextfit", "fit", str(path), "--strategy", "all", "--recommend"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before anything is written
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 1 and b"cannot read" not in errors and b"Traceback" not in errors, errors
