"""What the shared sidebar chose in this run, for the pages and the sidebar's own widgets to read.

``app.py`` draws the sidebar (:func:`widgets.draw_sidebar`), which keeps what it
chose here for the run (:func:`keep`); a page reads it with :func:`shared`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import streamlit as st

from contextfit.dashboard.setup import Setup
from contextfit.dashboard.sources import Source
from contextfit.replays.recommend import RETENTION
from contextfit.replays.volume import DEFAULT_CONVERSATIONS_PER_DAY

#: A note for the page to show above its content: the Streamlit call (``info``, ``warning``,
#: ``error``, ``caption``) and its text (Markdown-safe).
Note = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Sidebar:
    """What the shared sidebar chose in this run: the conversation (``None``: nothing to show yet,
    the notes say why), the model, limits and strategies (``None`` without a conversation), what
    the page says about them above its content, and the priority and conversations a day the
    recommendation and its costs at volume follow."""

    source: Source | None
    setup: Setup | None
    notes: tuple[Note, ...] = ()
    replay: bool = False
    #: what the recommendation favours: ``retention``, ``cost`` or ``cache`` (``replays.recommend.PRIORITIES``)
    priority: str = RETENTION
    #: the conversations a day the costs at volume (a month's) are shown for
    conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY


_run = threading.local()  # this run's sidebar: each session's script runs in a thread of its own


def keep(sidebar: Sidebar) -> None:
    """Keep what the sidebar chose for the rest of this run."""
    _run.sidebar = sidebar


def end_of_run() -> None:
    """Forget this run's sidebar (``app.py``, once the page has run)."""
    _run.sidebar = None


def shared() -> Sidebar:
    """What the shared sidebar chose in this run, for a page ``app.py`` draws it for (the page
    runs inside ``app.py`` first: :func:`in_frame`)."""
    in_frame()
    found = getattr(_run, "sidebar", None)
    if found is None:  # a page that app.py does not give the sidebar
        raise RuntimeError("widgets.shared() is for the pages app.py draws the shared sidebar for.")
    return found



def in_frame() -> None:
    """Run this page inside ``app.py`` when Streamlit ran it on its own.

    A server whose main script has a ``pages/`` folder beside it starts in Streamlit's
    first multipage mode: until some session runs ``st.navigation`` (``app.py`` does), a
    page opened by its address (a bookmark, a reload after a restart) runs alone, without
    the sidebar it shares, with the file names for navigation and the narrow layout. This
    ends that mode for the server, as ``st.navigation`` does, and runs the same page again
    (the same address and query), now through ``app.py``. A no-op inside ``app.py``.

    On a server that mode lasts until the first run. Streamlit's AppTest starts every run
    in it again, where the rerun would lose the run's clicks: the tests run ``app.py`` as a
    server does after its first run (``tests/conftest.py``), and test this first run apart.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:  # a Streamlit whose pages manager moved: the page runs alone
        return
    if get_script_run_ctx() is not None and getattr(PagesManager, "uses_pages_directory", None):
        PagesManager.uses_pages_directory = False
        st.rerun()
