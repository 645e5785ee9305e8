"""Every dashboard page runs inside ``app.py``: its layout, its navigation, its preload."""

from __future__ import annotations

from pathlib import Path

import streamlit as st


def in_frame() -> None:
    """Run ``app.py`` around this page when Streamlit ran the page on its own.

    A server whose main script has a ``pages/`` folder beside it starts in Streamlit's
    first multipage mode: until some session runs ``app.py`` (its ``st.navigation`` ends
    that mode for the whole server), a page opened by its address (a bookmark, a reload
    after a restart) runs alone, with the file names for navigation and the narrow layout.
    Then this runs ``app.py`` in the same run, which ends the mode and draws the page in
    the frame (the address names the same page in both modes), and stops the lone run.
    The run's widget events are the same run's: a click is not lost. A no-op inside the app.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # a Streamlit whose pages manager moved: nothing to end
        return
    ctx = get_script_run_ctx()
    if ctx is None or not getattr(PagesManager, "uses_pages_directory", None):
        return
    main = Path(ctx.pages_manager.main_script_path)
    exec(compile(main.read_text(encoding="utf-8"), str(main), "exec"), {"__name__": "__main__", "__file__": str(main)})  # noqa: S102
    st.stop()
