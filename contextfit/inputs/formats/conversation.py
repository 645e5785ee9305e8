"""The values an importer returns: a :class:`Conversation` and a :class:`CharacterCard`.

Both are plain frozen dataclasses. A conversation's parts go straight into
``plan_prompt`` (``messages``, ``character``, ``persona``, ``lorebook``,
``memory``); ``warnings`` lists what the importer recognised but did not use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contextfit.inputs.messages import HISTORY, SYSTEM, SYSTEM_ROLES

try:
    from contextfit.inputs.lorebook import Lorebook
except ImportError:  # pragma: no cover - importers of other formats work without the lorebook module
    Lorebook = Any  # type: ignore[misc,assignment]

FORMATS = (
    "contextfit",
    "openai",
    "openai-responses",
    "anthropic",
    "sillytavern-chat",
    "character-card",
    "world-info",
    "sharegpt",
    "text",
)


@dataclass(frozen=True, slots=True)
class CharacterCard:
    """A SillyTavern / Tavern character card (V1, V2 or V3), read field by field.

    ``spec`` is ``chara_card_v1`` for flat V1 cards (they carry no ``spec``),
    else the card's own ``spec``. ``character_book`` is the embedded lorebook
    (a ``contextfit.inputs.lorebook.Lorebook``) or ``None``. Macros such as
    ``{{char}}`` and ``{{user}}`` are kept as written.
    """

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_message: str = ""
    example_dialogue: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    creator_notes: str = ""
    alternate_greetings: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    spec: str = "chara_card_v1"
    spec_version: str | None = None
    character_book: Lorebook | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """What ``load_conversation`` read: messages plus everything around them.

    ``messages`` are dicts in the OpenAI chat shape with a ``meta`` dict
    (SPEC §3.2); ``format`` names the importer that read them; ``warnings``
    lists what was recognised but not used (swipes kept only as a count, a
    second conversation in a dataset, request parameters, ...). ``memory``
    holds strings or ``{"content", "relevance"}`` objects; ``settings`` the
    prompt settings a contextfit bundle suggests (camelCase, as in the API).
    """

    messages: list[dict] = field(default_factory=list)
    character: CharacterCard | None = None
    persona: str | None = None
    lorebook: Lorebook | None = None
    memory: list[Any] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)
    format: str = "text"
    model: str | None = None
    warnings: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)


def with_meta(message: dict, default_id: str, **extra: Any) -> dict:
    """A shallow copy of ``message`` whose ``meta`` has an ``id`` and a ``kind``.

    An existing ``meta`` dict is copied and wins; ``id`` comes from the
    message's own ``id`` when it has one. System and developer messages get
    kind ``system`` (they stay protected); everything else ``history``.
    ``extra`` keys whose value is ``None`` are left out.

    >>> with_meta({"role": "user", "content": "Hi"}, "m0")
    {'role': 'user', 'content': 'Hi', 'meta': {'id': 'm0', 'kind': 'history'}}
    """
    old_meta = message.get("meta")
    meta: dict[str, Any] = {}
    own_id = message.get("id")
    if isinstance(own_id, (str, int)) and not isinstance(own_id, bool) and own_id != "":
        meta["id"] = str(own_id)
    else:
        meta["id"] = default_id
    role = message.get("role")
    meta["kind"] = SYSTEM if isinstance(role, str) and role in SYSTEM_ROLES else HISTORY
    for key, value in extra.items():
        if value is not None:
            meta[key] = value
    if isinstance(old_meta, dict):
        meta.update(old_meta)
    return {**message, "meta": meta}
