"""The load test: N ``contextfit serve`` processes on one PostgreSQL database.

    make bench ARGS=--load                       # 200 chats x 5 generations, 1 process then 4
    python -m bench.load --chats 20 --generations 2 --processes 2   # a smaller run

Uses the PostgreSQL named by ``--db``, else ``$CONTEXTFIT_LOAD_PG_URL``, else
``$CONTEXTFIT_TEST_PG_URL`` (Debian's, started by ``.ci/run``; each phase
gets a fresh schema, dropped afterwards). Everything is on loopback: the API
processes, a fake OpenAI-compatible provider that answers after a delay
(used by the generations that are cancelled), and the client.

Each phase starts ``P`` API processes, warms each up (one untimed chat),
then a client runs ``chats`` chats of ``generations`` generations each (a
context preview, a new user message and a generation per turn), at most ``concurrency`` requests at once, each
request to the next live process in turn. ``cancel_every``-th generation
goes to the slow provider and is cancelled through *another* process. In a
phase with several processes, one is SIGKILLed when half the turns are
done (while a generation waits for its provider there); the client then
uses the others. After the load, the phase waits a
lease and a half and checks the invariants in the database:

- ``one_audit_per_chat``: every chat whose generation got an answer has
  exactly one audit, complete (parseable, final status, the row's generation
  id) and, when its last generation completed, that generation's;
- ``no_expired_pending``: no generation in progress whose lease ran out;
- ``no_orphans``: no message, generation or audit without its chat;
- ``killed_generation_interrupted``: the generation that was waiting for
  its provider in the killed process (one is started there just before the
  SIGKILL) has been finalized ``failed`` / ``INTERRUPTED`` by the others.

Reports requests per second, p50/p95/p99 per operation, answers by code,
the invariants, and the speed-up of P processes over 1 (same workload, same
run). Writes ``bench/results/load.json`` and ``load.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from tests.support.servers import Cluster, fresh_schema

RESULTS = Path(__file__).resolve().parent / "results"
MODEL = "llama-3.1-8b"  # an approximate tokenizer: no vocabulary to load
FAKE_KEY = "sk-load-test"


class SlowProvider:
    """An OpenAI-compatible server on 127.0.0.1 that answers after ``delay`` seconds.

    ``seen`` holds the ``tag:<hex>`` marks found in the requests it received: a
    generation whose chat carries a mark has begun (its audit is pending).
    """

    def __init__(self, delay: float) -> None:
        self.seen: set[str] = set()
        handler = self._handler(delay, self.seen)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *args: None  # a cancelled client hangs up: expected
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> SlowProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def _handler(delay: float, seen: set[str]):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
                seen.update(re.findall(r"tag:([0-9a-f]{32})", body))
                time.sleep(delay)
                data = json.dumps({"model": MODEL, "choices": [{"message": {"role": "assistant", "content": "slow"},
                                   "finish_reason": "stop"}]}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


@dataclass
class Workload:
    chats: int = 200
    generations: int = 5
    concurrency: int = 32
    cancel_every: int = 20  # every n-th generation is slow and cancelled through another process
    slow_seconds: float = 10.0  # longer than a loaded request takes: the cancel arrives first
    begun_within: float = 30.0  # seconds a slow generation may take to reach the provider
    lease: float = 5.0
    poll: float = 0.2


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    answers: Counter = field(default_factory=Counter)
    last: dict[str, dict] = field(default_factory=dict)  # chat id -> last generate answer (status, body)
    answered: set = field(default_factory=set)  # chats whose generate got any HTTP answer
    seconds: float = 0.0
    killed: int | None = None
    doomed: str | None = None  # the chat whose generation ran in the killed process

    def note(self, op: str, seconds: float, code: str) -> None:
        self.latencies.setdefault(op, []).append(seconds)
        self.answers[f"{op} {code}"] += 1


class Client:
    """Sends each request to the next live process, at most ``concurrency`` at once."""

    def __init__(self, cluster: Cluster, workload: Workload, stats: Stats, provider: SlowProvider) -> None:
        self.cluster, self.workload, self.stats, self.provider = cluster, workload, stats, provider
        self.live = list(range(len(cluster.ports)))
        self.turn = 0
        self.gate = asyncio.Semaphore(workload.concurrency)
        self.http = httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=workload.concurrency * 2))

    def pick(self, avoid: int | None = None) -> int:
        choices = [index for index in self.live if index != avoid] or self.live
        self.turn += 1
        return choices[self.turn % len(choices)]

    async def call(self, op: str, method: str, path: str, body: Any = None, *, index: int | None = None):
        """One request; returns ``(status, json)`` or ``(None, None)`` when the process did not answer."""
        async with self.gate:
            index = self.pick() if index is None else index
            started = time.perf_counter()
            try:
                response = await self.http.request(method, self.cluster.url(index) + path, json=body)
            except httpx.TransportError:
                self.stats.note(op, time.perf_counter() - started, "NO_ANSWER")
                return None, None
            elapsed = time.perf_counter() - started
            payload = response.json() if response.content else None
            code = str(response.status_code)
            if response.status_code >= 400 and isinstance(payload, dict):
                code += " " + payload.get("error", {}).get("code", "")
            self.stats.note(op, elapsed, code)
            return response.status_code, payload

    async def generate(self, chat_id: str, number: int) -> None:
        slow = self.workload.cancel_every and number % self.workload.cancel_every == 0
        path = f"/api/v2/chats/{chat_id}/generate"
        if not slow:
            status, body = await self.call("generate", "POST", path, {})
        else:
            index, tag = self.pick(), uuid.uuid4().hex
            task = asyncio.create_task(self.call("generate+cancel", "POST", path, self.slow_body(tag), index=index))
            await self.begun(tag, task)  # the user clicks stop while the reply is on its way
            await self.call("cancel", "POST", f"/api/v2/chats/{chat_id}/cancel", index=self.pick(avoid=index))
            status, body = await task
        if status is not None:
            self.stats.answered.add(chat_id)
        self.stats.last[chat_id] = {"status": status, "body": body}  # no answer: the newest may be INTERRUPTED

    @staticmethod
    def slow_body(tag: str) -> dict[str, Any]:
        """A generation with the slow provider whose prompt carries ``tag`` (in the persona)."""
        return {"provider": "openai", "settings": {"persona": f"tag:{tag}"}}

    async def begun(self, tag: str, task: asyncio.Task) -> None:
        """Wait until the slow provider has the generation marked ``tag`` (or its request ended)."""
        deadline = time.monotonic() + self.workload.begun_within
        while tag not in self.provider.seen and not task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    async def chat(self, number: int, counter: list[int], on_turn) -> None:
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"Chat {number}: hello"}]
        status, body = None, None
        while status is None:  # a process may be gone: the next one is tried
            status, body = await self.call("create", "POST", "/api/v2/chats", {"model": MODEL, "messages": messages})
        if status != 201:
            return
        chat_id = body["id"]
        for turn in range(self.workload.generations):
            await self.call("context-preview", "POST", "/api/v2/context-preview", {"chatId": chat_id})
            if turn:
                await self.call("append", "POST", f"/api/v2/chats/{chat_id}/messages",
                                {"messages": [{"role": "user", "content": f"turn {turn} " + "words " * 40}]})  # fmt: skip
            counter[0] += 1
            await self.generate(chat_id, counter[0])
            on_turn()

    async def kill_midway(self, halfway: asyncio.Event) -> None:
        """Once half the turns are done: a slow generation on the last process, then SIGKILL it."""
        await halfway.wait()
        victim = self.live[-1]
        status, body = await self.call("create", "POST", "/api/v2/chats", {"model": MODEL, "messages": [
            {"role": "user", "content": "doomed"}]}, index=victim)  # fmt: skip
        if status != 201:
            return
        path, tag = f"/api/v2/chats/{body['id']}/generate", uuid.uuid4().hex
        doomed = asyncio.create_task(self.call("generate (killed)", "POST", path, self.slow_body(tag), index=victim))
        await self.begun(tag, doomed)  # its audit is pending now, the provider holds the request
        self.live.remove(victim)
        await asyncio.to_thread(self.cluster.kill, victim)
        await doomed
        self.stats.killed, self.stats.doomed = victim, body["id"]

    async def warm_up(self) -> None:
        """One chat, preview and generation per process, untimed: each loads its catalog and tokenizer first."""
        for index in self.live:
            url = self.cluster.url(index) + "/api/v2"
            chat = (await self.http.post(url + "/chats", json={"model": MODEL, "messages": [
                {"role": "user", "content": "warm-up"}]})).json()  # fmt: skip
            await self.http.post(url + "/context-preview", json={"chatId": chat["id"]})
            await self.http.post(f"{url}/chats/{chat['id']}/generate", json={})
            await self.http.delete(f"{url}/chats/{chat['id']}")

    async def run(self, kill_at: int | None) -> None:
        await self.warm_up()
        counter, done, halfway = [0], [0], asyncio.Event()

        def on_turn() -> None:
            done[0] += 1
            if kill_at is not None and done[0] >= kill_at:
                halfway.set()

        started = time.perf_counter()
        chats = [self.chat(number, counter, on_turn) for number in range(self.workload.chats)]
        await asyncio.gather(*chats, *([self.kill_midway(halfway)] if kill_at is not None else []))
        self.stats.seconds = time.perf_counter() - started
        await self.http.aclose()


def check_invariants(database: str, stats: Stats) -> dict[str, Any]:
    """The invariants, read from the database (see the module docstring)."""
    from contextfit.serving.database import create_database_engine
    from contextfit.serving.liveness import database_clock

    engine = create_database_engine(database)
    try:
        with engine.connect() as connection:
            chats = {row[0] for row in connection.execute(sa.text("SELECT id FROM chats"))}
            audits = connection.execute(
                sa.text("SELECT chat_id, generation_id, status, audit, finished_at FROM context_audits")
            ).all()
            pending = connection.execute(sa.text("SELECT count(*) FROM generations")).scalar()
            expired = connection.execute(
                sa.select(sa.func.count()).select_from(sa.table("generations", sa.column("expires_at")))
                .where(sa.column("expires_at") < database_clock(connection))
            ).scalar()  # fmt: skip
            orphans = {
                table: connection.execute(
                    sa.text(f"SELECT count(*) FROM {table} WHERE chat_id NOT IN (SELECT id FROM chats)")
                ).scalar()
                for table in ("messages", "generations", "context_audits")
            }
            interrupted = sum(1 for row in audits if json.loads(row.audit).get("errorCode") == "INTERRUPTED")
    finally:
        engine.dispose()
    by_chat = Counter(row.chat_id for row in audits)
    bad = []
    for row in audits:
        audit = json.loads(row.audit)
        whole = (audit.get("generationId") == row.generation_id and audit.get("chatId") == row.chat_id
                 and audit.get("status") == row.status in ("completed", "failed", "cancelled")
                 and row.finished_at and audit.get("finishedAt") == row.finished_at)  # fmt: skip
        if not whole:
            bad.append(row.chat_id)
    stale = []
    audit_of = {row.chat_id: row.generation_id for row in audits}
    for chat_id, last in stats.last.items():
        if last["status"] == 200 and audit_of.get(chat_id) != last["body"]["audit"]["generationId"]:
            stale.append(chat_id)
    missing = [chat_id for chat_id in stats.answered if by_chat.get(chat_id) != 1]
    doomed = [row for row in audits if row.chat_id == stats.doomed]
    lost = stats.doomed is not None and not (
        len(doomed) == 1 and doomed[0].status == "failed" and json.loads(doomed[0].audit)["errorCode"] == "INTERRUPTED"
    )
    return {
        "chats": len(chats),
        "audits": len(audits),
        "interrupted_audits": interrupted,
        "pending": pending,
        "violations": {
            "one_audit_per_chat": len(missing) + len(bad) + len(stale),
            "no_expired_pending": expired,
            "no_orphans": sum(orphans.values()),
            "killed_generation_interrupted": int(lost),
        },
        "details": {"missing": missing[:5], "incomplete": bad[:5], "not_newest": stale[:5], "orphans": orphans},
    }


def percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {"n": len(values), **({"p50": values[0] * 1000} if values else {})}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"n": len(values), "p50": cuts[49] * 1000, "p95": cuts[94] * 1000, "p99": cuts[98] * 1000}


def run_phase(url: str, processes: int, workload: Workload, *, kill: bool, log_dir: Path) -> dict[str, Any]:
    """One phase on a fresh schema: start, load, (kill), wait a lease and a half, check."""
    env = {"CONTEXTFIT_LEASE_SECONDS": str(workload.lease), "CONTEXTFIT_CANCEL_POLL_SECONDS": str(workload.poll),
           "OPENAI_API_KEY": FAKE_KEY}  # fmt: skip
    with fresh_schema(url) as database, SlowProvider(workload.slow_seconds) as slow:
        env["CONTEXTFIT_OPENAI_BASE_URL"] = slow.url
        # A queue as deep as the client's concurrency: this measures throughput, not the SERVER_BUSY guard.
        cluster = Cluster(database, processes, env=env, log_dir=log_dir, extra=("--queue", str(workload.concurrency)))
        stats = Stats()
        try:
            client = Client(cluster, workload, stats, slow)
            kill_at = workload.chats * workload.generations // 2 if kill and processes > 1 else None
            asyncio.run(client.run(kill_at))
            time.sleep(workload.lease * 1.5 + 1)  # the survivors' reapers finalize the killed one's generations
            invariants = check_invariants(database, stats)
        finally:
            cluster.close()
    requests = sum(stats.answers.values())
    return {
        "processes": processes,
        "killed": stats.killed is not None,
        "seconds": round(stats.seconds, 2),
        "requests": requests,
        "requests_per_second": round(requests / stats.seconds, 1) if stats.seconds else 0.0,
        "latency_ms": {op: {k: round(v, 1) for k, v in percentiles(values).items()} for op, values in
                       sorted(stats.latencies.items())},  # fmt: skip
        "answers": dict(sorted(stats.answers.items())),
        "invariants": invariants,
    }


def markdown(phases: list[dict[str, Any]], workload: Workload, machine: str) -> str:
    lines = [f"# Load test: {workload.chats} chats x {workload.generations} generations, "
             f"{workload.concurrency} concurrent requests", "", machine, ""]  # fmt: skip
    lines += ["| processes | SIGKILL | seconds | requests | req/s | generate p50/p95/p99 ms | "
              "context-preview p50/p95/p99 ms | violations |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for phase in phases:
        def cell(op: str) -> str:
            found = phase["latency_ms"].get(op, {})
            return "/".join(f"{found.get(k, float('nan')):.0f}" for k in ("p50", "p95", "p99"))

        violations = sum(phase["invariants"]["violations"].values())
        lines.append(f"| {phase['processes']} | {'yes' if phase['killed'] else 'no'} | {phase['seconds']} | "
                     f"{phase['requests']} | {phase['requests_per_second']} | {cell('generate')} | "
                     f"{cell('context-preview')} | {violations} |")  # fmt: skip
    if len(phases) > 1 and phases[0]["requests_per_second"]:
        lines += ["", f"Speed-up of {phases[-1]['processes']} processes over {phases[0]['processes']}: "
                  f"{phases[-1]['requests_per_second'] / phases[0]['requests_per_second']:.2f}x"]  # fmt: skip
    for phase in phases:
        lines += ["", f"## {phase['processes']} process(es): answers by operation and code", ""]
        lines += [f"- `{key}`: {count}" for key, count in phase["answers"].items()]
        lines += ["", f"Invariants: {json.dumps(phase['invariants']['violations'])}; audits "
                  f"{phase['invariants']['audits']} for {phase['invariants']['chats']} chats, "
                  f"{phase['invariants']['interrupted_audits']} INTERRUPTED, "
                  f"{phase['invariants']['pending']} still pending"]  # fmt: skip
    return "\n".join(lines)


def machine() -> str:
    cores = os.cpu_count()
    return (f"Machine: {cores} CPU cores (shared with other work), Python {sys.version.split()[0]}; "
            "client, API processes, provider and PostgreSQL all on this machine.")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n")[0])
    parser.add_argument("--db", help="a PostgreSQL URL (default: $CONTEXTFIT_LOAD_PG_URL, else $CONTEXTFIT_TEST_PG_URL)")
    parser.add_argument("--processes", type=int, default=4, help="API processes of the second phase (default 4)")
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--cancel-every", type=int, default=Workload.cancel_every,
                        help="every n-th generation is slow and cancelled through another process (default %(default)s)")
    parser.add_argument("--lease", type=float, default=5.0, help="$CONTEXTFIT_LEASE_SECONDS of the servers")
    parser.add_argument("--no-baseline", action="store_true", help="only the phase of --processes, not one process first")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    url = args.db or os.environ.get("CONTEXTFIT_LOAD_PG_URL") or os.environ.get("CONTEXTFIT_TEST_PG_URL")
    if not url:
        parser.error("give a PostgreSQL URL: --db, $CONTEXTFIT_LOAD_PG_URL or $CONTEXTFIT_TEST_PG_URL")
    workload = Workload(args.chats, args.generations, args.concurrency, args.cancel_every, lease=args.lease)
    args.out.mkdir(parents=True, exist_ok=True)
    counts = (args.processes,) if args.no_baseline else (1, args.processes)
    phases = [run_phase(url, count, workload, kill=count > 1, log_dir=args.out) for count in counts]
    text = markdown(phases, workload, machine())
    (args.out / "load.json").write_text(json.dumps({"workload": asdict(workload), "phases": phases}, indent=2))
    (args.out / "load.md").write_text(text + "\n")
    print(text)
    failed = sum(sum(phase["invariants"]["violations"].values()) for phase in phases)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
