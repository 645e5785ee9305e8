"""The dashboard in a real browser: Debian's chromium driven by Playwright.

Skips with the reason when chromium or playwright is missing (`.ci/run`
installs chromium). The ``server`` (one per module), ``browser`` and ``page``
fixtures are in tests/e2e/conftest.py, the helpers in tests/support/browser.py.
Screenshots go to test-artifacts/ (not committed).
"""

from __future__ import annotations

import json
import re

from support.bench import run_bench
from support.browser import (
    ARTIFACTS,
    PROTECTED_FILL,
    PROTECTED_IN_FIRST_CHART,
    bars,
    edit_table_ready,
    load,
    paste,
    protected_bars,
    script_run,
    toggle_cell,
)

from contextfit.pipeline.plan import BUILTIN_STRATEGIES


def test_paste_compare_see_charts_and_pin_a_message(page):
    ARTIFACTS.mkdir(exist_ok=True)
    chat = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i} " * 30} for i in range(1, 12)
    ]
    bundle = {"contextfit": "conversation", "messages": chat, "settings": {"contextLimit": 1500, "responseReserve": 1100}}

    paste(page, json.dumps(bundle))

    blocks = page.locator(".contextfit-blocks")
    blocks.first.locator(".cfk-fill").first.wait_for()
    assert blocks.count() == len(BUILTIN_STRATEGIES)  # a block chart per strategy, in HTML...
    page.locator(".contextfit-matrix .cfk-col").first.wait_for()  # ...and the fate matrix, in HTML too
    assert page.locator(".contextfit-matrix .cfm-row").count() == len(BUILTIN_STRATEGIES)
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 0
    # and a budget bar per strategy, in HTML: every stretch drawn, with its colour and its hover text kept
    budget = page.locator(".contextfit-budget")
    assert budget.count() == len(BUILTIN_STRATEGIES)
    first = budget.first.locator(".cfb-part")
    assert first.count() >= 4 and all((first.nth(k).bounding_box() or {}).get("height", 0) > 0 for k in range(first.count()))
    assert first.nth(0).locator(".cfk-tip").text_content().startswith("prompt: ")  # its hover label
    assert budget.first.locator('[data-shade="protected"]').first.evaluate("e => getComputedStyle(e).backgroundColor") == PROTECTED_FILL
    assert page.evaluate("window.__contextfitPreloaded") is True  # the chart code was asked for at the top of the run
    truncate_blocks = blocks.nth(0)
    assert len(bars(truncate_blocks)) == len(chat)
    assert all((bar.bounding_box() or {}).get("height", 0) > 0 for bar in bars(truncate_blocks))
    before = protected_bars(page)
    assert before == 2  # the system prompt and the current input
    page.screenshot(path=str(ARTIFACTS / "compare-before-pin.png"), full_page=True)

    # Pin the oldest message (row 1, column "pinned") in the edit table, from the keyboard.
    grid = edit_table_ready(page)
    frame = grid.bounding_box()
    # header row, then row 1, column "id"; then column "pinned"
    toggle_cell(page, grid, frame["x"] + 40, frame["y"] + 35 + 35 + 17, 5)
    page.wait_for_function(f"(arg) => ({PROTECTED_IN_FIRST_CHART})(arg) === 3", arg=[PROTECTED_FILL])
    assert protected_bars(page) == before + 1
    page.screenshot(path=str(ARTIFACTS / "compare-after-pin.png"), full_page=True)

    # An open section stays open when a limit change changes the counts in its label.
    dropped = page.locator('[data-testid="stExpander"]').filter(has_text="Excluded or summarized").first
    label = dropped.locator("summary").inner_text()
    dropped.locator("summary").click()
    dropped.locator("details[open]").wait_for()
    limit = page.get_by_role("spinbutton", name="Context limit")
    limit.scroll_into_view_if_needed()
    limit.fill("1300")
    with script_run(page):
        limit.press("Enter")
    page.wait_for_function("""([before]) => {
        const section = [...document.querySelectorAll('[data-testid="stExpander"]')]
            .find(e => e.innerText.includes('Excluded or summarized'));
        return section && !section.querySelector('summary').innerText.includes(before);
    }""", arg=[label.strip()])
    assert page.locator('[data-testid="stExpander"]').filter(has_text="Excluded or summarized").first.locator(
        "details[open]").count() == 1


def test_a_bad_paste_shows_the_error_and_keeps_the_text(page):
    broken = '{"messages": [{"role": "user"'
    box = paste(page, broken)
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="INVALID_CONVERSATION").first
    alert.wait_for()  # drawn from this run's messages, which the page may still be applying
    assert box.input_value() == broken
    assert page.locator('[data-testid="stPlotlyChart"], .contextfit-budget, .contextfit-blocks, .contextfit-matrix').count() == 0


def test_pasted_html_is_shown_as_text(page):
    paste(page, json.dumps([{"role": "user", "content": '<img src=x onerror="window.hacked=1"> **bold**'}]))
    page.locator(".contextfit-blocks .cfk-tip").first.wait_for(state="attached")
    assert page.evaluate("window.hacked") is None
    assert page.locator('img[src="x"]').count() == 0
    tips = page.locator(".contextfit-blocks .cfk-tip").all_text_contents()  # the hover labels show the markup as text
    assert any('<img src=x onerror="window.hacked=1">' in tip for tip in tips)


def test_every_page_renders(page, server):
    for path, title in (("/audit", "Audit"), ("/models", "Models & tokenizers"), ("/plugins", "Plugins")):
        load(page, server + path)
        page.locator("h1").first.wait_for()
        assert page.locator("h1").first.inner_text().startswith(title)
        assert page.locator('[data-testid="stException"]').count() == 0


def test_the_dashboard_benchmark_times_a_cold_and_a_warm_upload_and_a_refit(tmp_path):
    """``python -m bench.dashboard`` on a small chat: a fresh server per run, its own browser, real timings."""
    table = run_bench("bench.dashboard", "--messages", "200", "--runs", "1", "--out", str(tmp_path))
    result = json.loads((tmp_path / "dashboard.json").read_text())
    assert result["messages"] == 201
    assert len(result["cold_uploads"]) == len(result["warm_uploads"]) == len(result["refits"]) == 1
    for upload in (result["cold_uploads"][0], result["warm_uploads"][0]):
        assert 0 < upload["charts_drawn"] <= upload["idle"]  # the order of events; how fast is the bench's to say
    assert result["refits"][0]["idle"] > 0
    assert "| cold upload: a fresh server process" in table and "| warm upload: the same process" in table
    # the warm share: each warm upload's idle time over its own cold upload's, both positive (above)
    assert "201 messages" in table and re.search(r"the median of each process's own ratio: \d+%\.", table)
