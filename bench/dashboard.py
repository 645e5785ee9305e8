"""``python -m bench.dashboard``: how long the dashboard takes to compare a big chat.

Each run starts the dashboard in a fresh server process on a free loopback
port, opens it in Debian's chromium (headless, through Playwright) and times,
in the browser itself, when the charts of every strategy are drawn and when
the run is over, for three actions in a row:

* *cold upload*: the conversation uploaded to the fresh process. Nothing of it
  is cached: the page has only drawn its small sample (which loads the
  vocabulary, as any first page view does).
* *warm upload*: the same conversation with a different last message, a new
  file, uploaded to the same process: the counts and summaries of every
  message but the last come from the caches the cold upload filled.
* *reserve change*: the response reserve changed (a refit, every count cached).

Two more measurements, each with the load average beside it:

* ``--first-paint``: a fresh server process and a fresh browser for every
  run, alternately the Compare page (its default sample) and a trivial
  Streamlit page of nine plotly charts (``bench/trivial_page.py``): the time
  from opening the page to every chart drawn, and Compare's median over the
  trivial page's.
* ``--refit``: a chat of ``--refit-messages`` (1,000) messages uploaded, then
  the context limit changed twice (the first change warms what a limit change
  needs); the second is timed to the page idle again.

    python -m bench.dashboard                    # 10,000 messages, 3 fresh processes
    python -m bench.dashboard --messages 1000 --runs 2
    python -m bench.dashboard --first-paint --runs 3
    python -m bench.dashboard --refit --runs 3
    python -m bench.dashboard --first-paint --tree /tmp/before   # and another tree, alternately

``--tree DIR`` runs every measurement also on the source tree in ``DIR``
(an export or ``git worktree add /tmp/before main`` of another commit), the
runs of the two trees alternating, so before and after are measured in one
run under the same load. A *chart* is a plotly chart drawn or an HTML budget
bar or block chart (``contextfit.dashboard.budget_bar``, ``block_chart``), so the
counts of trees that draw them either way compare (two per strategy and the
fate matrix on Compare).

Needs chromium at /usr/bin/chromium (``apt-get install -y chromium``) and the
dev requirements (playwright). Writes ``bench/results/dashboard.json`` and
prints a Markdown table. The browser and the server share this machine's CPUs,
as they do when someone runs ``make run`` and opens the page.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from .conversations import synthetic
from .run import machine
from tests.support.servers import free_port  # the tests' loopback port

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
CHROMIUM = os.environ.get("CONTEXTFIT_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
#: The fewest charts Compare draws for its sample: a budget bar and a block chart per strategy and the fate
#: matrix, for the five built-ins of the oldest trees measured. The timed actions wait for as many charts as
#: the page drew for its sample (:func:`_charts_on`): every strategy the tree has.
CHARTS = 11
#: Any chart of the Compare page: plotly, or an HTML budget bar or block chart.
CHART = "[data-testid=stPlotlyChart], .contextfit-budget, .contextfit-blocks, .contextfit-matrix"
#: A chart drawn: a plotly chart's SVG (a tree that draws them), or an HTML chart.
DRAWN = '[data-testid="stPlotlyChart"] .main-svg, .contextfit-budget, .contextfit-blocks, .contextfit-matrix'

# Records, with the page's own clock, when the number of drawn charts and the
# script state change (a MutationObserver sees them as they happen; polling
# from Python would add its own delay).
WATCH = """
window.__marks = [];
const seen = {charts: -1, state: null};
new MutationObserver((records) => {
  const app = document.querySelector('[data-testid=stApp]');
  const state = app && app.getAttribute('data-test-script-state');
  const charts = [...document.querySelectorAll('[data-testid=stPlotlyChart]')].filter(c => c.querySelector('.main-svg')).length
    + document.querySelectorAll('.contextfit-budget, .contextfit-blocks, .contextfit-matrix').length;
  // A quick run can start and end between two callbacks: the records still say it ran.
  if (seen.state !== 'running' && records.some(r => r.type === 'attributes' && r.oldValue === 'running')) {
    window.__marks.push([Date.now() / 1000, seen.charts, 'running']);
    seen.state = 'running';
  }
  if (charts !== seen.charts || state !== seen.state) {
    seen.charts = charts; seen.state = state;
    window.__marks.push([Date.now() / 1000, charts, state]);
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeOldValue: true,
                       attributeFilter: ['data-test-script-state']});
"""


def _start(port: int, folder: Path, script: str = "app.py", tree: Path = ROOT) -> subprocess.Popen:
    """The dashboard (or ``script``) of the source tree ``tree`` on ``port``, once it answers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "CONTEXTFIT_DB": str(folder / "chats.db"), "PYTHONPATH": str(tree)},
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit("the dashboard did not start") from None
            time.sleep(0.2)


