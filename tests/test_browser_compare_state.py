"""The Compare page's state and safety in a real browser (chromium through Playwright).

Uses the server and page fixtures of test_browser.py (a fresh dashboard
process for this module). Screenshots go to test-artifacts/ (not committed).
"""

from __future__ import annotations

import json
import re

import pytest

from test_browser import ARTIFACTS, READY, load, page, script_run, server  # noqa: F401  (fixtures)

METRIC = '[data-testid="stMetricValue"]'


def prompt_tokens(page) -> list[str]:
    page.locator(METRIC).first.wait_for()
    return [value.inner_text() for value in page.locator(METRIC).all()]


def test_first_load_shows_the_strategies_sending_different_prompts(page):
    tokens = prompt_tokens(page)
    assert len(tokens) >= 5 and len(set(tokens[:5])) == 5, tokens  # every strategy at work (old sample: 2 values)
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.mark.parametrize("width", [1440, 1920])
def test_screenshots_at_real_window_sizes(page, width):
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": width, "height": 1080})
    page.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for()
    page.wait_for_selector(READY)
    page.screenshot(path=str(ARTIFACTS / f"compare-{width}.png"), full_page=True)
    assert (ARTIFACTS / f"compare-{width}.png").stat().st_size > 10_000


def test_a_limit_below_the_reserve_shows_a_friendly_message(page):
    with script_run(page):
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Paste").click()
    box = page.get_by_role("textbox", name="Conversation")
    chat = [{"role": "user" if i % 2 else "assistant", "content": f"turn {i} " * 30} for i in range(1, 10)]
    box.fill(json.dumps(chat))
    with script_run(page):
        box.press("Control+Enter")
    reserve = page.get_by_role("spinbutton", name="Response reserve")
    assert reserve.input_value() == "16384"  # gpt-4o's own
    limit = page.get_by_role("spinbutton", name="Context limit")
    limit.fill("8000")
    with script_run(page):
        limit.press("Enter")
    warning = page.locator('[data-testid="stAlert"]').filter(has_text="Response reserve lowered from 16,384 to 2,000")
    warning.wait_for()
    assert reserve.input_value() == "2000"
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stProgress"]').count() == 0
    page.screenshot(path=str(ARTIFACTS / "compare-limit-below-reserve.png"), full_page=True)


def test_settings_survive_a_page_switch_and_live_in_the_url(page, server):
    limit = page.get_by_role("spinbutton", name="Context limit")
    limit.fill("2000")
    with script_run(page):
        limit.press("Enter")
    page.wait_for_function("() => location.search.includes('limit=2000')")
    tokens = prompt_tokens(page)
    with script_run(page):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Models").click()
    page.locator("h1").filter(has_text="Models").wait_for()
    with script_run(page):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Compare").click()
    page.wait_for_function("() => document.querySelector('input[aria-label=\"Context limit\"]')?.value === '2000'")
    assert prompt_tokens(page) == tokens
    page.wait_for_function("() => location.search.includes('limit=2000')")
    # A reload is a new session: the URL brings the comparison back.
    url = page.url
    assert re.search(r"[?&]reserve=400(&|$)", url) and "strategies=truncate%2Csummarize" in url
    load(page, url)
    # The page may still be applying the run's messages when it turns idle: wait for the value, do not sleep.
    page.wait_for_function("() => document.querySelector('input[aria-label=\"Context limit\"]')?.value === '2000'")
    assert prompt_tokens(page) == tokens
