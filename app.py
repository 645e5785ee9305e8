"""The contextfit dashboard: the frame and nothing else."""

import streamlit as st


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
from contextfit.dashboard import preload  # noqa: E402  (the facade is lazy: this loads preload alone)

if (chunks := preload.script(chunks=preload.COMPARE_CHUNKS if page.url_path == compare.url_path else preload.CHUNKS)):
    st.html(chunks, unsafe_allow_javascript=True)

from contextfit.tokens import fast  # noqa: E402  (after the preload: see above)
from contextfit.dashboard.page_data import gc_paused  # noqa: E402

with gc_paused():  # a run's short-lived objects are freed by reference counting; see gc_paused
    page.run()
# The fast counting engine holds the interpreter for about a second while it loads: after the page is drawn.
fast.preload(delay=1.0)
