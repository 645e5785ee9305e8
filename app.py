"""The contextfit dashboard: the frame and nothing else."""

import importlib.util
from pathlib import Path

import streamlit as st


def _preload():
    """:mod:`contextfit.dashboard.preload`, loaded from its file: imported through the package it would
    first import the whole engine (the package's facade), which the browser would wait for. (Finding
    a top-level package imports nothing; this works from a checkout and from an installed wheel.)"""
    package = Path(importlib.util.find_spec("contextfit").submodule_search_locations[0])
    spec = importlib.util.spec_from_file_location("contextfit_preload", package / "views" / "preload.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


st.set_page_config(page_title="contextfit — what the model will see", layout="wide")
compare = st.Page("pages/compare.py", title="Compare strategies", default=True)
page = st.navigation(
    [
        compare,
        st.Page("pages/audit.py", title="Audit"),
        st.Page("pages/replay.py", title="Replay"),
        st.Page("pages/models.py", title="Models & tokenizers"),
        st.Page("pages/plugins.py", title="Plugins"),
    ]
)
# Before anything of contextfit is imported: the browser fetches and compiles the chart and table code
# while the server imports, loads the vocabulary and fits. Compare draws its charts in HTML: no chart code.
preload = _preload()
if (chunks := preload.script(chunks=preload.COMPARE_CHUNKS if page.url_path == compare.url_path else preload.CHUNKS)):
    st.html(chunks, unsafe_allow_javascript=True)

from contextfit.tokens import fast  # noqa: E402  (after the preload: see above)
from contextfit.dashboard.page_data import gc_paused  # noqa: E402

with gc_paused():  # a run's short-lived objects are freed by reference counting; see gc_paused
    page.run()
# The fast counting engine holds the interpreter for about a second while it loads: after the page is drawn.
fast.preload(delay=1.0)
