"""Naming places and types in untrusted JSON, for error messages.

Shared by the importers and the lorebook parser so every error reads the
same: ``$.messages[2].role must be a string (got a number)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping


def describe(value: object) -> str:
    """A person's name for a JSON value's type (never the value, which may be huge).

    >>> describe(3), describe(None), describe([1]), describe("x")
    ('a number', 'null', 'a list', 'a string')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def child(path: str, key: str | int) -> str:
    """The JSON path of ``key`` under ``path``.

    >>> child("$", "messages"), child("$.messages", 2), child("$.entries", "3"), child("$", "a b")
    ('$.messages', '$.messages[2]', '$.entries["3"]', '$["a b"]')
    """
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isascii() and key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
