"""Connecting to the database: SQLite by default, PostgreSQL by URL.

``database_url`` turns what a user types (``contextfit.db``, ``:memory:``,
``postgresql://user@host/db``) into a SQLAlchemy URL; ``create_database_engine``
makes an engine whose SQLite connections enforce foreign keys, use WAL, wait
for locks instead of failing, and take the write lock up front in write
transactions (``BEGIN IMMEDIATE``), so concurrent writers queue instead of
failing on a lock upgrade. Nothing connects until the first query.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

#: Environment variable naming the default database (a path or a URL).
ENV_VAR = "CONTEXTFIT_DB"
DEFAULT_DATABASE = "contextfit.db"
#: Seconds a SQLite connection waits for another writer before giving up.
SQLITE_BUSY_SECONDS = 30.0
_WRITE = "contextfit_write"


def default_database() -> str:
    """``$CONTEXTFIT_DB``, else ``contextfit.db`` in the working directory."""
    return os.environ.get(ENV_VAR) or DEFAULT_DATABASE


def database_url(database: str | os.PathLike | None = None) -> str:
    """A SQLAlchemy URL for a path, ``:memory:`` or a URL (PostgreSQL uses psycopg 3).

    >>> database_url("data/chats.db")
    'sqlite:///data/chats.db'
    >>> database_url("postgresql://cf:secret@127.0.0.1/cf")
    'postgresql+psycopg://cf:secret@127.0.0.1/cf'
    >>> database_url(":memory:")
    'sqlite://'
    """
    text = os.fspath(database if database is not None else default_database())
    if text == ":memory:":
        return "sqlite://"
    if "://" not in text:
        return f"sqlite:///{text}"
    for prefix in ("postgres://", "postgresql://"):
        if text.startswith(prefix):
            return "postgresql+psycopg://" + text[len(prefix) :]
    return text


def create_database_engine(database: str | os.PathLike | None = None) -> Engine:
    """An engine for ``database`` (see :func:`database_url`); connects lazily."""
    url = sa.engine.make_url(database_url(database))
    if url.get_backend_name() != "sqlite":
        return sa.create_engine(url, pool_pre_ping=True)
    memory = url.database in (None, "", ":memory:")
    engine = sa.create_engine(
        url,
        connect_args={"timeout": SQLITE_BUSY_SECONDS, "check_same_thread": False},
        **({"poolclass": StaticPool} if memory else {}),
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun below, not by the driver
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        if not memory:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(_WRITE)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


@contextmanager
def transaction(engine: Engine, *, write: bool = False) -> Iterator[Connection]:
    """One transaction, committed on success and rolled back on error.

    ``write=True`` takes SQLite's write lock at the start, so a transaction
    that reads and then writes never fails halfway on a busy database.
    """
    with engine.connect() as connection:
        if write:
            connection = connection.execution_options(**{_WRITE: True})
        with connection.begin():
            yield connection
