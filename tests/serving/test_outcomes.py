"""A completed generation is never lost: the finish is retried, a reply the database will not
take goes back to the client with STORE_UNAVAILABLE and is kept on disk (fsynced) until the
database takes it — into the chat, once — and the outcome is recorded as the client was told,
never left pending, never mislabelled INTERRUPTED: not after an outage longer than the lease,
not after the client left, not after the process was killed."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from support.api import LOCAL, LockingProvider
from support.paths import TESTS

from contextfit.serving.api import create_app
from contextfit.serving.audit import COMPLETED, FAILED, audit_from_plan
from contextfit.errors import GenerationCancelled, ProviderTimeout, StoreUnavailable
from contextfit.serving.generation import generate
from contextfit.serving.outcomes import FinishQueue, FinishRetry
from contextfit.pipeline.plan import plan_prompt
from contextfit.serving.store import open_store


QUICK = FinishRetry(attempts=2, backoff=0.05, max_backoff=0.2)
HI = [{"role": "user", "content": "Hi"}]
MODEL = "llama-3.1-8b"  # an approximate tokenizer: nothing to load, in a subprocess too


def wait_until(condition, timeout: float = 60.0) -> None:
    """Wait for something a background thread does (a liveness bound, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the background retry never recorded the outcome"
        time.sleep(0.02)


@pytest.fixture
def quick_store(database):
    """A store whose writes give up after 0.2 s behind another connection's lock."""
    opened = open_store(database, lock_timeout=0.2, finish_retry=QUICK)
    yield opened
    opened.close()


def test_a_locked_database_hands_the_reply_to_the_client_keeps_it_and_stores_it_once(quick_store, database):
    chat_id = quick_store.create_chat(model=MODEL, messages=HI).id
    locking = LockingProvider(database, chat_id)
    try:
        with TestClient(create_app(quick_store, {"locking": locking}), base_url=LOCAL) as client:
            response = client.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": "locking"})
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert error["code"] == "STORE_UNAVAILABLE" and "failed 2 times" in error["message"]
        assert "adds it to the chat once the database takes it: do not append it yourself" in error["message"]
        reply, audit = error["reply"], error["audit"]
        assert reply["content"] == "a paid reply" and reply["tool_calls"][0]["id"] == "c1"
        assert reply["meta"]["generationId"] == audit["generationId"]
        assert (audit["status"], audit["errorCode"]) == ("failed", "STORE_UNAVAILABLE")
        # While the lock is held nothing can be written: the outcome waits on disk, readable by its owner only.
        assert quick_store.finishes.waiting() == [audit["generationId"]]
        [kept] = quick_store.finishes.spool.folder.glob("gen_*.json")
        assert kept.stat().st_mode & 0o777 == 0o600 and "a paid reply" in kept.read_text()
        assert [a.generation_id for _, _, a in quick_store.pending_generations()] == [audit["generationId"]]
    finally:
        locking.release()
    wait_until(lambda: not quick_store.finishes.waiting())  # the background retry, no new request needed
    assert quick_store.pending_generations() == [] and list(quick_store.finishes.spool.folder.glob("gen_*")) == []
    assert quick_store.get_audit(chat_id).to_dict() == audit  # exactly what the client was told
    assert quick_store.get_chat(chat_id).messages == [*HI, reply]  # and the reply, once


def test_a_reply_the_client_appended_itself_is_not_stored_twice(quick_store, database):
    chat_id = quick_store.create_chat(model=MODEL, messages=HI).id
    locking = LockingProvider(database, chat_id)
    try:
        with pytest.raises(StoreUnavailable) as caught:
            anyio.run(lambda: generate(quick_store, {"locking": locking}, chat_id, provider="locking"))
        quick_store.finishes.close()  # no background retry: the client's append comes first
    finally:
        locking.release()
    quick_store.append_messages(chat_id, [caught.value.reply])  # as the old advice said
    assert quick_store.finishes.drain() == 0
    assert quick_store.get_chat(chat_id).messages == [*HI, caught.value.reply]
    assert quick_store.get_audit(chat_id).error_code == "STORE_UNAVAILABLE"

def test_a_client_that_leaves_before_the_503_loses_nothing(quick_store, database):
    chat_id = quick_store.create_chat(model=MODEL, messages=HI).id
    locking = LockingProvider(database, chat_id)
    slow = open_store(database, lock_timeout=0.2, finish_retry=FinishRetry(attempts=3, backoff=1, max_backoff=1))
    outcome = {}

    async def client_leaves() -> None:
        async with anyio.create_task_group() as group:
            async def run() -> None:
                try:
                    await generate(slow, {"locking": locking}, chat_id, provider="locking")
                except StoreUnavailable as exc:  # what the client would have been told, had it stayed
                    outcome["raised"] = exc.code

            group.start_soon(run)
            while not locking.calls:
                await anyio.sleep(0.01)
            await anyio.sleep(0.5)  # the reply is in, its write is being retried ...
            group.cancel_scope.cancel()  # ... and the client gives up (a proxy's timeout)

    try:
        anyio.run(client_leaves)
        assert outcome == {"raised": "STORE_UNAVAILABLE"}  # its finish went on, shielded, after the client left
        [kept] = slow.finishes.spool.folder.glob("gen_*.json")  # kept on disk before anyone was answered
        assert "a paid reply" in kept.read_text()
    finally:
        locking.release()
    wait_until(lambda: not slow.finishes.waiting())
    assert [m["content"] for m in slow.get_chat(chat_id).messages] == ["Hi", "a paid reply"]
    assert slow.get_audit(chat_id).error_code == "STORE_UNAVAILABLE"
    slow.close()


def test_a_database_locked_before_the_call_refuses_the_generation_and_calls_no_provider(quick_store, database):
    chat_id = quick_store.create_chat(model=MODEL, messages=HI).id
    locking = LockingProvider(database, chat_id)
    locking.hold()
    try:
        with TestClient(create_app(quick_store, {"locking": locking}), base_url=LOCAL) as client:
            response = client.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": "locking"})
    finally:
        locking.release()
    assert response.status_code == 503 and response.json()["error"]["code"] == "STORE_UNAVAILABLE"
    assert "nothing was sent to the provider" in response.json()["error"]["message"]
    assert locking.calls == 0 and quick_store.pending_generations() == [] and quick_store.finishes.waiting() == []


def test_a_provider_failure_is_answered_at_once_and_recorded_when_the_lock_goes(quick_store, database):
    chat_id = quick_store.create_chat(model=MODEL, messages=HI).id

    class LockThenTimeOut(LockingProvider):
        async def complete(self, request):
            self.hold()
            raise ProviderTimeout("locking")

    locking = LockThenTimeOut(database, chat_id)
    try:
        with pytest.raises(ProviderTimeout):  # the provider's own error, not the database's
            anyio.run(lambda: generate(quick_store, {"locking": locking}, chat_id, provider="locking"))
        [waiting] = quick_store.finishes.waiting()
    finally:
        locking.release()
    wait_until(lambda: not quick_store.finishes.waiting())
    audit = quick_store.get_audit(chat_id)
    assert (audit.generation_id, audit.status, audit.error_code) == (waiting, FAILED, "PROVIDER_TIMEOUT")
    assert quick_store.pending_generations() == []


CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import anyio
from support.api import LOCAL, LockingProvider
from contextfit.errors import StoreUnavailable
from contextfit.serving.generation import generate
from contextfit.serving.outcomes import FinishRetry
from contextfit.serving.store import open_store

database, chat_id, end = sys.argv[2], sys.argv[3], sys.argv[4]
store = open_store(database, lock_timeout=0.2, finish_retry=FinishRetry(attempts=2, backoff=0.05, max_backoff=0.2))
locking = LockingProvider(database, chat_id)
try:
    anyio.run(lambda: generate(store, {"locking": locking}, chat_id, provider="locking"))
except StoreUnavailable as error:
    print(error.reply["content"], error.audit["generationId"], sep="|", flush=True)
if end == "killed":
    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)  # no shutdown, no last try: only the disk has the reply
