"""The ``IMAGE_SIZE_UNKNOWN`` diagnostic: kept images counted at a rule's default.

The counting rules live in :mod:`contextfit.tokens.images`; this module turns
the images whose size could not be read into a diagnostic on a plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tokens.images import ImageRule, unknown_size
from ..fitting import results as r


def image_diagnostic(blocks: Sequence[Any], rule: ImageRule) -> list[dict]:
    """``IMAGE_SIZE_UNKNOWN`` for the kept plan blocks holding an image counted at the default."""
    found: dict[str, int] = {}
    for block in blocks:
        content = block.message.get("content") if block.included and isinstance(block.message, Mapping) else None
        unknown = sum(1 for part in content if unknown_size(part)) if isinstance(content, list) else 0
        if unknown:
            found[block.id] = unknown
    if not found:
        return []
    images = sum(found.values())
    return [
        {
            "code": r.IMAGE_SIZE_UNKNOWN,
            "blocks": list(found),
            "images": images,
            "tokensEach": rule.default(),
            "message": f"{images} image(s) have no readable size (a URL, or a header that is cut or lies); each is "
            f"counted at the {rule.name} default of {rule.default()} tokens, so this count is approximate.",
        }
    ]
