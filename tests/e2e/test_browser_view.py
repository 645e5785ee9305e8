"""The Compare page's look in a real browser (Debian's chromium via Playwright):
the HTML report opens offline with its charts drawn, no budget bar runs off
its axis, and screenshots at 1440 and 1920 wide go to test-artifacts/.

Uses tests/e2e/conftest.py's server and page fixtures; skips as test_browser.py does.
"""

from __future__ import annotations

from support.browser import ARTIFACTS, READY, load, script_run

from contextfit.pipeline.plan import BUILTIN_STRATEGIES


def _download_report(page, target):
    button = page.get_by_role("button", name="Download the comparison (HTML)")
    button.wait_for()
    with page.expect_download() as info:
        button.click()
    info.value.save_as(target)
    # named after the conversation (the sample the page opened: ?sample= in its address)
    from urllib.parse import parse_qs, urlparse

    from contextfit.dashboard.exports import file_stem

    sample = parse_qs(urlparse(page.url).query).get("sample", ["coding_agent"])[0]
    assert info.value.suggested_filename == f"contextfit-{file_stem(sample)}.html", info.value.suggested_filename
    return target


def test_the_html_report_opens_offline_with_its_charts_rendered(page, tmp_path):
    report = _download_report(page, tmp_path / "comparison.html")
    assert report.stat().st_size > 1_000_000  # plotly.js is inside
    context = page.context.browser.new_context(offline=True, viewport={"width": 1440, "height": 1000})
    try:
        asked = []

        def refuse(route):  # anything but the file itself is refused: the report must need nothing else
            asked.append(route.request.url)
            if route.request.url.startswith("file://"):
                route.continue_()
            else:
                route.abort()

        context.route("**/*", refuse)
        offline = context.new_page()
        errors = []
        offline.on("pageerror", lambda error: errors.append(str(error)))
        offline.goto(report.as_uri())
        offline.wait_for_function(f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {2 * len(BUILTIN_STRATEGIES)}")
        plots = offline.locator(".js-plotly-plot")
        assert plots.count() == 2 * len(BUILTIN_STRATEGIES)  # a budget bar and a block chart per strategy
        assert offline.locator(".js-plotly-plot").first.locator(".barlayer .point path").count() > 0
        # the fate matrix is Compare's own HTML grid: its colours and patterns, one row per strategy
        assert offline.locator(".contextfit-matrix .cfm-row").count() == len(BUILTIN_STRATEGIES)
        assert offline.locator(".answer").first.inner_text().startswith(("Ship ", "No single answer", "Any of "))
        assert offline.locator("td", has_text="truncate").count() >= 1
        assert not errors and all(url.startswith("file://") for url in asked)
        overflowing = offline.evaluate(
            """() => [...document.querySelectorAll('.strategy')].filter(card => {
                   const box = card.getBoundingClientRect();
                   return [...card.querySelectorAll('.main-svg')].some(svg => svg.getBoundingClientRect().right > box.right + 1);
               }).length"""
        )
        assert overflowing == 0  # every chart fits its card
        ARTIFACTS.mkdir(exist_ok=True)
        offline.screenshot(path=str(ARTIFACTS / "report-1440.png"), full_page=True)
    finally:
        context.close()


def _bars_inside_their_axes(page) -> bool:
    """Every bar of every chart ends inside its plot area (none runs off the axis): the HTML block charts'
    fills inside their plots, and the plotly charts' bars (the budget bars' are checked in test_budget_bar)."""
    return page.evaluate(
        """() => {
            let checked = 0;
            for (const plot of document.querySelectorAll('.contextfit-blocks .cfk-plot')) {
                const box = plot.getBoundingClientRect();
                for (const fill of plot.querySelectorAll('.cfk-fill')) {
                    const r = fill.getBoundingClientRect();
                    if (r.height === 0) continue;
                    checked++;
                    if (r.top < box.top - 1.5 || r.bottom > box.bottom + 1.5 || r.right > box.right + 1.5 || r.left < box.left - 1.5)
                        return false;
                }
            }
            const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
            for (const chart of charts) {
                const area = chart.querySelector('.cartesianlayer .bg, .draglayer .nsewdrag');
                if (!area) continue;
                const box = area.getBoundingClientRect();
                for (const bar of chart.querySelectorAll('.barlayer .point path')) {
                    const r = bar.getBoundingClientRect();
                    if (r.width === 0) continue;
                    checked++;
                    if (r.right > box.right + 1.5) return false;
                }
            }
            return checked > 0;
        }"""
    )


def test_screenshots_of_the_compare_page_at_1440_and_1920(page):
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in ((1440, 900), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        page.locator(".contextfit-blocks .cfk-fill").first.wait_for()
        page.get_by_text("Verdict", exact=True).wait_for()
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.locator('.modebar').count() == 0 or not page.locator('.modebar').first.is_visible()
        assert _bars_inside_their_axes(page)
        page.screenshot(path=str(ARTIFACTS / f"compare-{width}.png"))  # what the first screen shows
        whole = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
        page.set_viewport_size({"width": width, "height": min(whole, 8000)})  # the app scrolls inside itself
        page.locator(".contextfit-matrix .cfk-col").last.wait_for()
        assert _bars_inside_their_axes(page)
        page.screenshot(path=str(ARTIFACTS / f"compare-{width}-whole.png"))
        page.set_viewport_size({"width": width, "height": height})
    # Presentation mode at 1920×1080: larger text (headings and each window's headline), the sidebar folded away.
    normal = page.locator("h1").first.evaluate("h => parseFloat(getComputedStyle(h).fontSize)")
    number = page.locator(".contextfit-window .cfw-head").first.evaluate("p => parseFloat(getComputedStyle(p).fontSize)")
    with script_run(page):
        page.get_by_text("Presentation mode").click()
    page.wait_for_function("() => parseFloat(getComputedStyle(document.querySelector('h1')).fontSize) > %f" % normal)
    page.wait_for_function(
        "() => parseFloat(getComputedStyle(document.querySelector('.contextfit-window .cfw-head')).fontSize) > %f" % number)
    page.wait_for_function(
        """() => document.querySelector('[data-testid="stSidebar"]').getAttribute('data-collapsed') === 'true'""")
    page.screenshot(path=str(ARTIFACTS / "compare-1920-presentation.png"), full_page=True)


CLIPPED = """(label) => {
    // Whether an ancestor that clips its overflow cuts the hover label off.
    const box = label.getBoundingClientRect();
    for (let node = label.parentElement; node && node !== document.body; node = node.parentElement) {
        const style = getComputedStyle(node);
        if (style.overflow === 'visible' && style.overflowX === 'visible') continue;
        const frame = node.getBoundingClientRect();
        if (box.left < frame.left - 1 || box.right > frame.right + 1) return node.className || node.tagName;
    }
    return null;
}"""


# Whether an element is the topmost at its own centre (nothing drawn over it).
ON_TOP = """l => { const b = l.getBoundingClientRect();
    const top = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
    return top === l || l.contains(top); }"""


def shown_whole(label, width: int = 1440, height: int = 900) -> dict:
    """A hover label's box, once it is shown inside the window, clipped by no ancestor and drawn on top."""
    label.wait_for()  # shown while the pointer is over its bar
    box = label.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width and box["y"] >= 0 and box["y"] + box["height"] <= height, box
    assert label.evaluate(CLIPPED) is None
    assert label.evaluate(ON_TOP)
    return box


def test_hover_labels_of_narrow_side_by_side_charts_are_not_cut_off(page, server):
    # Opened at 1440 wide (five columns: each chart is some 180 pixels wide) rather than resized
    # to it: a resize relayouts the charts a while later, and a label drawn before that is lost.
    page = page.context.browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(120_000)
    load(page, server)
    # The first and the last column's block charts, each at its first and last bar: a label opens towards the
    # chart's middle, so none leaves the window. Then the budget bars' stretches, whose labels look the same.
    charts = page.locator(".contextfit-blocks")
    charts.first.locator(".cfk-fill").first.wait_for()
    for number in (0, charts.count() - 1):
        chart = charts.nth(number)
        chart.scroll_into_view_if_needed()
        columns = chart.locator(".cfk-col")
        for column in (columns.first, columns.last):
            column.hover()
            box = shown_whole(column.locator(".cfk-tip"))
            assert box["width"] > chart.bounding_box()["width"] * 0.8  # as wide as the chart, or wider
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"compare-hover-{number}.png"))
        page.mouse.move(0, 0)
    # A chart scrolled to the top of the window: its labels open inside the plot, so the window does not cut them.
    chart = charts.nth(2)
    chart.evaluate("element => element.scrollIntoView({block: 'start'})")
    page.wait_for_function("element => Math.abs(element.getBoundingClientRect().top) < 2", arg=chart.element_handle())
    column = chart.locator(".cfk-col").nth(chart.locator(".cfk-col").count() // 2)
    column.hover()
    shown_whole(column.locator(".cfk-tip"))
    page.screenshot(path=str(ARTIFACTS / "compare-hover-top.png"))
    bars = page.locator(".contextfit-budget")
    for number in (0, bars.count() - 1):  # the first and last strategy's budget bar, at both ends of its "sent" row
        bar = bars.nth(number)
        bar.scroll_into_view_if_needed()
        parts = bar.locator('[data-row="sent"] .cfb-part')
        for part in (parts.first, parts.last):
            part.hover()
            label = part.locator(".cfk-tip")
            shown_whole(label)
            assert label.inner_text().count("\n") >= 1 and "tokens" in label.inner_text()  # what it is, then the prompt
    page.mouse.move(0, 0)


def test_side_by_side_charts_line_up_and_the_actions_fit_a_narrow_column(page, server):
    # At 1280 and 1440, "clear-tool-results" and the captions wrap in some columns and not in others: the
    # charts have a row of their own, so they still line up; Export and Send wrap rather than being cut short.
    for width in (1280, 1440):
        page = page.context.browser.new_page(viewport={"width": width, "height": 900})
        page.set_default_timeout(120_000)
        load(page, server)
        page.locator(".contextfit-blocks .cfk-fill").first.wait_for()
        # every strategy's charts (under a full suite's load the last column can draw after the first)
        n = len(BUILTIN_STRATEGIES)
        page.wait_for_function(f"() => document.querySelectorAll('.contextfit-budget').length === {n}"
                               f" && document.querySelectorAll('.contextfit-blocks').length === {n}")
        page.wait_for_selector(READY)
        for selector in (".contextfit-budget", ".contextfit-blocks"):
            tops = page.locator(selector).evaluate_all("charts => charts.map(c => c.getBoundingClientRect().top)")
            assert len(tops) == n and max(tops) - min(tops) < 1.5, (width, selector, tops)
        popovers = page.locator('[data-testid="stPopover"]').filter(has_text="Export")
        assert popovers.count() == n
        for number in range(n):  # every label shown whole: no element of the button cuts its text
            assert popovers.nth(number).locator("button").first.evaluate(
                "b => [b, ...b.querySelectorAll('*')].every(e => e.scrollWidth <= e.clientWidth + 1)"), (width, number)
        page.close()
