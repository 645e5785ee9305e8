"""The contextfit dashboard: the frame and nothing else."""

import streamlit as st

from contextfit.views.dashboard import gc_paused

st.set_page_config(page_title="contextfit — what the model will see", layout="wide")
page = st.navigation(
    [
        st.Page("pages/compare.py", title="Compare strategies", default=True),
        st.Page("pages/audit.py", title="Audit"),
        st.Page("pages/models.py", title="Models & tokenizers"),
        st.Page("pages/plugins.py", title="Plugins"),
    ]
)
with gc_paused():  # a run's short-lived objects are freed by reference counting; see gc_paused
    page.run()
