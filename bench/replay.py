"""The replay's target: a replay costs at most 3x one cold fit of the whole conversation.

    .venv/bin/python -m bench.replay                      # 1,000 turns, 4 strategies, 3 runs (part of `make bench`)
    .venv/bin/python -m bench.replay --turns 200 --runs 1

On the seeded synthetic chat (``bench/conversations.py``) cut after its
``--turns``-th user message, each run times, in one process:

* ``cold fit``: ``plan_prompt`` of the whole conversation with ``truncate``
  after ``contextfit.caches.clear_caches(vocabularies=False)`` (every block counted,
  nothing cached but the loaded vocabulary) — the baseline;
* ``replay cold``: ``contextfit.replay`` of every turn with the four
  strategies, after the same clearing (its own warm refits only);
* ``replay warm``: the same replay again, the caches kept.

The vocabulary is loaded before the first run. Both cold sides also report
what their tokenizers counted (the texts no cache answered and their
characters): a replay that reuses counts across turns tokenizes each message
once, plus the blocks its strategies make (summaries, cleared copies). The ratios are per run (both
sides timed in the same run) and the median is printed; so is the work per
turn, and the load average before and after (the machine is shared). Budget: ``--limit`` tokens (default 32,000)
less a 4,000-token reserve, so the later turns must cut.

Then, the project's other reading of "cold" (a fresh process is cold), per
run in three fresh Python processes that read the chat from a JSON file:

* ``fresh cold fit``: ``import contextfit`` and one ``plan_prompt`` of the
  whole chat with ``truncate`` (the vocabulary loaded on the way);
* ``fresh replay``: ``import contextfit`` and the whole replay;
* ``start-up``: ``import contextfit`` and a fit of the first two messages
  (the vocabulary loaded): what both sides pay before their work. The bench
  prints its share of the cold fit, and what 3x the cold fit leaves the
  replay's work per turn after that start-up, against what it takes.

Each is timed from the interpreter's start, less the reading of the JSON
file: wall seconds (measured by the parent) and CPU seconds (the child's
``process_time``, every thread). Their ratios and the load average around
each pair are printed; ``--fresh-runs 0`` leaves them out.

``--strategies truncate,clear-tool-results`` replays other strategies (default:
the four above), e.g. to see what one of them adds to the ratio.

``--tree DIR`` compares with the source tree in ``DIR`` (``git worktree add
/tmp/before main``): every run is one child process of this bench per tree
(``--runs 2 --fresh-runs 1 --json``, each tree's own bench and package; of
its in-process runs the second is shown, the first also loading the fast
counting engine), the trees alternating, and the table gives both readings
of both trees side by side, with the load average of each run.
"""

from __future__ import annotations

import argparse
import gc
from contextlib import contextmanager
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from time import perf_counter, process_time
from typing import Any

import contextfit
from contextfit.replays import run as replay_module
from contextfit.tokens.tokenizers import Tokenizer

from .conversations import FIXTURES, stitched, synthetic_turns, user_requests  # noqa: F401  (bench/tests reads it here)

STRATEGIES = ("truncate", "summarize", "clear-tool-results", "vector-recall")


def conversation(turns: int, chat: str = "synthetic") -> list[dict]:
    """The chat cut just after its ``turns``-th user message (a replay also makes a request of each
    tool round the model answers): the synthetic one, or
    (``chat="fixtures"``) the shared fixtures' real chats joined end to end."""
    if chat == "fixtures":
        joined = stitched(turns)
        if joined is None:
            raise SystemExit(f"--chat fixtures needs the shared fixtures ({FIXTURES}, or $CONTEXTFIT_SHARED_FIXTURES)")
        return joined.messages
    return synthetic_turns(turns)


@contextmanager
def _per_strategy():
    """CPU seconds spent in each strategy's fits during the block (the replay's
    ``fit_prepared`` wrapped: the strategy and the host's checks and assembly)."""
    spent: dict[str, float] = {}
    inner = replay_module.fit_prepared

    def timed(prepared, settings, strategy, **keywords):
        start = process_time()
        try:
            return inner(prepared, settings, strategy, **keywords)
        finally:
            spent[str(strategy)] = spent.get(str(strategy), 0.0) + process_time() - start

    replay_module.fit_prepared = timed
    try:
        yield spent
    finally:
        replay_module.fit_prepared = inner


