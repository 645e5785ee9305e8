"""``python -m bench.compare_work``: the Compare page's own work, without a browser.

What the server does for the page (``pages/compare.py``), each step timed in
a fresh process, through the same package calls the page makes (read the
input, the conversation's ``FitSession.plans``, every strategy's two figures, the fate matrix
and the edit table):

* *first paint*: the page opened in a fresh process: its first sample, the
  vocabulary loaded on the way (the first thing anyone sees);
* *cold upload*: then the 10,000-message chat uploaded (nothing of it cached);
* *rerun*: the page run again with the same upload and settings (Streamlit
  reruns the page on every widget change);
* *reserve change*: the response reserve changed;
* *warm upload*: the same chat with a different last message, a new file.

``--tree DIR`` runs the steps with the package found in ``DIR`` (e.g. an
export of another commit), so two versions are compared on one machine;
the runs alternate between the trees. Prints a Markdown table.

    python -m bench.compare_work --tree /tmp/before --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("first paint", "cold upload", "rerun", "reserve change", "warm upload")

_CHILD = r"""
import json, sys, time
started = time.perf_counter()
from contextfit import load_conversation
from contextfit.dashboard import charts, compare_view, editor, fate_grid
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard.setup import suggested_setup
from contextfit.inputs.samples import SAMPLES, sample_text

def page(raw, setup=None):
    conversation = load_conversation(raw)
    return conversation, draw(conversation, setup or suggested_setup(conversation))

def draw(conversation, setup):
    plans = dict(session_for(conversation).plans(setup.settings, strategies=setup.strategies))
    fitted = {name: plan for name, plan in plans.items() if not isinstance(plan, Exception)}
    for plan in fitted.values():
        charts.budget_figure(plan); charts.blocks_figure(plan); compare_view.headline(plan)
    if len(fitted) > 1:
        fate_grid.fate_html(fitted)
    editor.editor_rows(conversation, setup, plans)
    return setup

times = {}
page(sample_text(SAMPLES[0].key))
times["first paint"] = time.perf_counter() - started
cold, warm = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
start = time.perf_counter(); conversation, setup = page(cold); times["cold upload"] = time.perf_counter() - start
start = time.perf_counter(); draw(conversation, setup); times["rerun"] = time.perf_counter() - start
start = time.perf_counter(); draw(conversation, setup.replace(response_reserve=setup.response_reserve + 1000))
times["reserve change"] = time.perf_counter() - start
start = time.perf_counter(); page(warm, setup); times["warm upload"] = time.perf_counter() - start
print(json.dumps(times))
"""


def _files(folder: Path, messages: int) -> tuple[Path, Path]:
    from .conversations import synthetic

    chat = list(synthetic(messages).messages)
    paths = []
    for name in ("cold", "warm"):
        path = folder / f"chat-{name}.json"
        path.write_text(json.dumps([*chat, {"role": "user", "content": f"And one more question ({name})?"}]))
        paths.append(path)
    return paths[0], paths[1]


def _run(tree: Path, cold: Path, warm: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "CONTEXTFIT_DB": str(cold.parent / "chats.db")}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(cold), str(warm)], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=1200, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the run in {tree} failed: {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(trees: dict[str, Path], messages: int, runs: int) -> dict:
    """Seconds of each step, per tree, one fresh process per run (the trees alternate)."""
    found: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        cold, warm = _files(Path(folder), messages)
        for run in range(runs):
            order = list(trees.items()) if run % 2 == 0 else list(reversed(trees.items()))
            for label, tree in order:
                found[label].append(_run(tree, cold, warm))
                print(f"  {label} run {run + 1}/{runs} done", file=sys.stderr, flush=True)
    return {"messages": messages + 1, "runs": found, "load_start": load, "load_end": os.getloadavg()}


def report(result: dict) -> str:
    labels = list(result["runs"])
    lines = [f"# The Compare page's server work, {result['messages']:,} messages, "
             f"{len(result['runs'][labels[0]])} fresh processes per version",
             "", f"Load average at the start {result['load_start'][0]:.2f}, at the end {result['load_end'][0]:.2f} "
             "(2 shared cores). Median seconds [min–max]; the last column is the median of the paired ratios "
             "(runs of the two versions alternate).", "",
             "| step | " + " | ".join(labels) + (" | ratio |" if len(labels) == 2 else " |"),
             "|---|" + "--:|" * (len(labels) + (len(labels) == 2))]
    for step in STEPS:
        cells = []
        for label in labels:
            values = [run[step] for run in result["runs"][label]]
            cells.append(f"{statistics.median(values):.2f} [{min(values):.2f}–{max(values):.2f}]")
        if len(labels) == 2:
            first, second = ([run[step] for run in result["runs"][label]] for label in labels)
            cells.append(f"{statistics.median(b / a for a, b in zip(first, second)):.2f}")
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare_work", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tree", type=Path, help="another source tree to compare with this one (run first)")
    args = parser.parse_args(argv)
    trees = {"this tree": ROOT} if args.tree is None else {str(args.tree): args.tree, "this tree": ROOT}
    result = measure(trees, args.messages, args.runs)
    print(report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
