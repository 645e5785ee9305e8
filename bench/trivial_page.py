"""A trivial Streamlit page with nine plotly charts: the yardstick ``bench.dashboard --first-paint``
measures the Compare page's first paint against, in the same run (``streamlit run bench/trivial_page.py``)."""

import plotly.graph_objects as go
import streamlit as st

st.set_page_config(page_title="nine charts", layout="wide")
st.title("Nine charts")
columns = st.columns(3)
for number in range(9):
    with columns[number % 3]:
        figure = go.Figure(go.Bar(x=list(range(24)), y=[(number * 7 + i * 3) % 11 for i in range(24)]))
        st.plotly_chart(figure, key=f"chart-{number}", width="stretch")