@contextmanager
def _tokenized():
    """How many texts the tokenizers counted during the block, and their characters
    (every count the caches did not answer goes through ``Tokenizer._unscaled``)."""
    seen = {"texts": 0, "chars": 0}
    inner = Tokenizer._unscaled

    def counted(self, text, key):
        seen["texts"] += 1
        seen["chars"] += len(text)
        return inner(self, text, key)

    Tokenizer._unscaled = counted
    try:
        yield seen
    finally:
        Tokenizer._unscaled = inner


def _timed(call) -> tuple[float, Any]:
    """Wall seconds and the value; the CPU seconds of the last call are in ``_timed.cpu``."""
    gc.collect()
    start, cpu = perf_counter(), process_time()
    value = call()
    _timed.cpu = process_time() - cpu  # type: ignore[attr-defined]
    return perf_counter() - start, value


#: ``--setup card``: a SillyTavern V2 card whose post-history instructions stand after the history.
CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
    "name": "Ava", "description": "{{char}} is a patient guide who answers {{user}} briefly and kindly.",
    "personality": "calm, precise", "scenario": "A help desk that never closes.", "system_prompt": "You are {{char}}.",
    "post_history_instructions": "Stay in character as {{char}}; keep answers short."}}
#: ``--setup lorebook``: a world whose entries the recent messages activate (before the character and at depth).
LOREBOOK = {"entries": {str(number): {"key": [word], "content": f"Lore about {word}: " + "facts and dates " * 12,
                                      "position": number % 2, "depth": 2}
                        for number, word in enumerate(["router", "firmware", "dragon", "castle", "database",
                                                       "python", "weather", "ticket"])}}
SETUPS = ("plain", "card", "lorebook")


def _settings(limit: int, setup: str = "plain") -> dict[str, Any]:
    settings: dict[str, Any] = {"model": "gpt-4o", "context_limit": limit, "response_reserve": 4_000}
    if setup in ("card", "lorebook"):
        settings["character"] = CARD
    if setup == "lorebook":
        settings["lorebook"] = LOREBOOK
    return settings


def measure(turns: int = 1000, runs: int = 3, limit: int = 32_000, strategies=STRATEGIES,
            chat: str = "synthetic", setup: str = "plain") -> dict[str, Any]:
    """Time the cold fit and the cold and warm replays ``runs`` times; the per-run ratios."""
    messages = conversation(turns, chat)
    settings = _settings(limit, setup)
    rows = []
    contextfit.plan_prompt(messages[:2], **settings)  # loads the vocabulary: no run times that
    load_before = os.getloadavg()
    for _ in range(runs):
        contextfit.caches.clear_caches(vocabularies=False)
        with _tokenized() as counted_cold:
            cold, plan = _timed(lambda: contextfit.plan_prompt(messages, context_strategy="truncate", **settings))
        cpu_cold = _timed.cpu  # type: ignore[attr-defined]
        contextfit.caches.clear_caches(vocabularies=False)
        with _per_strategy() as spent, _tokenized() as counted_replay:
            replay_cold, result = _timed(lambda: contextfit.replay(messages, strategies=list(strategies), **settings))
        cpu_replay = _timed.cpu  # type: ignore[attr-defined]
        replay_warm, _ = _timed(lambda: contextfit.replay(messages, strategies=list(strategies), **settings))
        rows.append({"cold_fit": cold, "replay_cold": replay_cold, "replay_warm": replay_warm,
                     "ratio_cold": replay_cold / cold, "ratio_warm": replay_warm / cold,
                     "cpu_cold_fit": cpu_cold, "cpu_replay_cold": cpu_replay, "cpu_ratio_cold": cpu_replay / cpu_cold,
                     "cpu_per_strategy": dict(spent), "tokenized_cold_fit": dict(counted_cold),
                     "tokenized_replay": dict(counted_replay)})
    return {
        "chat": chat,
        "setup": setup,
        "messages": len(messages),
        "turns": len(result.requests),
        "user_turns": len(result.user_turns),
        "strategies": list(strategies),
        "prompt_tokens_whole": plan.prompt_tokens,
        "budget": plan.budget,
        "runs": rows,
        "median_ratio_cold": statistics.median(row["ratio_cold"] for row in rows),
        "median_ratio_warm": statistics.median(row["ratio_warm"] for row in rows),
        "median_cpu_ratio_cold": statistics.median(row["cpu_ratio_cold"] for row in rows),
        "target": 3.0,
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }


