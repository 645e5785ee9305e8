"""The Replay page in a real browser (Debian's chromium, as tests/e2e/test_browser.py)."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from support.browser import ARTIFACTS, READY, dashboard_server, load, script_run

from playwright.sync_api import expect  # installed: support.browser skipped this module otherwise

import contextfit
from contextfit.dashboard import agent_rounds
from contextfit.dashboard.setup import ReplaySetup, suggested_setup
from contextfit.inputs.samples import SAMPLES, sample_text


def test_replay_page_draws_lines_verdict_and_a_turn(page, server):
    ARTIFACTS.mkdir(exist_ok=True)
    conversation = contextfit.load_conversation(sample_text(SAMPLES[0].key))
    setup = suggested_setup(conversation)
    expected = contextfit.replay(conversation, model=setup.model, context_limit=setup.context_limit,
                                 response_reserve=setup.response_reserve,
                                 strategies=ReplaySetup.of(setup.model, 1, 0).strategy_entries())
    load(page, server + "/replay")
    assert page.locator("h1").first.inner_text().startswith("Replay")
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(3).locator(".scatterlayer").wait_for(state="attached")
    page.screenshot(path=str(ARTIFACTS / "replay.png"), full_page=True)
    # prompt tokens, cumulative cost, cache hits: one line per strategy (stable_prefix variants included)
    for index in range(3):
        assert charts.nth(index).locator(".scatterlayer .trace.scatter").count() == len(expected.totals)
    # the verdict, and an agent run's requests by user turn and tool round (the sample's ledger lookups)
    assert page.locator('[data-testid="stDataFrame"]').count() == 1 + agent_rounds.view(expected).shown
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


@pytest.mark.parametrize("path, title", [("/replay", "Replay"), ("/models", "Models & tokenizers")])
def test_a_page_opened_by_its_address_on_a_fresh_server_is_drawn_in_the_app(browser, tmp_path, path, title):
    # Until a session ran app.py, Streamlit ran a page opened by its address on its own (a pages/
    # folder beside the main script): file names for navigation ("compare", "replay"), the narrow
    # layout, no preload; and it stayed so for that browser tab. A bookmark, or a reload after a
    # restart in the middle of a demo, opens a page that way.
    with dashboard_server(tmp_path / "chats.db") as url:
        context = browser.new_context(viewport={"width": 1600, "height": 1000})  # a tab of its own
        try:
            page = context.new_page()
            page.set_default_timeout(120_000)
            page.goto(url + path)
            page.locator("h1").filter(has_text=title).wait_for()
            page.wait_for_selector(READY)
            navigation = page.locator('[data-testid="stSidebarNav"]').inner_text()
            assert "Compare strategies" in navigation and "Replay" in navigation  # app.py's pages and titles
            assert "compare" not in navigation.split()  # not the files' names
            main = page.locator('[data-testid="stMainBlockContainer"]').bounding_box()
            assert main["width"] > 1200  # app.py's wide layout (the narrow one is 736 pixels at most)
            assert urlparse(page.url).path == path
            assert page.locator('[data-testid="stException"]').count() == 0
        finally:
            context.close()


def test_a_reload_in_the_middle_of_a_demo_keeps_the_replay(page, server):
    # the page kept nothing in its URL: a reload started over at the sample's defaults
    load(page, server + "/replay")
    limit = page.locator('[data-testid="stSidebar"]').get_by_role("spinbutton", name="Context limit")
    with script_run(page):
        limit.fill("3000")
        limit.press("Enter")
    assert "limit=3000" in page.url
    page.reload()
    page.wait_for_selector(READY)
    # the field can show its minimum for a moment while the new session's first run draws it
    expect(page.locator('[data-testid="stSidebar"]').get_by_role("spinbutton", name="Context limit")).to_have_value("3000")
    page.wait_for_selector(READY)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_charts_titles_and_the_download_labels_fit_in_a_demo(page, server):
    # every line: the retention chart's axis title ("share of the facts in force", 180 pixels)
    # ran over its title into the row above;
    # at 800 pixels the download buttons' columns cut their labels to "Turns (…" and "Replay …"
    page.set_viewport_size({"width": 1280, "height": 1400})  # wider, the legend takes fewer rows
    load(page, server + "/replay")
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(3).locator(".scatterlayer").wait_for(state="attached")
    for index in range(4):
        title = charts.nth(index).locator(".g-ytitle").bounding_box()
        plot = charts.nth(index).locator(".nsewdrag").first.bounding_box()
        assert plot["y"] - 2 <= title["y"] and title["y"] + title["height"] <= plot["y"] + plot["height"] + 2, index
    page.set_viewport_size({"width": 800, "height": 1400})
    page.wait_for_function("() => document.querySelector('[data-testid=\"stPlotlyChart\"]').offsetWidth < 300")
    for index in range(4):  # "Prompt tokens read from the cache, per turn" ran past its chart's edge
        chart = charts.nth(index).bounding_box()
        drawn = charts.nth(index).locator(".g-gtitle").bounding_box()
        assert drawn["x"] + drawn["width"] <= chart["x"] + chart["width"], index
    # one legend for the four charts (each repeated eight names, and sat on its plot after a resize):
    # its items wrap whole, none cut ("…+stable_prefix" lost its last letter in a chart's legend)
    legend = page.locator(".contextfit-lines-legend")
    expect(legend).to_be_visible()
    assert legend.evaluate("element => element.scrollWidth <= element.clientWidth + 1")
    assert legend.locator(".line-swatch").count() == len(ReplaySetup.of("gpt-4o", 1, 0).strategy_entries())
    for label in ("Turns (CSV)", "Replay (JSON)"):
        text = page.locator('[data-testid="stDownloadButton"] button').filter(has_text=label).first.locator(
            '[data-testid="stMarkdownContainer"]')
        expect(text).to_be_visible()
        assert text.evaluate("element => element.scrollWidth <= element.clientWidth"), label
    # the files name the conversation (a demo's second replay saved over the first's "replay-gpt-4o-turns.csv")
    from contextfit.inputs.samples import SAMPLES
    from contextfit.dashboard.exports import file_stem

    with page.expect_download() as info:
        page.locator('[data-testid="stDownloadButton"] button').filter(has_text="Turns (CSV)").first.click()
    named = {f"replay-{file_stem(sample.key)}-gpt-4o-turns.csv" for sample in SAMPLES}
    assert info.value.suggested_filename in named, info.value.suggested_filename


def test_compare_and_replay_share_their_sidebar_through_a_switch_and_a_reload(page, server):
    # a demo sets the limit on Compare, types a fact on Replay, reloads, and goes back: nothing is lost
    sidebar = page.locator('[data-testid="stSidebar"]')
    limit = sidebar.get_by_role("spinbutton", name="Context limit")
    with script_run(page):
        limit.fill("1800")
        limit.press("Enter")
    page.wait_for_function("() => location.search.includes('limit=1800')")
    with script_run(page):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Replay").click()
    page.locator("h1").filter(has_text="Replay").wait_for()
    expect(sidebar.get_by_role("spinbutton", name="Context limit")).to_have_value("1800")  # the same widget, drawn by app.py
    facts = sidebar.get_by_role("textbox", name="Must-survive facts", exact=True)
    facts.fill("Mara Quill")
    with script_run(page):
        facts.press("Control+Enter")
    page.wait_for_function("() => location.search.includes('facts=Mara')")
    assert "sample=roleplay" in page.url and "limit=1800" in page.url
    page.reload()  # a new browser session: the address brings the settings back
    page.wait_for_selector(READY)
    expect(sidebar.get_by_role("spinbutton", name="Context limit")).to_have_value("1800")
    expect(sidebar.get_by_role("textbox", name="Must-survive facts", exact=True)).to_have_value("Mara Quill")
    with script_run(page):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Compare").click()
    page.locator("h1").filter(has_text="Compare strategies").wait_for()
    expect(sidebar.get_by_role("spinbutton", name="Context limit")).to_have_value("1800")
    expect(page.locator('[data-testid="stCaptionContainer"]').filter(has_text="-token budget").first).to_contain_text(
        "1,400-token budget")  # the role-play sample's 400 reserve under the shared 1,800 limit
    with script_run(page):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Replay").click()
    page.locator("h1").filter(has_text="Replay").wait_for()
    expect(sidebar.get_by_role("textbox", name="Must-survive facts", exact=True)).to_have_value("Mara Quill")
    assert page.locator('[data-testid="stException"]').count() == 0
