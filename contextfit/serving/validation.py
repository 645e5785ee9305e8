"""What the store accepts: a list of JSON message objects with a known role.

>>> json_text({"role": "user", "content": "Hé"})
'{"role":"user","content":"Hé"}'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidMessages
from ..inputs.messages import check_role, refuse_lone_surrogates


def json_text(value: Any) -> str:
    """``value`` as compact JSON text, as the store writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def storable_messages(messages: Any) -> list[dict]:
    """``messages`` as a list of JSON message objects, each with a ``role`` of SPEC §3.2 and no lone surrogate.

    >>> storable_messages([{"role": "user", "content": "Hi"}])
    [{'role': 'user', 'content': 'Hi'}]
    >>> storable_messages([{"content": "Hi"}])
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidMessages: each message needs a "role" string, got none (at messages[0].role)
    """
    if not isinstance(messages, (list, tuple)):
        raise InvalidMessages(f"messages must be a list, got {type(messages).__name__}", location="messages")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidMessages("each message must be an object", location=f"messages[{index}]")
        check_role(message, f"messages[{index}]")
        refuse_lone_surrogates(message, f"messages[{index}]")  # no UTF-8 text, so no database, holds one
        try:
            json_text(message)
        except (TypeError, ValueError) as exc:
            raise InvalidMessages(f"each message must be plain JSON ({exc})", location=f"messages[{index}]") from None
    return [dict(message) for message in messages]
