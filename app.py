"""The contextfit dashboard: the frame and nothing else."""

import streamlit as st

from contextfit.views import preload
from contextfit.views.dashboard import gc_paused
from contextfit.tokens import fast

st.set_page_config(page_title="contextfit — what the model will see", layout="wide")
page = st.navigation(
    [
        st.Page("pages/compare.py", title="Compare strategies", default=True),
        st.Page("pages/audit.py", title="Audit"),
        st.Page("pages/replay.py", title="Replay"),
        st.Page("pages/models.py", title="Models & tokenizers"),
        st.Page("pages/plugins.py", title="Plugins"),
    ]
)
if (chunks := preload.script()):  # the browser compiles the chart code while the server fits
    st.html(chunks, unsafe_allow_javascript=True)
with gc_paused():  # a run's short-lived objects are freed by reference counting; see gc_paused
    page.run()
# The fast counting engine holds the interpreter for about a second while it loads: after the page is drawn.
fast.preload(delay=1.0)
