"""Many ``contextfit serve`` processes on one database behave as one (issue 18).

Every test that can runs on SQLite and on PostgreSQL (``database`` fixture),
with at least two real server processes on loopback ports (``support.servers.Cluster``).
The slow provider is the fake OpenAI-compatible server's ``hold`` behaviour:
it keeps each request until the test releases it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import nullcontext

import anyio
import httpx
import pytest
import sqlalchemy as sa
from support.api import API_KEY, FakeProvider
from support.bench import run_bench
from support.servers import Cluster, fresh_schema

from contextfit.serving import liveness
from contextfit.serving.audit import COMPLETED, FAILED, audit_from_plan
from contextfit.serving.cancellation import request_cancel
from contextfit.errors import SchemaTooNew
from contextfit.serving.generation import generate
from contextfit.pipeline.plan import plan_prompt
from contextfit.serving.store import open_store


MODEL = "llama-3.1-8b"  # an approximate tokenizer: servers start without loading a vocabulary
HI = [{"role": "user", "content": "Hi"}]
WAIT = 30  # seconds a test waits for an event before it calls the servers stuck
LEASE = 2.0


@pytest.fixture
def holding() -> Iterator[FakeProvider]:
    """A fake provider of this test alone: its ``hold`` requests wait until ``release`` is set."""
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def shared_holding() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def pair(request, shared_holding, tmp_path_factory) -> Iterator[tuple[Cluster, FakeProvider, str]]:
    """Two server processes on one fresh database, shared by the tests that leave them running."""
    from support.api_fixtures import PG_URL

    tmp = tmp_path_factory.mktemp("pair")
    if request.param == "postgresql" and not PG_URL:
        pytest.skip("set CONTEXTFIT_TEST_PG_URL to run the PostgreSQL variant")
    with fresh_schema(PG_URL) if request.param == "postgresql" else nullcontext(str(tmp / "pair.db")) as database:
        servers = cluster(database, 2, shared_holding, tmp)
        try:
            yield servers, shared_holding, database
        finally:
            shared_holding.release.set()
            servers.close()


@pytest.fixture
def held(pair) -> Iterator[tuple[Cluster, FakeProvider, str]]:
    """``pair``, its provider holding requests again until the test sets ``release``."""
    servers, fake, database = pair
    fake.release.clear()
    yield servers, fake, database
    fake.release.set()


def cluster(database: str, count: int, fake: FakeProvider | None, tmp_path, *extra: str) -> Cluster:
    env = {"CONTEXTFIT_LEASE_SECONDS": str(LEASE), "CONTEXTFIT_CANCEL_POLL_SECONDS": "0.2", "OPENAI_API_KEY": API_KEY}
    if fake is not None:
        env["CONTEXTFIT_OPENAI_BASE_URL"] = fake.url("hold")
    return Cluster(database, count, env=env, log_dir=tmp_path, extra=extra)


class Request(threading.Thread):
    """One HTTP request in a thread of its own (a generation that waits for its provider)."""

    def __init__(self, method: str, url: str, **kwargs) -> None:
        super().__init__(daemon=True)
        self.method, self.url, self.kwargs, self.response = method, url, kwargs, None
        self.start()

    def run(self) -> None:
        try:
            self.response = httpx.request(self.method, self.url, timeout=90, **self.kwargs)
        except httpx.TransportError as exc:
            self.response = exc

    def result(self) -> httpx.Response | Exception:
        self.join(WAIT)
        assert not self.is_alive(), f"{self.url} did not answer within {WAIT} s"
        return self.response


def new_chat(url: str) -> str:
    return httpx.post(url + "/api/v2/chats", json={"model": MODEL, "messages": HI}).json()["id"]


def audit_of(url: str, chat_id: str) -> dict:
    return httpx.get(f"{url}/api/v2/chats/{chat_id}/context-audit").json()


# -- the latest audit per chat ---------------------------------------------------------------


def test_the_generation_that_began_last_wins_whichever_process_finishes_first(held):
    servers, holding, _ = held
    first, second = servers.url(0), servers.url(1)
    chat_id = new_chat(first)
    older = Request("POST", f"{first}/api/v2/chats/{chat_id}/generate", json={"provider": "openai"})
    assert holding.arrived.acquire(timeout=WAIT)  # its audit is pending in process 0
    newer = httpx.post(f"{second}/api/v2/chats/{chat_id}/generate", json={}).json()  # echo, at once
    assert audit_of(first, chat_id) == newer["audit"]
    holding.release.set()
    late = older.result()
    assert late.status_code == 200 and late.json()["audit"]["status"] == COMPLETED
    assert audit_of(first, chat_id) == audit_of(second, chat_id) == newer["audit"]  # began later: it stays


def test_concurrent_generations_on_one_chat_leave_one_whole_audit(pair):
    servers, _, database = pair
    chat_id = new_chat(servers.url(0))
    requests = [Request("POST", f"{servers.url(n % 2)}/api/v2/chats/{chat_id}/generate", json={})
                for n in range(12)]  # fmt: skip
    answers = [request.result() for request in requests]
    assert all(answer.status_code == 200 for answer in answers)
    audits = [answer.json()["audit"] for answer in answers]
    stored = audit_of(servers.url(1), chat_id)
    assert stored in audits  # exactly one generation's audit, field for field: never a mix
    engine = sa.create_engine(_url(database))
    with engine.connect() as connection:
        for table in ("context_audits", "generations"):
            count = connection.execute(sa.text(f"SELECT count(*) FROM {table} WHERE chat_id = :id"), {"id": chat_id})
            assert count.scalar() == (table == "context_audits")
    engine.dispose()


# -- cancellation from any process -----------------------------------------------------------


def test_a_cancel_received_by_another_process_stops_the_generation(held):
    servers, holding, _ = held
    runner, other = servers.url(0), servers.url(1)
    chat_id = new_chat(runner)
    running = Request("POST", f"{runner}/api/v2/chats/{chat_id}/generate", json={"provider": "openai"})
    assert holding.arrived.acquire(timeout=WAIT)
    assert httpx.post(f"{other}/api/v2/chats/{chat_id}/cancel").json() == {"cancelled": 1}
    answer = running.result()  # within the poll interval, not when the provider would answer
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "CANCELLED"
    audit = audit_of(other, chat_id)
    assert (audit["status"], audit["errorCode"]) == ("cancelled", "CANCELLED")
    assert httpx.get(f"{other}/api/v2/chats/{chat_id}").json()["messages"] == HI  # no reply stored


def test_cancel_flags_only_that_chats_generations(store):
    chat, other = store.create_chat(messages=HI), store.create_chat(messages=HI)
    for chat_id in (chat.id, chat.id, other.id):
        store.begin_generation(audit_from_plan(plan_prompt(HI, model=MODEL), chat_id=chat_id, provider="echo"))
    assert request_cancel(store.engine, chat.id) == 2
    assert request_cancel(store.engine, "chat_missing") == 0
    with store.engine.connect() as connection:
        flags = dict(connection.execute(sa.text("SELECT chat_id, sum(cancel_requested) FROM generations GROUP BY chat_id")).all())
    assert flags == {chat.id: 2, other.id: 0}


# -- a killed process: the lease runs out, another process finalizes INTERRUPTED --------------


def test_a_killed_process_is_finalized_interrupted_by_another_process(database, holding, tmp_path):
    servers = cluster(database, 2, holding, tmp_path)
    try:
        victim, survivor = servers.url(0), servers.url(1)
        chat_id = new_chat(victim)
        doomed = Request("POST", f"{victim}/api/v2/chats/{chat_id}/generate", json={"provider": "openai"})
        assert holding.arrived.acquire(timeout=WAIT)
        engine = sa.create_engine(_url(database))
        with engine.begin() as connection:  # as if it ran on another machine: only its lease can tell it died
            connection.execute(sa.text("UPDATE generations SET owner = 'another-host:1:x'"))
        servers.kill(0)
        assert isinstance(doomed.result(), httpx.TransportError)
        deadline = time.monotonic() + WAIT
        while (audit := audit_of(survivor, chat_id)).get("status") != FAILED and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (audit["status"], audit["errorCode"], audit["provider"]) == (FAILED, "INTERRUPTED", "openai")
        with engine.connect() as connection:
            assert connection.execute(sa.text("SELECT count(*) FROM generations")).scalar() == 0
        engine.dispose()
    finally:
        holding.release.set()
        servers.close()


def test_only_expired_leases_are_finalized_whatever_host_owns_them(store):
    chat = store.create_chat(messages=HI)
    plan = plan_prompt(HI, model=MODEL)
    expired, alive = (audit_from_plan(plan, chat_id=chat.id, provider="echo") for _ in range(2))
    for audit in (expired, alive):
        store.begin_generation(audit)
    with store.engine.begin() as connection:
        connection.execute(sa.text("UPDATE generations SET owner = 'another-host:1:x'"))
        connection.execute(sa.text("UPDATE generations SET expires_at = expires_at - 3600 WHERE generation_id = :id"),
                           {"id": expired.generation_id})  # fmt: skip
    assert liveness.expired_generations(store.engine) == {expired.generation_id}
    assert store.recover_interrupted() == [expired.generation_id]
    assert (store.get_audit(chat.id).generation_id, store.get_audit(chat.id).error_code) == (expired.generation_id, "INTERRUPTED")
    assert [audit.generation_id for _, _, audit in store.pending_generations()] == [alive.generation_id]


def test_a_lease_is_renewed_while_it_runs_and_a_reply_after_losing_it_is_still_stored(store):
    chat = store.create_chat(messages=HI)
    audit = audit_from_plan(plan_prompt(HI, model=MODEL), chat_id=chat.id, provider="echo")
    seq = store.begin_generation(audit)
    assert liveness.renew(store.engine, audit.generation_id, 30)["left"] > 19  # fresh: read, not rewritten
    with store.engine.begin() as connection:
        connection.execute(sa.text("UPDATE generations SET expires_at = expires_at - 25"))
    assert liveness.renew(store.engine, audit.generation_id, 30) == {"cancel_requested": False, "left": 30.0}
    assert liveness.expired_generations(store.engine) == set()
    with store.engine.begin() as connection:
        connection.execute(sa.text("UPDATE generations SET expires_at = expires_at - 3600"))
    assert store.recover_interrupted() == []  # its own process is alive: it never reaps its own generation
    with store.engine.begin() as connection:  # as another process sees it: only the lease can tell
        connection.execute(sa.text("UPDATE generations SET owner = 'another-host:1:x'"))
    assert store.recover_interrupted() == [audit.generation_id]
    assert store.get_audit(chat.id).error_code == "INTERRUPTED" and liveness.renew(store.engine, audit.generation_id) is None
    # Its own process answering late still stores the paid reply, and the true audit replaces the guess.
    late = {"role": "assistant", "content": "late", "meta": {"id": "msg_late"}}
    assert store.finish_generation(audit.finish(COMPLETED), seq, late) == late
    assert store.get_audit(chat.id).status == COMPLETED
    assert store.get_chat(chat.id).messages == [*HI, late]
    assert store.finish_generation(audit.finish(COMPLETED), seq, late) == late  # written again: stored once
    assert store.get_chat(chat.id).messages == [*HI, late]


def test_a_generation_finalized_elsewhere_while_it_waits_still_stores_its_reply(store, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_CANCEL_POLL_SECONDS", "0.05")
    chat = store.create_chat(messages=HI)

    class Stalled:
        name, template = "stalled", None

        async def complete(self, request):
            with store.engine.begin() as connection:  # meanwhile its lease ran out, and another process reaped it
                connection.execute(sa.text("UPDATE generations SET expires_at = expires_at - 3600, owner = 'host:1:x'"))
            assert await anyio.to_thread.run_sync(store.recover_interrupted)
            await anyio.sleep(0.5)  # several polls find the row gone: the call goes on
            from contextfit.serving.providers import ProviderReply
            return ProviderReply({"role": "assistant", "content": "paid"}, request.model, "stop")

    result = anyio.run(lambda: generate(store, {"stalled": Stalled()}, chat.id, provider="stalled"))
    assert result.message["content"] == "paid" and result.audit.status == COMPLETED
    assert store.get_audit(chat.id).status == COMPLETED
    assert [m["content"] for m in store.get_chat(chat.id).messages] == ["Hi", "paid"]


# -- migrations: once, and never on a newer schema ---------------------------------------------


def test_migrations_run_once_when_processes_start_together(database, tmp_path):
    servers = cluster(database, 4, None, tmp_path)  # all four start at once on an empty database
    try:
        engine = sa.create_engine(_url(database))
        with engine.connect() as connection:
            names = [row[0] for row in connection.execute(sa.text("SELECT name FROM _contextfit_migrations"))]
        engine.dispose()
        assert sorted(names) == sorted(set(names)) and "m005_generation_leases" in names
        for index in range(4):
            assert httpx.post(f"{servers.url(index)}/api/v2/chats/{new_chat(servers.url(index))}/generate").status_code == 200
    finally:
        servers.close()
    assert not any("Traceback" in log.read_text() for log in servers.logs)


def test_a_process_refuses_a_database_migrated_by_a_newer_contextfit(database):
    open_store(database).close()
    engine = sa.create_engine(_url(database))
    with engine.begin() as connection:
        connection.execute(sa.text("INSERT INTO _contextfit_migrations (name, applied_at) VALUES ('m999_future', 'x')"))
    engine.dispose()
    with pytest.raises(SchemaTooNew, match="newer contextfit .*m999_future"):
        open_store(database)
    serve = subprocess.run([sys.executable, "-m", "contextfit", "serve", "--db", database, "--port", "1"],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert serve.returncode == 2
    assert "SCHEMA_TOO_NEW" in serve.stderr and "upgrade contextfit" in serve.stderr and "Traceback" not in serve.stderr


# -- contextfit serve --workers N (alias --processes) ---------------------------------------


def test_serve_processes_runs_n_children_on_one_port_and_replaces_a_dead_one(database, holding, tmp_path):
    servers = cluster(database, 1, holding, tmp_path, "--workers", "2")
    try:
        url = servers.url(0)
        children = _api_children(servers.processes[0].pid)
        assert len(children) == 2
        chat_ids = [new_chat(url) for _ in range(4)]
        running = [Request("POST", f"{url}/api/v2/chats/{chat_id}/generate", json={"provider": "openai"})
                   for chat_id in chat_ids]  # fmt: skip
        for _ in chat_ids:
            assert holding.arrived.acquire(timeout=WAIT)
        for chat_id in chat_ids:  # each cancel reaches whichever child accepts it
            assert httpx.post(f"{url}/api/v2/chats/{chat_id}/cancel").json() == {"cancelled": 1}
        assert [answer.result().status_code for answer in running] == [409] * 4
        os.kill(children[0], signal.SIGKILL)
        deadline = time.monotonic() + WAIT
        while (now := _api_children(servers.processes[0].pid)) in ([], children, children[1:]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(now) == 2 and children[0] not in now
        servers.wait_ready(0)
        assert httpx.post(f"{url}/api/v2/chats/{chat_ids[0]}/generate", json={}).status_code == 200
    finally:
        holding.release.set()
        servers.close()
    assert not [pid for pid in now if os.path.exists(f"/proc/{pid}")]  # stopping the parent stops its children


# -- the load test's invariants, short ---------------------------------------------------------


def test_load_test_short_mode_keeps_every_invariant(tmp_path):
    """``python -m bench.load`` in short mode: one phase of two processes, one of them killed."""
    from support.api_fixtures import PG_URL

    if not PG_URL:
        pytest.skip("set CONTEXTFIT_TEST_PG_URL: the load test runs on PostgreSQL")
    chats = 6
    run_bench("bench.load", "--db", PG_URL, "--processes", "2", "--no-baseline", "--chats", str(chats),
              "--generations", "2", "--concurrency", "8", "--cancel-every", "4", "--lease", str(LEASE),
              "--out", str(tmp_path), check=False)  # a violation exits 1: the assertions below say which
    [phase] = json.loads((tmp_path / "load.json").read_text())["phases"]
    invariants = phase["invariants"]
    assert invariants["violations"] == {
        "one_audit_per_chat": 0, "no_expired_pending": 0, "no_orphans": 0, "killed_generation_interrupted": 0,
    }, invariants["details"]  # fmt: skip
    assert phase["killed"] and invariants["interrupted_audits"] >= 1 and invariants["pending"] == 0
    assert phase["answers"].get("generate+cancel 409 CANCELLED", 0) >= 1  # cancelled through the other process
    assert invariants["chats"] == chats + 1  # the chats, and the one whose generation was killed


def _url(database: str) -> str:
    from contextfit.serving.database import database_url

    return database_url(database)


def _api_children(parent: int) -> list[int]:
    """The pids of ``parent``'s API processes (multiprocessing's spawned children, not its resource tracker)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and "spawn_main" in command:
            found.append(int(entry))
    return sorted(found)
