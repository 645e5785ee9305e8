"""The Compare page's state and safety in a real browser (chromium through Playwright).

Uses the server and page fixtures of tests/e2e/conftest.py (a fresh dashboard
process for this module). Screenshots go to test-artifacts/ (not committed).
"""

from __future__ import annotations

import json
import re

from support.bench import run_bench
from support.browser import (
    ARTIFACTS, READY, PlaywrightTimeout, edit_table_ready, load, paste, script_run, toggle_cell,
)

from contextfit.pipeline.plan import BUILTIN_STRATEGIES

# Each strategy's exact count, the first words of a caption under its charts ("1,781 tokens of a 1,800-token budget").
COUNTS = """() => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')].map(e => e.innerText)
    .filter(text => text.includes(' tokens of a ')).map(text => text.split(' tokens of a ')[0])"""


def prompt_tokens(page, at_least: int = 1) -> list[str]:
    """The strategies' prompt tokens as the page says them exactly, once ``at_least`` of them are drawn (the
    browser may still be drawing the run's last elements when the page turns idle) or after 30 s, whatever is there then."""
    page.locator(".contextfit-window").first.wait_for()
    try:
        page.wait_for_function(f"() => ({COUNTS})().length >= {at_least}", timeout=30_000)
    except PlaywrightTimeout:
        pass  # the caller's assertion shows what is there
    return page.evaluate(COUNTS)


def test_first_load_shows_the_strategies_sending_different_prompts(page):
    tokens = prompt_tokens(page, at_least=5)
    assert len(tokens) >= 5 and len(set(tokens[:5])) == 5, tokens  # every strategy at work (old sample: 2 values)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_limit_below_the_reserve_shows_a_friendly_message(page):
    paste(page, json.dumps([{"role": "user" if i % 2 else "assistant", "content": f"turn {i} " * 30} for i in range(1, 10)]))
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
    # The reserve's bound follows the limit: a reserve typed above it is not taken.
    reserve.fill("9000")
    reserve.press("Enter")
    page.wait_for_selector(READY)
    page.locator('[data-testid="stSidebar"]').screenshot(path=str(ARTIFACTS / "compare-reserve-above-limit.png"))
    assert "reserve=2000" in page.url  # marked as invalid in the field, not applied
    assert page.locator('[data-testid="stException"]').count() == 0


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


def test_an_edit_keeps_the_tables_scroll_position(page):
    paste(page, json.dumps([{"role": "user" if i % 2 else "assistant", "content": f"message {i} " * 8} for i in range(1, 120)]))
    grid = edit_table_ready(page)
    scroller = grid.locator(".dvn-scroller").first
    scroller.evaluate("element => { element.scrollTop = element.scrollHeight; }")
    page.wait_for_function("element => element.scrollTop > 1000", arg=scroller.element_handle())
    before = scroller.evaluate("element => element.scrollTop")
    frame = grid.bounding_box()
    # The last visible row, column "pinned" (the sixth): click its cell, then toggle it from the keyboard.
    toggle_cell(page, grid, frame["x"] + 40, frame["y"] + frame["height"] - 30, 5)
    page.locator(".contextfit-matrix .cfk-col").first.wait_for()
    after = page.locator('[data-testid="stDataFrame"]').last.locator(".dvn-scroller").first.evaluate("element => element.scrollTop")
    assert after > 1000 and abs(after - before) < 100, (before, after)


def test_the_first_paint_and_refit_benchmarks_run(tmp_path):
    """``python -m bench.dashboard --first-paint`` and ``--refit`` on small inputs: real timings, no threshold."""
    reports = run_bench("bench.dashboard", "--first-paint", "--refit", "--refit-messages", "60", "--runs", "1",
                        "--out", str(tmp_path))
    paint = json.loads((tmp_path / "dashboard-first-paint.json").read_text())
    assert paint["compare"][0]["charts"] == 2 * len(BUILTIN_STRATEGIES) + 1 and paint["trivial"][0]["charts"] == 9
    assert 0 < paint["compare"][0]["charts_drawn"] <= paint["compare"][0]["idle"] and paint["ratio"] > 0
    assert f"| Compare (default sample, every strategy) | {2 * len(BUILTIN_STRATEGIES) + 1} |" in reports
    refit = json.loads((tmp_path / "dashboard-refit.json").read_text())
    assert refit["messages"] == 60 and refit["refits"][0]["warm_change"]["idle"] > 0
    assert "| warm limit change |" in reports