ROOT = Path(__file__).resolve().parent.parent

# A fresh process: what it spends on reading the JSON file is left out (the
# parent subtracts its wall time; its CPU time is subtracted here).
_FRESH = r"""
import json, sys, time
cpu, wall = time.process_time(), time.perf_counter()
with open(sys.argv[2], encoding="utf-8") as file:
    job = json.load(file)
reading_cpu, reading_wall = time.process_time() - cpu, time.perf_counter() - wall
import contextfit
if sys.argv[1] == "cold":
    contextfit.plan_prompt(job["messages"], context_strategy="truncate", **job["settings"])
elif sys.argv[1] == "startup":  # what both sides pay before their work: the import and the vocabulary
    contextfit.plan_prompt(job["messages"][:2], context_strategy="truncate", **job["settings"])
else:
    contextfit.replay(job["messages"], strategies=job["strategies"], **job["settings"])
print(json.dumps({"cpu": time.process_time() - reading_cpu, "reading_wall": reading_wall}))
"""


def _fresh(kind: str, path: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process doing ``kind`` (``cold``, ``replay``, or ``startup``:
    the import and a fit of the first two messages, which loads the vocabulary)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = perf_counter()
    done = subprocess.run([sys.executable, "-c", _FRESH, kind, str(path)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1800, check=False)
    wall = perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the fresh {kind} process failed: {done.stderr.strip()[-600:]}")
    child = json.loads(done.stdout.strip().splitlines()[-1])
    return wall - child["reading_wall"], child["cpu"]


def measure_fresh(messages: list[dict], settings: dict, runs: int, strategies=STRATEGIES) -> dict[str, Any]:
    """Per run: a fresh process's cold fit of the whole chat, then a fresh process's replay; their ratios;
    then a fresh process's start-up alone (what both sides pay before their work)."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "job.json"
        path.write_text(json.dumps({"messages": messages, "settings": settings, "strategies": list(strategies)}),
                        encoding="utf-8")
        for _ in range(runs):
            before = os.getloadavg()
            cold_wall, cold_cpu = _fresh("cold", path)
            replay_wall, replay_cpu = _fresh("replay", path)
            startup_wall, startup_cpu = _fresh("startup", path)
            rows.append({"cold_wall": cold_wall, "cold_cpu": cold_cpu, "replay_wall": replay_wall,
                         "replay_cpu": replay_cpu, "startup_wall": startup_wall, "startup_cpu": startup_cpu,
                         "ratio_wall": replay_wall / cold_wall,
                         "ratio_cpu": replay_cpu / cold_cpu, "load_before": [round(x, 2) for x in before],
                         "load_after": [round(x, 2) for x in os.getloadavg()]})
    return {"runs": rows, "median_ratio_wall": statistics.median(row["ratio_wall"] for row in rows),
            "median_ratio_cpu": statistics.median(row["ratio_cpu"] for row in rows)}


def report(result: dict[str, Any]) -> str:
    """The table the command prints."""
    fits = len(result["strategies"]) * result["turns"]
    chat = "the shared fixtures' chats joined" if result.get("chat") == "fixtures" else "the synthetic chat"
    setup = {"card": ", with a character card", "lorebook": ", with a character card and a lorebook"}.get(
        result.get("setup", "plain"), "")
    lines = [
        f"replay of {chat}{setup}: {result.get('user_turns', result['turns']):,} turns, {result['turns']:,} requests "
        f"({result['messages']:,} messages), {len(result['strategies'])} strategies = {fits:,} fits; "
        f"budget {result['budget']:,}",
        "| run | cold fit of the whole chat (s) | replay, cold (s) | replay, warm (s) | cold ratio | warm ratio |",
        "|---|---|---|---|---|---|",
    ]
    for number, row in enumerate(result["runs"], start=1):
        lines.append(f"| {number} | {row['cold_fit']:.3f} | {row['replay_cold']:.3f} | {row['replay_warm']:.3f} | "
                     f"{row['ratio_cold']:.2f}x | {row['ratio_warm']:.2f}x |")
    per_fit = statistics.median(row["replay_cold"] for row in result["runs"]) / fits * 1000
    verdict = "meets" if result["median_ratio_cold"] <= result["target"] else "MISSES"
    lines.append(f"median ratio, replay cold / one cold fit: {result['median_ratio_cold']:.2f}x "
                 f"(warm {result['median_ratio_warm']:.2f}x); target <= {result['target']:.0f}x: {verdict}; "
                 f"{per_fit:.2f} ms per fit")
    if "median_cpu_ratio_cold" in result:
        cpu = statistics.median(row["cpu_replay_cold"] for row in result["runs"])
        lines.append(f"CPU time (less sensitive to a shared machine): replay cold {cpu:.3f} s, cold fit "
                     f"{statistics.median(row['cpu_cold_fit'] for row in result['runs']):.3f} s, median ratio "
                     f"{result['median_cpu_ratio_cold']:.2f}x, {cpu / fits * 1000:.2f} ms per fit")
    per_strategy = [row["cpu_per_strategy"] for row in result["runs"] if row.get("cpu_per_strategy")]
    if per_strategy:
        turns = result["turns"]
        fits = ", ".join(f"{name} {statistics.median(spent[name] for spent in per_strategy) / turns * 1000:.2f} ms"
                         for name in per_strategy[0])
        rest = statistics.median(row["cpu_replay_cold"] - sum(row["cpu_per_strategy"].values()) for row in result["runs"])
        lines.append(f"CPU per fit in the cold replay, median over runs: {fits}; the rest of the replay (session, "
                     f"cache prefix, costs, facts) {rest / turns * 1000:.2f} ms per turn")
    tokenized = [row for row in result["runs"] if "tokenized_replay" in row]
    if tokenized:
        row = tokenized[0]  # the same texts every run: the caches are emptied before each side
        cold, replayed = row["tokenized_cold_fit"], row["tokenized_replay"]
        lines.append(f"tokenized (texts no cache answered): the cold fit {cold['chars']:,} characters in {cold['texts']:,} "
                     f"texts, the cold replay {replayed['chars']:,} characters in {replayed['texts']:,} texts: "
                     f"{replayed['chars'] / max(cold['chars'], 1):.2f}x the characters")
    load = result.get("load_average")
    if load:
        lines.append(f"load average (1, 5, 15 min) before {load['before']}, after {load['after']} on {os.cpu_count()} CPUs")
    fresh = result.get("fresh")
    if fresh:
        lines += [
            "fresh processes (import contextfit, the vocabulary loaded on the way; the JSON file's reading left out):",
            "| run | cold fit: wall (s) | cold fit: CPU (s) | replay: wall (s) | replay: CPU (s) | wall ratio | "
            "CPU ratio | start-up alone: CPU (s) | load average before | after |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for number, row in enumerate(fresh["runs"], start=1):
            lines.append(f"| {number} | {row['cold_wall']:.3f} | {row['cold_cpu']:.3f} | {row['replay_wall']:.3f} | "
                         f"{row['replay_cpu']:.3f} | {row['ratio_wall']:.2f}x | {row['ratio_cpu']:.2f}x | "
                         f"{row.get('startup_cpu', float('nan')):.3f} | {row['load_before']} | {row['load_after']} |")
        for reading in ("wall", "cpu"):
            ratio = fresh[f"median_ratio_{reading}"]
            lines.append(f"median ratio, fresh replay / fresh cold fit ({reading.upper() if reading == 'cpu' else reading}): "
                         f"{ratio:.2f}x; target <= {result['target']:.0f}x: {'meets' if ratio <= result['target'] else 'MISSES'}")
        lines.extend(_startup_lines(fresh["runs"], result["turns"], result["target"]))
    return "\n".join(lines)


def _startup_lines(runs: list[dict[str, Any]], turns: int, target: float) -> list[str]:
    """What the fresh readings are made of: the start-up both sides pay (the import, the vocabulary),
    each side's work after it, and what the target leaves the replay's work per turn."""
    if not all("startup_cpu" in row for row in runs):
        return []
    startup = statistics.median(row["startup_cpu"] for row in runs)
    cold = statistics.median(row["cold_cpu"] for row in runs)
    replay = statistics.median(row["replay_cpu"] for row in runs)
    allowed = target * cold - startup  # the replay pays the same start-up
    return [
        f"start-up alone (import contextfit, the vocabulary loaded, a 2-message fit), CPU median: {startup:.3f} s, "
        f"{startup / cold:.0%} of the fresh cold fit; the cold fit's work after it {cold - startup:.3f} s, the "
        f"replay's {replay - startup:.3f} s ({(replay - startup) / turns * 1000:.2f} ms per turn)",
        f"{target:.0f}x the fresh cold fit leaves the replay's work {allowed:.3f} s after its start-up: "
        f"{allowed / turns * 1000:.2f} ms per turn, against {(replay - startup) / turns * 1000:.2f} measured "
        f"({(replay - startup) / max(allowed, 1e-9):.2f}x too much)",
    ]


def _tree_run(tree: Path, turns: int, limit: int, fresh: bool, chat: str = "synthetic") -> dict[str, Any]:
    """One run of the bench of the source tree ``tree`` in a child process: its ``--json`` result
    (``--chat fixtures`` needs a tree whose bench has that option)."""
    command = [sys.executable, "-m", "bench.replay", "--turns", str(turns), "--runs", "2", "--limit", str(limit),
               "--fresh-runs", "1" if fresh else "0", "--json"]
    if chat != "synthetic":
        command += ["--chat", chat]
    done = subprocess.run(command, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True,
                          text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the bench of {tree} failed: {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout[done.stdout.index("\n{") + 1:])


def compare_trees(before: Path, turns: int, runs: int, limit: int, fresh: bool = True,
                  chat: str = "synthetic") -> dict[str, list[dict]]:
    """``runs`` runs of this tree's bench and of ``before``'s, alternating (which goes first too)."""
    found: dict[str, list[dict]] = {"this tree": [], "before": []}
    for run in range(runs):
        order = [("this tree", ROOT), ("before", before)]
        for name, tree in order if run % 2 == 0 else order[::-1]:
            found[name].append(_tree_run(tree, turns, limit, fresh, chat))
    return found


def _tree_row(result: dict[str, Any]) -> dict[str, Any]:
    """The figures of one child that the comparison prints (its second in-process run: the
    first also loads the fast counting engine, ``contextfit/tokens/fast.py``)."""
    run = result["runs"][-1]
    turns = result["turns"]
    fits = turns * len(result["strategies"])
    row = {"cpu_replay": run["cpu_replay_cold"], "cpu_cold_fit": run["cpu_cold_fit"], "cpu_ratio": run["cpu_ratio_cold"],
           "ms_per_fit": run["cpu_replay_cold"] / fits * 1000, "load": result["load_average"]["before"],
           "per_strategy": {name: spent / turns * 1000 for name, spent in run["cpu_per_strategy"].items()},
           "rest": (run["cpu_replay_cold"] - sum(run["cpu_per_strategy"].values())) / turns * 1000}
    fresh = result.get("fresh")
    if fresh:
        row.update(fresh_wall=fresh["runs"][0]["ratio_wall"], fresh_cpu=fresh["runs"][0]["ratio_cpu"],
                   fresh_replay_cpu=fresh["runs"][0]["replay_cpu"], fresh_cold_cpu=fresh["runs"][0]["cold_cpu"])
    return row


def report_trees(found: dict[str, list[dict]], before: Path) -> str:
    """Both trees' runs side by side, and their medians."""
    first = found["this tree"][0]
    lines = [f"this tree ({ROOT}) against before ({before}): {first['turns']:,} turns, {len(first['strategies'])} "
             f"strategies, budget {first['budget']:,}; CPU seconds; runs alternate",
             "| run | tree | replay CPU (s) | cold fit CPU (s) | in-process ratio | ms per fit | fresh replay CPU (s) | "
             "fresh cold fit CPU (s) | fresh wall ratio | fresh CPU ratio | load average before |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = {name: [_tree_row(result) for result in results] for name, results in found.items()}
    for number in range(len(rows["this tree"])):
        for name in ("this tree", "before"):
            row = rows[name][number]
            fresh = (f"{row['fresh_replay_cpu']:.3f} | {row['fresh_cold_cpu']:.3f} | {row['fresh_wall']:.2f}x | "
                     f"{row['fresh_cpu']:.2f}x" if "fresh_cpu" in row else "- | - | - | -")
            lines.append(f"| {number + 1} | {name} | {row['cpu_replay']:.3f} | {row['cpu_cold_fit']:.3f} | "
                         f"{row['cpu_ratio']:.2f}x | {row['ms_per_fit']:.3f} | {fresh} | {row['load']} |")
    for name in ("this tree", "before"):
        tree_rows = rows[name]
        median = statistics.median
        parts = [f"in-process ratio {median(r['cpu_ratio'] for r in tree_rows):.2f}x",
                 f"{median(r['ms_per_fit'] for r in tree_rows):.3f} ms per fit"]
        if "fresh_cpu" in tree_rows[0]:
            parts += [f"fresh wall ratio {median(r['fresh_wall'] for r in tree_rows):.2f}x",
                      f"fresh CPU ratio {median(r['fresh_cpu'] for r in tree_rows):.2f}x"]
        strategies = ", ".join(f"{strategy} {median(r['per_strategy'][strategy] for r in tree_rows):.2f} ms"
                               for strategy in tree_rows[0]["per_strategy"])
        lines.append(f"median, {name}: {'; '.join(parts)}; CPU per fit: {strategies}; the rest "
                     f"{median(r['rest'] for r in tree_rows):.2f} ms per turn")
    for name in ("this tree", "before"):  # the runs the table leaves out: the fast engine loads during them
        first_runs = [result["runs"][0] for result in found[name]]
        lines.append(f"median of the first in-process runs (the fast counting engine loaded on the way), {name}: "
                     f"CPU ratio {statistics.median(run['cpu_ratio_cold'] for run in first_runs):.2f}x, "
                     f"wall ratio {statistics.median(run['ratio_cold'] for run in first_runs):.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=32_000)
    parser.add_argument("--fresh-runs", type=int, default=None, help="fresh-process pairs (default: --runs; 0: none)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES),
                        help="the strategies replayed, comma-separated (default: %(default)s)")
    parser.add_argument("--chat", choices=("synthetic", "fixtures"), default="synthetic",
                        help="the seeded synthetic chat, or the shared fixtures' real chats joined end to end")
    parser.add_argument("--setup", choices=SETUPS, default="plain",
                        help="plain messages, or with a V2 character card (post-history instructions), or a card "
                             "and a lorebook")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON too")
    parser.add_argument("--tree", type=Path, default=None,
                        help="compare with the source tree in DIR (git worktree add /tmp/before main), runs alternating")
    args = parser.parse_args(argv)
    strategies = tuple(name.strip() for name in args.strategies.split(",") if name.strip())
    if not strategies:
        parser.error("--strategies names no strategy")
    if args.tree is not None:
        if strategies != STRATEGIES or args.setup != "plain":
            parser.error("--tree replays the default strategies, plain, only")
        found = compare_trees(args.tree.resolve(), args.turns, args.runs, args.limit,
                              fresh=(args.runs if args.fresh_runs is None else args.fresh_runs) > 0, chat=args.chat)
        print(report_trees(found, args.tree))
        if args.json:
            print(json.dumps(found, indent=2))
        return 0
    result = measure(args.turns, args.runs, args.limit, strategies, args.chat, args.setup)
    fresh_runs = args.runs if args.fresh_runs is None else args.fresh_runs
    if fresh_runs > 0:
        result["fresh"] = measure_fresh(conversation(args.turns, args.chat), _settings(args.limit, args.setup),
                                        fresh_runs, strategies)
    print(report(result))
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
