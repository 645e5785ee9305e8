"""The fast counting engine's targets: counting with it, as ratios measured in one run.

    .venv/bin/python -m bench.fast                       # 10,000 messages, 5 runs (part of `make bench`)
    .venv/bin/python -m bench.fast --messages 2000 --runs 3

In one process, on the seeded synthetic chat, each repetition times every
contender in a rotating order (prepared untimed, ``gc.collect()`` first):

* ``floor (tiktoken)``: tiktoken's ``encode_ordinary`` on every message's text;
* ``engine alone``: the same texts through the fast counter (guard and self-check included);
* ``contextfit <strategy> cold``: ``shift_context`` with a fresh counter, every
  block counted, into 25% of the chat, counting with the fast engine; and the
  same with tiktoken alone (the engine's fallback);
* ``contextfit clear-tool-results cold`` and ``contextfit fact-ledger cold``: the same
  for the other strategies, reported against ``contextfit truncate cold`` (no target);
  and ``contextfit <strategy> session refit x20``: each strategy's warm refit into 25%
  (a session that fitted the chat without its last 20 messages, then 20 appends and
  fits), reported against truncate's;
* ``contextfit truncate lazy cold``: ``count_excluded=False`` into 128k;
* ``contextfit truncate cold 128k``: every block counted, into 128k: the cold
  fit the session's refit is compared with;
* ``contextfit session refit x20 128k``: a :class:`~contextfit.pipeline.session.FitSession`
  that fitted the chat without its last 20 messages (untimed), then 20 times
  ``append(message)`` and ``fit(counter, 128k)``; each refit is a twentieth of it.
  ``contextfit session plan refit x5 128k`` does the same with ``plan("truncate")``
  (a whole :class:`~contextfit.PromptPlan`), against ``plan_prompt cold 128k``;
* ``langchain memoized``: ``trim_messages`` configured as the main bench's
  (:data:`~bench.contenders.LANGCHAIN_OPTIONS`, as LangChain's guide writes it)
  with the main bench's memoized counter (cookbook formula, exact o200k, keyed by
  what is counted), the memo fresh per run: a LangChain user who caches counts.

Each target is the median of the per-repetition ratios (both sides timed in
the same repetition); so is each strategy's cold fit against truncate's, in a
table of its own. The cold cost of each engine (import and vocabulary
load in a fresh process) is printed apart, with the first pass after it.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from time import perf_counter, process_time
from typing import Any

from . import oracle
from .contenders import (
    LANGCHAIN_OPTIONS, STRATEGIES, TIMED_STRATEGIES, _fit, _floor_run, fast_counter, fresh_counter, memoized_langchain_counter, openai_only,
)
from .conversations import synthetic
from .oracle import encoding

RESULTS = Path(__file__).resolve().parent / "results"
FLOOR_RATIO = 0.35  # every block counted: at most this many times the tiktoken floor
LANGCHAIN_SPEEDUP = 3.0  # ... and at least this many times faster than LangChain memoized
LAZY_SPEEDUP = 20.0  # lazy truncate into 128k against LangChain memoized
FIXED_BUDGET = 128_000
REFIT_MS = 1.0  # a session's refit after one appended message, at 10,000 messages
REFITS = 20  # appended messages timed in one session run (one refit is too short to time alone)
PLAN_REFITS = 5
#: Every strategy timed cold (the targets are STRATEGIES'; the others are reported against truncate).
COLD_STRATEGIES = (*TIMED_STRATEGIES, "fact-ledger")


def _tiktoken_counter() -> Any:
    from contextfit.tokens.chat_counter import TokenCounter
    from contextfit.tokens.profiles import PROFILES
    from contextfit.tokens.tokenizers import Tokenizer

    fresh_counter()  # clears the summary and text caches the same way
    return TokenCounter(Tokenizer(PROFILES["o200k_base"], encoding()))


_PLAN = {"model": "gpt-4o", "context_limit": FIXED_BUDGET + 4_000, "response_reserve": 4_000}


def _session(messages: list[dict], appended: int, plan: bool = False, strategy: str = "truncate",
             budget: int = FIXED_BUDGET) -> tuple[Any, Any, list[dict], str, int]:
    """A session that fitted (or planned) the chat but its last ``appended`` messages, cold before that."""
    from contextfit.pipeline.session import FitSession

    counter = fresh_counter()
    session = FitSession(messages[:-appended])
    if plan:
        session.plan("truncate", **_PLAN)
    else:
        session.fit(counter, budget, strategy)
    return session, counter, messages[-appended:], strategy, budget


def _refits(state: tuple[Any, Any, list[dict], str, int]) -> Any:
    session, counter, new, strategy, budget = state
    for message in new:
        session.append(message)
        result = session.fit(counter, budget, strategy)
    return result


def _plan_refits(state: tuple[Any, Any, list[dict], str, int]) -> Any:
    session, _counter, new, _strategy, _budget = state
    for message in new:
        session.append(message)
        plan = session.plan("truncate", **_PLAN)
    return plan


def _plan_cold(messages: list[dict]) -> Any:
    import contextfit

    return contextfit.plan_prompt(messages, context_strategy="truncate", **_PLAN)


def _contenders(messages: list[dict], budget: int) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """name -> (prepare, run): prepare is not timed."""
    fast = fast_counter()
    found: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
        "floor (tiktoken)": (lambda: (messages, encoding().encode_ordinary), _floor_run),
    }
    if fast is not None:
        found["engine alone"] = (lambda: (messages, lambda text: range(fast.count(text))), _floor_run)
    for strategy in COLD_STRATEGIES:
        found[f"contextfit {strategy} cold"] = (
            fresh_counter, lambda counter, s=strategy: _fit(messages, counter, budget, s, True))
        if strategy in STRATEGIES:
            found[f"contextfit {strategy} cold, tiktoken only"] = (
                _tiktoken_counter, lambda counter, s=strategy: _fit(messages, counter, budget, s, True))
        found[f"contextfit {strategy} session refit x{REFITS}"] = (
            lambda s=strategy: _session(messages, REFITS, strategy=s, budget=budget), _refits)
    found["contextfit truncate lazy cold 128k"] = (
        fresh_counter, lambda counter: _fit(messages, counter, FIXED_BUDGET, "truncate", False))
    found["contextfit truncate cold 128k"] = (
        fresh_counter, lambda counter: _fit(messages, counter, FIXED_BUDGET, "truncate", True))
    found[f"contextfit session refit x{REFITS} 128k"] = (lambda: _session(messages, REFITS), _refits)
    found["plan_prompt cold 128k"] = (fresh_counter, lambda _counter: _plan_cold(messages))
    found[f"contextfit session plan refit x{PLAN_REFITS} 128k"] = (
        lambda: _session(messages, PLAN_REFITS, plan=True), _plan_refits)
    try:
        from langchain_core.messages import convert_to_messages, trim_messages
    except ImportError:
        return found
    converted = convert_to_messages([openai_only(m) for m in messages])
    for label, limit in (("25%", budget), ("128k", FIXED_BUDGET)):
        found[f"langchain memoized {label}"] = (
            memoized_langchain_counter,
            lambda counter, limit=limit: trim_messages(converted, max_tokens=limit, token_counter=counter,
                                                       **LANGCHAIN_OPTIONS),
        )
    return found


def measure(messages: list[dict], budget: int, runs: int, cpu: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Seconds of every contender, one list per contender, repetition ``i`` at index ``i``
    (``cpu``, when given, gets the CPU seconds of this process the same way: on
    a loaded machine, the work done apart from the waits for a core)."""
    return timed(_contenders(messages, budget), runs, cpu)


