"""The Replay page in a real browser (Debian's chromium, as tests/test_browser.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
from test_browser import ARTIFACTS, load, page, script_run, server  # noqa: E402,F401  (fixtures and helpers)

import contextfit  # noqa: E402
from contextfit.inputs.samples import SAMPLES, sample_text  # noqa: E402
from contextfit.views import dashboard  # noqa: E402
from contextfit.views import replay as views  # noqa: E402


def test_replay_page_draws_lines_verdict_and_a_turn(page, server):  # noqa: F811
    ARTIFACTS.mkdir(exist_ok=True)
    conversation = contextfit.load_conversation(sample_text(SAMPLES[0].key))
    setup = dashboard.suggested_setup(conversation)
    expected = contextfit.replay(conversation, model=setup.model, context_limit=setup.context_limit,
                                 response_reserve=setup.response_reserve,
                                 strategies=views.ReplaySetup(setup.model, 1, 0).strategy_entries())
    load(page, server + "/replay")
    assert page.locator("h1").first.inner_text().startswith("Replay")
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(3).locator(".scatterlayer").wait_for(state="attached")
    page.screenshot(path=str(ARTIFACTS / "replay.png"), full_page=True)
    # prompt tokens, cumulative cost, cache hits: one line per strategy (stable_prefix variants included)
    for index in range(3):
        assert charts.nth(index).locator(".scatterlayer .trace.scatter").count() == len(expected.totals)
    assert page.locator('[data-testid="stDataFrame"]').count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0
    metrics = page.locator('[data-testid="stMetricValue"]')
    last = expected.turns["truncate"][-1].prompt_tokens
    assert metrics.first.inner_text() == f"{last:,}"

    # The turn slider shows that turn's plan under every strategy.
    thumb = page.get_by_role("slider")
    thumb.focus()
    with script_run(page):
        thumb.press("Home")
    first = expected.turns["truncate"][0].prompt_tokens
    page.wait_for_function(
        "([value]) => document.querySelector('[data-testid=\"stMetricValue\"]')?.innerText === value",
        arg=[f"{first:,}"],
    )
    assert page.locator('[data-testid="stMetricValue"]').count() == len(expected.totals)
