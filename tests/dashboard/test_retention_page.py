"""The Retention page: the bench's own table, opened at once, explained, with its headline."""

from __future__ import annotations

import html
import re

import pytest
from support.paths import REPO
from streamlit.testing.v1 import AppTest

from contextfit.dashboard import palette, retention_view
from contextfit.retention import results, runner


def page() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=180).switch_page("pages/retention.py")


@pytest.fixture(scope="module")
def shipped() -> results.Results:
    return results.load()


def test_the_page_shows_the_benchs_table_and_headline(shipped):
    at = page().run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Retention benchmark"
    box = next(e.proto.body for e in at.get("html") if 'class="contextfit-answer"' in e.proto.body)
    assert html.unescape(re.sub(r"<[^>]+>", "", box.split("</style>")[-1])) == (
        "On the retention protocol" + shipped.headline().text() + ".")
    assert shipped.headline().text() == "fact-ledger keeps 97% of the facts at a 15% budget; truncate 23%"
    table = at.table[0].value
    expected = {row.strategy: row for row in runner.rows_of(shipped.measurements) if row.share == 0.15}
    assert list(table["strategy"]) == [label for label in shipped.variants]
    assert set(table["budget"]) == {"15%"}  # the headline's budget first
    for _, row in table.iterrows():
        every = [r for r in runner.rows_of(shipped.measurements)
                 if r.strategy == row["strategy"] and r.share == 0.15 and r.kind == "all"][0]
        assert row["all facts"] == f"{every.retention:.1%}" and row["tokens sent"] == f"{every.mean_tokens:,.0f}"
        assert row["$ per 1,000 conversations"].startswith("$")
    assert expected["fact-ledger"].retention > 0.9
    markdown = " ".join(m.value for m in at.markdown)
    assert "Context Decay Benchmark" in markdown and retention_view.SOURCE in markdown  # the protocol and its source
    assert any("375 facts" in c.value and "make retention" in c.value for c in at.caption)
    assert any("64 of 375 facts (17.1%; published for naive truncation: 14.3%)" in c.value for c in at.caption)


def test_every_budget_and_the_bars(shipped):
    at = page().run()
    at.get("button_group")[0].set_value("every budget").run()
    assert not at.exception
    table = at.table[0].value
    assert len(table) == len(shipped.variants) * len(shipped.shares) and set(table["budget"]) == {"10%", "15%", "25%"}
    assert not table.isna().to_numpy().any() and "None" not in table.to_string()
    bars = retention_view.bars_html(shipped.rows(), 0.15)
    assert bars.count('class="cfr-row"') == len(shipped.variants)
    assert f"background:{palette.STRATEGY_COLORS['fact-ledger']}" in bars  # the strategy's colour, no fate's
    assert 'data-strategy="fact-ledger" data-retention="0.9707"' in bars


def test_where_the_facts_were_set_and_the_held_out_seeds(shipped):
    at = page().run()
    positions = at.table[1].value
    assert list(positions["strategy"]) == ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results",
                                           "fact-ledger"]
    truncate = positions.iloc[0]
    assert truncate["set in the 1st quarter"] == "0%" and truncate["50 turns"] == "20%"
    held = at.table[2].value
    assert len(held) == len(shipped.variants) and set(held["budget"]) == {"15%"}


def test_presentation_mode_enlarges_the_page():
    at = page()
    at.session_state["presentation"] = True
    at.run()
    assert not at.exception and at.table and not at.dataframe  # every table HTML, which its CSS enlarges
    assert any(".contextfit-retention" in e.proto.body and "!important" in e.proto.body for e in at.get("html"))


def test_without_results_the_page_says_how_to_make_them(monkeypatch, tmp_path):
    monkeypatch.setattr(results, "RESULTS", tmp_path / "absent.json")
    at = page().run()
    assert not at.exception
    assert "make retention" in at.error[0].value and not at.table


def test_a_results_file_written_again_is_read_again(tmp_path):
    path = tmp_path / "retention.json"
    measured = runner.measure(lengths=(20,), shares=(0.15,), seeds=(1,), variants=runner.VARIANTS[:1])
    results.write(path, measured, lengths=(20,), shares=(0.15,), seeds=(1,))
    first = retention_view.load(path)
    assert retention_view.load(path) is first  # read once
    results.write(path, measured + runner.measure(lengths=(20,), shares=(0.15,), seeds=(2,),
                                                  variants=runner.VARIANTS[:1]), lengths=(20,), shares=(0.15,),
                  seeds=(1, 2))
    import os

    os.utime(path, (first_time := path.stat().st_mtime + 5, first_time))
    assert retention_view.load(path).seeds == (1, 2)
