"""Registered strategies and interceptors, and where they came from."""

import pandas as pd
import streamlit as st

import contextfit
import widgets
from contextfit.dashboard.markdown import plain
from contextfit.fitting.registry import interceptors, load_plugins

widgets.in_frame()

st.title("Plugins")
st.caption("Built-in strategies register through the same door as plugins; installed packages add more "
           "through the contextfit.plugins entry-point group.")
errors = load_plugins()
for error in errors:
    st.error(f"PLUGIN_ERROR: plugin {plain(error['plugin'])} failed to load: {plain(error['message'])}")
st.subheader("Strategies")
st.dataframe(
    pd.DataFrame([{"strategy": e.name, "origin": e.origin, "description": e.description} for e in contextfit.registry.entries()]),
    hide_index=True,
    width="stretch",
)
st.subheader("Interceptors")
entries = interceptors.entries()
if entries:
    st.dataframe(
        pd.DataFrame([{"interceptor": e.name, "origin": e.origin, "description": e.description} for e in entries]),
        hide_index=True,
        width="stretch",
    )
else:
    st.text("No interceptor is registered.")