def timed(contenders: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]], runs: int,
          cpu: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Each ``(prepare, run)`` contender ``runs`` times in a rotating order, ``prepare`` untimed, gc first."""
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(runs):
        shift = repeat % len(names)
        for name in names[shift:] + names[:shift]:
            prepare, run = contenders[name]
            state = prepare()
            gc.collect()
            start, start_cpu = perf_counter(), process_time()
            run(state)
            times[name].append(perf_counter() - start)
            if cpu is not None:
                cpu.setdefault(name, []).append(process_time() - start_cpu)
        print(f"  run {repeat + 1}/{runs} done", file=sys.stderr, flush=True)
    return times


def _paired(times: dict[str, list[float]], numerator: str, denominator: str) -> float | None:
    if not times.get(numerator) or not times.get(denominator):
        return None
    return statistics.median(a / b for a, b in zip(times[numerator], times[denominator]))


def targets(times: dict[str, list[float]]) -> list[dict[str, Any]]:
    """The fast engine's targets from one run's times."""
    found = []
    for strategy in STRATEGIES:
        cold = f"contextfit {strategy} cold"
        ratio = _paired(times, cold, "floor (tiktoken)")
        found.append({"target": f"{cold}, every block counted: <= {FLOOR_RATIO}x the tiktoken floor",
                      "measured": ratio, "met": None if ratio is None else ratio <= FLOOR_RATIO, "unit": "x floor"})
        speedup = _paired(times, "langchain memoized 25%", cold)
        found.append({"target": f"{cold}: >= {LANGCHAIN_SPEEDUP:g}x faster than LangChain memoized",
                      "measured": speedup, "met": None if speedup is None else speedup >= LANGCHAIN_SPEEDUP,
                      "unit": "x faster"})
    speedup = _paired(times, "langchain memoized 128k", "contextfit truncate lazy cold 128k")
    found.append({"target": f"contextfit truncate lazy cold into 128k: >= {LAZY_SPEEDUP:g}x faster than LangChain memoized",
                  "measured": speedup, "met": None if speedup is None else speedup >= LAZY_SPEEDUP, "unit": "x faster"})
    found += _session_targets(times)
    return found


def against_truncate(times: dict[str, list[float]]) -> list[dict[str, Any]]:
    """Each strategy's cold fit: its median, and the median of its per-repetition ratios to
    truncate's cold fit (both timed in the same repetition); apart, the same of its warm refit
    (a session's, after one appended message: a twentieth of a run) against truncate's."""
    found = []
    for strategy in COLD_STRATEGIES:
        seconds = times.get(f"contextfit {strategy} cold")
        if not seconds:
            continue
        row = {"strategy": strategy, "median_ms": statistics.median(seconds) * 1000, "min_ms": min(seconds) * 1000,
               "max_ms": max(seconds) * 1000,
               "x_truncate": _paired(times, f"contextfit {strategy} cold", "contextfit truncate cold")}
        warm = times.get(f"contextfit {strategy} session refit x{REFITS}")
        if warm:
            row["refit_ms"] = statistics.median(warm) / REFITS * 1000
            row["refit_x_truncate"] = _paired(times, f"contextfit {strategy} session refit x{REFITS}",
                                              f"contextfit truncate session refit x{REFITS}")
        found.append(row)
    return found


def _session_targets(times: dict[str, list[float]]) -> list[dict[str, Any]]:
    """The append-aware path: the time of one refit, and its share of a cold fit (paired)."""
    refits, cold = times.get(f"contextfit session refit x{REFITS} 128k"), times.get("contextfit truncate cold 128k")
    per_refit = None if not refits else statistics.median(refits) / REFITS * 1000
    found = [{"target": f"contextfit session (truncate, every block counted): refit after one appended message "
                        f"into 128k: <= {REFIT_MS:g} ms", "measured": per_refit,
              "met": None if per_refit is None else per_refit <= REFIT_MS, "unit": "ms"}]
    share = None if not refits or not cold else \
        statistics.median(r / REFITS / c for r, c in zip(refits, cold))
    found.append({"target": "contextfit session refit after one appended message, share of a cold fit (reported)",
                  "measured": share, "met": None, "unit": "x cold"})
    plans, plan_cold = times.get(f"contextfit session plan refit x{PLAN_REFITS} 128k"), times.get("plan_prompt cold 128k")
    per_plan = None if not plans else statistics.median(plans) / PLAN_REFITS * 1000
    found.append({"target": "contextfit session plan (a whole PromptPlan): replan after one appended message (reported)",
                  "measured": per_plan, "met": None, "unit": "ms"})
    share = None if not plans or not plan_cold else \
        statistics.median(r / PLAN_REFITS / c for r, c in zip(plans, plan_cold))
    found.append({"target": "contextfit session plan: replan after one appended message, share of plan_prompt cold "
                            "(reported)", "measured": share, "met": None, "unit": "x cold"})
    return found


_COLD = r"""
import json, os, sys, time
from bench.conversations import synthetic
texts = [t for m in synthetic(int(sys.argv[1]), 6).messages for t in [m.get("content")] if isinstance(t, str)]
start = time.perf_counter()
from contextfit.tokens.tokenizers import get_tokenizer
from contextfit.tokens import fast
tokenizer = get_tokenizer("o200k_base")
tiktoken_load = time.perf_counter() - start
engine_load = None
if sys.argv[2] == "fast":
    start = time.perf_counter()
    tokenizer.fast.load()
    engine_load = time.perf_counter() - start
    count = tokenizer.fast.count
else:
    count = tokenizer.fast.count_reference
start = time.perf_counter()
total = sum(map(count, texts))
first_pass = time.perf_counter() - start
print(json.dumps({"tiktoken_load": tiktoken_load, "engine_load": engine_load, "first_pass": first_pass,
                  "tokens": total, "engine": tokenizer.fast.engine if sys.argv[2] == "fast" else "tiktoken"}))
"""


def cold(messages: int) -> dict[str, Any]:
    """Each engine in a fresh process: vocabulary load, then one pass over the chat's texts."""
    root = Path(__file__).resolve().parents[1]
    out = {}
    for which in ("tiktoken", "fast"):
        done = subprocess.run([sys.executable, "-c", _COLD, str(messages), which], cwd=root, capture_output=True,
                              text=True, timeout=600, check=False)
        out[which] = json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr.strip()[-300:]}
    return out


