"""The contextfit dashboard: the frame around its pages, and the sidebar Compare and Replay share."""

from pathlib import Path

import streamlit as st

from contextfit.dashboard import preload  # imports nothing of the engine: the script goes out first

st.set_page_config(page_title="contextfit — what the model will see", layout="wide")
compare = st.Page("pages/compare.py", title="Compare strategies", default=True)
replay = st.Page("pages/replay.py", title="Replay")
page = st.navigation(
    [
        compare,
        st.Page("pages/audit.py", title="Audit"),
        replay,
        st.Page("pages/retention.py", title="Retention benchmark"),
        st.Page("pages/models.py", title="Models & tokenizers"),
        st.Page("pages/plugins.py", title="Plugins"),
    ]
)
# Before the engine is imported: the browser fetches and compiles the chart and table code while the
# server imports, loads the vocabulary and fits. Compare draws its charts in HTML: no chart code.
chunks = preload.COMPARE_CHUNKS if page.url_path == compare.url_path else preload.CHUNKS
if (script := preload.script(preload.chunk_files(preload.static_folder(Path(st.__file__).parent), chunks))):
    st.html(script, unsafe_allow_javascript=True)

import widgets  # noqa: E402  (after the preload: see above)
from contextfit.dashboard import state  # noqa: E402
from contextfit.dashboard.gc_pause import gc_paused  # noqa: E402
from contextfit.tokens import fast  # noqa: E402

state.keep(st.session_state)  # the settings outlive the pages that do not draw their widgets
with gc_paused():  # a run's short-lived objects are freed by reference counting; see gc_paused
    if page.url_path in (compare.url_path, replay.url_path):
        widgets.draw_sidebar(replay=page.url_path == replay.url_path)
    try:
        page.run()
    finally:
        widgets.end_of_run()
# The fast counting engine holds the interpreter for about a second while it loads: after the page is drawn.
fast.preload(delay=1.0)
