"""Fixtures for the store, generation and API tests (``pytest_plugins = ["api_fixtures"]``).

Every test that takes ``database`` (or ``store``) runs on SQLite, and also on
PostgreSQL when ``CONTEXTFIT_TEST_PG_URL`` names a database: each test gets a
schema of its own there, dropped afterwards.

PYTEST_DONT_REWRITE: --doctest-modules imports this file before it is
registered as a plugin; it has no asserts to rewrite.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from api_support import FakeProvider

from contextfit.serving.store import Store, open_store

PG_URL = os.environ.get("CONTEXTFIT_TEST_PG_URL")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file, or a PostgreSQL schema of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "contextfit.db")
        return
    if not PG_URL:
        pytest.skip("set CONTEXTFIT_TEST_PG_URL to run the PostgreSQL variant")
    import sqlalchemy as sa

    from contextfit.serving.database import database_url

    schema = "cf_test_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(database_url(PG_URL))
    with admin.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{separator}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


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