def markdown(times: dict[str, list[float]], found: list[dict], cold_runs: dict[str, Any], info: dict) -> str:
    lines = [f"# bench.fast: {info['messages']:,} messages ({info['tokens']:,} o200k tokens), {info['runs']} runs",
             "", f"Counting engine: {info['engine']} (its total over the chat equals tiktoken's: "
             f"{info.get('engine_total_equals_tiktoken', '—')}). Load average at the start: {info['load']}"
             f"{', at the end: ' + str(info['load_end']) if info.get('load_end') else ''}.", "",
             "| contender | median ms [min-max] | x floor (paired) |", "|---|--:|--:|"]
    for name, seconds in times.items():
        if seconds:
            ratio = _paired(times, name, "floor (tiktoken)")
            lines.append(f"| {name} | {statistics.median(seconds) * 1000:.1f} [{min(seconds) * 1000:.1f}-"
                         f"{max(seconds) * 1000:.1f}] | {ratio:.3f} |")
    lines += ["", "| target | measured | met? |", "|---|--:|:-:|"]
    for target in found:
        shown = "—" if target["measured"] is None else f"{target['measured']:.2f} {target['unit']}"
        met = {True: "yes", False: "**no**", None: "—"}[target["met"]]
        lines.append(f"| {target['target']} | {shown} | {met} |")
    for target, measured in info.get("cpu_targets", {}).items():
        if measured is not None:
            lines.append(f"| {target}, in CPU time of the process | {measured:.2f} | — |")
    lines += ["", f"Each strategy into 25% of the chat, every block counted: cold, against truncate cold timed in "
              f"the same repetition; warm, a session's refit after one appended message (a twentieth of "
              f"{REFITS}), against truncate's (each the median of {info['runs']} per-repetition ratios):", "",
              "| strategy | cold ms [min-max] | cold x truncate (paired) | warm refit ms | warm x truncate (paired) |",
              "|---|--:|--:|--:|--:|"]
    for row in against_truncate(times):
        warm = (f"{row['refit_ms']:.2f} | {row['refit_x_truncate']:.1f}" if row.get("refit_x_truncate") is not None
                else "— | —")
        lines.append(f"| {row['strategy']} | {row['median_ms']:.1f} [{row['min_ms']:.1f}-{row['max_ms']:.1f}] | "
                     f"{row['x_truncate']:.2f} | {warm} |")
    lines += ["", "Cold, one fresh process each (load, then one pass over the message texts):", "",
              "| engine | tiktoken load ms | engine load ms | first pass ms | tokens |", "|---|--:|--:|--:|--:|"]
    for which, run in cold_runs.items():
        if "error" in run:
            lines.append(f"| {which} | error: {run['error']} | | | |")
            continue
        engine_load = "—" if run["engine_load"] is None else f"{run['engine_load'] * 1000:.0f}"
        lines.append(f"| {run['engine']} | {run['tiktoken_load'] * 1000:.0f} | {engine_load} | "
                     f"{run['first_pass'] * 1000:.0f} | {run['tokens']:,} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run, print the tables, save ``bench/results/fast.{md,json}``."""
    import os

    parser = argparse.ArgumentParser(prog="python -m bench.fast", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-cold", action="store_true", help="skip the fresh-process load measurements")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where fast.md and fast.json go")
    args = parser.parse_args(argv)
    messages = synthetic(args.messages, 6).messages
    facts = oracle.Facts.of(messages)
    budget = max(facts.tokens // 4, facts.protected_tokens)
    counter = fast_counter()
    info = {"messages": args.messages, "tokens": facts.tokens, "runs": args.runs, "load": os.getloadavg(),
            "engine": counter.engine if counter is not None else "tiktoken"}
    if counter is not None:  # the engine's total over the chat's texts must be tiktoken's
        info["engine_total_equals_tiktoken"] = _floor_run((messages, lambda text: range(counter.count(text)))) == \
            _floor_run((messages, encoding().encode_ordinary))
    print(f"bench.fast: {args.messages:,} messages, engine {info['engine']}", file=sys.stderr)
    cpu: dict[str, list[float]] = {}
    times = measure(messages, budget, args.runs, cpu)
    info["load_end"] = os.getloadavg()
    found = targets(times)
    info["cpu_targets"] = {t["target"]: t["measured"] for t in _session_targets(cpu)}
    cold_runs = {} if args.no_cold else cold(args.messages)
    text = markdown(times, found, cold_runs, info)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fast.md").write_text(text)
    (args.out / "fast.json").write_text(json.dumps({"info": info, "times": times, "cpu": cpu, "targets": found,
                                                   "perStrategy": against_truncate(times), "cold": cold_runs},
                                                  indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
