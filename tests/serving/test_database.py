"""Opening a SQLite database beside other processes that open or close it at the same moment."""

from __future__ import annotations

import os
import sqlite3

import pytest

from contextfit.serving import database


class Cursor:
    """A cursor whose ``PRAGMA journal_mode`` fails as given, then succeeds."""

    def __init__(self, *failures: str) -> None:
        self.failures = list(failures)
        self.calls = 0

    def execute(self, sql: str) -> None:
        self.calls += 1
        if self.failures:
            raise sqlite3.OperationalError(self.failures.pop(0))


def test_the_switch_to_wal_waits_out_a_process_switching_the_same_new_database(monkeypatch):
    monkeypatch.setattr(database.time, "sleep", lambda seconds: None)
    cursor = Cursor("database is locked", "database is locked")
    database._switch_to_wal(cursor, wait=5)
    assert cursor.calls == 3


def test_the_switch_to_wal_gives_up_at_the_lock_timeout_and_retries_nothing_else(monkeypatch):
    clock = iter(range(0, 1000, 1))
    monkeypatch.setattr(database.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(database.time, "sleep", lambda seconds: None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        database._switch_to_wal(Cursor(*["database is locked"] * 100), wait=3)
    cursor = Cursor("disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        database._switch_to_wal(cursor, wait=30)
    assert cursor.calls == 1


def test_a_wal_file_another_process_removes_meanwhile_is_not_called_read_only(tmp_path, monkeypatch):
    path = tmp_path / "chats.db"
    sqlite3.connect(path).close()
    wal = tmp_path / "chats.db-wal"
    wal.write_bytes(b"")
    real_access = os.access

    def access(file, mode):  # the other process closes the database between our two questions
        if str(file) == str(wal) and wal.exists():
            wal.unlink()
            return False
        return real_access(file, mode)

    monkeypatch.setattr(database.os, "access", access)
    database.check_files(str(path))  # no StoreUnavailable: the file is gone, not read-only


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_wal_file_is_still_refused(tmp_path):
    path = tmp_path / "chats.db"
    sqlite3.connect(path).close()
    wal = tmp_path / "chats.db-wal"
    wal.write_bytes(b"")
    wal.chmod(0o444)
    with pytest.raises(database.StoreUnavailable, match="read-only"):
        database.check_files(str(path))
