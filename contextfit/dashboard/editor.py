"""The Compare page's edit table: every block with the marks a user may change, and the edits made.

A pin, a manual exclusion or a relevance typed in the table becomes an
``overrides`` entry of the plan settings (``{"m3": {"pinned": true}}``);
the comparison then plans with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ContextfitError
from ..inputs.formats import Conversation
from ..inputs.messages import kind_of, message_id, message_text, role_of
from ..pipeline.plan import PromptPlan
from .sessions import session_for
from .setup import Setup

#: Editable per-block fields and the table column that shows each.
EDITABLE = {"pinned": "pinned", "manualExcluded": "exclude", "relevance": "relevance"}


def editor_rows(
    conversation: Conversation, setup: Setup, plans: Mapping[str, PromptPlan | ContextfitError]
) -> list[dict[str, Any]]:
    """Rows of the edit table: every block of the prompt, with its current marks.

    ``pinned``, ``exclude`` (``meta.manualExcluded``) and ``relevance`` are
    editable. The blocks come from the first plan that could be made, else
    from the session's assembled blocks (so a user can unpin their way out of
    ``TOKEN_BUDGET_EXCEEDED``).
    """
    plan = next((p for p in plans.values() if isinstance(p, PromptPlan)), None)
    if plan is not None:
        entries = [(b.id, b.role, b.kind, b.content, b.tokens, b.message) for b in plan.blocks
                   if b.origin == "input" and b.reason != "summary"]
    else:
        prepared, _ = session_for(conversation).prepared(setup.settings)
        entries = [(message_id(m, i), role_of(m), kind_of(m), message_text(m), None, m)
                   for i, m in enumerate(prepared.blocks)]
    overrides = setup.settings.overrides or {}
    rows = []
    for ident, role, kind, content, tokens, message in entries:
        meta = message.get("meta") if isinstance(message.get("meta"), dict) else {}
        edit = overrides.get(ident, {})
        pinned = edit.get("pinned", message.get("pinned") is True or meta.get("pinned") is True)
        relevance = edit.get("relevance", meta.get("relevance"))
        rows.append(
            {
                "id": ident,
                "role": role,
                "kind": kind,
                "text": " ".join(content[:320].split())[:160],
                "tokens": tokens,
                "pinned": bool(pinned),
                "exclude": bool(edit.get("manualExcluded", meta.get("manualExcluded") is True)),
                "relevance": None if relevance is None or _nan(relevance) else float(relevance),
            }
        )
    return rows


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def overrides_from_rows(rows: Sequence[Mapping[str, Any]], original: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The edits the user made in the table: only values that differ from ``original``.

    >>> before = [{"id": "m1", "pinned": False, "exclude": False, "relevance": None}]
    >>> after = [{"id": "m1", "pinned": True, "exclude": False, "relevance": 0.7}]
    >>> overrides_from_rows(after, before)
    {'m1': {'pinned': True, 'relevance': 0.7}}
    """
    by_id = {row["id"]: row for row in original}
    edits: dict[str, dict[str, Any]] = {}
    for row in rows:
        old = by_id.get(row["id"])
        if old is None:
            continue
        edit: dict[str, Any] = {}
        for key, column in EDITABLE.items():
            value = row.get(column)
            if key == "relevance":
                value = None if value is None or _nan(value) else min(max(float(value), 0.0), 1.0)
            else:
                value = bool(value)
            before = old.get(column)
            if key == "relevance" and (before is None or _nan(before)):
                before = None
            if value != before and value is not None:
                edit[key] = value
        if edit:
            edits[row["id"]] = edit
    return edits


def merge_overrides(current: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Earlier edits with later ones on top.

    >>> merge_overrides({"a": {"pinned": True}}, {"a": {"relevance": 0.2}, "b": {"pinned": False}})
    {'a': {'pinned': True, 'relevance': 0.2}, 'b': {'pinned': False}}
    """
    merged = {key: dict(value) for key, value in current.items()}
    for key, value in new.items():
        merged.setdefault(key, {}).update(value)
    return merged
