"""Shared test fixtures.

The real public samples live in ``../shared/fixtures`` beside the checkout
(override with ``CONTEXTFIT_SHARED_FIXTURES``). When that folder is missing,
the tests that need it skip with one reason, :data:`FIXTURES_MISSING`, and the
run ends with one line saying how many; in CI (``CI=true``) a missing folder is
an error that stops the run before any test. The project's own small fixtures
live in ``tests/data``.

Wall-clock checks are marked ``perf`` and left out of the default run
(``pyproject.toml``); ``pytest -m perf`` runs them. Hypothesis never fails an
example for being slow here (no deadline): speed is what ``perf`` tests and
``bench/`` measure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_FIXTURES = Path(
    os.environ.get("CONTEXTFIT_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures")
)
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
FIXTURES_MISSING = (
    f"the shared fixtures folder {SHARED_FIXTURES} is missing "
    "(put the samples there or point CONTEXTFIT_SHARED_FIXTURES at them)"
)

# Slowness is never a failure in the default run: no per-example deadline, no "too slow" health check.
settings.register_profile(
    "contextfit", parent=settings.default, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("contextfit")


def pytest_configure(config: pytest.Config) -> None:
    if IN_CI and not SHARED_FIXTURES.is_dir():
        raise pytest.UsageError(f"CI=true and {FIXTURES_MISSING}: CI must run every test.")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """One line for every test the missing fixtures folder skipped."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if FIXTURES_MISSING in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} tests skipped: {FIXTURES_MISSING}.", yellow=True)


def shared_path(*parts: str) -> Path:
    """Path into the shared fixtures: the test skips when the folder is missing.

    A file missing from a folder that is there skips that test alone, and
    fails it in CI.
    """
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(FIXTURES_MISSING)
    path = SHARED_FIXTURES.joinpath(*parts)
    if not path.exists():
        (pytest.fail if IN_CI else pytest.skip)(f"shared fixture {path} is absent")
    return path


def shared_params(paths: Iterable[Path]) -> list:
    """Parameters for a test over shared fixture files: one skipped case when the folder is missing.

    (An empty list would make pytest skip with a reason of its own.)
    """
    if not SHARED_FIXTURES.is_dir():
        return [pytest.param(None, id="shared-fixtures-missing", marks=pytest.mark.skip(reason=FIXTURES_MISSING))]
    return list(paths)


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


def replay_table(at):
    """The Replay page's table of every turn under every strategy (in an AppTest run): the one with
    ``tokens sent`` (the answer's costs table comes first)."""
    return next(frame for frame in at.dataframe if "tokens sent" in frame.value.columns)
