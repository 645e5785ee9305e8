"""One :class:`~contextfit.pipeline.session.FitSession` per stored chat, per process.

A chat gets messages appended, and every generation plans it again. Each
request reads the chat from the database, so a write by any process (another
API worker on the same PostgreSQL) is seen; the session kept here only saves
the analysis of the messages it already holds. Which it may reuse is decided
by the chat's version, ``(updated_at, number of messages)``:

* the same version: the session holds exactly the chat's messages;
* more messages than the session holds, the last one it holds unchanged:
  stored messages are only ever appended (``Store.append_messages`` and a
  generation's reply), so the session takes the new ones (:meth:`~FitSession.extend`);
* anything else (fewer messages, a different last one): a new session.

The cache is bounded by chats and by messages held (least recently used go
first), and :func:`contextfit.caches.clear_caches` empties it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..caches import register
from ..pipeline.plan import PromptPlan, plan_prompt
from ..pipeline.settings import PlanSettings
from ..pipeline.session import FitSession

#: Chats whose sessions one process keeps.
MAX_CHATS = 64
#: Messages those sessions may hold together (the newest is kept whatever its size).
MAX_MESSAGES = 200_000


@dataclass(slots=True)
class _Entry:
    version: tuple[str, int]
    session: FitSession


def chat_version(chat: Any) -> tuple[str, int]:
    """The version of a stored chat's messages: when it was last written, and how many it has.

    >>> from contextfit.serving.store import Chat
    >>> chat_version(Chat("c1", None, None, {}, [{"role": "user", "content": "Hi"}], "t0", "t1"))
    ('t1', 1)
    """
    return chat.updated_at, len(chat.messages)


class ChatSessions:
    """A bounded map of chat id to the session of that chat's messages."""

    def __init__(self, max_chats: int = MAX_CHATS, max_messages: int = MAX_MESSAGES) -> None:
        self.max_chats = max_chats
        self.max_messages = max_messages
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every session."""
        with self._lock:
            self._entries.clear()

    def held_messages(self) -> int:
        """Messages the kept sessions hold together."""
        with self._lock:
            return sum(len(entry.session) for entry in self._entries.values())

    def session_for(self, chat: Any) -> FitSession:
        """The session of ``chat`` (a :class:`~contextfit.serving.store.Chat` just
        read), brought up to its version."""
        version = chat_version(chat)
        with self._lock:
            entry = self._entries.pop(chat.id, None)
        session = None if entry is None else _brought_up(entry, chat, version)
        if session is None:
            session = FitSession(chat.messages)
        with self._lock:
            self._entries[chat.id] = _Entry(version, session)
            self._bound(chat.id)
        return session

    def plan(self, chat: Any, settings: PlanSettings) -> PromptPlan:
        """:func:`~contextfit.plan_prompt` of ``chat``'s messages (a chat just read)
        with ``settings``, through its session: exactly the messages read,
        even when another request of this process moves the session on meanwhile."""
        session = self.session_for(chat)
        with session.lock:
            if len(session) == len(chat.messages):
                return session.plan(settings=settings)
        return plan_prompt(chat.messages, settings)  # a newer read of the chat got there first

    def _bound(self, newest: str) -> None:
        held = sum(len(entry.session) for entry in self._entries.values())
        while len(self._entries) > 1 and (len(self._entries) > self.max_chats or held > self.max_messages):
            oldest = next(iter(self._entries))
            if oldest == newest:
                break
            held -= len(self._entries.pop(oldest).session)


def _brought_up(entry: _Entry, chat: Any, version: tuple[str, int]) -> FitSession | None:
    """The entry's session at ``version``, or ``None`` when it cannot be reused."""
    session = entry.session
    if entry.version == version and len(session) == len(chat.messages):
        return session
    held = len(session)
    if held == 0 or held > len(chat.messages):
        return None
    if session[held - 1] != chat.messages[held - 1]:  # not the chat it held: start over
        return None
    session.extend(chat.messages[held:])
    return session


_SESSIONS: list[ChatSessions] = []
_SESSIONS_LOCK = threading.Lock()


def chat_sessions() -> ChatSessions:
    """This process's sessions (made on first use)."""
    with _SESSIONS_LOCK:
        if not _SESSIONS:
            _SESSIONS.append(ChatSessions())
        return _SESSIONS[0]


def _forget() -> None:
    with _SESSIONS_LOCK:
        for sessions in _SESSIONS:
            sessions.clear()


register("serving.chat_sessions", _SESSIONS, clear=_forget,
         size=lambda: sum(len(sessions) for sessions in _SESSIONS))
