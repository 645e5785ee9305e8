"""Fixtures for the store, generation and API tests: a plugin of tests/conftest.py, so every test has them.

Every test that takes ``database`` (or ``store``) runs on SQLite, and also on
PostgreSQL when ``CONTEXTFIT_TEST_PG_URL`` names a database: each test gets a
schema of its own there, dropped afterwards.

PYTEST_DONT_REWRITE: it has no asserts to rewrite.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from support.api import FakeProvider
from support.paths import TESTS

from contextfit.serving.store import Store, open_store

PG_URL = os.environ.get("CONTEXTFIT_TEST_PG_URL")


@pytest.fixture(autouse=True)
def spool_in_tmp(request, monkeypatch) -> None:
    """Outcomes a test's database refuses wait in the test's own folder (a PostgreSQL store's
    default is the working directory), for its stores and the servers it starts.

    Not for the package's doctests: they show where outcomes wait by default."""
    if TESTS in request.path.parents:
        monkeypatch.setenv("CONTEXTFIT_SPOOL_DIR", str(request.getfixturevalue("tmp_path") / "spool"))


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file, or a PostgreSQL schema of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "contextfit.db")
        return
    if not PG_URL:
        pytest.skip("set CONTEXTFIT_TEST_PG_URL to run the PostgreSQL variant")
    from support.servers import fresh_schema

    with fresh_schema(PG_URL) as url:
        yield url


@pytest.fixture
def store(database) -> Iterator[Store]:
    """An opened store on the fresh database."""
    opened = open_store(database)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def fake_provider() -> Iterator[FakeProvider]:
    """A running fake provider server, shared by a test module."""
    with FakeProvider() as fake:
        yield fake
