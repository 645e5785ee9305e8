"""Shared test configuration.

The helpers live in ``tests/support`` (paths, fake servers, chart parsers, conversation
generators); this file wires them into pytest:

* the hypothesis profile of the run (``support/depth.py``): ``contextfit`` by default,
  ``--hypothesis-profile=deep`` for ``make test-deep``;
* the store and API fixtures (``support/api_fixtures.py``), as a plugin;
* one line at the end for the tests the missing shared fixtures folder skipped, and an
  error before any test when CI runs without it.

Wall-clock checks are marked ``perf`` and left out of the default run
(``pyproject.toml``); ``pytest -m perf`` runs them. Tests that start browsers, servers,
installs or the bench live in ``tests/e2e`` and carry the ``e2e`` marker
(``make test-fast`` leaves them out).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings
from support.depth import EVERYDAY  # noqa: F401  (registers the profiles)
from support.paths import FIXTURES_MISSING, IN_CI, SHARED_FIXTURES, TEST_DATA, shared_path

pytest_plugins = ["support.api_fixtures"]  # the database, store and fake_provider fixtures

settings.load_profile("contextfit")  # --hypothesis-profile=deep replaces it when pytest configures


def pytest_configure(config: pytest.Config) -> None:
    if IN_CI and not SHARED_FIXTURES.is_dir():
        raise pytest.UsageError(f"CI=true and {FIXTURES_MISSING}: CI must run every test.")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """One line for every test the missing fixtures folder skipped."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if FIXTURES_MISSING in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} tests skipped: {FIXTURES_MISSING}.", yellow=True)


@pytest.fixture
def shared_fixtures() -> Path:
    """The shared fixtures folder (the test skips when it is absent)."""
    return shared_path()


@pytest.fixture
def test_data() -> Path:
    """The project's own small fixtures."""
    return TEST_DATA


@pytest.fixture(autouse=True)
def dashboard_runs_in_its_navigation(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppTest runs ``app.py`` as a server does once a session has run it.

    A server whose ``app.py`` has ``pages/`` beside it starts in Streamlit's
    pages-folder mode, where a page opened by its address runs alone until some
    session's ``st.navigation`` ends that mode for good (``widgets.in_frame``
    handles that first run). AppTest starts every run in that mode again (it
    resets the flag), so without this each run of a page would begin alone.
    Only where a test module has loaded Streamlit; a test of that first run
    runs in an interpreter of its own.
    """
    if "streamlit.runtime.pages_manager" not in sys.modules:
        return
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)

