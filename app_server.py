"""The dashboard's server: ``app.py`` through Streamlit's ASGI door (``st.App``), so that every
answer carries a frame policy no other page can get around (``contextfit.dashboard.frame_policy``).
``make run`` and ``contextfit dashboard`` start this file with ``streamlit run``."""

import streamlit as st
from starlette.middleware import Middleware

from contextfit.dashboard.frame_policy import FramePolicy

app = st.App("app.py", middleware=[Middleware(FramePolicy)])
