"""The Audit page's views — the request as chat bubbles beside the reply, human times, the blocks
table — and the Compare page's "Send" that makes an audit to show."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from ..inputs.messages import link_ids, message_text, meta_of, part_text, role_of, tool_calls_of
from ..inputs.formats import Conversation
from ..pipeline.plan import fate_of
from .markdown import plain
from .setup import Setup
from .times import UTC, duration_text, when_text

#: What a cell shows for no value.
EMPTY = "—"
#: Characters of one bubble shown before it is cut (a 100,000-character tool result is one bubble).
BUBBLE_CHARACTERS = 4_000


def send_with_echo(conversation: Conversation, setup: Setup, strategy: str, store: Any = None,
                   name: str | None = None) -> str:
    """Store the conversation as a chat, generate once with the offline ``echo``
    provider under ``strategy`` and the user's choices, and return the chat id
    (its audit is then on the Audit page). The chat's title is ``name`` (what the
    conversation is called: a sample's key, a file's name), the strategy and the model;
    the selectors add its message count and time (:func:`~contextfit.serving.audits.chat_label`)."""
    from ..serving.generation import send_conversation  # the store and providers: only when a chat is sent

    settings = setup.settings.replace(context_strategy=strategy).to_json()
    title = " · ".join(part for part in (name, strategy, setup.model) if part)
    result = send_conversation(conversation, model=setup.model, settings=settings, title=title, provider="echo", store=store)
    return result.audit.chat_id


def audit_rows(audit: Any) -> list[dict[str, Any]]:
    """The audit's blocks as table rows, with each block's fate (the page writes the numbers with separators
    and a missing one as "—": :data:`NUMBERS`)."""
    return [
        {"#": block.index, "id": block.id, "role": block.role, "kind": block.kind, "tokens": block.tokens,
         **({"estimate": block.tokens_estimate} if audit.tokenizer.approximate else {}),
         "fate": fate_of(block.reason), "reason": block.reason}
        for block in audit.blocks
    ]


#: The columns of :func:`audit_rows` that hold token counts (whole numbers, or none).
NUMBERS = ("tokens", "estimate")


def fact_rows(audit: Any) -> list[dict[str, Any]]:
    """The chat's must-survive facts as the audit found them (no cell is ``None``: "—")."""
    return [{key: EMPTY if value is None else value for key, value in fact.items()} for fact in audit.facts or ()]


@dataclass(frozen=True, slots=True)
class Bubble:
    """One message as a chat bubble: who (``system``, ``user``, ``assistant`` or ``tool``), its text
    (cut at :data:`BUBBLE_CHARACTERS`, saying how much more there is) and a note (what it calls, what
    it answers, what it holds besides text)."""

    role: str
    text: str
    note: str = ""


_ROLES = {"developer": "system", "model": "assistant", "function": "tool"}


def bubble(message: Any) -> Bubble:
    """A provider message (OpenAI or Anthropic shape) as a :class:`Bubble`.

    >>> bubble({"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
    ...         "function": {"name": "lookup", "arguments": '{"q": "ORD-7"}'}}]})
    Bubble(role='assistant', text='lookup({"q": "ORD-7"})', note='calls a tool')
    >>> bubble({"role": "tool", "tool_call_id": "c1", "content": "In transit."})
    Bubble(role='tool', text='In transit.', note='answers c1')
    >>> bubble({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:..."}}]}).text
    '(an image or other data, not shown)'
    >>> bubble({"role": "user", "content": "x" * 5000}).text[-26:]
    'x… (1,000 more characters)'
    """
    if not isinstance(message, dict):
        return Bubble("user", str(message))
    role = role_of(message)
    parts = message.get("parts")  # a Gemini-shaped message: {"text": ...} parts without a type
    text = message_text(message) if not isinstance(parts, list) else "\n".join(filter(None, (
        part["text"] if isinstance(part, dict) and isinstance(part.get("text"), str) else part_text(part)
        for part in parts)))
    ids, is_result = link_ids(message)
    role = "tool" if is_result else _ROLES.get(role, role if role in ("system", "user", "assistant") else "user")
    if not text.strip():
        text = "(an image or other data, not shown)" if message.get("content") or parts else "(empty)"
    if len(text) > BUBBLE_CHARACTERS:
        text = text[:BUBBLE_CHARACTERS] + f"… ({len(text) - BUBBLE_CHARACTERS:,} more characters)"
    content = message.get("content")
    calls = tool_calls_of(message) or [part for part in (content if isinstance(content, list) else ())
                                           if isinstance(part, dict) and str(part.get("type", "")).endswith("tool_use")]
    note = ("answers " + ", ".join(ids) if ids else "a tool result") if is_result else (
        "calls a tool" if calls else "")
    return Bubble(role, text, note)


#: The bubbles' avatars: icons, not Streamlit's coloured ones (orange and yellow read as the fates' colours).
AVATARS = {"system": ":material/settings:", "user": ":material/person:", "assistant": ":material/smart_toy:",
           "tool": ":material/build:"}


