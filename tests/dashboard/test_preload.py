"""The browser starts loading the chart and table code at the top of a run (contextfit.dashboard.preload)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import streamlit
from support.paths import REPO
from streamlit.testing.v1 import AppTest

from contextfit.dashboard import preload

STATIC = preload.static_folder(Path(streamlit.__file__).parent)


def test_the_installed_streamlit_has_the_chunks_and_the_script_imports_each():
    files = preload.chunk_files(STATIC)
    assert [name.split(".")[0] for name in files] == list(preload.CHUNKS)
    text = preload.script(files)
    assert all(f'"{name}"' in text for name in files) and "import(base + file)" in text
    assert 'display: none' in text  # the element takes no room on the page


def test_nothing_is_guessed(tmp_path):
    assert preload.chunk_files(tmp_path / "missing") == [] and preload.script([]) == ""
    (tmp_path / "PlotlyChart.a.js").write_text("")
    (tmp_path / "PlotlyChart.b.js").write_text("")  # two builds' chunks: which one the page uses is unknown
    (tmp_path / "DataFrame.c.js").write_text("")
    assert preload.chunk_files(tmp_path) == ["DataFrame.c.js"]


def test_every_page_run_sends_it_first():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    assert not at.exception
    first = at.main.children[0]  # before the page's title
    assert "contextfit-preload" in first.proto.body and first.proto.unsafe_allow_javascript


def test_importing_it_loads_nothing_of_the_engine():
    # app.py imports it before anything else of contextfit: the facade and the dashboard package load nothing
    code = "import sys, json, contextfit.dashboard.preload; print(json.dumps(sorted(m for m in sys.modules if m.startswith('contextfit'))))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["contextfit", "contextfit.dashboard", "contextfit.dashboard.preload"]
