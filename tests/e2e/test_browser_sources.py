"""The Compare page's conversation in a real browser: an upload survives a page switch.

Uses tests/e2e/conftest.py's server (a fresh ``streamlit run``), Debian's chromium and its waits on the
app's own state (never sleeps); skips as it does when chromium or playwright is missing.
"""

from __future__ import annotations

from support.paths import TEST_DATA
from support.browser import ARTIFACTS, READY, script_run

import contextfit
from contextfit.pipeline.plan import BUILTIN_STRATEGIES

CHAT = TEST_DATA / "formats" / "sillytavern_chat.jsonl"


def edit_table_ids(page, first: str) -> list[str]:
    """The edit table's id column (its accessible table; the grid itself is a canvas), once row 1 is ``first``."""
    page.wait_for_function(
        """first => {
            const cell = [...document.querySelectorAll('[data-testid="stDataFrame"]')].pop()
                ?.querySelector('tbody tr td');
            return cell && cell.textContent === first;
        }""",
        arg=first,
    )
    return page.locator('[data-testid="stDataFrame"]').last.evaluate(
        "grid => [...grid.querySelectorAll('tbody tr')].map(row => row.querySelector('td').textContent)"
    )


def test_an_upload_survives_a_switch_to_the_audit_page_and_back(page, server):
    expected = [m["meta"]["id"] for m in contextfit.load_conversation(CHAT.read_bytes()).messages
                if not m["meta"].get("hidden")]
    with script_run(page):
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Upload").click()
    with script_run(page):
        page.locator('input[type="file"]').set_input_files(str(CHAT))
    page.locator(".contextfit-matrix .cfk-col").first.wait_for()  # the fate matrix
    assert page.locator(".contextfit-budget").count() == page.locator(".contextfit-blocks").count() == len(BUILTIN_STRATEGIES)  # and the others
    assert edit_table_ids(page, expected[0]) == expected
    assert "upload=sillytavern_chat.jsonl" in page.url.split("?", 1)[1].split("&")

    page.get_by_role("link", name="Audit").click()
    page.locator("h1").filter(has_text="Audit").wait_for()
    page.wait_for_selector(READY)
    page.get_by_role("link", name="Compare strategies").click()
    page.locator("h1").filter(has_text="Compare strategies").wait_for()
    page.wait_for_selector(READY)

    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Using sillytavern_chat.jsonl (uploaded).").wait_for()
    assert sidebar.locator('[data-testid="stRadioOption"]').filter(has_text="Upload").locator("input").is_checked()
    assert edit_table_ids(page, expected[0]) == expected  # the same conversation, block by block
    assert "upload=sillytavern_chat.jsonl" in page.url.split("?", 1)[1].split("&")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare-upload-after-page-switch.png"), full_page=True)
