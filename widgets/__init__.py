"""What ``app.py`` draws around the pages, and what the pages read from it.

Compare and Replay share one sidebar — the conversation (:mod:`widgets.source`)
and the model, limits, strategies, priority and conversations a day
(:mod:`widgets.settings`) — drawn once per
run by ``app.py`` before it runs the page, the way Streamlit documents widgets
that several pages share; a page reads what was chosen with :func:`shared`
and adds its own widgets below. Everything here draws: the rules are in
``contextfit.dashboard`` (``state``, ``sources``, ``setup``), with tests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from contextfit.dashboard import presentation, state
from contextfit.dashboard.setup import Setup
from contextfit.dashboard.sources import QUERY_KEYS, Source
from contextfit.replays.recommend import RETENTION
from contextfit.replays.volume import DEFAULT_CONVERSATIONS_PER_DAY

from . import settings, source

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


def draw_sidebar(replay: bool = False) -> None:
    """Draw the sidebar Compare and Replay share (``app.py`` calls it before running either page;
    ``replay``: the page is Replay, whose own settings the URL then carries too)."""
    notes: list[Note] = []
    with st.sidebar:
        chosen = source.conversation_source(notes)
        setup = settings.draw(chosen, notes) if chosen is not None else None
    _run.sidebar = Sidebar(chosen, setup, tuple(notes), replay, *settings.decision())
    write_link()


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


def say(notes: Iterable[Note]) -> None:
    """Draw the notes, in order."""
    for kind, text in notes:
        getattr(st, kind)(text)


def write_link() -> None:
    """Make the page's address name this run's conversation and settings: a reload, a bookmark or a
    shared link opens them again (the Replay page calls it again once its turn is known)."""
    sidebar = shared()
    wanted: dict[str, Any] = source.query(sidebar.source)
    owned = QUERY_KEYS
    if sidebar.setup is not None:
        wanted.update(state.link_of(st.session_state, replay=sidebar.replay))
        owned += state.LINK_KEYS
    state.write_link(st.query_params, wanted, owned)


def set_setting(key: str, value: Any) -> None:
    """Set a setting from a button's callback (the run that follows draws its widget with it)."""
    st.session_state[key] = value


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


def start(sidebar: Sidebar) -> Source:
    """Show what the sidebar needs said, and stop the page when there is no conversation to show."""
    say(sidebar.notes)
    if sidebar.source is None:
        st.stop()
    return sidebar.source


def need_strategies(setup: Setup) -> None:
    """Stop the page, saying why, when no strategy is chosen."""
    if not setup.strategies:
        st.info("Choose at least one strategy in the sidebar.")
        st.stop()


def presentation_mode(toggle: bool = False) -> bool:
    """Whether presentation mode is on — Compare's toggle (``toggle``: draw it here), which Replay
    follows — with its larger page CSS; the sidebar folds away when it is turned on, and back."""
    session = st.session_state
    if toggle:
        st.toggle("Presentation mode", key=state.PRESENTATION,
                  help="Larger text and charts for a projector (1920×1080); the sidebar folds away.")
    presenting = bool(session.get(state.PRESENTATION))
    if toggle and presenting != session.get("was_presenting", False):  # turned on or off: fold the sidebar
        session.was_presenting = presenting
        st.set_page_config(initial_sidebar_state="collapsed" if presenting else "expanded")
    if presenting:
        st.html(presentation.CSS)
    return presenting


def table(styled: Any, presenting: bool, html: Any = None, **grid: Any) -> None:
    """A table as a data grid (``grid``: ``st.dataframe``'s options), or in presentation mode as HTML
    (``html``, else ``styled``), which the presentation CSS enlarges: a data grid is a canvas."""
    if presenting:
        st.table(styled if html is None else html)
    else:
        st.dataframe(styled, **grid)
