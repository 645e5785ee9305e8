"""Small helpers for reading untrusted JSON: paths, type names, typed getters.

Every getter raises :class:`InvalidConversation` naming the JSON path, e.g.
``$.messages[2].role must be a string (got a number)``.
"""

from __future__ import annotations

from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.jsonpath import child, describe

__all__ = ["child", "describe", "expect_dict", "expect_list", "expect_role", "wrong_type"]


def wrong_type(path: str, expected: str, value: Any) -> InvalidConversation:
    """The error for a value of the wrong type."""
    return InvalidConversation(f"{path} must be {expected} (got {describe(value)}).", location=path)


def expect_dict(value: Any, path: str) -> dict:
    """``value`` when it is a JSON object, else an error naming ``path``."""
    if not isinstance(value, dict):
        raise wrong_type(path, "an object", value)
    return value


def expect_list(value: Any, path: str) -> list:
    """``value`` when it is a JSON list, else an error naming ``path``."""
    if not isinstance(value, list):
        raise wrong_type(path, "a list", value)
    return value


def expect_role(message: dict, path: str, roles: tuple[str, ...]) -> str:
    """The message's ``role`` when it is one of ``roles``, else an error naming the path."""
    role = message.get("role")
    role_path = child(path, "role")
    if role is None:
        raise InvalidConversation(f"{path} has no role (expected one of {', '.join(roles)}).", location=path)
    if not isinstance(role, str):
        raise wrong_type(role_path, "a string", role)
    if role not in roles:
        raise InvalidConversation(f"{role_path} is {role!r}; expected one of {', '.join(roles)}.", location=role_path)
    return role


def optional_str(obj: dict, key: str, path: str, default: str = "") -> str:
    """``obj[key]`` as a string: missing or null gives ``default``; other types fail."""
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise wrong_type(child(path, key), "a string", value)
    return value


def as_model(value: Any) -> str | None:
    """A model name when ``value`` is a non-empty string."""
    return value if isinstance(value, str) and value.strip() else None


def plural(count: int, word: str, words: str | None = None) -> str:
    """``"1 message"``, ``"3 messages"``.

    >>> plural(1, "message"), plural(3, "message is", "messages are")
    ('1 message', '3 messages are')
    """
    return f"{count} {word if count == 1 else (words or word + 's')}"
