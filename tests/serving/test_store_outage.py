"""A database that goes away answers 503 STORE_UNAVAILABLE with Retry-After on every endpoint,
and the API recovers by itself once it is back: no 500, no restart.

The outages are real: a SQLite file whose folder is moved away (every new connection
fails to open it), PostgreSQL behind a TCP proxy that is switched off (connections
dropped, new ones refused), and a SQLite disk that is full (writes refused, reads work).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.api import LOCAL, TcpProxy, endpoint_calls
from fastapi.testclient import TestClient
from sqlalchemy import event

from contextfit.serving.api import create_app
from contextfit.serving.store import Store, open_store


HI = [{"role": "user", "content": "Hi"}]
MODEL = "llama-3.1-8b"


class SqliteGone:
    """The folder of a SQLite database, moved away and back."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.url = str(folder / "contextfit.db")

    def down(self, store: Store) -> None:
        os.rename(self.folder, self.folder.with_name("moved-away"))
        store.engine.dispose()  # the pooled connections go; every new one fails to open the file

    def up(self) -> None:
        os.rename(self.folder.with_name("moved-away"), self.folder)


class PostgresGone:
    """PostgreSQL behind a proxy that is switched off and on."""

    def __init__(self, url: str, proxy: TcpProxy) -> None:
        self.url, self.proxy = url, proxy

    def down(self, _store: Store) -> None:
        self.proxy.down()

    def up(self) -> None:
        self.proxy.up()


@pytest.fixture(params=["sqlite", "postgresql"])
def outage(request, tmp_path) -> Iterator[SqliteGone | PostgresGone]:
    if request.param == "sqlite":
        (tmp_path / "db").mkdir()
        yield SqliteGone(tmp_path / "db")
        return
    from support.api_fixtures import PG_URL

    if not PG_URL:
        pytest.skip("set CONTEXTFIT_TEST_PG_URL to run the PostgreSQL variant")
    from support.servers import fresh_schema

    target = httpx.URL(PG_URL.replace("postgresql://", "http://", 1))
    proxy = TcpProxy((target.host, target.port or 5432))
    where = f"{target.host}:{target.port}" if target.port else target.host
    with fresh_schema(PG_URL) as url:
        try:
            yield PostgresGone(url.replace(where, f"127.0.0.1:{proxy.port}", 1), proxy)
        finally:
            proxy.down()


def every_endpoint(client: TestClient, chat_id: str, doomed: str) -> dict[str, httpx.Response]:
    return {name: client.request(method, path, json=body)
            for name, (method, path, body) in endpoint_calls(chat_id, doomed).items()}  # fmt: skip


def test_every_endpoint_answers_503_while_the_database_is_gone_and_recovers_by_itself(outage):
    store = open_store(outage.url, lock_timeout=1)
    chat_id = store.create_chat(model=MODEL, messages=HI).id
    doomed = store.create_chat(model=MODEL, messages=HI).id
    try:
        with TestClient(create_app(store), base_url=LOCAL, raise_server_exceptions=False) as client:
            assert client.post(f"/api/v2/chats/{chat_id}/generate").status_code == 200  # an audit to read later
            outage.down(store)
            try:
                during = every_endpoint(client, chat_id, doomed)
            finally:
                outage.up()
            after = every_endpoint(client, chat_id, doomed)
    finally:
        store.close()
    for name, response in during.items():
        assert response.status_code == 503, (name, response.text)
        assert response.json()["error"]["code"] == "STORE_UNAVAILABLE", name
        assert response.headers["retry-after"] == "2", name
        assert "Traceback" not in response.text and "SELECT" not in response.text, name
    for name, response in after.items():
        assert response.status_code < 300, (name, response.status_code, response.text[:300])


def test_a_full_disk_refuses_writes_with_503_serves_reads_and_recovers(tmp_path):
    store = open_store(tmp_path / "full.db", lock_timeout=1)
    chat_id = store.create_chat(model=MODEL, messages=HI).id
    doomed = store.create_chat(model=MODEL, messages=HI).id

    def full(dbapi_connection, _record) -> None:  # SQLite's own SQLITE_FULL: no page may be added
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    try:
        with TestClient(create_app(store), base_url=LOCAL, raise_server_exceptions=False) as client:
            client.post(f"/api/v2/chats/{chat_id}/generate")
            with store.engine.connect() as connection:  # the next writes need new pages
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            event.listen(store.engine, "connect", full)
            store.engine.dispose()
            big = {"messages": [{"role": "user", "content": "x" * 200_000}]}
            during = {**every_endpoint(client, chat_id, doomed),
                      "append": client.post(f"/api/v2/chats/{chat_id}/messages", json=big)}  # fmt: skip
            event.remove(store.engine, "connect", full)
            store.engine.dispose()
            after = every_endpoint(client, chat_id, doomed)
    finally:
        store.close()
    statuses = {name: response.status_code for name, response in during.items()}
    assert 500 not in statuses.values(), {name: r.text[:200] for name, r in during.items()}
    assert statuses["append"] == 503 and during["append"].json()["error"]["code"] == "STORE_UNAVAILABLE"
    assert "database or disk is full" in during["append"].json()["error"]["message"]
    assert statuses["list"] == statuses["get"] == statuses["audit"] == 200  # reading needs no new page
    if statuses["delete"] == 204:  # a delete frees pages: it may get through a full disk
        after.pop("delete")
    assert {name: r.status_code for name, r in after.items() if r.status_code >= 300} == {}, statuses
