"""``python -m bench`` (``make bench``): run the benchmark, write the results.

    make bench                        # quick: 100 to 10,000 messages, < 3 minutes
    make bench ARGS=--full            # 100 to 50,000 messages, a 60 s cap
    make bench ARGS=--load            # N API processes on PostgreSQL under load (bench/load.py)
    python -m bench --sizes 100 --no-external --no-fixtures   # a smoke run
    python -m bench --profile "contextfit summarize cold" --size 10000 --budget 25%

Writes ``bench/results/bench-<mode>.md``, ``.json`` and ``.html`` (a plotly
chart); prints the Markdown.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from time import perf_counter

from . import clearing, report
from .run import Options, Runner, full, machine, quick, save_json, to_json


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description="contextfit against the alternatives, in one run.")
    parser.add_argument("--full", action="store_true", help="every size up to 50,000 messages, more runs, 60 s cap")
    parser.add_argument("--sizes", type=lambda text: tuple(int(s) for s in text.split(",")), help="e.g. 100,1000")
    parser.add_argument("--runs", type=int, help="runs per contender and case (default: by size)")
    parser.add_argument("--cap", type=float, help="seconds per run of LangChain/LiteLLM before the worker is killed")
    parser.add_argument("--only", action="append", default=[], help="run contenders whose name contains this (repeatable)")
    parser.add_argument("--no-external", action="store_true", help="leave LangChain and LiteLLM out")
    parser.add_argument("--no-fixtures", action="store_true", help="leave the shared fixtures out")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory processes")
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--out", type=Path, default=None, help="results folder (default bench/results)")
    parser.add_argument("--profile", metavar="CONTENDER", help="profile one contender with pyinstrument instead")
    parser.add_argument("--size", type=int, default=10_000, help="with --profile: conversation size")
    parser.add_argument("--budget", default="128k", help="with --profile: 25%% or 128k")
    return parser


def options_from(args: argparse.Namespace) -> Options:
    options = full() if args.full else quick()
    if args.sizes:
        options = replace(options, sizes=args.sizes, memory_sizes=tuple(s for s in options.memory_sizes if s in args.sizes))
    if args.runs:
        options = replace(options, repeats={max(options.sizes): args.runs}, other_runs=args.runs)
    if args.cap:
        options = replace(options, cap=args.cap)
    if args.no_memory:
        options = replace(options, memory_sizes=())
    if args.out:
        options = replace(options, out=args.out)
    return replace(options, only=tuple(args.only), external=not args.no_external, use_fixtures=not args.no_fixtures,
                   seed=args.seed)


def profile(args: argparse.Namespace) -> None:
    """Profile one run of one contender (not timed against anything)."""
    from pyinstrument import Profiler

    from . import oracle
    from .contenders import by_key
    from .conversations import synthetic
    from .run import _budgets

    chat = synthetic(args.size, args.seed)
    budget = dict(_budgets(oracle.Facts.of(chat.messages)))[args.budget]
    contender = by_key(args.profile)
    state = contender.prepare(chat.messages, budget)
    profiler = Profiler(interval=0.0005)
    profiler.start()
    contender.run(state)
    profiler.stop()
    print(profiler.output_text(unicode=True, color=False, show_all=False))


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if "--load" in given:  # make bench ARGS=--load: the multi-process load test (bench/load.py)
        from .load import main as load

        return load([arg for arg in given if arg != "--load"])
    args = _parser().parse_args(argv)
    if args.profile:
        profile(args)
        return 0
    options = options_from(args)
    info = machine()
    started = perf_counter()
    cases = Runner(options).run()
    info["elapsed_s"], info["load_average_end"] = perf_counter() - started, os.getloadavg()
    found = report.targets(cases, options)
    command = "make bench" + (f" ARGS={shlex.quote(' '.join(argv if argv is not None else sys.argv[1:]))}"
                              if (argv if argv is not None else sys.argv[1:]) else "")
    text = report.markdown(options, cases, info, found, command)
    text += "\n\n" + clearing.markdown(options.use_fixtures)  # what clear-tool-results keeps
    data = to_json(options, cases, info, found)
    for case_data, case in zip(data["cases"], cases):
        for row_data, row in zip(case_data["rows"], case.rows):
            row_data["summary"] = report.summary(case, row)
    base = options.out / f"bench-{options.mode}"
    save_json(base.with_suffix(".json"), data)
    base.with_suffix(".md").write_text(text + "\n")
    written = report.chart(cases, options, base.with_suffix(".html"))
    print(text)
    print(f"\nwrote {base.with_suffix('.md')}, {base.with_suffix('.json')}, {', '.join(written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
