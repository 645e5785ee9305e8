"""Shared test fixtures.

The real public samples live in ``../shared/fixtures`` beside the checkout
(override with ``CONTEXTFIT_SHARED_FIXTURES``); tests that need them skip
cleanly when the folder is absent. The project's own small fixtures live in
``tests/data``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_FIXTURES = Path(
    os.environ.get("CONTEXTFIT_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures")
)


def shared_path(*parts: str) -> Path:
    """Path into the shared fixtures, skipping the test when it is absent."""
    path = SHARED_FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared fixture {path} is absent")
    return path


@pytest.fixture
def shared_fixtures() -> Path:
    """The shared fixtures folder (the test skips when it is absent)."""
    return shared_path()


@pytest.fixture
def test_data() -> Path:
    """The project's own small fixtures."""
    return TEST_DATA
