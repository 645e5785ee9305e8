"""Replay, Retention and Audit in a real browser, as a presenter uses them (Debian's chromium, as tests/e2e/test_browser.py)."""

from __future__ import annotations

import pytest
from support.browser import ARTIFACTS, READY, script_run
from support.paths import shared_path

from playwright.sync_api import expect  # installed: support.browser skipped this module otherwise

import contextfit
from contextfit.dashboard import state
from contextfit.dashboard.setup import suggested_setup
from contextfit.inputs.samples import load_sample
from contextfit.replays.answer import recommendation_for
from contextfit.retention import results


def go(page, link: str, title: str) -> None:
    """Open a page from the sidebar's navigation (opening the sidebar first when presentation mode folded it)."""
    opener = page.locator('[data-testid="stExpandSidebarButton"]')
    if opener.count() and opener.first.is_visible():
        opener.first.click()
    with script_run(page):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text=link).first.click()
    page.locator("h1").filter(has_text=title).wait_for()


def expected_sentence(conversation) -> str:
    setup = suggested_setup(conversation).replace(**state.compare_settings({}))
    return recommendation_for(conversation, setup.settings, strategies=setup.strategies).sentence


def answer_text(page) -> str:
    box = page.locator(".contextfit-answer").first
    box.wait_for()
    return box.inner_text().split("\n", 1)[1].strip()  # after its label


def test_replay_says_compares_answer_for_a_sample_and_an_upload(page, server):
    go(page, "Replay", "Replay")
    assert answer_text(page) == expected_sentence(load_sample("roleplay"))
    path = shared_path("sillytavern", "chats_2023", "Megumin_1673323621108.jsonl")
    with script_run(page):
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Upload").click()
    with script_run(page):
        page.locator('input[type="file"]').set_input_files(str(path))
    expected = expected_sentence(contextfit.load_conversation(path.read_bytes()))
    expect(page.locator(".contextfit-answer").first).to_contain_text(expected, timeout=120_000)  # once replayed
    page.wait_for_selector(READY)
    assert answer_text(page) == expected
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.mark.parametrize("width, height", [(1920, 1080), (1440, 900)])
def test_a_presenter_sees_the_answer_and_its_costs_in_the_first_screen(page, server, width, height):
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": width, "height": height})
    with script_run(page):
        page.get_by_text("Presentation mode").click()  # on Compare
    go(page, "Replay", "Replay")
    answer = page.locator(".contextfit-answer").first.bounding_box()
    assert answer["y"] + answer["height"] <= height  # the whole sentence in the first screen
    assert float(page.locator(".contextfit-answer").first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 24
    costs = page.locator('[data-testid="stTable"]').first
    assert costs.bounding_box()["y"] < height  # its costs start in it too
    # table text wraps rather than being cut: no cell is wider than its column
    assert costs.evaluate("t => [...t.querySelectorAll('td')].every(td => td.scrollWidth <= td.clientWidth + 1)")
    page.screenshot(path=str(ARTIFACTS / f"replay-presenting-{width}.png"))
    go(page, "Retention benchmark", "Retention benchmark")
    headline = page.locator(".contextfit-answer").first
    expect(headline).to_contain_text(results.load().headline().text())
    assert headline.bounding_box()["y"] + headline.bounding_box()["height"] <= height
    page.screenshot(path=str(ARTIFACTS / f"retention-presenting-{width}.png"))


def test_the_retention_page_shows_the_benchs_numbers(page, server):
    go(page, "Retention benchmark", "Retention benchmark")
    shipped = results.load()
    bars = page.locator(".contextfit-retention .cfr-row")
    expect(bars).to_have_count(len(shipped.variants))
    ledger = page.locator('.contextfit-retention .cfr-row[data-strategy="fact-ledger"]')
    every = next(row for row in shipped.rows() if row.strategy == "fact-ledger" and row.share == 0.15 and row.kind == "all")
    expect(ledger.locator(".cfr-value")).to_have_text(f"{every.retention:.1%}")
    with script_run(page):
        page.locator('[data-testid="stButtonGroup"] button').filter(has_text="every budget").click()
    expect(page.locator(".contextfit-retention")).to_have_count(0)  # the bars are one budget's
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_audit_shows_bubbles_beside_the_reply_and_no_database_path(page, server):
    with script_run(page):
        page.get_by_role("button", name="Send").first.click()
    page.locator("h1").filter(has_text="Audit").wait_for()
    page.wait_for_selector(READY)
    bubbles = page.locator('[data-testid="stChatMessage"]')
    assert bubbles.count() >= 3
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "The reply" in main and "What the model saw" in main
    assert "chats.db" not in main and "sqlite" not in main.lower()
    assert " · just now · took " in main  # human times
    assert page.locator('[data-testid="stException"]').count() == 0
