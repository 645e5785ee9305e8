"""The must-survive facts as a list the user edits — one list for Compare and Replay.

The list is :func:`contextfit.dashboard.fact_list.fact_list`'s (the
conversation's own facts, with the session's edits under
``state.MUST_SURVIVE``); the table edits it and every page that follows it
(the recommendation, the replay) reads the same edits.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from contextfit.dashboard import fact_list, state
from contextfit.dashboard.fact_list import FactList
from contextfit.dashboard.markdown import plain


def editor(listed: FactList, where: Any = st) -> None:
    """Draw the editable list (in ``where``): tick or untick a fact, edit one, or add a line in the
    table's last row; each change is kept for the session and the page follows it."""
    session = st.session_state
    key = f"must-survive-{session.get(state.FACTS_VERSION, 0)}"  # a new table after each change: its rows are the list
    column = st.column_config
    where.data_editor(
        pd.DataFrame(listed.rows(), columns=["follow", "fact", "why"]), key=key, num_rows="dynamic", hide_index=True,
        width="stretch", disabled=["why"], on_change=_changed, args=(listed, key),
        column_config={
            "follow": column.CheckboxColumn("follow", help="Unticked: no longer followed.", default=True),
            "fact": column.TextColumn("fact", width="large", help="Text, /regex/flags, or a JSON object such as "
                                      '{"text": "ORD-7731", "message": 3} (pinned to a message).'),
            "why": column.TextColumn("why it is listed", width="medium"),
        },
    )
    for note in listed.notes:
        where.warning(plain(note))
    if listed.edited:
        where.button("Back to the conversation's own list", key="must-survive-reset", on_click=reset)
    if (too_long := state.unlinked_edits(st.session_state.get(state.MUST_SURVIVE))):
        where.caption(too_long)


def _changed(listed: FactList, key: str) -> None:
    session = st.session_state
    session[state.MUST_SURVIVE] = fact_list.edits_after(listed, session.get(key) or {})
    session[state.FACTS_VERSION] = session.get(state.FACTS_VERSION, 0) + 1


def reset() -> None:
    """Forget the edits: the conversation's own list again."""
    session = st.session_state
    session[state.MUST_SURVIVE] = dict(fact_list.NO_EDITS)
    session[state.FACTS_VERSION] = session.get(state.FACTS_VERSION, 0) + 1
