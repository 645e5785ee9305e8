"""The ``REASONING_ESTIMATED`` diagnostic: kept reasoning whose cost is an estimate.

An OpenAI Responses reasoning item sent back with ``encrypted_content`` is
counted with a documented estimate (:mod:`contextfit.tokens.reasoning_items`),
not from its text; this module says so on a plan and names the blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tokens.reasoning import REASONING
from ..tokens.reasoning_items import BYTES_PER_TOKEN, encrypted_tokens, is_estimated
from ..fitting import results as r


def reasoning_diagnostic(blocks: Sequence[Any]) -> list[dict]:
    """``REASONING_ESTIMATED`` for the sent ``reasoning`` rows holding encrypted reasoning
    (a row is named ``<message id>:reasoning``; its message is on the message's own row)."""
    sent = {block.id for block in blocks if block.kind == REASONING and block.included}
    found: dict[str, int] = {}
    tokens = 0
    for block in blocks:
        row = f"{block.id}:{REASONING}"
        if row not in sent or not isinstance(block.message, Mapping):
            continue
        content = block.message.get("content")
        items = [part for part in content if is_estimated(part)] if isinstance(content, list) else []
        if items:
            found[row] = len(items)
            tokens += sum(encrypted_tokens(part["encrypted_content"]) for part in items)
    if not found:
        return []
    count = sum(found.values())
    return [
        {
            "code": r.REASONING_ESTIMATED,
            "blocks": list(found),
            "items": count,
            "tokens": tokens,
            "message": f"{count} reasoning item(s) are sent as encrypted_content, whose tokens cannot be read; "
            f"they are estimated at {tokens} tokens (decoded bytes / {BYTES_PER_TOKEN}), so this count is approximate.",
        }
    ]