def no_reply_text(audit: Any) -> str:
    """What stands in the reply's place when the generation stored none.

    >>> from types import SimpleNamespace as S
    >>> no_reply_text(S(status="failed", error_code="PROVIDER_TIMEOUT", error_message="No answer in 60 s."))
    'No reply: the generation failed (PROVIDER_TIMEOUT: No answer in 60 s.).'
    >>> no_reply_text(S(status="pending", error_code=None, error_message=None))
    'No reply yet: the generation is still running.'
    """
    if audit.status == "pending":
        return "No reply yet: the generation is still running."
    why = ": ".join(part for part in (audit.error_code, audit.error_message) if part)
    return f"No reply: the generation {audit.status}" + (f" ({why})." if why else ".")


def bubble_markdown(text: str) -> str:
    r"""A bubble's text for a Markdown widget, shown as typed: every Markdown character escaped
    (:func:`~contextfit.dashboard.markdown.plain`), each line break kept, and nothing a line starts with
    read as a block — a list item, a numbered item, a heading underline (a tool's ``-----`` or ``=====``)
    or an indented code block (its indent kept as no-break spaces).

    >>> shown = bubble_markdown("**Hi**" + chr(10) + "----" + chr(10) + "1. one" + chr(10) + "    code")
    >>> shown.split("  " + chr(10))
    ['\\*\\*Hi\\*\\*', '\\----', '1\\. one', '\xa0\xa0\xa0\xa0code']
    """
    lines = []
    for line in plain(text.expandtabs(4)).split("\n"):
        body = line.lstrip(" ")
        if body[:1] in ("-", "+", "="):
            body = "\\" + body
        lines.append("\u00a0" * (len(line) - len(line.lstrip(" "))) + _NUMBERED.sub(r"\1\\\2", body))
    return "  \n".join(lines)


_NUMBERED = re.compile(r"^(\d+)([.)])")


def sent_bubbles(audit: Any) -> list[Bubble]:
    """What the model saw, in order: the request's system text (Anthropic's ``system``), then each provider message."""
    out = [Bubble("system", audit.provider_system)] if audit.provider_system else []
    return out + [bubble(message) for message in audit.provider_messages]


def reply_of(messages: Sequence[Mapping[str, Any]], generation_id: str) -> Bubble | None:
    """The reply a generation stored in its chat (``meta.generationId``), as a bubble; ``None`` when there is none.

    >>> reply_of([{"role": "assistant", "content": "Hi!", "meta": {"generationId": "gen_1"}}], "gen_1")
    Bubble(role='assistant', text='Hi!', note='')
    >>> reply_of([{"role": "user", "content": "Hi"}], "gen_1") is None
    True
    """
    for message in reversed(messages):
        if isinstance(message, dict) and meta_of(message).get("generationId") == generation_id:
            return bubble(message)
    return None


def status_text(audit: Any, now: datetime, where: tzinfo = UTC) -> str:
    """The audit's line: its status, provider and model, when it started, how long it took, and its error code.

    >>> from types import SimpleNamespace as S
    >>> audit = S(status="completed", provider="echo", model="gpt-4o", created_at="2026-12-04T15:31:02.417Z",
    ...           finished_at="2026-12-04T15:31:02.900Z", error_code=None)
    >>> status_text(audit, datetime(2026, 12, 4, 15, 34, 30, tzinfo=UTC))
    'completed · echo · gpt-4o · 3 minutes ago · took 0.5 s'
    """
    parts = [audit.status, audit.provider, audit.model, when_text(audit.created_at, now, where)]
    took = duration_text(audit.created_at, audit.finished_at)
    if took:
        parts.append(took)
    if audit.error_code:
        parts.append(audit.error_code)
    return " · ".join(parts)


def chat_choice_label(chat: Any, now: datetime, where: tzinfo = UTC) -> str:
    """How the Audit page's selector names a chat: its title (or id), its messages, its audit's
    status and when that finished, as people say it.

    >>> from contextfit.serving.store import ChatSummary
    >>> chat = ChatSummary("chat_1", "roleplay · summarize · gpt-4o", "gpt-4o", 29,
    ...                    "2026-12-04T15:31:02.417Z", "2026-12-04T15:31:02.900Z", "completed", None,
    ...                    "2026-12-04T15:31:02.900Z")
    >>> chat_choice_label(chat, datetime(2026, 12, 4, 18, 0, tzinfo=UTC))
    'roleplay · summarize · gpt-4o · 29 messages — completed Dec 4, 15:31 UTC'
    """
    count = f"{chat.message_count:,} message{'' if chat.message_count == 1 else 's'}"
    label = f"{chat.title or chat.id} · {count}"
    if chat.audit_status:
        label += f" — {chat.audit_status} {when_text(chat.audit_finished_at or chat.created_at, now, where)}"
    return label


def load_audit_page(chat_id: str) -> tuple[Any, Any, Bubble | None]:
    """A chat's latest audit, the same as a plan with the chat's text (for the charts), and the reply
    its generation stored (``None``: none, a failed or cancelled generation), from the default store
    (:func:`~contextfit.serving.audits.load_audit_chat`). Raises ``CHAT_NOT_FOUND`` or ``AUDIT_NOT_FOUND``."""
    from ..serving.audits import load_audit_chat  # the store: only on the Audit page

    audit, plan, messages = load_audit_chat(chat_id)
    return audit, plan, reply_of(messages, audit.generation_id)
