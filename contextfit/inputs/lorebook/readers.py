"""Typed getters for untrusted lorebook JSON.

Each reads one field, gives SillyTavern's default when it is missing or null,
and otherwise raises :class:`InvalidConversation` naming the field's JSON path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.jsonpath import child, describe
from contextfit.inputs.lorebook.model import Position, SelectiveLogic

#: A JavaScript array-index key ("0", "17"): SillyTavern's uids, ordered numerically.
CANONICAL_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")


def keys(obj: Mapping[str, Any], field: str, loc: str) -> tuple[str, ...]:
    """A keyword list; one string is split on commas, numbers become text, nulls are skipped.

    >>> keys({"key": ["wood", 42, None]}, "key", "$"), keys({"key": "a, b"}, "key", "$")
    (('wood', '42'), ('a', 'b'))
    """
    value = obj.get(field)
    here = child(loc, field)
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if not isinstance(value, list):
        raise InvalidConversation(
            f"\"{field}\" must be a list of keywords such as [\"forest\", \"wood\"], not {describe(value)}.",
            location=here,
        )
    found = []
    for index, key in enumerate(value):
        if key is None:
            continue
        if isinstance(key, str):
            found.append(key)
        elif isinstance(key, (int, float)) and not isinstance(key, bool) and _finite(key):
            found.append(_number_text(key, child(here, index)))
        else:
            raise InvalidConversation(
                f"Each keyword in \"{field}\" must be text, not {describe(key)}.",
                location=child(here, index),
            )
    return tuple(found)


def text(obj: Mapping[str, Any], field: str, loc: str, *, default: str | None = "") -> Any:
    """A string field (``default`` when missing or null)."""
    value = obj.get(field)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidConversation(
            f"\"{field}\" must be text, not {describe(value)}.", location=child(loc, field)
        )
    return value


def flag(obj: Mapping[str, Any], field: str, loc: str, *, default: bool | None) -> Any:
    """A boolean; ``0``/``1`` and ``"true"``/``"false"`` are accepted too.

    >>> flag({"constant": 1}, "constant", "$", default=False)
    True
    """
    value = obj.get(field)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise InvalidConversation(
        f"\"{field}\" must be true or false, not {describe(value)}.", location=child(loc, field)
    )


def number(obj: Mapping[str, Any], field: str, loc: str, *, default: int | float) -> int | float:
    """A finite number (numeric text too); whole floats become ints.

    >>> number({"order": "12"}, "order", "$", default=100)
    12
    """
    value = obj.get(field)
    if value is None:
        return default
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
        raise InvalidConversation(
            f"\"{field}\" must be a number, not {describe(value)}.", location=child(loc, field)
        )
    return int(value) if isinstance(value, float) and value.is_integer() else value


def integer(
    obj: Mapping[str, Any],
    field: str,
    loc: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    default: int | None = None,
) -> Any:
    """A whole number of at least ``minimum``; above ``maximum`` it is cut to ``maximum``."""
    if obj.get(field) is None:
        return default
    value = number(obj, field, loc, default=0)
    here = child(loc, field)
    if not isinstance(value, int):
        raise InvalidConversation(f"\"{field}\" must be a whole number, not {value:g}.", location=here)
    if minimum is not None and value < minimum:
        raise InvalidConversation(f"\"{field}\" must be {minimum} or more.", location=here)
    if maximum is not None and value > maximum:
        # SillyTavern truncates an over-long scan depth the same way.
        return maximum
    return value


def probability(obj: Mapping[str, Any], field: str, loc: str) -> int | float:
    """A percentage, clamped to 0–100 as SillyTavern does."""
    return min(100, max(0, number(obj, field, loc, default=100)))


def recursion_level(obj: Mapping[str, Any], field: str, loc: str) -> int:
    """``delayUntilRecursion``: ``true`` is level 1, ``false``/missing is 0."""
    value = obj.get(field)
    if isinstance(value, bool) or value is None:
        return int(bool(value))
    return integer(obj, field, loc, minimum=0, default=0)


def logic(obj: Mapping[str, Any], field: str, loc: str) -> SelectiveLogic:
    """``selectiveLogic`` as 0–3 or a name such as ``"NOT_ANY"``; AND_ANY when missing."""
    value = obj.get(field)
    if value is None:
        return SelectiveLogic.AND_ANY
    if isinstance(value, str) and value.strip().upper() in SelectiveLogic.__members__:
        return SelectiveLogic[value.strip().upper()]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in (0, 1, 2, 3):
        return SelectiveLogic(int(value))
    raise InvalidConversation(
        f"\"{field}\" must be 0 (AND_ANY), 1 (NOT_ALL), 2 (NOT_ANY) or 3 (AND_ALL), "
        f"not {describe(value)}.",
        location=child(loc, field),
    )


def position(obj: Mapping[str, Any], field: str, loc: str, *, default: int) -> int:
    """A position number, or a card's ``"before_char"`` (any other text means after)."""
    value = obj.get(field)
    if value is None:
        return int(default)
    if isinstance(value, str) and not value.strip().lstrip("-").isdigit():
        # A card's "before_char"; anything else means after, as in SillyTavern.
        return int(Position.BEFORE_CHAR if value.strip() == "before_char" else Position.AFTER_CHAR)
    return integer(obj, field, loc, minimum=0, default=int(default))


def uid(obj: Mapping[str, Any], field: str, loc: str, fallback: int | str | None) -> int | str:
    """An entry id: a whole number or non-empty text (``fallback`` when missing)."""
    value = obj.get(field)
    here = child(loc, field)
    if value is None:
        if fallback is None:
            raise InvalidConversation(f"This lorebook entry has no \"{field}\".", location=here)
        return fallback
    if isinstance(value, str):
        return uid_from_key(value) if value.strip() else _bad_uid(field, value, here)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value):
        if float(value).is_integer():
            return int(value)
    return _bad_uid(field, value, here)


def _bad_uid(field: str, value: object, here: str) -> Any:
    raise InvalidConversation(
        f"\"{field}\" must be a whole number or a non-empty text id, not {describe(value)}.",
        location=here,
    )


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _number_text(value: int | float, here: str) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        return str(value)
    except ValueError:  # more digits than Python will print
        raise InvalidConversation("This keyword is a number too large to use.", location=here) from None


def uid_from_key(key: str) -> int | str:
    """An entry key as a uid: ``"3"`` becomes ``3``, other text stays text."""
    return int(key) if CANONICAL_INDEX.fullmatch(key) else key
