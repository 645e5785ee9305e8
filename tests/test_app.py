"""The dashboard frame loads (AppTest, no browser)."""

from __future__ import annotations

from conftest import REPO
from streamlit.testing.v1 import AppTest


def test_the_frame_loads_and_lists_the_strategies():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=30).run()
    assert not at.exception
    frame = at.dataframe[0].value
    assert list(frame["strategy"])[:4] == ["truncate", "summarize", "vector-recall", "manual"]
