"""Where the tests' data lives.

The real public samples live in ``../shared/fixtures`` beside the checkout
(override with ``CONTEXTFIT_SHARED_FIXTURES``). When that folder is missing,
the tests that need it skip with one reason, :data:`FIXTURES_MISSING` (the
run ends with one line saying how many: tests/conftest.py); in CI
(``CI=true``) a missing folder is an error that stops the run before any test.
The project's own small fixtures live in ``tests/data``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
TEST_DATA = TESTS / "data"
SHARED_FIXTURES = Path(
    os.environ.get("CONTEXTFIT_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures")
)
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
FIXTURES_MISSING = (
    f"the shared fixtures folder {SHARED_FIXTURES} is missing "
    "(put the samples there or point CONTEXTFIT_SHARED_FIXTURES at them)"
)


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
