"""What an OpenAI Responses ``reasoning`` item costs when it is sent back.

A reasoning item holds readable text — its ``summary`` (``summary_text``
parts) and, for some models, ``content`` (``reasoning_text`` parts) — and
may hold ``encrypted_content``: the model's reasoning, encrypted, which
OpenAI decrypts and puts back in context. Its token count cannot be read,
and counting its base64 as if it were text would be wrong (base64 tokenizes
at about one token per two or three characters). So:

* readable text is counted with the model's tokenizer, exactly;
* ``encrypted_content`` is **estimated**: its decoded size in bytes divided
  by :data:`BYTES_PER_TOKEN` (4, OpenAI's rule of thumb of about four
  characters of English text per token, applied to the ciphertext, which is
  about as long as the text it encrypts). A plan holding one says so
  (``REASONING_ESTIMATED``) and its count is approximate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

#: Bytes of decrypted reasoning per token, for the estimate of ``encrypted_content``.
BYTES_PER_TOKEN = 4
#: The content-part type of a Responses reasoning item (as the importer keeps it).
REASONING_ITEM = "reasoning"


def encrypted_tokens(encrypted: Any) -> int:
    """The estimated tokens of an ``encrypted_content`` string (0 when there is none).

    >>> encrypted_tokens("A" * 400), encrypted_tokens(None)
    (75, 0)
    """
    if not isinstance(encrypted, str) or not encrypted:
        return 0
    data = encrypted.strip().rstrip("=")
    return math.ceil(len(data) * 3 // 4 / BYTES_PER_TOKEN)


def is_estimated(part: Any) -> bool:
    """Whether a content part is a reasoning item whose cost is estimated (it holds ``encrypted_content``).

    >>> is_estimated({"type": "reasoning", "summary": [], "encrypted_content": "gAAA"})
    True
    """
    return isinstance(part, Mapping) and part.get("type") == REASONING_ITEM and bool(part.get("encrypted_content"))


def readable_text(part: Mapping) -> str:
    """The summary and reasoning text a reasoning item holds, one part a line.

    >>> readable_text({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look it up."}]})
    'Look it up.'
    """
    texts = []
    for key in ("summary", "content"):
        parts = part.get(key)
        if isinstance(parts, str):
            texts.append(parts)
        elif isinstance(parts, list):
            texts.extend(item["text"] for item in parts if isinstance(item, Mapping) and isinstance(item.get("text"), str))
    return "\n".join(text for text in texts if text)


def reasoning_item_tokens(part: Mapping, count: Callable[[str], int]) -> int:
    """Tokens of one reasoning item: its readable text counted, its encrypted content estimated.

    >>> reasoning_item_tokens({"type": "reasoning", "summary": [{"type": "summary_text", "text": "a b"}],
    ...                        "encrypted_content": "A" * 40}, lambda text: len(text.split()))
    10
    """
    text = readable_text(part)
    return (count(text) if text else 0) + encrypted_tokens(part.get("encrypted_content"))