def _charts_on(page) -> int:
    """How many charts the page has drawn so far (its sample's: one pair per strategy and the matrix)."""
    return max(CHARTS, page.evaluate("Math.max(0, ...window.__marks.map(m => m[1]))"))


def _timed(page, started: float, action, charts: int = CHARTS) -> dict[str, float]:
    """Run ``action`` and wait until the run it starts is over; return when all
    ``charts`` were drawn and when the page was idle, in seconds after ``started``."""
    page.evaluate("window.__marks.splice(0)")
    action()
    page.wait_for_function(
        f"""() => window.__marks.some(m => m[2] === 'running')
               && window.__marks.some(m => m[2] === 'notRunning' && m[1] >= {charts})""",
        timeout=300_000,
    )
    marks = page.evaluate("window.__marks")
    running = [m for m in marks if m[2] == "running"]
    drawn = next(m[0] for m in marks if m[1] >= charts and m[0] >= running[0][0])
    idle = next(m[0] for m in marks if m[2] == "notRunning" and m[1] >= charts)
    return {"charts_drawn": drawn - started, "idle": idle - started}


def _idle(page, started: float, action, charts: int = CHARTS) -> dict[str, float]:
    """Like :func:`_timed` for an action that redraws charts already on the
    page (their count does not change): only when the page is idle again."""
    return {"idle": _timed(page, started, action, charts)["idle"]}


def _upload(page, path: Path, charts: int = CHARTS) -> dict[str, float]:
    """Back to a sample and to an empty uploader (no chart left on the page), then upload ``path``, timed."""
    sidebar = page.locator('[data-testid="stSidebar"] [data-testid="stRadioOption"]')
    ready = '[data-testid="stApp"][data-test-script-state="notRunning"]'
    sample = sidebar.filter(has_text="Sample")
    if not sample.locator("input").is_checked():
        page.evaluate("window.__marks.splice(0)")
        sample.click()
        page.wait_for_function("() => window.__marks.some(m => m[2] === 'running')")
        page.wait_for_selector(ready)
    sidebar.filter(has_text="Upload").click()
    # The session keeps the last upload (drawn again, with a Clear button): forget it, so no chart is left.
    clear = page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Clear", exact=True)
    page.wait_for_function(
        """() => document.querySelector('[data-testid=stFileUploader]')
               && ([...document.querySelectorAll('[data-testid=stSidebar] button')].some(b => b.innerText === 'Clear')
                   || !document.querySelector(%s))""" % json.dumps(CHART)
    )
    page.wait_for_selector(ready)
    if clear.count():
        clear.first.click()
    page.wait_for_function(f"!document.querySelector({json.dumps(CHART)})")
    page.wait_for_selector(ready)
    return _timed(page, time.time(), lambda: page.locator('input[type="file"]').set_input_files(str(path)), charts)


def _opened(browser, port: int):
    """A new page on the dashboard at ``port``, watched (:data:`WATCH`), once its sample is drawn."""
    page = browser.new_page(viewport={"width": 1600, "height": 1400})
    page.set_default_timeout(300_000)
    page.add_init_script(WATCH)
    page.goto(f"http://127.0.0.1:{port}")
    page.wait_for_selector(DRAWN)
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
    return page


def _one_process(browser, folder: Path, cold: Path, warm: Path, reserve: int, tree: Path = ROOT) -> dict[str, dict[str, float]]:
    """A fresh dashboard process: the cold upload, the warm upload, a reserve change."""
    port = free_port()
    load = os.getloadavg()[0]
    server = _start(port, folder, tree=tree)
    try:
        page = browser.new_page(viewport={"width": 1600, "height": 1400})
        page.set_default_timeout(300_000)
        page.add_init_script(WATCH)
        opened = time.time()
        page.goto(f"http://127.0.0.1:{port}")
        page.wait_for_selector(DRAWN)
        first_chart = time.time() - opened
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
        # The first paint of Compare in a fresh process (its sample: vocabulary loaded, first fit).
        first_paint = {"charts_drawn": first_chart, "idle": time.time() - opened}
        charts = _charts_on(page)  # the sample's: every strategy of this tree
        found = {"first_paint": first_paint, "cold": {**_upload(page, cold, charts), "load_average": load},
                 "warm": _upload(page, warm, charts)}
        box = page.get_by_role("spinbutton", name="Response reserve")

        def change() -> None:
            box.fill(str(reserve))
            box.press("Enter")

        found["refit"] = _idle(page, time.time(), change, charts)
        page.close()
        return found
    finally:
        server.terminate()
        server.wait(timeout=30)


