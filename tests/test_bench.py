"""The benchmark's smoke path still runs, and judges contextfit correct (bench/)."""

from __future__ import annotations

import json

from bench.__main__ import main
from bench.conversations import synthetic


def test_synthetic_conversations_are_seeded_and_shaped():
    chat = synthetic(300)
    assert chat.messages == synthetic(300).messages
    assert len(chat.messages) == 300 and chat.messages[-1]["role"] == "user"
    results = [m for m in chat.messages if m["role"] == "tool"]
    calls = [m for m in chat.messages if m.get("tool_calls")]
    assert calls and any(len(m["tool_calls"]) > 1 for m in calls)
    after_call = {chat.messages[i + 1].get("tool_call_id") for i, m in enumerate(chat.messages[:-1]) if m.get("tool_calls")}
    assert any(r["tool_call_id"] not in after_call for r in results), "some results are not next to their call"


def test_smoke_run_writes_results_and_finds_contextfit_correct(tmp_path, capsys):
    main(["--sizes", "100", "--runs", "1", "--no-external", "--no-fixtures", "--no-memory", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "bench-quick.json").read_text())
    rows = [row for case in data["cases"] for row in case["rows"]]
    fits = [row for row in rows if row["family"] == "contextfit"]
    assert len(fits) == 2 * 10 and all(row["seconds"] for row in rows)
    for row in fits:
        verdict = row["verdict"]
        assert verdict["error"] is None and not verdict["over_budget"], row
        assert verdict["split_groups"] == 0 and verdict["lost_protected"] == 0, row
    # Cold all-counted fits carry a floor run timed before each run; warm refits their own first fit.
    for row in fits:
        paired = row["mode"] == "warm" or row["counts_excluded"]
        assert len(row["paired"]) == (len(row["seconds"]) if paired else 0), row
        assert all(seconds > 0 for seconds in row["paired"])
    assert "## Targets (issue 6)" in (tmp_path / "bench-quick.md").read_text()
    assert (tmp_path / "bench-quick.html").stat().st_size > 0
    assert "| contextfit truncate cold |" in capsys.readouterr().out


def test_paired_ratio_is_the_median_of_per_run_ratios():
    from bench.report import paired_ratio
    from bench.run import Row

    row = Row("x", "contextfit", "truncate", "cold", True, seconds=[1.0, 3.0, 10.0], paired=[1.0, 2.0, 4.0])
    assert paired_ratio(row) == 1.5  # ratios 1, 1.5, 2.5
    assert paired_ratio(Row("y", "contextfit", "truncate", "cold", True, seconds=[1.0])) is None


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
