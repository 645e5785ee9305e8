"""Turn activations into message blocks for the fitting engine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contextfit.inputs.lorebook.matching import substitute_names
from contextfit.inputs.lorebook.model import Activation


def lorebook_blocks(
    activations: Iterable[Activation], *, names: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """One ``system`` message per activation, in the order given.

    Constant entries are ``meta.required`` (protected); keyword-activated ones
    are droppable lorebook blocks. ``names`` fills ``{{user}}``/``{{char}}`` in
    the content, as SillyTavern does before inserting an entry. An entry whose
    content is empty is skipped: there is nothing to send.

    >>> from contextfit.inputs.lorebook.model import LorebookEntry
    >>> hit = Activation(LorebookEntry(uid=3, content="{{char}} guards the glade."),
    ...                  constant=False, matched_key="glade", matched_in=0, reason="key")
    >>> block = lorebook_blocks([hit], names={"char": "Seraphina"})[0]
    >>> block["content"], block["meta"]["id"], block["meta"]["required"]
    ('Seraphina guards the glade.', 'lorebook:3', False)
    """
    blocks = []
    for activation in activations:
        entry = activation.entry
        if not entry.content:
            continue
        blocks.append(
            {
                "role": "system",
                "content": substitute_names(entry.content, names),
                "meta": {
                    "kind": "lorebook",
                    "id": f"lorebook:{entry.uid}",
                    "required": activation.constant,
                    "lorebook": {
                        "uid": entry.uid,
                        "comment": entry.comment,
                        "matchedKey": activation.matched_key,
                        "position": int(entry.position),
                        "order": entry.order,
                    },
                },
            }
        )
    return blocks