if end == "release":
    locking.release()
store.close()  # what `contextfit serve` does when it stops
locking.release()
"""


@pytest.mark.parametrize("end", ["release", "keep", "killed"],
                         ids=["lock-released-before-exit", "lock-held-until-exit", "killed-while-locked"])
def test_a_restart_records_what_the_client_was_told_and_stores_the_reply(database, end):
    setup = open_store(database)
    chat_id = setup.create_chat(model=MODEL, messages=HI).id
    setup.close()
    tests = str(TESTS)  # where the child imports support.api from
    child = subprocess.run([sys.executable, "-c", CHILD, tests, database, chat_id, end], capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert child.returncode == (-9 if end == "killed" else 0), child.stderr
    content, generation_id = child.stdout.strip().split("|")
    assert content == "a paid reply" and generation_id.startswith("gen_")  # the client got the reply
    if end == "keep":  # the database failed until the child exited, which it logged
        assert "still failed at shutdown" in child.stderr and "recorded at the next start" in child.stderr
    restarted = open_store(database)  # the next start: the child's process is gone now
    audit, chat = restarted.get_audit(chat_id), restarted.get_chat(chat_id)
    restarted.close()
    assert audit.generation_id == generation_id
    assert (audit.status, audit.error_code) == ("failed", "STORE_UNAVAILABLE")  # what the client was told
    assert [m["content"] for m in chat.messages] == ["Hi", "a paid reply"]  # kept, then stored once


# -- the queue itself, with a database that fails on demand ---------------------------------


class FlakyDatabase:
    """A write function that fails while ``failing`` (or its first ``failures`` calls)."""

    def __init__(self, failures: int = 0) -> None:
        self.failures, self.failing, self.calls, self.written = failures, False, 0, []
        self.lock = threading.Lock()

    def __call__(self, audit, seq, reply):
        with self.lock:
            self.calls += 1
            if self.failing or self.calls <= self.failures:
                raise RuntimeError("database is locked")
            self.written.append((audit.generation_id, audit.status, audit.error_code, reply))
            return reply


def pending_audit():
    plan = plan_prompt(HI, model=MODEL)
    return audit_from_plan(plan, chat_id="chat_1", provider="p")


def test_a_reply_is_stored_by_a_later_try():
    flaky = FlakyDatabase(failures=2)
    queue = FinishQueue(flaky, FinishRetry(attempts=3, backoff=0))
    audit = pending_audit().finish(COMPLETED)
    assert queue.settle(audit, 1, {"role": "assistant", "content": "ok"}) == {"role": "assistant", "content": "ok"}
    assert flaky.calls == 3 and queue.waiting() == []
    assert flaky.written == [(audit.generation_id, COMPLETED, None, {"role": "assistant", "content": "ok"})]


def test_a_reply_that_cannot_be_stored_is_raised_back_and_its_failure_recorded_later():
    flaky = FlakyDatabase()
    flaky.failing = True
    queue = FinishQueue(flaky, FinishRetry(attempts=3, backoff=0.01, max_backoff=0.05))
    audit = pending_audit().finish(COMPLETED)
    with pytest.raises(StoreUnavailable) as caught:
        queue.settle(audit, 1, {"role": "assistant", "content": "paid"})
    assert caught.value.reply == {"role": "assistant", "content": "paid"}
    assert caught.value.audit["errorCode"] == "STORE_UNAVAILABLE"
    assert "RuntimeError: database is locked" in str(caught.value)
    assert queue.waiting() == [audit.generation_id]
    flaky.failing = False
    wait_until(lambda: not queue.waiting())
    # the outcome the client was told, with the reply: the store adds it to the chat (once)
    assert flaky.written == [(audit.generation_id, "failed", "STORE_UNAVAILABLE", {"role": "assistant", "content": "paid"})]
    queue.close()


def test_close_tries_once_more_and_logs_what_it_could_not_record(caplog):
    flaky = FlakyDatabase()
    flaky.failing = True
    queue = FinishQueue(flaky, FinishRetry(attempts=1, backoff=30))  # the background retry waits 30 s
    failed = pending_audit().finish(FAILED, GenerationCancelled())
    assert queue.settle(failed, 1) is None and queue.waiting() == [failed.generation_id]
    with caplog.at_level(logging.ERROR, logger="contextfit.serving.outcomes"):
        assert queue.close() == [failed.generation_id]
    assert failed.generation_id in caplog.text and "INTERRUPTED" in caplog.text
    flaky.failing = False
    assert queue.close() == [] and flaky.written == [(failed.generation_id, "failed", "CANCELLED", None)]


# -- the spool: durable, private, never in the way ----------------------------------------------


def test_the_spool_is_private_and_a_damaged_or_refused_outcome_never_blocks_the_others(tmp_path, caplog):
    from contextfit.serving.spool import Kept, Spool

    folder = tmp_path / "spool"
    spool = Spool(folder)
    first, second = (pending_audit().finish(COMPLETED) for _ in range(2))
    assert spool.keep(Kept(first, 1, {"role": "assistant", "content": "one"})) is None  # on disk
    assert spool.keep(Kept(second, 2)) is None
    assert folder.stat().st_mode & 0o777 == 0o700
    assert {path.stat().st_mode & 0o777 for path in folder.iterdir()} == {0o600}
    (folder / f"{first.generation_id}.json").write_text("{not json")  # damaged on disk
    written = []

    def write(audit, seq, reply):
        if audit.generation_id == second.generation_id and not written:
            written.append("refused")
            raise ValueError("a statement the database refuses")  # not an outage: set aside
        return reply

    queue = FinishQueue(write, QUICK, spool, is_outage=lambda error: not isinstance(error, ValueError))
    with caplog.at_level(logging.ERROR, logger="contextfit.serving.spool"):
        assert queue.drain() == 0
    assert sorted(path.suffix for path in folder.iterdir()) == [".failed", ".failed"]  # kept aside, for a person
    assert "cannot be read" in caplog.text and "the database refused it" in caplog.text


def test_an_outcome_the_disk_refuses_is_kept_in_memory_and_said_so(tmp_path):
    from contextfit.serving.spool import Kept, Spool

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    flaky = FlakyDatabase()
    flaky.failing = True
    queue = FinishQueue(flaky, FinishRetry(attempts=1, backoff=0.01), Spool(blocked / "spool"))
    with pytest.raises(StoreUnavailable) as caught:
        queue.settle(pending_audit().finish(COMPLETED), 1, {"role": "assistant", "content": "paid"})
    assert "kept in the server's memory only (NotADirectoryError" in caught.value.message
    flaky.failing = False
    wait_until(lambda: not queue.waiting())
    assert [reply for *_, reply in flaky.written] == [{"role": "assistant", "content": "paid"}]
    queue.close()
    assert Spool(None).keep(Kept(pending_audit(), 1)) == "the database is in memory"


def test_where_the_spool_is(tmp_path, monkeypatch):
    from contextfit.serving.spool import spool_folder

    monkeypatch.delenv("CONTEXTFIT_SPOOL_DIR")
    assert open_store(tmp_path / "chats.db").finishes.spool.folder == tmp_path / "chats.db.spool"
    assert open_store(":memory:").finishes.spool.folder is None
    assert spool_folder("postgresql+psycopg://cf:***@db/cf", None).parent == Path("contextfit-spool")
    monkeypatch.setenv("CONTEXTFIT_SPOOL_DIR", str(tmp_path / "elsewhere"))
    assert open_store(tmp_path / "chats.db").finishes.spool.folder.parent == tmp_path / "elsewhere"
