"""The Compare page's look in a real browser (Debian's chromium via Playwright):
the HTML report opens offline with its charts drawn, no budget bar runs off
its axis, and screenshots at 1440 and 1920 wide go to test-artifacts/.

Shares test_browser.py's server and page fixtures; skips the same way.
"""

from __future__ import annotations

from test_browser import ARTIFACTS, load, page, script_run, server  # noqa: F401  (fixtures shared with test_browser.py)
from playwright.sync_api import TimeoutError as PlaywrightTimeout


def _download_report(page, target):
    button = page.get_by_role("button", name="Download the comparison (HTML)")
    button.wait_for()
    with page.expect_download() as info:
        button.click()
    info.value.save_as(target)
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
        offline.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 11")
        plots = offline.locator(".js-plotly-plot")
        assert plots.count() == 11  # a budget bar and a block chart per strategy (five), and the fate matrix
        assert offline.locator(".js-plotly-plot").first.locator(".barlayer .point path").count() > 0
        assert offline.locator(".js-plotly-plot").last.locator(".heatmaplayer image, .hm image").count() >= 1
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
    """Every bar of every budget chart ends inside its plot area (none runs off the axis)."""
    return page.evaluate(
        """() => {
            const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
            let checked = 0;
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
        page.locator('[data-testid="stPlotlyChart"] .barlayer').first.wait_for()
        page.get_by_text("Verdict", exact=True).wait_for()
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.locator('.modebar').count() == 0 or not page.locator('.modebar').first.is_visible()
        assert _bars_inside_their_axes(page)
        page.screenshot(path=str(ARTIFACTS / f"compare-{width}.png"))  # what the first screen shows
        whole = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
        page.set_viewport_size({"width": width, "height": min(whole, 8000)})  # the app scrolls inside itself
        page.locator('[data-testid="stPlotlyChart"] .barlayer').last.wait_for()
        assert _bars_inside_their_axes(page)
        page.screenshot(path=str(ARTIFACTS / f"compare-{width}-whole.png"))
        page.set_viewport_size({"width": width, "height": height})
    # Presentation mode at 1920×1080: larger text, the sidebar folded away.
    normal = page.locator("h1").first.evaluate("h => parseFloat(getComputedStyle(h).fontSize)")
    with script_run(page):
        page.get_by_text("Presentation mode").click()
    page.wait_for_function("() => parseFloat(getComputedStyle(document.querySelector('h1')).fontSize) > %f" % normal)
    page.wait_for_function(
        """() => { const bar = document.querySelector('[data-testid="stSidebar"]');
                   return !bar || bar.getAttribute('aria-expanded') === 'false' || bar.getBoundingClientRect().width < 10; }"""
    )
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


def test_hover_labels_of_narrow_side_by_side_charts_are_not_cut_off(page, server):
    # Opened at 1440 wide (five columns: each chart is some 180 pixels wide) rather than resized
    # to it: a resize relayouts the charts a while later, and a label drawn before that is lost.
    page = page.context.browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(120_000)
    load(page, server)
    for number in (0, 2):  # two block charts (the budget bars are HTML: their hover text is a title)
        chart = page.locator('[data-testid="stPlotlyChart"]').nth(number)
        chart.scroll_into_view_if_needed()
        bars = chart.locator(".barlayer .point path")
        bars.first.wait_for()
        boxes = [bars.nth(k).bounding_box() for k in range(bars.count())]
        widest = max(range(len(boxes)), key=lambda k: (boxes[k] or {}).get("width", 0) * (boxes[k] or {}).get("height", 0))
        label = chart.locator(".hoverlayer .hovertext").first
        for _ in range(5):  # should a late relayout clear the label, move away and hover again
            bars.nth(widest).hover(force=True)  # the widest bar: a sliver of a bar may show no label
            try:
                label.wait_for(timeout=10_000)
                break
            except PlaywrightTimeout:
                page.mouse.move(0, 0)
        label.wait_for()
        assert label.bounding_box()["width"] > chart.bounding_box()["width"] * 0.8  # as wide as the chart, or wider
        assert label.evaluate(CLIPPED) is None
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"compare-hover-{number}.png"))
        page.mouse.move(0, 0)
