"""The contextfit dashboard: the frame and nothing else."""

import streamlit as st

st.set_page_config(page_title="contextfit — what the model will see", layout="wide")
st.navigation(
    [
        st.Page("pages/compare.py", title="Compare strategies", default=True),
        st.Page("pages/audit.py", title="Audit"),
        st.Page("pages/models.py", title="Models & tokenizers"),
        st.Page("pages/plugins.py", title="Plugins"),
    ]
).run()
