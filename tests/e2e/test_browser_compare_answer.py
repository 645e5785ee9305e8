"""Compare's answer in a real browser (chromium through Playwright): the sentence the CLI prints, two
chip removals in a row, presentation mode across a page round trip and a reload, and what the first
1080 pixels of a projector hold.

Uses the server and page fixtures of tests/e2e/conftest.py (a fresh dashboard process for this module).
Screenshots go to test-artifacts/ (not committed).
"""

from __future__ import annotations

import io

from support.paths import shared_path
from support.browser import ARTIFACTS, READY, load, script_run

from contextfit import cli
from contextfit.inputs.samples import sample_text
from contextfit.pipeline.plan import BUILTIN_STRATEGIES

SENTENCE = ".st-key-answer [data-testid='stMarkdownContainer'] p"
CHIPS = """() => [...document.querySelectorAll('[data-testid="stSidebar"] [data-tag]')].map(e => e.getAttribute('aria-label'))"""


def cli_sentence(path, limit: int, reserve: int) -> str:
    out = io.StringIO()
    assert cli.main(["fit", str(path), "--strategy", "all", "--recommend", "--limit", str(limit), "--reserve",
                     str(reserve)], out=out) == 0
    return out.getvalue().splitlines()[0]


def answer_text(page) -> str:
    page.locator(SENTENCE).first.wait_for()
    return page.locator(SENTENCE).first.inner_text()


def test_the_answer_on_the_page_is_the_cli_s_for_the_sample_and_an_upload(page, tmp_path):
    path = tmp_path / "roleplay.json"
    path.write_text(sample_text("roleplay"))
    assert answer_text(page) == cli_sentence(path, 2200, 400)
    run = shared_path("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json")
    with script_run(page):
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Upload").click()
    with script_run(page):
        page.locator('[data-testid="stSidebar"] input[type="file"]').set_input_files(str(run))
    for name, value in (("Context limit", "700"), ("Response reserve", "100")):
        box = page.get_by_role("spinbutton", name=name)
        box.fill(value)
        with script_run(page):
            box.press("Enter")
    page.wait_for_function("() => location.search.includes('limit=700') && location.search.includes('reserve=100')")
    page.wait_for_selector(READY)
    assert answer_text(page) == cli_sentence(run, 700, 100)
    assert page.get_by_text("Requests of this agent run").count() == 1


def test_two_chips_removed_in_a_row_are_both_gone(page):
    page.wait_for_function(f"() => ({CHIPS})().length === {len(BUILTIN_STRATEGIES)}")
    for name in ("truncate", "summarize"):  # the second × clicked as soon as the first one's run has started
        remove = page.get_by_role("button", name=f"Remove {name}")
        box = remove.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_function(f"() => !({CHIPS})().includes('{name}')")
    page.wait_for_selector(READY)
    page.wait_for_function("() => location.search.includes('strategies=vector-recall%2Cmanual')")
    assert page.evaluate(CHIPS) == list(BUILTIN_STRATEGIES[2:])
    page.wait_for_function(f"() => document.querySelectorAll('.contextfit-window').length === {len(BUILTIN_STRATEGIES) - 2}")
    assert page.locator("h3").filter(has_text="truncate").count() == 0


def sidebar_open(page) -> bool:
    return page.locator('[data-testid="stSidebar"]').get_attribute("data-collapsed") == "false"


FOLDED = """() => document.querySelector('[data-testid="stSidebar"]').getAttribute('data-collapsed') === 'true'"""
OPEN = """() => document.querySelector('[data-testid="stSidebar"]').getAttribute('data-collapsed') === 'false'"""


def test_presentation_mode_survives_a_page_round_trip_and_a_reload_and_folds_the_sidebar(page):
    assert sidebar_open(page)
    with script_run(page):
        page.get_by_text("Presentation mode").click()
    page.wait_for_function("() => location.search.includes('present=1')")
    page.wait_for_function(FOLDED)
    # to Replay and back, through the sidebar's navigation (opened for it)
    page.get_by_test_id("stExpandSidebarButton").click()
    page.wait_for_function(OPEN)
    with script_run(page):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Replay").click()
    page.locator("h1").filter(has_text="Replay").wait_for()
    assert "present=1" in page.url
    with script_run(page):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Compare").click()
    page.locator("h1").filter(has_text="Compare").wait_for()
    assert page.get_by_role("switch", name="Presentation mode").is_checked()
    assert "present=1" in page.url
    load(page, page.url)  # a reload: a new session, the address brings it back
    page.locator(".contextfit-matrix").first.wait_for()
    # on a loaded machine the fold and the later tables may land after the first run's end: waited for, not slept
    page.wait_for_function(FOLDED)
    page.locator('[data-testid="stTable"]').nth(1).wait_for()  # the tables as HTML, enlarged: two at least
    assert page.get_by_role("switch", name="Presentation mode").is_checked()
    assert not sidebar_open(page)
    assert page.locator('[data-testid="stTable"]').count() >= 2


def test_the_first_1080_pixels_of_a_projector_hold_the_answer_the_windows_the_lost_lines_and_the_fate_matrix(
        page, server):
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1920, "height": 1080})
    load(page, server + "/?sample=roleplay&present=1")
    page.locator(".contextfit-matrix .cfk-col").first.wait_for()
    page.locator(SENTENCE).first.wait_for()
    page.wait_for_selector(READY)
    page.screenshot(path=str(ARTIFACTS / "compare-presentation-1920.png"))
    bottoms = page.evaluate("""() => ['.st-key-answer', '.contextfit-window', '[class*="st-key-column-answer-"]',
        '.contextfit-matrix'].map(selector => [...document.querySelectorAll(selector)].map(e => e.getBoundingClientRect().bottom))""")
    answer, windows, lost, matrix = bottoms
    assert len(windows) == len(lost) == len(BUILTIN_STRATEGIES) and len(answer) == len(matrix) == 1
    assert max(answer + windows + lost + matrix) <= 1080, bottoms
    # each strategy's Lost line is in its column's head, under its window and cost, above the fate matrix
    lines = page.locator('[class*="st-key-column-answer-"] p').all_inner_texts()
    assert len(lines) == len(BUILTIN_STRATEGIES) and all("\nLost: " in line for line in lines), lines
    assert max(lost) < page.locator(".contextfit-matrix").bounding_box()["y"]
    assert page.locator(SENTENCE).first.inner_text().startswith("Ship ")
    # the text wraps rather than being cut: nothing in the answer or the windows overflows its box
    assert page.evaluate("""() => [...document.querySelectorAll('.st-key-answer p, .contextfit-window .cfw-head')]
        .every(e => e.scrollWidth <= e.clientWidth + 1)""")
