"""The dashboard in a real browser: Debian's chromium driven by Playwright, and the app's own waits.

Importing this module skips the importing test module when playwright or chromium is missing
(`.ci/run` installs chromium). The fixtures that use it (``server``, ``browser``, ``page``) are
in tests/e2e/conftest.py. Screenshots go to test-artifacts/ (not committed).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.paths import REPO
from support.servers import free_port

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


@contextmanager
def dashboard_server(database: Path):
    """A new Streamlit server of the dashboard on a free loopback port: its URL."""
    port = free_port()
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


@contextmanager
def chromium() -> Iterator:
    """A headless chromium of its own (Playwright's sync API, one per thread at a time)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def paste(page, text: str):
    """Switch the sidebar's source to Paste and compare ``text`` (Ctrl+Enter); the text box."""
    with script_run(page):
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Paste").click()
    box = page.get_by_role("textbox", name="Conversation")
    box.fill(text)
    with script_run(page):
        box.press("Control+Enter")
    return box


@contextmanager
def dashboard_page(browser, server: str) -> Iterator:
    """A fresh page (a browser context of its own: no cookies, no storage) on the dashboard, its first run over."""
    context = browser.new_context(viewport={"width": 1600, "height": 1400})
    page = context.new_page()
    page.set_default_timeout(120_000)  # a loaded 2-core CI machine is slow on a cold first run
    page.on("websocket", lambda socket: STREAMS.__setitem__(page, socket) if socket.url.endswith("/_stcore/stream") else None)
    try:
        load(page, server)
        page.locator('[data-testid="stSidebar"] label').filter(has_text="Paste").wait_for()
        yield page
    finally:
        STREAMS.pop(page, None)
        context.close()
