"""The API's JSON names: a value's snake_case fields as camelCase keys.

>>> camel_case("interceptor_diagnostics")
'interceptorDiagnostics'
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def camel_case(name: str) -> str:
    """``created_at`` → ``createdAt``."""
    first, *rest = name.split("_")
    return first + "".join(word.title() for word in rest)


def camel_dict(value: Any) -> dict[str, Any]:
    """A dataclass's fields, shallow, under camelCase keys, in field order.

    >>> from contextfit.pipeline.plan import TokenizerInfo
    >>> camel_dict(TokenizerInfo("o200k_base", approximate=False))
    {'profile': 'o200k_base', 'approximate': False}
    """
    return {camel_case(field.name): getattr(value, field.name) for field in fields(value)}


def from_camel_dict(cls: type, data: dict[str, Any], **values: Any) -> dict[str, Any]:
    """The keyword arguments for ``cls`` read from :func:`camel_dict` output.

    Keys missing from ``data`` are left to the field's default; ``values``
    replace what was read (for nested values that need building).
    """
    read = {field.name: data[camel_case(field.name)] for field in fields(cls) if camel_case(field.name) in data}
    return {**read, **values}