def measure(messages: int, runs: int, before: Path | None = None) -> dict:
    """Every run a fresh process of this tree (and of ``before``, alternately): cold and warm uploads, a refit."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise SystemExit(f"chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    chat = list(synthetic(messages).messages)
    with tempfile.TemporaryDirectory() as folder:
        files = []
        for name in ("cold", "warm"):
            path = Path(folder) / f"chat-{name}.json"
            extra = {"role": "user", "content": f"And one more question ({name}): what changed?"}
            path.write_text(json.dumps([*chat, extra]))
            files.append(path)
        size_mb = files[0].stat().st_size / 1e6
        cold, warm, refits, first = [], [], [], []
        earlier: dict[str, list] = {"cold_uploads": [], "warm_uploads": [], "refits": [], "first_paints": []}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            browser_version = browser.version
            for run in range(runs):
                trees = [ROOT] if before is None else [ROOT, before] if run % 2 == 0 else [before, ROOT]
                for tree in trees:
                    found = _one_process(browser, Path(folder), files[0], files[1], 20_000 + 1_000 * run, tree)
                    into = (cold, warm, refits, first) if tree == ROOT else (
                        earlier["cold_uploads"], earlier["warm_uploads"], earlier["refits"], earlier["first_paints"])
                    for target, key in zip(into, ("cold", "warm", "refit", "first_paint")):
                        target.append(found[key])
            browser.close()
    import streamlit

    info = {**machine(), "streamlit": streamlit.__version__, "chromium": browser_version}
    result = {"messages": messages + 1, "file_mb": round(size_mb, 1), "cold_uploads": cold, "warm_uploads": warm,
              "refits": refits, "first_paints": first, "machine": info}
    if before is not None:
        result["before"] = {"tree": str(before), **earlier}
    return result


def _first_paint(playwright, folder: Path, script: str, charts: int, tree: Path = ROOT) -> dict[str, float]:
    """A fresh server for ``script`` of ``tree`` and a fresh browser: from opening the page
    to its ``charts`` charts drawn (the browser draws them after the run is
    over, one by one), and to idle."""
    port = free_port()
    server = _start(port, folder, script, tree)
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            page.set_default_timeout(300_000)
            page.add_init_script(WATCH)
            started = time.time()
            page.goto(f"http://127.0.0.1:{port}")
            page.wait_for_function(
                f"() => window.__marks.some(m => m[1] >= {charts})"
                " && document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state') === 'notRunning'",
                timeout=300_000,
            )
            marks = page.evaluate("window.__marks")
            charts = max(m[1] for m in marks)
            drawn = next(m[0] for m in marks if m[1] >= charts)
            idle = next(m[0] for m in marks if m[2] == "notRunning" and m[1] >= charts)
            return {"charts": charts, "charts_drawn": drawn - started, "idle": max(idle, drawn) - started}
        finally:
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def measure_first_paint(runs: int, before: Path | None = None) -> dict:
    """First paint of Compare and of the nine-chart page (and of ``before``'s Compare), alternately, each with a
    fresh server and browser."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise SystemExit(f"chromium is not installed at {CHROMIUM} (apt-get install -y chromium)")
    found: dict[str, list] = {"compare": [], "trivial": [], "load_average": []}
    pages = ["trivial", "compare"] + ([] if before is None else ["before"])
    if before is not None:
        found["before"] = []
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        for run in range(runs):
            for name in pages if run % 2 == 0 else pages[::-1]:
                found["load_average"].append(os.getloadavg()[0])
                script, charts = ("bench/trivial_page.py", 9) if name == "trivial" else ("app.py", CHARTS)
                tree = before if name == "before" else ROOT
                found[name].append({**_first_paint(playwright, Path(folder), script, charts, tree),
                                    "load_average": found["load_average"][-1]})
    result = {**found, "ratio": first_paint_ratio(found), "machine": _machine()}
    if before is not None:
        result["before_tree"], result["before_ratio"] = str(before), first_paint_ratio(found, "before")
    return result


def first_paint_ratio(result: dict, page: str = "compare") -> float | None:
    """Compare's (or ``page``'s) median time to every chart drawn over the nine-chart page's."""
    compare = [r["charts_drawn"] for r in result[page]]
    trivial = [r["charts_drawn"] for r in result["trivial"]]
    return statistics.median(compare) / statistics.median(trivial) if compare and trivial else None


def measure_refits(messages: int, runs: int, before: Path | None = None) -> dict:
    """A chat of ``messages`` uploaded to a fresh process, the limit changed once (warming), then timed
    (and the same on ``before``, alternately)."""
    from playwright.sync_api import sync_playwright

    chat = list(synthetic(messages).messages)
    refits: list[dict] = []
    earlier: list[dict] = []
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        path = Path(folder) / "chat.json"
        path.write_text(json.dumps(chat))
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            plan = [tree for run in range(runs) for tree in
                    ([ROOT] if before is None else [ROOT, before] if run % 2 == 0 else [before, ROOT])]
            for tree in plan:
                port = free_port()
                server = _start(port, Path(folder), tree=tree)
                try:
                    page = _opened(browser, port)
                    charts = _charts_on(page)
                    upload = _upload(page, path, charts)
                    box = page.get_by_role("spinbutton", name="Context limit")
                    limit = int(box.input_value())

                    def change(value: int) -> None:
                        box.fill(str(value))
                        box.press("Enter")

                    first = _idle(page, time.time(), lambda: change(limit // 2), charts)
                    load = os.getloadavg()[0]
                    warm = _idle(page, time.time(), lambda: change(limit // 3), charts)
                    (refits if tree == ROOT else earlier).append(
                        {"upload": upload, "first_change": first, "warm_change": warm, "load_average": load})
                    page.close()
                finally:
                    server.terminate()
                    server.wait(timeout=30)
        finally:
            browser.close()
    result = {"messages": len(chat), "refits": refits, "machine": _machine()}
    if before is not None:
        result["before"] = {"tree": str(before), "refits": earlier}
    return result


def _machine() -> dict:
    import streamlit

    return {**machine(), "streamlit": streamlit.__version__}


def report_first_paint(result: dict) -> str:
    loads = result["load_average"]
    return "\n".join([
        "# First paint: Compare against a trivial nine-chart Streamlit page",
        "",
        f"Every run a fresh server process and a fresh chromium; from opening the page to every chart drawn. "
        f"Load average (1 min) before each run: {min(loads):.2f}–{max(loads):.2f} on {result['machine']['nproc']} CPUs.",
        "",
        "| page | charts | all charts drawn: median (min–max) | page idle: median (min–max) | runs |",
        "|---|--:|--:|--:|--:|",
        f"| Compare (default sample, every strategy) | {result['compare'][0]['charts']} | "
        f"{_spread([r['charts_drawn'] for r in result['compare']])} | {_spread([r['idle'] for r in result['compare']])} | "
        f"{len(result['compare'])} |",
        f"| trivial page (bench/trivial_page.py) | {result['trivial'][0]['charts']} | "
        f"{_spread([r['charts_drawn'] for r in result['trivial']])} | {_spread([r['idle'] for r in result['trivial']])} | "
        f"{len(result['trivial'])} |",
        *([f"| Compare of {result['before_tree']} (before) | {result['before'][0]['charts']} | "
           f"{_spread([r['charts_drawn'] for r in result['before']])} | {_spread([r['idle'] for r in result['before']])} | "
           f"{len(result['before'])} |"] if result.get("before") else []),
        "",
        f"Compare over the trivial page (medians, all charts drawn): {result['ratio']:.2f}×"
        + (f"; before: {result['before_ratio']:.2f}×." if result.get("before") else "."),
    ])


def report_refits(result: dict) -> str:
    refits = result["refits"]
    earlier = result.get("before", {}).get("refits", [])
    loads = [r["load_average"] for r in refits + earlier]
    return "\n".join([
        f"# A limit change on a {result['messages']:,}-message chat",
        "",
        f"A fresh server process per run; the chat uploaded, the context limit changed once (warming), then again "
        f"(timed to the page idle). Load average (1 min) before the timed change: {min(loads):.2f}–{max(loads):.2f} on "
        f"{result['machine']['nproc']} CPUs.",
        "",
        "| action | page idle: median (min–max) | runs |",
        "|---|--:|--:|",
        *_refit_rows("", refits),
        *(_refit_rows(f" — {result['before']['tree']} (before)", earlier) if earlier else []),
    ])


def _refit_rows(suffix: str, refits: list[dict]) -> list[str]:
    return [
        f"| upload (cold){suffix} | {_spread([r['upload']['idle'] for r in refits])} | {len(refits)} |",
        f"| first limit change{suffix} | {_spread([r['first_change']['idle'] for r in refits])} | {len(refits)} |",
        f"| warm limit change{suffix} | {_spread([r['warm_change']['idle'] for r in refits])} | {len(refits)} |",
    ]


def _spread(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def _row(label: str, runs: list[dict[str, float]]) -> str:
    drawn = [r["charts_drawn"] for r in runs if "charts_drawn" in r]
    return f"| {label} | {_spread(drawn)} | {_spread([r['idle'] for r in runs])} | {len(runs)} |"


def warm_share(result: dict) -> float | None:
    """The median, over the processes, of each warm upload's idle time over its own cold upload's."""
    pairs = [(w["idle"], c["idle"]) for w, c in zip(result["warm_uploads"], result["cold_uploads"]) if c["idle"]]
    return statistics.median(w / c for w, c in pairs) if pairs else None


def report(result: dict) -> str:
    info = result["machine"]
    return "\n".join([
        f"# The dashboard with {result['messages']:,} messages ({result['file_mb']} MB of JSON)",
        "",
        f"Machine: {info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, streamlit {info['streamlit']}, "
        f"plotly {info['versions']['plotly']}, chromium {info['chromium']}; load average at the start "
        f"{info['load_average'][0]:.2f}. Reproduce: `python -m bench.dashboard --messages {result['messages'] - 1} "
        f"--runs {len(result['cold_uploads'])}`.",
        "Each run is a fresh server process: a *cold* upload (nothing of the chat cached; the page has drawn only "
        "its sample), then a *warm* upload of the same chat with a different last message (a new file; every other "
        "message's counts cached by the cold upload), then a change of the response reserve. Times from the start "
        "of the action, in the browser: *charts drawn* when every strategy's charts and the fate matrix are on "
        "the page; *idle* when the run is over (edit table included). A refit redraws charts already on the page, "
        "so only its end is timed. The browser and the server share the machine's CPUs.",
        "",
        "| action | all charts drawn: median (min–max) | page idle: median (min–max) | runs |",
        "|---|--:|--:|--:|",
        _row("cold upload: a fresh server process (tokenized, every strategy fitted)", result["cold_uploads"]),
        _row("warm upload: the same process, the chat with a new last message", result["warm_uploads"]),
        _row("change the response reserve (counts cached)", result["refits"]),
        _row("first paint of Compare: the page opened in a fresh process (its sample)", result.get("first_paints", [])),
        *_before_rows(result.get("before")),
        "",
        _loads(result),
        f"Warm upload over cold upload (page idle), the median of each process's own ratio: "
        f"{_share(warm_share(result))}.",
    ])


def _before_rows(before: dict | None) -> list[str]:
    if not before:
        return []
    tree = before["tree"]
    return [_row(f"cold upload — {tree} (before)", before["cold_uploads"]),
            _row(f"warm upload — {tree} (before)", before["warm_uploads"]),
            _row(f"change the response reserve — {tree} (before)", before["refits"]),
            _row(f"first paint of Compare — {tree} (before)", before["first_paints"])]


def _loads(result: dict) -> str:
    loads = [r["load_average"] for r in result["cold_uploads"] + (result.get("before") or {}).get("cold_uploads", [])
             if "load_average" in r]
    return f"Load average (1 min) before each cold upload's process: {min(loads):.2f}–{max(loads):.2f}." if loads else ""


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--first-paint", action="store_true", help="Compare's first paint against a nine-chart page")
    parser.add_argument("--refit", action="store_true", help="a warm limit change on a chat of --refit-messages")
    parser.add_argument("--refit-messages", type=int, default=1000)
    parser.add_argument("--tree", type=Path, help="another source tree measured alternately with this one (before)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON results go (default bench/results)")
    options = parser.parse_args(argv)
    options.out.mkdir(parents=True, exist_ok=True)
    if options.first_paint or options.refit:
        if options.first_paint:
            result = measure_first_paint(options.runs, options.tree)
            (options.out / "dashboard-first-paint.json").write_text(json.dumps(result, indent=2))
            print(report_first_paint(result))
        if options.refit:
            result = measure_refits(options.refit_messages, options.runs, options.tree)
            (options.out / "dashboard-refit.json").write_text(json.dumps(result, indent=2))
            print(report_refits(result))
        return
    result = measure(options.messages, options.runs, options.tree)
    (options.out / "dashboard.json").write_text(json.dumps(result, indent=2))
    print(report(result))


if __name__ == "__main__":
    main()
