"""The dashboard in a real browser: Debian's chromium driven by Playwright.

Skips with the reason when chromium or playwright is missing (`.ci/run`
installs chromium). Screenshots go to test-artifacts/ (not committed).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from conftest import REPO

CHROMIUM = os.environ.get("CONTEXTFIT_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
READY = '[data-testid="stApp"][data-test-script-state="notRunning"]'
ARTIFACTS = REPO / "test-artifacts"
PROTECTED_FILL = "rgb(0, 114, 178)"  # charts.FATE_COLORS["protected"]

_playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
sync_playwright, PlaywrightTimeout = _playwright_api.sync_playwright, _playwright_api.TimeoutError
from google.protobuf.message import DecodeError  # noqa: E402  (installed with streamlit)
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
if not Path(CHROMIUM).exists():
    pytest.skip(f"chromium is not installed at {CHROMIUM} (apt-get install -y chromium)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def dashboard_server(database: Path):
    """A new Streamlit server of the dashboard on a free loopback port: its URL."""
    port = _free_port()
    env = {**os.environ, "CONTEXTFIT_DB": str(database)}
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app_server.py", "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"streamlit did not start: {process.stdout.read().decode(errors='replace')}")
            time.sleep(0.2)
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with dashboard_server(tmp_path_factory.mktemp("db") / "chats.db") as url:
        yield url


@pytest.fixture
def page(server):
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1400})
        page.set_default_timeout(120_000)  # a loaded 2-core CI machine is slow on a cold first run
        page.on("websocket", lambda socket: STREAMS.__setitem__(page, socket) if socket.url.endswith("/_stcore/stream") else None)
        load(page, server)
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Paste").wait_for()
        yield page
        STREAMS.pop(page, None)
        browser.close()


# The app's websocket per page: the server says on it when each script run is over.
STREAMS: dict = {}


def _run_finished(payload: bytes | str) -> bool:
    """Whether a frame from the server is Streamlit's ForwardMsg ``script_finished``."""
    if not isinstance(payload, bytes):
        return False
    try:
        return ForwardMsg.FromString(payload).WhichOneof("type") == "script_finished"
    except DecodeError:
        return False


def load(page, url: str) -> None:
    """Open a page and wait for its first script run to end.

    A new document's app starts in the script state ``initial``, so ``notRunning`` can only
    be the end of its first run.
    """
    page.goto(url)
    page.wait_for_selector(READY)


@contextmanager
def script_run(page):
    """Wait, after the block, until the script run that the block's interaction started has ended.

    It waits on the app's own state, never on a sleep: the server's ``script_finished``
    message on the app's websocket (the run may start after the interaction returns, and may
    be over before the page ever shows it as running), then ``notRunning`` on the page.
    """
    with STREAMS[page].expect_event("framereceived", predicate=_run_finished):
        yield
    page.wait_for_selector(READY)


def edit_table_ready(page):
    """The edit table (the page's last data grid) once it has drawn its rows, scrolled into view.

    Its code is fetched after the charts' (the preload's order): under load the grid can appear
    after the charts, and a click on it before its rows are drawn is lost (the keyboard then has
    no cell to toggle and no run starts)."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=\"stDataFrame\"]')].pop()?.querySelector('tbody tr td')"
    )
    grid = page.locator('[data-testid="stDataFrame"]').last
    grid.scroll_into_view_if_needed()
    return grid


def select_cell(page, grid, x: float, y: float, right: int) -> bool:
    """Click the grid at (``x``, ``y``) and move ``right`` cells: True once the grid's accessible
    table marks a cell selected. A click that lands while a loaded browser is still drawing the
    grid can be lost, so it is tried up to three times."""
    handle = grid.element_handle()
    for _ in range(3):
        page.mouse.click(x, y)
        for _ in range(right):
            page.keyboard.press("ArrowRight")
        try:
            page.wait_for_function("grid => grid.querySelector('td[aria-selected=\"true\"]')", arg=handle, timeout=10_000)
            return True
        except PlaywrightTimeout:
            continue
    return False


def toggle_cell(page, grid, x: float, y: float, right: int) -> None:
    """Select the cell ``right`` cells right of the click at (``x``, ``y``) and toggle its checkbox
    from the keyboard, until the script run the toggle starts has ended.

    Under load a click can land while the grid is still laying out, select a cell of another
    column, and the space key then starts no run (a full suite once waited its two minutes for
    one): each try waits 30 s for the run, then selects and presses again, up to three times."""
    for attempt in range(3):
        assert select_cell(page, grid, x, y, right)
        try:
            with STREAMS[page].expect_event("framereceived", predicate=_run_finished, timeout=30_000):
                page.keyboard.press(" ")
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            continue
        page.wait_for_selector(READY)
        return


def bars(chart) -> list:
    """The drawn bars of an HTML block chart (``.contextfit-blocks``): one fill per block."""
    return chart.locator(".cfk-fill").all()


# The fills of the first block chart drawn in the protected colour (as the browser computes it).
PROTECTED_IN_FIRST_CHART = """([fill]) => {
    const chart = document.querySelector('.contextfit-blocks');
    return chart ? [...chart.querySelectorAll('.cfk-fill')].filter(e => getComputedStyle(e).backgroundColor === fill).length : -1;
}"""


def protected_bars(page) -> int:
    return page.evaluate(PROTECTED_IN_FIRST_CHART, [PROTECTED_FILL])


def test_paste_compare_see_charts_and_pin_a_message(page):
    ARTIFACTS.mkdir(exist_ok=True)
    chat = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i} " * 30} for i in range(1, 12)
    ]
    bundle = {"contextfit": "conversation", "messages": chat, "settings": {"contextLimit": 1500, "responseReserve": 1100}}

    with script_run(page):
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Paste").click()
    box = page.get_by_role("textbox", name="Conversation")
    box.fill(json.dumps(bundle))
    with script_run(page):
        box.press("Control+Enter")

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
    with script_run(page):
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Paste").click()
    box = page.get_by_role("textbox", name="Conversation")
    broken = '{"messages": [{"role": "user"'
    box.fill(broken)
    with script_run(page):
        box.press("Control+Enter")
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="INVALID_CONVERSATION").first
    alert.wait_for()  # drawn from this run's messages, which the page may still be applying
    assert box.input_value() == broken
    assert page.locator('[data-testid="stPlotlyChart"], .contextfit-budget, .contextfit-blocks, .contextfit-matrix').count() == 0


def test_pasted_html_is_shown_as_text(page):
    with script_run(page):
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Paste").click()
    box = page.get_by_role("textbox", name="Conversation")
    box.fill(json.dumps([{"role": "user", "content": '<img src=x onerror="window.hacked=1"> **bold**'}]))
    with script_run(page):
        box.press("Control+Enter")
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


def test_the_dashboard_benchmark_times_a_cold_and_a_warm_upload_and_a_refit():
    """``python -m bench.dashboard`` on a small chat: a fresh server per run, its own browser, real timings."""
    from bench import dashboard as bench_dashboard

    result = bench_dashboard.measure(messages=200, runs=1)
    assert result["messages"] == 201
    assert len(result["cold_uploads"]) == len(result["warm_uploads"]) == len(result["refits"]) == 1
    for upload in (result["cold_uploads"][0], result["warm_uploads"][0]):
        assert 0 < upload["charts_drawn"] <= upload["idle"]  # the order of events; how fast is the bench's to say
    assert result["refits"][0]["idle"] > 0
    table = bench_dashboard.report(result)
    assert "| cold upload: a fresh server process" in table and "| warm upload: the same process" in table
    assert "201 messages" in table and bench_dashboard.warm_share(result) > 0
