"""One benchmark run: every contender on every input and budget, interleaved.

For each case (an input and a budget) the contenders take turns, in a
different order on each repeat, so slow drifts of a shared machine spread
over all of them. Each run is prepared untimed (fresh counter, conversion,
a first fit for the warm ones), then timed alone after a ``gc.collect()``.
The first run of each contender is judged (bench/oracle.py). LangChain and
LiteLLM run in worker processes, each run stopped at its time cap. Peak
memory is measured afterwards, one fresh process per measurement.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from . import oracle
from .contenders import Contender, all_contenders, measure_once
from .conversations import Conversation, fixtures, synthetic
from .overhead import beyond_tokenizing
from .worker import OverCap, Worker, measure_memory
from contextfit.fitting.registry import load_plugins

FIXED_BUDGET = 128_000
LANGCHAIN_CAP = 120.0
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Options:
    """What to run; :func:`quick` and :func:`full` are the two presets."""

    mode: str
    sizes: tuple[int, ...]
    repeats: dict[int, int]  # size -> runs of the floor and the cold fits (sizes not listed: the smallest entry)
    cap: float  # seconds, per run of LiteLLM (LangChain gets at least LANGCHAIN_CAP)
    memory_sizes: tuple[int, ...]
    memory_budgets: tuple[str, ...] = ("25%", "128k")
    memory_warm: bool = True
    overhead_sizes: tuple[int, ...] = (10_000, 50_000)  # where bench/overhead.py runs
    overhead_runs: int = 7
    other_runs: int = 3  # at most this many runs of LangChain/LiteLLM (no ratio target hangs on them as finely)
    use_fixtures: bool = True
    fixture_runs: int = 3
    seed: int = 6
    only: tuple[str, ...] = ()  # contender keys (substrings); empty: all
    external: bool = True  # LangChain and LiteLLM
    out: Path = RESULTS

    def runs_for(self, size: int) -> int:
        fitting = [runs for limit, runs in sorted(self.repeats.items()) if size <= limit]
        return fitting[0] if fitting else min(self.repeats.values())


def quick() -> Options:
    """`make bench`: up to 10,000 messages, about 3 minutes on 2 cores."""
    return Options("quick", (100, 1_000, 10_000), {1_000: 3, 10_000: 5}, cap=5.0, memory_sizes=(10_000,),
                   memory_budgets=("128k",), memory_warm=False, fixture_runs=1, overhead_sizes=(10_000,), overhead_runs=5)


def full() -> Options:
    """`make bench ARGS=--full`: up to 50,000 messages, more runs, a 60 s cap."""
    return Options("full", (100, 1_000, 10_000, 50_000), {10_000: 7, 50_000: 5}, cap=60.0,
                   memory_sizes=(1_000, 10_000, 50_000), fixture_runs=5, other_runs=5)


@dataclass
class Row:
    """One contender on one case."""

    contender: str
    family: str
    strategy: str | None
    mode: str | None
    counts_excluded: bool
    seconds: list[float] = field(default_factory=list)
    # The baseline timed just before each run, for ratios that shrug off a
    # shared machine's drift: the floor before a cold fit, the warm refit's
    # own first (cold) fit of the chat without its last message.
    paired: list[float] = field(default_factory=list)
    over_cap: bool = False
    skipped: str | None = None
    error: str | None = None
    verdict: dict | None = None
    memory: dict | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None


@dataclass
class Case:
    """One input with one budget."""

    input: str
    size: int
    source: dict
    tokens: int
    protected_tokens: int
    groups: int
    counter_agrees: int
    budget_label: str
    budget: int
    rows: list[Row] = field(default_factory=list)
    beyond_tokenizing: dict[str, float] | None = None  # bench/overhead.py: median seconds, tokenizer memoized

    def row(self, key: str) -> Row | None:
        return next((row for row in self.rows if row.contender == key), None)


def _budgets(facts: oracle.Facts) -> list[tuple[str, int]]:
    # 25% of the conversation, but never below what the protected blocks need
    # (tiny fixtures): a budget nothing can meet measures nothing.
    return [("25%", max(facts.tokens // 4, facts.protected_tokens)), ("128k", FIXED_BUDGET)]


def _line_up(options: Options) -> list[Contender]:
    line_up = []
    for contender in all_contenders():
        if options.only and not any(part in contender.key for part in options.only) and contender.family != "floor":
            continue
        if contender.family in ("langchain", "litellm") and not options.external:
            continue
        line_up.append(contender)
    return line_up


def _judge(case_facts: oracle.Facts, outcome: oracle.Outcome, budget: int) -> dict:
    return asdict(oracle.judge(case_facts, outcome, budget))


class Runner:
    """Runs the cases of one bench run; prints progress to stderr."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.contenders = _line_up(options)
        self.floor = next((c for c in self.contenders if c.family == "floor"), None)
        # one worker per library: if one ever has to be killed, the other keeps its imports
        (options.out / "worker.log").unlink(missing_ok=True)  # the workers' stderr, this run's only
        self.workers = {family: Worker(options.out / "worker.log") for family in ("langchain", "litellm")}
        self.over_cap_at: dict[tuple[str, str], int] = {}  # (contender, budget label) -> smallest size over the cap
        self.started = perf_counter()
        load_plugins()  # once per process (an entry-point scan): not part of any fit

    def log(self, text: str) -> None:
        print(f"[{perf_counter() - self.started:6.1f} s] {text}", file=sys.stderr, flush=True)

    def inputs(self) -> Iterator[Conversation]:
        for size in self.options.sizes:
            yield synthetic(size, self.options.seed)
        if self.options.use_fixtures:
            yield from fixtures()

    def cap_for(self, contender: Contender) -> float:
        """LiteLLM's cap is the option; LangChain is not quadratic, its cap is only a safety net."""
        return max(self.options.cap, LANGCHAIN_CAP) if contender.family == "langchain" else self.options.cap

    def start_workers(self) -> None:
        """Start the library workers side by side (imports take seconds), before any timing."""
        families = {c.family: c for c in self.contenders if c.capped and not c.missing()}
        modules = {"langchain": "langchain_core.messages", "litellm": "litellm.utils"}
        for family in families:
            self.workers[family].send({"op": "import", "module": modules[family]})
        for family in families:
            self.workers[family].receive(timeout=600)

    def run(self) -> list[Case]:
        self.start_workers()
        cases = []
        for chat in self.inputs():
            facts = oracle.Facts.of(chat.messages)
            # Everything alive now (modules, the chat) is frozen out of the collector, so the
            # gc.collect() before each run costs a run's own garbage, not a scan of the process.
            gc.collect()
            gc.freeze()
            for label, budget in _budgets(facts):
                case = Case(chat.name, len(chat.messages), chat.source, facts.tokens, facts.protected_tokens,
                            len(facts.groups), facts.counter_agrees, label, budget)
                self.run_case(case, chat, facts)
                if case.size in self.options.overhead_sizes and chat.source["kind"] == "synthetic":
                    self.log("  work beyond tokenizing (tokenizer memoized)")
                    case.beyond_tokenizing = beyond_tokenizing(chat.messages, case.budget, runs=self.options.overhead_runs)
                cases.append(case)
            gc.unfreeze()
        for worker in self.workers.values():
            worker.stop()
        self.measure_memory(cases)
        return cases

    def run_case(self, case: Case, chat: Conversation, facts: oracle.Facts) -> None:
        runs = self.options.runs_for(case.size) if chat.source["kind"] == "synthetic" else self.options.fixture_runs
        self.log(f"{case.input} ({case.tokens:,} tokens) into {case.budget_label} = {case.budget:,}: {runs} runs")
        rows = {c.key: Row(c.key, c.family, c.strategy, c.mode, c.counts_excluded) for c in self.contenders}
        case.rows = list(rows.values())
        for contender in self.contenders:
            if contender.missing():
                rows[contender.key].skipped = contender.missing()
            smaller = self.over_cap_at.get((contender.key, case.budget_label))
            if smaller is not None and chat.source["kind"] == "synthetic":
                rows[contender.key].skipped = f"over the {self.cap_for(contender):g} s cap at {smaller:,} messages already"
                rows[contender.key].over_cap = True
        for repeat in range(runs):
            shift = repeat % len(self.contenders)
            for contender in self.contenders[shift:] + self.contenders[:shift]:
                row = rows[contender.key]
                if row.skipped or row.over_cap or row.error:
                    continue
                if row.seconds and contender.capped and len(row.seconds) >= self.options.other_runs:
                    continue
                if contender.capped and row.seconds and sum(row.seconds) + max(row.seconds) > self.cap_for(contender):
                    continue  # enough of a slow one: another run would take it past the cap
                try:
                    self.measure(contender, row, case, chat, facts, judge=not row.seconds)
                except OverCap:
                    row.over_cap = True
                    if chat.source["kind"] == "synthetic":
                        self.over_cap_at.setdefault((contender.key, case.budget_label), case.size)
        for row in case.rows:
            print(f"    {row.contender:34} {_short(row)}", file=sys.stderr)

    def measure(self, contender: Contender, row: Row, case: Case, chat: Conversation, facts: oracle.Facts,
                judge: bool) -> None:
        if contender.capped:
            request = {"source": chat.source, "budget": case.budget, "key": contender.key}
            worker = self.workers[contender.family]
            reply = worker.ask({**request, "op": "prepare"}, timeout=600)  # once per worker process
            if "error" in reply:
                row.error = reply["error"]
                return
            cap = self.cap_for(contender)
            like = next((c for c in self.contenders if c.key == contender.paired_with), None)
            # its like-for-like contextfit fit, timed just before (the two share the machine's drift)
            paired = measure_once(like, chat.messages, case.budget)[0] if like is not None else None
            reply = worker.ask({**request, "op": "run", "judge": judge, "cap": cap},
                               timeout=cap + 30)  # the worker stops itself at the cap; this is the backstop
            if reply.get("over_cap"):
                raise OverCap(f"over the {cap:g} s cap")
            if "error" in reply:
                row.error = reply["error"]
                return
            row.seconds.append(reply["seconds"])
            if paired is not None:
                row.paired.append(paired)
            if judge:
                outcome = oracle.Outcome(**reply["outcome"])
                row.verdict = _judge(facts, outcome, case.budget)
            return
        paired = None
        if contender.family == "contextfit" and contender.mode == "cold" and contender.counts_excluded and self.floor:
            paired, _, _ = measure_once(self.floor, chat.messages, case.budget)
        seconds, state, output = measure_once(contender, chat.messages, case.budget)
        row.seconds.append(seconds)
        if contender.family == "contextfit" and contender.mode == "warm":
            paired = state[3]
        if paired is not None:
            row.paired.append(paired)
        if judge and contender.outcome is not None:
            row.verdict = _judge(facts, contender.outcome(state, output), case.budget)

    def measure_memory(self, cases: list[Case]) -> None:
        """Peak memory, two fresh processes at a time (timing is over: they may share the CPUs)."""
        from concurrent.futures import ThreadPoolExecutor

        options = self.options
        jobs = []
        for case in cases:
            if case.size not in options.memory_sizes or case.source["kind"] != "synthetic":
                continue
            if case.budget_label not in options.memory_budgets:
                continue
            for contender in self.contenders:
                row = case.row(contender.key)
                if row is None or row.skipped or row.error or (contender.mode == "warm" and not options.memory_warm):
                    continue
                if row.over_cap:
                    row.memory = {"over_cap": True}
                    continue
                cap = self.cap_for(contender) if contender.capped else None
                spec = {"source": case.source, "budget": case.budget, "key": contender.key, "cap": cap}
                jobs.append((row, spec, 900 + (cap or 0)))
        if not jobs:
            return
        self.log(f"peak memory: {len(jobs)} fresh processes")
        with ThreadPoolExecutor(max_workers=2) as pool:
            for (row, _, _), memory in zip(jobs, pool.map(lambda job: measure_memory(job[1], job[2]), jobs)):
                row.memory = memory


def _short(row: Row) -> str:
    if row.skipped:
        return f"skipped: {row.skipped}"
    if row.error:
        return f"error: {row.error.splitlines()[0]}"
    text = f"{row.median * 1000:10.2f} ms x{len(row.seconds)}" if row.seconds else ""
    if row.over_cap:
        text += " > cap"
    if row.verdict and not oracle.correct(row.verdict):
        text += f"  {row.verdict}"
    return text


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    import os
    import platform
    from importlib.metadata import PackageNotFoundError, version

    cpu = "unknown"
    try:
        cpu = next(
            line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    versions = {}
    for package in ("contextfit", "tiktoken", "langchain-core", "litellm", "plotly"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "load_average": os.getloadavg(),
    }


def to_json(options: Options, cases: list[Case], info: dict, targets: list[dict]) -> dict:
    """The whole run as plain data (bench/results/bench-<mode>.json)."""
    data_options = {**asdict(options), "out": str(options.out)}
    return {"options": data_options, "machine": info, "targets": targets, "cases": [asdict(case) for case in cases]}


def save_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str))
