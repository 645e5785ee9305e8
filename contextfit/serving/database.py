"""Connecting to the database: SQLite by default, PostgreSQL by URL.

``database_url`` turns what a user types (``contextfit.db``, ``:memory:``,
``postgresql://user@host/db``) into a SQLAlchemy URL; ``create_database_engine``
makes an engine whose SQLite connections enforce foreign keys, use WAL, wait
for locks instead of failing, and take the write lock up front in write
transactions (``BEGIN IMMEDIATE``), so concurrent writers queue instead of
failing on a lock upgrade. How long a statement waits for another
connection's lock (SQLite's busy timeout, PostgreSQL's ``lock_timeout``) is
:func:`lock_timeout`: 30 s unless ``$CONTEXTFIT_DB_LOCK_TIMEOUT`` or the
caller says otherwise. Nothing connects until the first query.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from .. import environment
from ..errors import InvalidSettings, StoreUnavailable

#: Environment variable naming the default database (a path or a URL).
ENV_VAR = "CONTEXTFIT_DB"
DEFAULT_DATABASE = "contextfit.db"
#: Environment variable overriding :data:`LOCK_TIMEOUT_SECONDS`.
LOCK_TIMEOUT_VAR = "CONTEXTFIT_DB_LOCK_TIMEOUT"
#: Seconds a statement waits for another connection's lock before it fails.
LOCK_TIMEOUT_SECONDS = 30.0
_WRITE = "contextfit_write"


def default_database() -> str:
    """``$CONTEXTFIT_DB``, else ``contextfit.db`` in the working directory."""
    return environment.read(ENV_VAR) or DEFAULT_DATABASE


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


def lock_timeout(seconds: float | None = None) -> float:
    """Seconds to wait for another connection's lock: ``seconds``, else
    ``$CONTEXTFIT_DB_LOCK_TIMEOUT``, else :data:`LOCK_TIMEOUT_SECONDS`.

    >>> lock_timeout(2)
    2.0
    >>> lock_timeout(-1)
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: The database lock timeout must be a number of seconds above 0, got -1.
    """
    return seconds_setting(seconds, LOCK_TIMEOUT_VAR, LOCK_TIMEOUT_SECONDS, "The database lock timeout")


def seconds_setting(seconds: float | None, variable: str, default: float, what: str) -> float:
    """``seconds``, else ``$variable``, else ``default``: a number of seconds above 0, or ``INVALID_SETTINGS`` about ``what``."""
    value: object = seconds if seconds is not None else environment.read(variable) or default
    try:
        number = float(value)  # type: ignore[arg-type]
    except ValueError:
        number = -1.0
    if not 0 < number < float("inf"):
        source = f" (${variable})" if seconds is None else ""
        raise InvalidSettings(f"{what}{source} must be a number of seconds above 0, got {value}.")
    return number


def create_database_engine(database: str | os.PathLike | None = None, *, timeout: float | None = None) -> Engine:
    """An engine for ``database`` (see :func:`database_url`) whose statements wait
    :func:`lock_timeout` seconds for a lock; connects lazily."""
    url = sa.engine.make_url(database_url(database))
    wait = lock_timeout(timeout)
    if url.get_backend_name() != "sqlite":
        engine = sa.create_engine(url, pool_pre_ping=True)
        if url.get_backend_name() == "postgresql":

            @event.listens_for(engine, "connect")
            def _on_pg_connect(dbapi_connection, _record) -> None:
                # By default PostgreSQL waits forever for a row lock; wait as long as SQLite does.
                with dbapi_connection.cursor() as cursor:
                    cursor.execute(f"SET lock_timeout = {max(1, round(wait * 1000))}")
                dbapi_connection.commit()

        return engine
    memory = url.database in (None, "", ":memory:")
    engine = sa.create_engine(
        url,
        connect_args={"timeout": wait, "check_same_thread": False},
        **({"poolclass": StaticPool} if memory else {}),
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun below, not by the driver
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        if not memory:
            _switch_to_wal(cursor, wait)
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(_WRITE)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _switch_to_wal(cursor: Any, wait: float) -> None:
    """``PRAGMA journal_mode = WAL``, retried for up to ``wait`` seconds: two processes that open
    a new database at once race to switch it, and SQLite answers the loser "database is locked"
    at once, without its busy timeout (a server started beside another then exited)."""
    deadline = time.monotonic() + wait
    pause = 0.01
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


def check_files(database: str | os.PathLike | None = None) -> None:
    """Refuse, with the reason, a SQLite database this process cannot write: the file, its
    write-ahead log (``-wal``) or its shared-memory file (``-shm``) read-only for this user, or
    a folder where SQLite cannot create them. SQLite fails on such files in the middle of a
    request, or (a shared-memory file it maps read-only) crashes the process; a server
    should not start on them. Other databases, and SQLite in memory, are not checked here.

    Raises ``STORE_UNAVAILABLE`` naming the file and what to do.
    """
    url = sa.engine.make_url(database_url(database))
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:") or url.database.startswith("file:"):
        return
    path = os.path.abspath(url.database)
    folder = os.path.dirname(path)
    for file, what in ((path, "the database file"), (path + "-wal", "its write-ahead log"),
                       (path + "-shm", "its shared-memory file")):  # fmt: skip
        # Asked in this order: another process that closes the database removes its -wal and -shm files,
        # and a file gone between the two questions is not read-only (a server started beside it refused).
        if not os.access(file, os.W_OK) and os.path.exists(file):
            raise StoreUnavailable(
                f"Cannot use the SQLite database {path}: {what} {file} is read-only for this user (uid "
                f"{os.getuid() if hasattr(os, 'getuid') else '?'}), and SQLite fails on it, or crashes the process. "
                "Make it writable by this user (chown or chmod), or remove the -wal and -shm files while no "
                "process has the database open, then start again."
            )
    missing = not all(os.path.exists(path + suffix) for suffix in ("", "-wal", "-shm"))
    if missing and os.path.isdir(folder) and not os.access(folder, os.W_OK | os.X_OK):
        raise StoreUnavailable(
            f"Cannot use the SQLite database {path}: its folder {folder} is read-only for this user, and SQLite "
            "needs to create the database, or its -wal and -shm files, there. Make the folder writable, or choose "
            "another --db."
        )


#: Failures of the database itself (unreachable, a dropped connection, locked past the timeout, a full
#: disk, a read-only file), as opposed to a statement it refuses: retry later, 503 ``STORE_UNAVAILABLE``.
_OUTAGES = (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.DisconnectionError, sa.exc.TimeoutError)


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` says the database cannot be reached or written now (it may work later),
    rather than that a statement is wrong.

    >>> is_outage(sa.exc.OperationalError("BEGIN", {}, Exception("database or disk is full")))
    True
    >>> is_outage(sa.exc.IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed")))
    False
    """
    if isinstance(error, _OUTAGES):
        return True
    return isinstance(error, sa.exc.DBAPIError) and bool(error.connection_invalidated)


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
