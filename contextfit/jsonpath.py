"""Naming places and types in untrusted JSON, for error messages.

Shared by the importers and the lorebook parser so every error reads the
same: ``$.messages[2].role must be a string (got a number)``.
"""

from __future__ import annotations

import json
import re
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


_SURROGATES = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: object, path: str = "$", *, depth: int = 0) -> str | None:
    """The JSON path of the first string (or object key) holding a lone
    surrogate, or ``None`` when there is none.

    JSON's ``"\\ud800"`` escape decodes to a code point that no UTF-8 text can
    hold: it cannot be stored, encoded or tokenized. Every door that takes
    JSON (the API, the importers, ``plan_prompt``) refuses it with this path,
    so the user learns exactly which field to fix.

    >>> lone_surrogate({"messages": [{"role": "user", "content": "ok"}, {"content": "bad \\ud800"}]})
    '$.messages[1].content'
    >>> lone_surrogate({"meta": {"\\udc00": 1}})
    '$.meta["\\\\udc00"]'
    >>> lone_surrogate(["fine", 3, None]) is None
    True
    """
    if isinstance(value, str):
        return path if not value.isascii() and _SURROGATES.search(value) else None
    if depth == 0 and _all_ascii(value, 0):
        return None  # the usual case, found without building a path per value
    if depth > _MAX_DEPTH:
        return None  # deeper than any JSON parser here accepts; nothing to name
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and _SURROGATES.search(key):
                return f"{path}[{json.dumps(key)}]"  # ASCII escapes: the path itself must be printable
            found = lone_surrogate(item, child(path, key if isinstance(key, (str, int)) else str(key)), depth=depth + 1)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = lone_surrogate(item, child(path, index), depth=depth + 1)
            if found:
                return found
    return None


def too_deep(value: object, limit: int, path: str = "$") -> str | None:
    """The JSON path of the first value nested more than ``limit`` levels
    deep, or ``None`` when nothing is.

    JSON has no depth limit, but what holds it does: a 300-level object is
    accepted by the API's validation and then cannot be serialized back.

    >>> too_deep({"meta": {"a": {"b": 1}}}, 2)
    '$.meta.a'
    >>> too_deep([[1], {"a": []}], 2) is None
    True
    """
    stack = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, Mapping):
            children = [(child_item, child(where, key if isinstance(key, (str, int)) else str(key)))
                        for key, child_item in item.items()]  # fmt: skip
        elif isinstance(item, (list, tuple)):
            children = [(child_item, child(where, index)) for index, child_item in enumerate(item)]
        else:
            continue
        if depth >= limit and children:
            return where
        stack.extend((child_item, child_path, depth + 1) for child_item, child_path in reversed(children))
    return None


def _all_ascii(value: object, depth: int) -> bool:
    """Whether every string in plain JSON data (dict, list, str keys and values) is ASCII.

    ``False`` means "look closer": also for containers other than dict and
    list, which :func:`lone_surrogate` walks its own way.
    """
    kind = type(value)
    if kind is str:
        return value.isascii()  # type: ignore[union-attr]
    if kind is dict:
        for key in value:  # type: ignore[union-attr]
            if type(key) is str and not key.isascii():
                return False
        items = value.values()  # type: ignore[union-attr]
    elif kind is list:
        items = value
    else:
        return not isinstance(value, (Mapping, tuple))
    for item in items:  # type: ignore[union-attr]
        item_kind = type(item)
        if item_kind is str:
            if not item.isascii():
                return False
        elif item_kind is dict or item_kind is list:
            if depth >= 64 or not _all_ascii(item, depth + 1):
                return False
        elif isinstance(item, (Mapping, tuple)):
            return False
    return True


def replace_lone_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (for text from
    providers, which is stored as it came, minus what cannot be stored).

    >>> replace_lone_surrogates("a\\ud800b")
    'a\\ufffdb'
    """
    return _SURROGATES.sub("\ufffd", text)


_MAX_DEPTH = 1_000
