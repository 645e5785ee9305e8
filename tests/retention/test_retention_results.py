"""The retention results file: the bench's own measurements, shipped so a view opens at once, and kept honest."""

from __future__ import annotations

import json

import pytest
from support.paths import REPO

from contextfit.retention import results, runner


@pytest.fixture(scope="module")
def shipped() -> results.Results:
    return results.load()


def test_the_shipped_file_is_the_protocol_as_the_runner_defines_it(shipped):
    assert (shipped.model, shipped.lengths, shipped.shares, shipped.seeds, shipped.held_out_seeds) == (
        runner.MODEL, runner.LENGTHS, runner.SHARES, runner.SEEDS, runner.HELD_OUT_SEEDS)
    assert shipped.variants == tuple(variant.label for variant in runner.VARIANTS)
    cells = {(m.variant, m.share, m.turns, m.seed) for m in shipped.measurements}
    assert len(cells) == len(shipped.measurements) == (
        len(runner.VARIANTS) * len(runner.SHARES) * len(runner.LENGTHS) * len(runner.SEEDS))
    assert {(m.turns, m.seed) for m in shipped.held_out} == {
        (turns, seed) for turns in runner.LENGTHS for seed in runner.HELD_OUT_SEEDS}


def test_the_shipped_measurements_are_what_the_bench_measures_today(shipped):
    # the 50-turn conversations measured again (a second): a strategy or scoring change that moves them
    # fails here until `make retention` writes the file again
    again = runner.measure(lengths=(50,), seeds=runner.SEEDS)
    stored = {(m.variant, m.share, m.seed): m for m in shipped.measurements if m.turns == 50}
    assert len(again) == len(stored)
    for measurement in again:
        assert stored[(measurement.variant, measurement.share, measurement.seed)] == measurement


def test_the_documented_tables_are_the_shipped_ones(shipped):
    text = (REPO / "docs" / "retention.md").read_text(encoding="utf-8")
    assert runner.markdown_table(shipped.rows()) in text
    assert runner.markdown_table(shipped.held_out_rows()) in text
    found, total = shipped.first_plantings
    assert f"sends the first value of {found} of {total} facts ({found / total:.1%}" in text


def test_the_headline_is_the_best_row_at_15_percent_against_truncate(shipped):
    rows = [row for row in shipped.rows() if row.kind == "all" and row.share == 0.15]
    headline = shipped.headline()
    best = max(rows, key=lambda row: row.retention)
    truncate = next(row for row in rows if row.strategy == "truncate")
    assert (headline.best, headline.best_retention, headline.truncate) == (best.strategy, best.retention,
                                                                            truncate.retention)
    assert headline.text() == (f"{best.strategy} keeps {best.retention:.0%} of the facts at a 15% budget; "
                               f"truncate {truncate.retention:.0%}")


def test_a_missing_or_foreign_file_says_to_run_the_bench(tmp_path):
    with pytest.raises(results.ResultsUnavailable, match="make retention"):
        results.load(tmp_path / "absent.json")
    (tmp_path / "old.json").write_text(json.dumps({"format": 0}))
    with pytest.raises(results.ResultsUnavailable, match="another layout"):
        results.load(tmp_path / "old.json")
    (tmp_path / "cut.json").write_text('{"format": 1, "model": "gpt-4o"')
    with pytest.raises(results.ResultsUnavailable, match="make retention"):
        results.load(tmp_path / "cut.json")
    broken = json.loads(results.RESULTS.read_text())
    broken["conversations"][0]["runs"][0]["statuses"] += "v"  # a run scoring a fact the conversation lacks
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    with pytest.raises(results.ResultsUnavailable, match="scores"):
        results.load(tmp_path / "broken.json")
