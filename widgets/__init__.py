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

from collections.abc import Iterable
from typing import Any

import streamlit as st

from contextfit.dashboard import presentation, state
from contextfit.dashboard.setup import Setup
from contextfit.dashboard.sources import QUERY_KEYS, Source

from . import settings, source
from .chosen import Note, Sidebar, end_of_run, in_frame, keep, shared

__all__ = ["Note", "Sidebar", "draw_sidebar", "end_of_run", "in_frame", "need_strategies", "presentation_mode", "say",
           "set_settings", "shared", "start", "table", "write_link"]


def draw_sidebar(replay: bool = False) -> None:
    """Draw the sidebar Compare and Replay share (``app.py`` calls it before running either page;
    ``replay``: the page is Replay, whose own settings the URL then carries too)."""
    notes: list[Note] = []
    with st.sidebar:
        chosen = source.conversation_source(notes)
        setup = settings.draw(chosen, notes) if chosen is not None else None
    keep(Sidebar(chosen, setup, tuple(notes), replay, *settings.decision()))
    write_link()


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


def set_settings(values: dict[str, Any]) -> None:
    """Set several settings at once from a button's callback (Squeeze: the limit and its reserve)."""
    for key, value in values.items():
        st.session_state[key] = value


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


def presentation_mode(toggle: bool = False, where: Any = st) -> bool:
    """Whether presentation mode is on — Compare's toggle (``toggle``: draw it, in ``where``), which
    every page follows — with its larger page CSS. It is in the page's address, so it survives page
    switches and reloads; the sidebar folds away when it comes on (a reload in it included), and
    comes back when it goes off."""
    session = st.session_state
    if not session.get(_PRESENT_READ):  # a new session (a reload, a shared link): the address says
        session[_PRESENT_READ] = True
        if st.query_params.get(PRESENT) == "1":
            session[state.PRESENTATION] = True
    if toggle:
        where.toggle("Presentation mode", key=state.PRESENTATION,
                     help="Larger text, tables and charts for a projector (1920×1080): the answer, the windows "
                     "and the fate matrix on the first screen; the sidebar folds away.")
    presenting = bool(session.get(state.PRESENTATION))
    if presenting != session.get(_WAS_PRESENTING, False):  # turned on or off, or a reload in it: fold the sidebar
        session[_WAS_PRESENTING] = presenting
        st.set_page_config(initial_sidebar_state="collapsed" if presenting else "expanded")
        st.html(presentation.sidebar_script(folded=presenting), unsafe_allow_javascript=True)
    if presenting:
        st.html(presentation.CSS)
    # Every page keeps it in its address (Compare and Replay write theirs with their settings): a reload
    # of the Audit or Retention page mid-demo stays in presentation mode.
    if presenting and st.query_params.get(PRESENT) != "1":
        st.query_params[PRESENT] = "1"
    elif not presenting and PRESENT in st.query_params:
        del st.query_params[PRESENT]
    return presenting


_WAS_PRESENTING = "presentation.was_on"  # whether the last run folded the sidebar for presentation mode
_PRESENT_READ = "presentation.address_read"  # whether this session has read presentation mode from its address
PRESENT = "present"  # the address's parameter for presentation mode (state.LINK_KEYS names it too)


def table(styled: Any, presenting: bool, html: Any = None, **grid: Any) -> None:
    """A table as a data grid (``grid``: ``st.dataframe``'s options), or in presentation mode as HTML
    (``html``, else ``styled``, without its index), which the presentation CSS enlarges and wraps: a
    data grid is a canvas. A plain data frame's numbers get thousands separators and its missing
    values "—" (a styled one says its own)."""
    if not hasattr(styled, "hide"):  # a DataFrame, not a Styler
        styled = styled.style.format(thousands=",", na_rep="—")
    if presenting:
        st.table((styled if html is None else html).hide(axis="index"))
    else:
        st.dataframe(styled, **grid)
