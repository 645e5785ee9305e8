"""Reading stored audits for the dashboard (the audit itself is :mod:`contextfit.serving.audit`).

::

    chats = contextfit.serving.audits.list_audited_chats()          # newest first
    audit, plan = contextfit.serving.audits.load_audit_plan(chats[0].id)
    charts.budget_figure(plan)                             # the Compare page's charts

``contextfit.serving.audits`` is this module; the audit's own names (``PromptContextAudit``,
``AuditBlock``, the statuses) are here too, so one name reaches both.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from ..pipeline.plan import PromptPlan
from .audit import (  # noqa: F401 - re-exported: contextfit.serving.audits reaches the value too
    CANCELLED,
    COMPLETED,
    FAILED,
    PENDING,
    TERMINAL,
    AuditBlock,
    PromptContextAudit,
    audit_from_plan,
)
from .store import ChatSummary, Store
from .store_cache import shared_store


def _store(store: Store | str | None) -> Store:
    return store if store is not None and not isinstance(store, str) else shared_store(store)


def list_audited_chats(store: Store | str | None = None) -> list[ChatSummary]:
    """Chats that have an audit, most recently finished first.

    ``store`` is a :class:`~contextfit.serving.store.Store`, a database path or URL,
    or ``None`` for the default database (``$CONTEXTFIT_DB`` or ``contextfit.db``).
    Each summary has ``id``, ``title``, ``model``, ``message_count`` and the
    audit's ``audit_status``, ``audit_error_code`` and ``audit_finished_at``.
    """
    chats = [chat for chat in _store(store).list_chats() if chat.audit_status is not None]
    return sorted(chats, key=lambda chat: chat.audit_finished_at or "", reverse=True)


def chat_label(chat: ChatSummary, status: bool = False) -> str:
    """How a selector names a stored chat: when it was created (month, day and time, to the
    second, first: the Replay sidebar shows only a label's start), its title (or id) and the
    messages it holds now (two chats sent from one sample under one strategy had equal labels);
    ``status``: the audit's status after a dash.

    >>> chat = ChatSummary("chat_1", "roleplay · summarize · gpt-4o", "gpt-4o", 29,
    ...                    "2026-12-04T15:31:02.417Z", "2026-12-04T15:31:02.900Z", "completed")
    >>> chat_label(chat)
    '12-04 15:31:02 · roleplay · summarize · gpt-4o · 29 messages'
    >>> chat_label(chat, status=True)
    '12-04 15:31:02 · roleplay · summarize · gpt-4o · 29 messages — completed'
    """
    count = f"{chat.message_count:,} message{'' if chat.message_count == 1 else 's'}"
    when = chat.created_at[5:19].replace("T", " ")
    label = " · ".join(part for part in (when, chat.title or chat.id, count) if part)
    return f"{label} — {chat.audit_status}" if status and chat.audit_status else label


#: The Audit page's chat selector, its copy no widget owns (a page switch drops the widget's) and its URL key.
AUDIT_CHOICE, AUDIT_KEPT, AUDIT_PARAM = "audit_chat_choice", "kept:audit_chat_choice", "chat"


def choose_audit_chat(state: MutableMapping[str, Any], ids: Sequence[str], params: Mapping[str, Any]) -> None:
    """Set the Audit page's chat selector before it is drawn: the chat just sent (Compare's
    ``audit_chat``), else the one chosen before (kept across a page switch) or named in the
    URL (a reload), else the newest. It showed the newest after every visit elsewhere.

    >>> state = {"kept:audit_chat_choice": "b"}
    >>> choose_audit_chat(state, ["a", "b"], {}); state["audit_chat_choice"]
    'b'
    >>> choose_audit_chat(state, ["a", "b"], {"chat": "gone"}); state["audit_chat_choice"]
    'b'
    >>> state = {"audit_chat": "a"}; choose_audit_chat(state, ["a", "b"], {"chat": "b"}); state["audit_chat_choice"]
    'a'
    >>> state = {}; choose_audit_chat(state, ["a", "b"], {"chat": "b"}); state["audit_chat_choice"]
    'b'
    """
    linked = params.get(AUDIT_PARAM)
    linked = linked[0] if isinstance(linked, list) and linked else linked
    for candidate in (state.pop("audit_chat", None), state.get(AUDIT_CHOICE), state.get(AUDIT_KEPT), linked):
        if candidate in ids:
            state[AUDIT_CHOICE] = candidate
            return
    state[AUDIT_CHOICE] = ids[0]


def load_audit(chat_id: str, store: Store | str | None = None) -> PromptContextAudit:
    """The latest audit of a chat; raises ``CHAT_NOT_FOUND`` or ``AUDIT_NOT_FOUND``."""
    return _store(store).get_audit(chat_id)


def load_audit_plan(chat_id: str, store: Store | str | None = None) -> tuple[PromptContextAudit, PromptPlan]:
    """The latest audit of a chat, and the same as a plan with the chat's text (for the charts)."""
    audit, plan, _messages = load_audit_chat(chat_id, store)
    return audit, plan


def load_audit_chat(chat_id: str, store: Store | str | None = None) -> tuple[PromptContextAudit, PromptPlan, list[dict]]:
    """:func:`load_audit_plan` and the chat's messages as stored (its generations' replies included)."""
    opened = _store(store)
    audit = opened.get_audit(chat_id)
    messages = opened.get_chat(chat_id).messages
    return audit, audit.as_plan(messages), messages
