"""The lease reaper finalizes only what is really dead, and a reply that arrived is never dropped.

A live process never reaps its own generations; a lease is judged again in
the transaction that finalizes it; the reaper reports (and logs) only what it
finalized. The reproduction: another connection holds the database's write
lock for 2.5 leases while the provider answers — the generation's renewals,
its finish and the reaper all wait for the same lock.
"""

from __future__ import annotations

import logging
import threading

import pytest
import sqlalchemy as sa
from support.api import LOCAL, LockingProvider
from fastapi.testclient import TestClient

from contextfit.serving import liveness, store as store_module
from contextfit.serving.api import create_app
from contextfit.serving.audit import COMPLETED, audit_from_plan
from contextfit.pipeline.plan import plan_prompt
from contextfit.serving.store import open_store


MODEL = "llama-3.1-8b"
HI = [{"role": "user", "content": "Hi"}]
LEASE = 1.0


def begun(store, chat_id: str, owner: str | None = None):
    audit = audit_from_plan(plan_prompt(HI, model=MODEL), chat_id=chat_id, provider="echo")
    seq = store.begin_generation(audit)
    if owner is not None:
        with store.engine.begin() as connection:
            connection.execute(sa.text("UPDATE generations SET owner = :o WHERE generation_id = :g"),
                               {"o": owner, "g": audit.generation_id})  # fmt: skip
    return audit, seq


def expire(store, generation_id: str) -> None:
    with store.engine.begin() as connection:
        connection.execute(sa.text("UPDATE generations SET expires_at = expires_at - 3600 WHERE generation_id = :g"),
                           {"g": generation_id})  # fmt: skip


def test_a_live_process_never_reaps_its_own_generation(store):
    chat = store.create_chat(messages=HI)
    audit, _ = begun(store, chat.id)
    expire(store, audit.generation_id)  # its renewals could not be written: the lease ran out
    assert liveness.expired_generations(store.engine) == {audit.generation_id}
    assert store.recover_interrupted() == []
    assert [a.generation_id for _, _, a in store.pending_generations()] == [audit.generation_id]


def test_a_lease_renewed_after_the_list_was_read_is_left_alone_and_not_logged(store, monkeypatch, caplog):
    chat = store.create_chat(messages=HI)
    renewed, _ = begun(store, chat.id, owner="another-host:1:x")
    finished, seq = begun(store, chat.id, owner="another-host:1:x")
    stale = {renewed.generation_id, finished.generation_id}  # both had expired when the list was read ...
    monkeypatch.setattr(store_module, "expired_generations", lambda _engine: stale)
    store.finish_generation(finished.finish(COMPLETED), seq)  # ... then one finished, the other was renewed
    reaper = liveness.Reaper(store.recover_interrupted, 0.05)
    with caplog.at_level(logging.WARNING, logger="contextfit.serving.liveness"):
        reaper.start()
        threading.Event().wait(0.3)
        reaper.stop()
    assert store.get_audit(chat.id).status == COMPLETED
    assert [a.generation_id for _, _, a in store.pending_generations()] == [renewed.generation_id]
    assert "finalized INTERRUPTED" not in caplog.text  # it logs only what it really finalized


def test_the_reaper_logs_each_generation_it_finalized(store, caplog):
    chat = store.create_chat(messages=HI)
    dead, _ = begun(store, chat.id, owner="another-host:1:x")
    expire(store, dead.generation_id)
    reaper = liveness.Reaper(store.recover_interrupted, 0.05)
    with caplog.at_level(logging.WARNING, logger="contextfit.serving.liveness"):
        reaper.start()
        threading.Event().wait(0.3)
        reaper.stop()
    assert caplog.text.count("finalized INTERRUPTED") == 1 and dead.generation_id in caplog.text
    assert store.get_audit(chat.id).error_code == "INTERRUPTED"


class LockPastTheLease(LockingProvider):
    """Answers at once, but first has another connection take the write lock for 2.5 leases."""

    async def complete(self, request):
        self.hold()
        threading.Timer(2.5 * LEASE, self.release).start()
        return await super().complete(request)

    def hold(self) -> None:
        if not self._held._exit_callbacks:
            super().hold()


@pytest.mark.parametrize("tries", [3])
def test_a_write_lock_held_past_the_lease_never_costs_a_paid_reply(database, monkeypatch, caplog, tries):
    monkeypatch.setenv("CONTEXTFIT_LEASE_SECONDS", str(LEASE))  # the app's reaper runs every half lease
    monkeypatch.setenv("CONTEXTFIT_CANCEL_POLL_SECONDS", "0.1")
    store = open_store(database)  # writers wait up to 30 s for the lock: nobody gives up, they race
    chats = [store.create_chat(model=MODEL, messages=HI).id for _ in range(tries)]
    providers = {f"p{n}": LockPastTheLease(database, chat_id) for n, chat_id in enumerate(chats)}
    try:
        with caplog.at_level(logging.WARNING), TestClient(create_app(store, providers), base_url=LOCAL) as client:
            answers = [client.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": f"p{n}"})
                       for n, chat_id in enumerate(chats)]  # fmt: skip
        for chat_id, answer in zip(chats, answers):
            assert answer.status_code == 200, answer.text
            assert answer.json()["message"]["content"] == "a paid reply"
            assert store.get_chat(chat_id).messages[-1]["content"] == "a paid reply"
            assert store.get_audit(chat_id).status == COMPLETED
        assert "finalized INTERRUPTED" not in caplog.text
    finally:
        for provider in providers.values():
            provider.release()
        store.close()
