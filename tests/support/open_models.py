"""The offline references of the open-model profiles (tests/data/open_model_refs.json) and their texts."""

from __future__ import annotations

import hashlib
import json

import pytest
from data import make_open_model_refs as references  # the generator of the references
from support.paths import SHARED_FIXTURES, TEST_DATA

REFS = json.loads((TEST_DATA / "open_model_refs.json").read_text(encoding="utf-8"))


def fixture_texts() -> list[str]:
    """Every string in every shared JSON / JSONL fixture and jtokkit's CSV inputs, de-duplicated."""
    if not SHARED_FIXTURES.exists():
        pytest.skip("shared fixtures are absent")
    return references.fixture_texts(SHARED_FIXTURES)


def text_key(text: str) -> str:
    """A text's key in the references' files."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
