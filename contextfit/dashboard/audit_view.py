"""The Audit page's table, and the Compare page's "Send" that makes an audit to show."""

from __future__ import annotations

from typing import Any

from ..inputs.formats import Conversation
from ..pipeline.plan import fate_of
from .setup import Setup


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
    """The audit's blocks as table rows, with each block's fate."""
    return [
        {"#": block.index, "id": block.id, "role": block.role, "kind": block.kind, "tokens": block.tokens,
         **({"estimate": block.tokens_estimate} if audit.tokenizer.approximate else {}),
         "fate": fate_of(block.reason), "reason": block.reason}
        for block in audit.blocks
    ]
