"""The end-to-end tests: real browsers, servers, installs and the bench, as processes.

Every test under tests/e2e carries the ``e2e`` marker (``make test-fast`` leaves them out).
``make test`` runs them with ``--dist loadfile``: a module's tests run in one worker, so its
module-scoped server and browser start once.

The browser tests' fixtures: ``server``, a fresh dashboard (``streamlit run``) per module;
``browser``, one headless chromium per module; ``page``, a fresh page on the dashboard per
test. Their helpers are in tests/support/browser.py, which skips a module when playwright or
chromium is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A fresh dashboard on a loopback port for the module's tests: its URL."""
    from support.browser import dashboard_server

    with dashboard_server(tmp_path_factory.mktemp("db") / "chats.db") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for the module's tests (each test gets a context of its own)."""
    from support.browser import chromium

    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser, server):
    """A fresh page on the module's dashboard, its first script run over."""
    from support.browser import dashboard_page

    with dashboard_page(browser, server) as opened:
        yield opened
