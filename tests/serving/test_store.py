"""The store: migrations, chats and messages, one audit per chat, cascades, crash recovery."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
import sqlalchemy as sa
from support.api import snapshot

import contextfit
from contextfit.serving.audit import COMPLETED, FAILED, audit_from_plan
from contextfit.errors import AuditNotFound, ChatNotFound, InvalidMessages, InvalidSettings, ProviderTimeout
from contextfit.serving.migrations import MIGRATIONS, applied_migrations
from contextfit.serving.liveness import owner_is_gone, process_owner
from contextfit.serving.store import Store, open_store


CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hello", "meta": {"id": "u1", "pinned": True}},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "42"},
]  # fmt: skip


def pending(store: Store, chat_id: str, text: str = "Hi"):
    plan = contextfit.plan_prompt([{"role": "user", "content": text}], model="gpt-4o")
    audit = audit_from_plan(plan, chat_id=chat_id, provider="echo")
    return audit, store.begin_generation(audit)


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_migrations_are_recorded_and_applied_once(database):
    fresh = Store(database)
    assert fresh.migrate() == [fn.__name__ for fn in MIGRATIONS]
    assert fresh.migrate() == []
    with fresh.engine.connect() as connection:
        assert applied_migrations(connection) == [fn.__name__ for fn in MIGRATIONS]
        tables = set(sa.inspect(connection).get_table_names())
    assert {"chats", "messages", "generations", "context_audits", "_contextfit_migrations"} <= tables
    fresh.close()


def test_sqlite_uses_wal_and_enforces_foreign_keys(tmp_path):
    opened = open_store(tmp_path / "chats.db")
    with opened.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        with pytest.raises(sa.exc.IntegrityError):
            connection.exec_driver_sql(
                "INSERT INTO messages (chat_id, position, role, message, created_at) VALUES ('nope', 0, 'user', '{}', '')"
            )
    opened.close()


def test_chats_keep_messages_in_order_with_their_meta(store):
    chat = store.create_chat(title="T", model="gpt-4o", settings={"contextLimit": 9000}, messages=CHAT)
    assert store.get_chat(chat.id).messages == CHAT
    store.append_messages(chat.id, [{"role": "user", "content": "More?", "meta": {"kind": "history"}}])
    again = store.get_chat(chat.id)
    assert [m["role"] for m in again.messages] == ["system", "user", "assistant", "tool", "user"]
    assert again.settings == {"contextLimit": 9000} and again.updated_at >= chat.updated_at
    renamed = store.update_chat(chat.id, title="New", settings={"contextStrategy": "summarize"})
    assert renamed.title == "New" and renamed.settings == {"contextStrategy": "summarize"}
    [summary] = store.list_chats()
    assert (summary.id, summary.message_count, summary.audit_status) == (chat.id, 5, None)


def test_bad_input_is_refused_before_anything_is_stored(store):
    with pytest.raises(InvalidMessages, match=r"messages\[1\]\.role"):
        store.create_chat(messages=[{"role": "user", "content": "ok"}, {"content": "no role"}])
    with pytest.raises(InvalidMessages, match=r"'wizard' is not one of system, developer, user.*messages\[0\]\.role"):
        store.create_chat(messages=[{"role": "wizard", "content": "abracadabra"}])
    with pytest.raises(InvalidSettings, match="contextLimit"):
        store.create_chat(settings={"contextLimit": "big"})
    with pytest.raises(InvalidSettings, match="did you mean 'contextStrategy'"):
        store.create_chat(settings={"contextstrategy": "truncate"})
    with pytest.raises(InvalidMessages, match=r"lone surrogate.*messages\[1\]\.content"):  # no UTF-8 database holds one
        store.create_chat(messages=[{"role": "user", "content": "ok"}, {"role": "user", "content": "bad \ud800"}])
    chat = store.create_chat(messages=[{"role": "user", "content": "ok"}])
    with pytest.raises(InvalidMessages, match=r"lone surrogate"):
        store.append_messages(chat.id, [{"role": "user", "content": "\udc00"}])
    assert [c.id for c in store.list_chats()] == [chat.id] and len(store.get_chat(chat.id).messages) == 1


def test_unknown_ids(store):
    for call in (store.get_chat, store.delete_chat, store.get_audit, lambda i: store.append_messages(i, CHAT)):
        with pytest.raises(ChatNotFound):
            call("chat_missing")
    chat = store.create_chat()
    with pytest.raises(AuditNotFound):
        store.get_audit(chat.id)


def test_finishing_replaces_the_audit_and_stores_the_reply_atomically(store):
    chat = store.create_chat(messages=[{"role": "user", "content": "Hi"}])
    first, first_seq = pending(store, chat.id)
    second, second_seq = pending(store, chat.id)
    store.finish_generation(second.finish(COMPLETED), second_seq, {"role": "assistant", "content": "two"})
    # The older generation finishes last: it is stored as a message but does not replace the newer audit.
    store.finish_generation(first.finish(FAILED, ProviderTimeout("echo")), first_seq)
    audit = store.get_audit(chat.id)
    assert (audit.generation_id, audit.status) == (second.generation_id, COMPLETED)
    assert [m["content"] for m in store.get_chat(chat.id).messages] == ["Hi", "two"]
    assert store.pending_generations() == []
    third, third_seq = pending(store, chat.id)
    store.finish_generation(third.finish(FAILED, ProviderTimeout("echo")), third_seq)
    assert store.get_audit(chat.id).error_code == "PROVIDER_TIMEOUT"
    assert len(snapshot(store)["context_audits"]) == 1


def test_deleting_a_chat_deletes_its_messages_generations_and_audit(store):
    keep = store.create_chat(messages=[{"role": "user", "content": "keep"}])
    chat = store.create_chat(messages=CHAT)
    audit, seq = pending(store, chat.id)
    store.finish_generation(audit.finish(COMPLETED), seq, {"role": "assistant", "content": "ok"})
    pending(store, chat.id)
    store.delete_chat(chat.id)
    rows = snapshot(store)
    for table in ("messages", "generations", "context_audits"):
        assert all(chat.id not in row for row in rows[table]), table
    assert [m["content"] for m in store.get_chat(keep.id).messages] == ["keep"]
    # A generation that finishes after its chat was deleted stores nothing.
    assert store.finish_generation(audit.finish(COMPLETED), seq, {"role": "assistant", "content": "late"}) is None
    assert snapshot(store) == rows


def test_recovery_marks_only_dead_processes_generations_interrupted(store):
    chat = store.create_chat(messages=[{"role": "user", "content": "Hi"}])
    done, seq = pending(store, chat.id)
    store.finish_generation(done.finish(COMPLETED), seq, {"role": "assistant", "content": "ok"})
    mine, _ = pending(store, chat.id)
    dead, _ = pending(store, chat.id)
    elsewhere, _ = pending(store, chat.id)
    host = socket.gethostname()
    with store.engine.begin() as connection:
        for audit, owner in ((dead, f"{host}:{dead_pid()}:old"), (elsewhere, "other-host:1:x")):
            connection.execute(
                sa.text("UPDATE generations SET owner = :owner WHERE generation_id = :id"),
                {"owner": owner, "id": audit.generation_id},
            )
    assert store.get_audit(chat.id).generation_id == done.generation_id  # the previous audit stays readable
    assert store.recover_interrupted() == [dead.generation_id]
    audit = store.get_audit(chat.id)
    assert (audit.generation_id, audit.status, audit.error_code) == (dead.generation_id, FAILED, "INTERRUPTED")
    assert audit.finished_at and audit.blocks == dead.blocks
    left = {a.generation_id for _, _, a in store.pending_generations()}
    assert left == {mine.generation_id, elsewhere.generation_id}


def test_owner_liveness():
    assert not owner_is_gone(process_owner())
    host, pid, _ = process_owner().split(":")
    assert owner_is_gone(f"{host}:{pid}:a-previous-process-with-my-pid")
    assert owner_is_gone(f"{host}:{dead_pid()}:x")
    assert not owner_is_gone("another-host:1:x") and not owner_is_gone("garbage")
