"""The :class:`~contextfit.FitSession` of each conversation the dashboard shows.

A page plans through the session of its conversation (``session.plans(...)``
one strategy at a time, ``session.plan(...)`` for one): each rerun re-plans the
same messages, and the session keeps their analysis and assembled blocks.
"""

from __future__ import annotations

import threading

from ..caches import register
from ..inputs.formats import Conversation
from ..pipeline.session import FitSession

#: Conversations whose sessions the dashboard keeps (one per browser tab's
#: upload is typical; the least recently used goes first).
SESSIONS_KEPT = 4
_sessions: list[FitSession] = []
_sessions_lock = threading.Lock()
register("dashboard.sessions", _sessions, clear=lambda: _forget_sessions())


def _forget_sessions() -> None:
    with _sessions_lock:
        _sessions.clear()


def session_for(conversation: Conversation) -> FitSession:
    """The session of a conversation (the same object), kept for the page's reruns.

    A conversation whose message list grew since (the same object, appended
    to) has the new messages added; any other change needs a new
    conversation object, as an upload or an edit of the input makes.

    >>> from contextfit import load_conversation
    >>> chat = load_conversation('[{"role": "user", "content": "Hi"}]')
    >>> session_for(chat) is session_for(chat), len(session_for(chat))
    (True, 1)
    """
    with _sessions_lock:
        found = next((s for s in _sessions if s.conversation is conversation), None)
        if found is not None and len(found) > len(conversation.messages):
            found = None
        if found is None:
            found = FitSession(conversation)
        _sessions[:] = [found, *(s for s in _sessions if s is not found)][:SESSIONS_KEPT]
    if len(found) < len(conversation.messages):
        found.extend(conversation.messages[len(found):])
    return found
