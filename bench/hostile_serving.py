"""Hostile clients and failures against ``contextfit serve``: what each costs, and how it ends.

    python -m bench.hostile --serving                 # every case below (a few minutes)
    python -m bench.hostile_serving lease --tries 10  # one case, with its own options

Each case starts real ``contextfit serve`` processes on loopback ports (SQLite,
or PostgreSQL through a TCP proxy for the outage) and talks to them over HTTP
only, so it runs unchanged against any version of the server:

- ``lease``: a generation waits for its provider while another connection
  holds SQLite's write lock for 2.5 leases; the reply arrives while the lock
  is held. Counts the replies stored, handed back in a 503, and lost, and the
  reaper's "finalized INTERRUPTED" log lines.
- ``facts``: 8 generations at once on chats whose must-survive facts are a
  regex that spends its whole time budget; meanwhile a small read every 20 ms
  measures how long the server stops answering.
- ``leaves``: the reply arrives while the database is locked for 3 leases;
  the client gives up after 2 s; in half the tries the server is then killed
  and started again. Counts the replies found in the chat afterwards, and
  what the audit says.
- ``appends``: 5,000 messages at a time into one chat, up to 150,000; the
  answer's size, where the chat stops, and how long the server stops
  answering during a generation on the largest chat.
- ``flood``: 400 sockets that stall in their headers, then 60 ordinary
  requests: how many are answered.
- ``outage``: every endpoint while the database is unreachable (PostgreSQL
  behind a proxy that is switched off), then after it is back.

Nothing here is a pass/fail target; the tests assert the behaviour, this
prints the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.support.api import TcpProxy, endpoint_calls  # the tests' proxy and list of endpoints
from tests.support.servers import Cluster, fresh_schema

MODEL = "llama-3.1-8b"  # an approximate tokenizer: nothing to load
KEY = "sk-bench-hostile"


class GatedProvider:
    """An OpenAI-compatible server on loopback: each request is counted in ``arrived``
    and answered ``paid reply <n>`` once ``gate`` is set."""

    def __init__(self) -> None:
        self.arrived = threading.Semaphore(0)
        self.gate = threading.Event()
        self.count = 0
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                provider.count += 1
                number = provider.count
                provider.arrived.release()
                provider.gate.wait(120)
                data = json.dumps({"model": MODEL, "choices": [{"finish_reason": "stop", "message": {
                    "role": "assistant", "content": f"paid reply {number}"}}]}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *args: None
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


class Background(threading.Thread):
    """``call()`` in a thread; :meth:`result` is its value or the exception it raised."""

    def __init__(self, call: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.call, self.value = call, None
        self.start()

    def run(self) -> None:
        try:
            self.value = self.call()
        except Exception as exc:  # a client timeout, a closed connection: part of the outcome
            self.value = exc

    def result(self, timeout: float = 300) -> Any:
        self.join(timeout)
        return self.value


def _env(lease: float, provider: GatedProvider | None = None, **extra: str) -> dict[str, str]:
    env = {"CONTEXTFIT_LEASE_SECONDS": str(lease), "CONTEXTFIT_CANCEL_POLL_SECONDS": "0.2", **extra}
    if provider is not None:
        env.update(OPENAI_API_KEY=KEY, CONTEXTFIT_OPENAI_BASE_URL=provider.url)
    return env


def _new_chat(url: str, messages: list[dict] | None = None, settings: dict | None = None) -> str:
    body = {"model": MODEL, "messages": messages or [{"role": "user", "content": "Hi"}], "settings": settings or {}}
    response = httpx.post(url + "/api/v2/chats", json=body, timeout=120)
    response.raise_for_status()
    return response.json()["id"]


def _contents(url: str, chat_id: str) -> list[str]:
    response = httpx.get(f"{url}/api/v2/chats/{chat_id}", timeout=120)
    return [m.get("content") for m in response.json().get("messages", [])] if response.status_code == 200 else []


def _audit_code(url: str, chat_id: str) -> str:
    audit = httpx.get(f"{url}/api/v2/chats/{chat_id}/context-audit", timeout=60).json()
    return audit.get("errorCode") or audit.get("status") or audit.get("error", {}).get("code", "?")


def _held_write_lock(database: str) -> sqlite3.Connection:
    lock = sqlite3.connect(database, timeout=60, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    return lock


class Heartbeat(threading.Thread):
    """A small read every ``interval`` seconds until :meth:`stop`; ``worst`` is the slowest answer."""

    def __init__(self, url: str, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.url, self.interval, self.latencies = url, interval, []
        self._done = threading.Event()
        self.start()

    def run(self) -> None:
        with httpx.Client(timeout=120) as client:
            while not self._done.is_set():
                started = time.perf_counter()
                try:
                    client.get(self.url)
                except httpx.TransportError:
                    pass  # counted by its time like any other answer
                self.latencies.append(time.perf_counter() - started)
                self._done.wait(self.interval)

    def stop(self) -> dict[str, float]:
        self._done.set()
        self.join()
        return {"reads": len(self.latencies), "slowest_read_s": round(max(self.latencies, default=0.0), 2),
                "reads_over_1s": sum(latency > 1 for latency in self.latencies)}


# -- the cases ---------------------------------------------------------------------------------


def case_lease(tmp: Path, tries: int = 10, lease: float = 2.0) -> dict[str, Any]:
    """A write lock held past the lease while the reply arrives."""
    provider = GatedProvider()
    database = str(tmp / "lease.db")
    cluster = Cluster(database, 1, env=_env(lease, provider), log_dir=tmp)
    outcomes, audits = Counter(), Counter()
    try:
        url = cluster.url(0)
        for _ in range(tries):
            chat_id = _new_chat(url)
            provider.gate.clear()
            call = Background(lambda: httpx.post(f"{url}/api/v2/chats/{chat_id}/generate",
                                                 json={"provider": "openai"}, timeout=300))  # fmt: skip
            provider.arrived.acquire(timeout=60)
            lock = _held_write_lock(database)
            time.sleep(lease * 1.25)
            provider.gate.set()  # the paid reply arrives while the lock is held
            time.sleep(lease * 1.25)
            lock.execute("COMMIT")
            lock.close()
            response = call.result()
            reply = f"paid reply {provider.count}"
            body = response.json() if isinstance(response, httpx.Response) else {}
            if reply in _contents(url, chat_id):
                outcomes["stored"] += 1
            elif body.get("error", {}).get("reply", {}).get("content") == reply:
                outcomes["handed back in the 503"] += 1
            else:
                outcomes["lost"] += 1
            audits[_audit_code(url, chat_id)] += 1
    finally:
        cluster.close()
        provider.close()
    logged = cluster.logs[0].read_text().count("finalized INTERRUPTED")
    return {"tries": tries, "lease_s": lease, **outcomes, "audits": dict(audits), "reaper_log_lines": logged}


def case_facts(tmp: Path, generates: int = 8) -> dict[str, Any]:
    """Concurrent generations whose regex facts spend their whole time budget."""
    cluster = Cluster(str(tmp / "facts.db"), 1, log_dir=tmp)
    try:
        url = cluster.url(0)
        slow = [{"role": "user", "content": "a" * 40 + "b"} for _ in range(8)]  # (a|a)+$ backtracks on each
        chats = [_new_chat(url, slow, {"facts": ["/(a|a)+$/"]}) for _ in range(generates)]
        beat = Heartbeat(f"{url}/api/v2/chats/{_new_chat(url)}")
        started = time.perf_counter()
        calls = [Background(lambda chat_id=chat_id: httpx.post(f"{url}/api/v2/chats/{chat_id}/generate", timeout=300))
                 for chat_id in chats]  # fmt: skip
        statuses = Counter(getattr(call.result(), "status_code", "error") for call in calls)
        seconds = time.perf_counter() - started
        beats = beat.stop()
    finally:
        cluster.close()
    return {"generates": generates, "statuses": dict(statuses), "seconds": round(seconds, 1), **beats}


def case_leaves(tmp: Path, tries: int = 4, lease: float = 2.0) -> dict[str, Any]:
    """The client gives up before the 503; half the time the server is killed afterwards."""
    provider = GatedProvider()
    database = str(tmp / "leaves.db")
    env = _env(lease, provider, CONTEXTFIT_DB_LOCK_TIMEOUT="1")
    found, audits = Counter(), Counter()
    try:
        for attempt in range(tries):
            killed = attempt % 2 == 1
            cluster = Cluster(database, 1, env=env, log_dir=tmp)
            url = cluster.url(0)
            chat_id = _new_chat(url)
            provider.gate.clear()
            call = Background(lambda: httpx.post(f"{url}/api/v2/chats/{chat_id}/generate", json={"provider": "openai"},
                                                 timeout=2.0))  # fmt: skip
            provider.arrived.acquire(timeout=60)
            lock = _held_write_lock(database)
            provider.gate.set()
            call.result()  # the client gave up (a timeout) before the retries ended
            time.sleep(lease * 3)  # an outage longer than the lease
            if killed:
                cluster.kill(0)
            lock.execute("COMMIT")
            lock.close()
            if killed:
                cluster.close()
                cluster = Cluster(database, 1, env=env, log_dir=tmp)
                url = cluster.url(0)
            time.sleep(lease * 3)  # the background retry, or the start-up
            kept = f"paid reply {provider.count}" in _contents(url, chat_id)
            found[("killed" if killed else "kept running") + (": reply in the chat" if kept else ": reply lost")] += 1
            audits[_audit_code(url, chat_id)] += 1
            cluster.close()
    finally:
        provider.close()
    return {"tries": tries, **found, "audits": dict(audits)}


def case_appends(tmp: Path, up_to: int = 150_000, batch: int = 5_000) -> dict[str, Any]:
    """Appends to one chat far past what one file may hold."""
    cluster = Cluster(str(tmp / "appends.db"), 1, log_dir=tmp)
    rows: list[dict[str, Any]] = []
    try:
        url = cluster.url(0)
        chat_id = _new_chat(url)
        with httpx.Client(timeout=300) as client:
            while sum(row["accepted"] for row in rows) < up_to:
                messages = [{"role": "user" if n % 2 else "assistant", "content": f"message {len(rows)}-{n} of a long chat"}
                            for n in range(batch)]  # fmt: skip
                started = time.perf_counter()
                response = client.post(f"{url}/api/v2/chats/{chat_id}/messages", json={"messages": messages})
                rows.append({"status": response.status_code, "bytes": len(response.content),
                             "seconds": time.perf_counter() - started, "accepted": batch if response.status_code == 200 else 0})
                if response.status_code != 200:
                    code = response.json()["error"]["code"]
                    break
            else:
                code = None
            stored = len(client.get(f"{url}/api/v2/chats/{chat_id}").json()["messages"])
            beat = Heartbeat(f"{url}/api/v2/chats/{_new_chat(url)}")
            generated = client.post(f"{url}/api/v2/chats/{chat_id}/generate").status_code
            beats = beat.stop()
            preview = client.post(f"{url}/api/v2/context-preview", json={"chatId": chat_id})
    finally:
        cluster.close()
    accepted = [row for row in rows if row["status"] == 200]
    return {"appended": sum(row["accepted"] for row in rows), "stored_messages": stored, "refused_with": code,
            "last_answer_bytes": accepted[-1]["bytes"] if accepted else 0, "largest_answer_bytes": max(r["bytes"] for r in rows),
            "slowest_append_s": round(max(r["seconds"] for r in rows), 2), "generate": generated,
            "preview_bytes": len(preview.content), **beats}  # fmt: skip


def case_flood(tmp: Path, stalled: int = 400, legit: int = 60) -> dict[str, Any]:
    """Stalled sockets past the connection cap, then ordinary requests."""
    cluster = Cluster(str(tmp / "flood.db"), 1, log_dir=tmp)
    sockets: list[socket.socket] = []
    answered = refused = 0
    try:
        port = cluster.ports[0]
        for _ in range(stalled):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET /api/v2/chats HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the end of the headers
            sockets.append(sock)
        time.sleep(0.5)
        for _ in range(legit):
            try:
                response = httpx.get(cluster.url(0) + "/api/v2/chats", headers={"connection": "close"}, timeout=5)
                answered += response.status_code == 200
            except httpx.TransportError:
                refused += 1
    finally:
        for sock in sockets:
            sock.close()
        cluster.close()
    return {"stalled": stalled, "requests": legit, "answered": answered, "refused": refused}


def _every_endpoint(url: str, chat_id: str, doomed: str) -> dict[str, str]:
    """One request to each endpoint; ``status code[+Retry-After]`` per endpoint."""
    calls = endpoint_calls(chat_id, doomed)
    answers = {}
    for name, (method, path, body) in calls.items():
        try:
            response = httpx.request(method, url + path, json=body, timeout=120)
            code = response.json().get("error", {}).get("code", "") if response.status_code >= 400 else ""
            retry = "+Retry-After" if "retry-after" in response.headers else ""
            answers[name] = f"{response.status_code}{' ' + code if code else ''}{retry}"
        except httpx.TransportError as exc:
            answers[name] = type(exc).__name__
    return answers


def case_outage(tmp: Path) -> dict[str, Any]:
    """PostgreSQL unreachable (a proxy switched off), then back."""
    pg = os.environ.get("CONTEXTFIT_TEST_PG_URL") or os.environ.get("CONTEXTFIT_LOAD_PG_URL")
    if not pg:
        return {"skipped": "set CONTEXTFIT_TEST_PG_URL to a PostgreSQL database"}
    target = httpx.URL(pg.replace("postgresql://", "http://", 1))
    proxy = TcpProxy((target.host, target.port or 5432))
    where = f"{target.host}:{target.port}" if target.port else target.host
    with fresh_schema(pg) as database:  # made and dropped directly; the server goes through the proxy
        cluster = Cluster(database.replace(where, f"127.0.0.1:{proxy.port}", 1), 1,
                          env={"CONTEXTFIT_DB_LOCK_TIMEOUT": "2"}, log_dir=tmp)  # fmt: skip
        try:
            url = cluster.url(0)
            chat_id, doomed = _new_chat(url), _new_chat(url)
            httpx.post(f"{url}/api/v2/chats/{chat_id}/generate", timeout=60)
            proxy.down()
            during = _every_endpoint(url, chat_id, doomed)
            proxy.up()
            time.sleep(1)
            after = _every_endpoint(url, chat_id, doomed)
        finally:
            cluster.close()
            proxy.down()
    return {"while down": during, "once back": after}


CASES: dict[str, Callable[..., dict[str, Any]]] = {
    "lease": case_lease, "facts": case_facts, "leaves": case_leaves, "appends": case_appends,
    "flood": case_flood, "outage": case_outage,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile_serving", description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"any of {', '.join(CASES)} (default: every case)")
    parser.add_argument("--tries", type=int, help="tries of the lease and leaves cases")
    parser.add_argument("--lease", type=float, help="the lease of the lease and leaves cases, seconds (default 2)")
    args = parser.parse_args(argv)
    unknown = set(args.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown case(s) {', '.join(sorted(unknown))}; choose from {', '.join(CASES)}")
    for name in args.cases or list(CASES):
        options = {key: value for key, value in (("tries", args.tries), ("lease", args.lease))
                   if value and name in ("lease", "leaves")}  # fmt: skip
        with tempfile.TemporaryDirectory(prefix=f"contextfit-hostile-{name}-") as folder:
            started = time.perf_counter()
            result = CASES[name](Path(folder), **options)
        print(f"| {name} | {time.perf_counter() - started:.0f} s | {json.dumps(result)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
