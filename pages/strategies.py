"""The registered context strategies (built-in and from plugins)."""

import pandas as pd
import streamlit as st

import contextfit

st.title("contextfit")
st.caption("See exactly what an LLM will see: which blocks are kept, dropped, summarized or compressed, and why.")
contextfit.load_plugins()
rows = [{"strategy": e.name, "origin": e.origin, "description": e.description} for e in contextfit.registry.entries()]
st.dataframe(pd.DataFrame(rows), hide_index=True, use_container_width=True)
