"""The contextfit dashboard: the frame and nothing else."""

import streamlit as st

st.set_page_config(page_title="contextfit", layout="wide")
st.navigation([st.Page("pages/strategies.py", title="Strategies", default=True)]).run()
