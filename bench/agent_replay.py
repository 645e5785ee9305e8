"""An agent run's replay stays flat per request: the milliseconds a request costs at 100 and
at 1,000 requests.

    .venv/bin/python -m bench.agent_replay                          # 100 and 1,000 requests, 3 runs
    .venv/bin/python -m bench.agent_replay --requests 100,1000,2000 --runs 1 --cap 2500

An agent run is a user message, then round after round of tool calls and results, each
round a billed request (SPEC 9). The run here is seeded and built by :func:`agent_run`: a
1,500-token system prompt, then user turns of 50 requests each (the user's message and 49
tool rounds); each round calls one or two tools in parallel with ids reused every turn
(``call_0``, ``call_1``, as some servers send them) and gets their results — mostly a few
lines, one in eight a file dump of several thousand tokens. Under the default 32,000-token
limit (4,000 reserved) the later requests must cut.

Each run replays the whole run with ``--strategies`` (default: bench/replay.py's four,
truncate, summarize, clear-tool-results and vector-recall), after
``contextfit.caches.clear_caches(vocabularies=False)`` (the vocabulary stays loaded: both
sizes pay it once, before the first run), and reports wall and CPU milliseconds per request,
and the CPU each strategy's fits took per request, the median of the runs; then the ratio of
the largest size's per-request figure to the smallest's (flat: close to 1). A strategy whose
requests grow with the run grows with them — clear-tool-results keeps every call with a
placeholder for its cleared result, so its late requests hold hundreds of blocks — so the
table also gives the blocks sent per fit and the CPU per block sent. ``--cap`` replays
with ``tool_result_cap`` too. Nothing is asserted: the machine is shared (the load average
is printed before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from time import perf_counter, process_time
from typing import Any

import contextfit
from contextfit.caches import clear_caches

from tests.support.agent_runs import agent_run  # the tests' seeded agent run (one generator for both)

from .replay import STRATEGIES, _per_strategy


def _load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "n/a"


def measure(sizes: tuple[int, ...] = (100, 1000), runs: int = 3, strategies: tuple[str, ...] = STRATEGIES,
            limit: int = 32_000, reserve: int = 4_000, cap: int | None = None) -> dict[str, Any]:
    """Time the replay of an agent run of each size; per size, every run's figures and their medians."""
    contextfit.replay([{"role": "user", "content": "warm up"}], model="gpt-4o", strategies=["truncate"])  # vocabulary
    options = {"tool_result_cap": cap} if cap else {}
    out: dict[str, Any] = {"strategies": list(strategies), "limit": limit, "reserve": reserve, "cap": cap,
                           "load_before": _load(), "sizes": {}}
    for size in sizes:
        chat = agent_run(size)
        rows = []
        for _ in range(runs):
            clear_caches(vocabularies=False)
            with _per_strategy() as spent:
                wall, cpu = perf_counter(), process_time()
                result = contextfit.replay(chat, model="gpt-4o", strategies=list(strategies), context_limit=limit,
                                           response_reserve=reserve, **options)
                wall, cpu = perf_counter() - wall, process_time() - cpu
            requests = len(result.requests)
            sent = sum(row.sent_blocks for rows_ in result.turns.values() for row in rows_)
            rows.append({"wall_s": wall, "cpu_s": cpu, "requests": requests, "sent_blocks": sent,
                         "cpu_us_per_sent_block": cpu * 1e6 / max(sent, 1),
                         "fit_cpu_ms_per_request": {name: spent[name] * 1000 / requests for name in spent},
                         "wall_ms_per_request": wall * 1000 / requests, "cpu_ms_per_request": cpu * 1000 / requests,
                         "messages": len(chat), "failed": sum(t.failed_turns for t in result.totals.values())})
        out["sizes"][size] = {
            "runs": rows,
            "fit_cpu_ms_per_request": {name: statistics.median(row["fit_cpu_ms_per_request"][name] for row in rows)
                                       for name in rows[0]["fit_cpu_ms_per_request"]},
            "wall_ms_per_request": statistics.median(row["wall_ms_per_request"] for row in rows),
            "cpu_ms_per_request": statistics.median(row["cpu_ms_per_request"] for row in rows),
            "cpu_us_per_sent_block": statistics.median(row["cpu_us_per_sent_block"] for row in rows),
        }
    out["load_after"] = _load()
    return out


def report(result: dict[str, Any]) -> str:
    """The table: per size, requests, messages, median ms per request and per fit; then the flatness ratio."""
    fits = len(result["strategies"])
    lines = [f"Agent-run replay, {fits} strategies ({', '.join(result['strategies'])}), limit {result['limit']:,} "
             f"(reserve {result['reserve']:,})" + (f", tool_result_cap {result['cap']:,}" if result["cap"] else "")
             + f"; load {result['load_before']} -> {result['load_after']}",
             "",
             "| requests | messages | blocks sent / fit | wall ms / request | CPU ms / request | CPU ms / fit | "
             "CPU µs / block sent | runs (wall s) |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    sizes = result["sizes"]
    for entry in sizes.values():
        first = entry["runs"][0]
        walls = ", ".join(f"{row['wall_s']:.2f}" for row in entry["runs"])
        per_fit = first["sent_blocks"] / (first["requests"] * fits)
        lines.append(f"| {first['requests']:,} | {first['messages']:,} | {per_fit:.0f} | {entry['wall_ms_per_request']:.2f} | "
                     f"{entry['cpu_ms_per_request']:.2f} | {entry['cpu_ms_per_request'] / fits:.2f} | "
                     f"{entry['cpu_us_per_sent_block']:.2f} | {walls} |")
    lines += ["", "CPU ms per request in each strategy's fits (median): " + "; ".join(
        f"{size:,} requests: " + ", ".join(f"{name} {ms:.2f}" for name, ms in entry["fit_cpu_ms_per_request"].items())
        for size, entry in sizes.items())]
    keys = list(sizes)
    if len(keys) > 1:
        small, large = sizes[keys[0]], sizes[keys[-1]]
        lines += ["", f"per request, {keys[-1]:,} against {keys[0]:,} requests: "
                      f"wall {large['wall_ms_per_request'] / small['wall_ms_per_request']:.2f}x, "
                      f"CPU {large['cpu_ms_per_request'] / small['cpu_ms_per_request']:.2f}x; per block sent, CPU "
                      f"{large['cpu_us_per_sent_block'] / small['cpu_us_per_sent_block']:.2f}x (flat: about 1)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_replay", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", default="100,1000", help="sizes in requests, comma separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--limit", type=int, default=32_000)
    parser.add_argument("--cap", type=int, help="also apply tool_result_cap (tokens)")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON too")
    args = parser.parse_args(argv)
    result = measure(tuple(int(size) for size in args.requests.split(",")), args.runs,
                     tuple(args.strategies.split(",")), args.limit, cap=args.cap)
    print(report(result))
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
