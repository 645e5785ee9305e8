"""A stored chat is bounded like an imported file: appends past the limit are refused whole,
an append answers only what it appended, a full chat generates nothing, a paid reply is
always stored, and the sizes are kept (and migrated) with every write."""

from __future__ import annotations

import sqlalchemy as sa
from support.api import LOCAL
from fastapi.testclient import TestClient

from contextfit import limits
from contextfit.serving import migrations
from contextfit.serving.api import create_app
from contextfit.serving.database import create_database_engine, transaction
from contextfit.serving.providers import ProviderReply
from contextfit.serving.store import ChatLimits, open_store


MODEL = "llama-3.1-8b"
BATCH = [{"role": "user", "content": f"message {n}"} for n in range(10_000)]  # the most one request may append


def test_appends_stop_at_the_imported_file_limit_and_answer_only_what_they_appended(tmp_path):
    store = open_store(tmp_path / "big.db")
    with TestClient(create_app(store), base_url=LOCAL) as client:
        chat_id = client.post("/api/v2/chats", json={"model": MODEL, "messages": BATCH[:1]}).json()["id"]
        sizes = []
        for _ in range(limits.MAX_MESSAGES // len(BATCH)):
            answer = client.post(f"/api/v2/chats/{chat_id}/messages", json={"messages": BATCH})
            if answer.status_code != 200:
                break
            sizes.append(len(answer.content))
        refused = answer if answer.status_code != 200 else client.post(f"/api/v2/chats/{chat_id}/messages",
                                                                       json={"messages": BATCH})  # fmt: skip
        [summary] = client.get("/api/v2/chats").json()["chats"]
    store.close()
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert error["code"] == "CHAT_TOO_LARGE" and error["location"] == "messages[9999]"  # 99,999 + 1 fit, not 10,000
    assert "at most 100,000 messages and 16 MiB" in error["message"]
    assert summary["messageCount"] == 1 + 9 * len(BATCH)  # the refused append added nothing
    assert max(sizes) - min(sizes) < 1_000  # each answer holds what it appended, whatever the chat holds


def test_the_limits_hold_for_bytes_a_full_chat_generates_nothing_and_a_reply_is_always_stored(store):
    store.chat_limits = ChatLimits(messages=5, bytes=2_000)
    calls = []

    class Big:
        name, template = "big", None

        async def complete(self, request):
            calls.append(request)
            return ProviderReply({"role": "assistant", "content": "r" * 2_100}, request.model, "stop")

    with TestClient(create_app(store, {"big": Big()}), base_url=LOCAL) as client:
        chat_id = client.post("/api/v2/chats", json={"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}).json()["id"]
        too_long = client.post(f"/api/v2/chats/{chat_id}/messages", json={"messages": [{"role": "user", "content": "x" * 2_000}]})
        assert too_long.status_code == 413 and too_long.json()["error"]["location"] == "messages[0]"
        created = client.post("/api/v2/chats", json={"model": MODEL, "messages": [{"role": "user", "content": "y"}] * 6})
        assert created.status_code == 413 and created.json()["error"]["location"] == "messages[5]"
        # A reply that takes the chat past its bytes is stored all the same: it was paid for.
        assert client.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": "big"}).status_code == 200
        assert len(calls) == 1 and store.get_chat(chat_id).messages[-1]["content"] == "r" * 2_100
        full = client.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": "big"})
        assert full.status_code == 413 and full.json()["error"] == {
            "code": "CHAT_TOO_LARGE", "location": "generate", "message": full.json()["error"]["message"]}
        assert len(calls) == 1  # nothing was sent for the full chat
        assert "nothing was sent to the provider" in full.json()["error"]["message"]
        [summary] = [c for c in client.get("/api/v2/chats").json()["chats"] if c["id"] == chat_id]
    assert summary["messageCount"] == 2 and store.pending_generations() == []


def test_the_migration_counts_the_chats_already_stored(tmp_path):
    database = str(tmp_path / "old.db")
    engine = create_database_engine(database)
    with transaction(engine, write=True) as connection:  # a database of the previous version
        for fn in migrations.MIGRATIONS[:5]:
            fn(connection)
        connection.execute(sa.text("CREATE TABLE _contextfit_migrations (name VARCHAR(200) PRIMARY KEY, applied_at TEXT NOT NULL)"))
        for fn in migrations.MIGRATIONS[:5]:
            connection.execute(sa.text("INSERT INTO _contextfit_migrations VALUES (:n, 'then')"), {"n": fn.__name__})
        connection.execute(sa.text("INSERT INTO chats (id, settings, created_at, updated_at) VALUES ('c1', '{}', 't', 't'), ('c2', '{}', 't', 't')"))
        for position, text in enumerate(['{"role":"user","content":"Hé"}', '{"role":"user","content":"x"}']):
            connection.execute(sa.text("INSERT INTO messages (chat_id, position, role, message, created_at) "
                                       "VALUES ('c1', :p, 'user', :m, 't')"), {"p": position, "m": text})  # fmt: skip
    engine.dispose()
    store = open_store(database)
    assert {chat.id: chat.message_count for chat in store.list_chats()} == {"c1": 2, "c2": 0}
    with store.engine.connect() as connection:
        sizes = dict(connection.execute(sa.text("SELECT id, message_bytes FROM chats")).all())
    store.close()
    assert sizes == {"c1": len('{"role":"user","content":"Hé"}'.encode()) + len('{"role":"user","content":"x"}'), "c2": 0}
