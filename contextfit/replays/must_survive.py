"""Must-survive facts by default: what the conversation itself marks as mattering.

Nobody types facts before a demo, and with none declared every strategy kept
"all" of nothing. :func:`must_survive` reads a conversation (its messages,
card, persona, lorebook, memory and hand edits, as the prompt assembles
them) and lists, in this order, without repeats:

1. **pinned blocks** (``pinned``, ``meta.pinned``, a pin made in Compare's
   edit table): a pinned message must be sent, or quoted by a summary; a
   pinned block that is no message (a memory, a lore entry) must be sent;
2. **the character's and the persona's names** (the card's ``name``; the
   ``user_name`` setting, else the first name the persona text gives);
3. **required and constant lore entries** (their whole text);
4. **tool results a later turn quotes**: a result holding an entity (the
   rule of ``facts.py``) that a later message repeats and no message before
   the result said;
5. **facts the latest turns refer back to**: the entities of the latest
   user messages that an earlier message, a lore entry or a memory holds
   (in any script: CJK terms too).

Each item is a :class:`MustSurvive`: a name, the fact in the form a replay
takes (``{"text": …}`` or ``{"message": id}``, :mod:`.facts`), and why it is
on the list, in words. The list is a starting point the user edits: the
dashboard shows it as an editable list, and Replay and Compare follow the
same list (:func:`as_facts`).

>>> from contextfit.inputs.samples import load_sample
>>> [item.name for item in must_survive(load_sample("roleplay"))][:3]
['Mara Quill', 'Tomas Venn', 'lore “Greywater Isle”']
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate
from dataclasses import dataclass
from typing import Any

from ..inputs.messages import (
    CHARACTER,
    LOREBOOK,
    MEMORY,
    PERSONA,
    kind_of,
    link_ids,
    message_id,
    message_text,
    meta_of,
)
from ..pipeline.plan import assembled
from ..pipeline.settings import DEFAULT_USER_NAME, PlanSettings, settings_for
from .facts import MAX_NAME, entities, find_word, has_cjk, shortened
from .losses import is_pinned, is_request, tool_names, turn_numbers

__all__ = ["MustSurvive", "as_facts", "default_facts", "must_survive"]

#: Which facts a report checks (a replay's ``factRule``, a plan's ``factPlacement.rule``): the caller's own...
DECLARED = "declared"
#: ... or, none declared, the facts the conversation marks (this module).
DEFAULT_FACTS = "default-facts"

#: How many user turns, from the latest, the refer-back rule reads.
RECENT_TURNS = 3
#: The most entities the refer-back rule lists, and the most quoted tool results.
MOST_ENTITIES = 12
MOST_RESULTS = 10
#: The latest tool results read for quotes, and the entities of each looked for.
RESULTS_READ = 30
ENTITIES_READ = 12

PINNED = "pinned"
CHARACTER_NAME = "character name"
PERSONA_NAME = "persona name"
LORE = "required lore"
QUOTED_RESULT = "quoted tool result"
REFERRED_BACK = "referred back to"


@dataclass(frozen=True, slots=True)
class MustSurvive:
    """One fact the conversation marks as mattering."""

    #: the fact's name, as every report says it (at most 80 characters)
    name: str
    #: the fact as a replay takes it: ``{"text", "name"}`` or ``{"message", "name"}``
    fact: dict
    #: which rule found it (:data:`PINNED`, :data:`CHARACTER_NAME`, …)
    rule: str
    #: why it is on the list, in words ("pinned", "turn 12 refers back to it")
    why: str
    #: the block it comes from
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "fact": dict(self.fact), "rule": self.rule, "why": self.why, "source": self.source}


def must_survive(conversation: Any, settings: PlanSettings | None = None, **keywords: Any) -> list[MustSurvive]:
    """The conversation's default must-survive facts (module docstring): one call for a page.

    ``conversation`` is a :class:`~contextfit.Conversation` or message dicts; ``settings`` and
    ``keywords`` as :func:`~contextfit.plan_prompt` takes them (``overrides``: Compare's hand
    edits, whose pins count; the model does not matter, it defaults to gpt-4o).
    """
    if settings is None:
        keywords.setdefault("model", "gpt-4o")
    messages, plan_settings = settings_for(conversation, settings, keywords)
    blocks = assembled(list(messages), plan_settings).blocks
    return default_facts(blocks, user_name=plan_settings.user_name)


def as_facts(items: Iterable[MustSurvive]) -> list[dict]:
    """The facts of ``items`` as :func:`~contextfit.replay` and the API take them."""
    return [dict(item.fact) for item in items]


def default_facts(blocks: Sequence[dict], *, user_name: str | None = None, recent: int = RECENT_TURNS,
                  most_entities: int = MOST_ENTITIES, most_results: int = MOST_RESULTS) -> list[MustSurvive]:
    """The default list from a request's assembled blocks (dicts with ``meta.kind``, in prompt order:
    ``Prepared.blocks``, or a plan's input blocks' ``message``)."""
    found = _Found()
    ids = [message_id(block, position) for position, block in enumerate(blocks)]
    texts = [message_text(block) for block in blocks]
    kinds = [kind_of(block) for block in blocks]
    history = [position for position, kind in enumerate(kinds) if kind == "history"]
    for position, block in enumerate(blocks):  # 1. pinned blocks
        if is_pinned(block):
            if kinds[position] == "history":
                found.add(f"pinned {ids[position]}", {"message": ids[position]}, PINNED, "pinned", ids[position])
            elif texts[position].strip():
                found.add(f"pinned {ids[position]}", {"text": texts[position]}, PINNED, "pinned", ids[position])
    for position, kind in enumerate(kinds):  # 2. names
        if kind == CHARACTER:
            name = meta_of(blocks[position]).get("name")
            if isinstance(name, str) and name.strip() and name.strip() in texts[position]:
                found.add(name.strip(), {"text": name.strip()}, CHARACTER_NAME, "the character's name", ids[position])
    persona = next((position for position, kind in enumerate(kinds) if kind == PERSONA), None)
    if persona is not None:
        name = _persona_name(texts[persona], user_name)
        if name:
            found.add(name, {"text": name}, PERSONA_NAME, "the persona's name", ids[persona])
    for position, kind in enumerate(kinds):  # 3. required and constant lore
        meta = meta_of(blocks[position])
        if kind == LOREBOOK and meta.get("required") is True and texts[position].strip():
            entry = meta.get("lorebook") if isinstance(meta.get("lorebook"), dict) else {}
            title = entry.get("comment") if isinstance(entry.get("comment"), str) and entry["comment"].strip() else None
            name = f"lore “{shortened(title.strip(), MAX_NAME - 7)}”" if title else f"lore {ids[position]}"
            found.add(name, {"text": texts[position]}, LORE, "a required lore entry, sent with every request",
                      ids[position])
    turns = turn_numbers(blocks)
    _quoted_results(blocks, ids, texts, history, turns, found, most_results)
    _referred_back(blocks, texts, kinds, history, turns, found, recent, most_entities)
    return found.items


class _Found:
    """The list being made: each fact once, each name once."""

    def __init__(self) -> None:
        self.items: list[MustSurvive] = []
        self._keys: set[tuple] = set()
        self._names: set[str] = set()

    def add(self, name: str, fact: dict, rule: str, why: str, source: str) -> bool:
        name = shortened(" ".join(name.split()), MAX_NAME)
        key = (fact.get("text"), fact.get("message"))
        if key in self._keys or name in self._names or fact.get("text") in self._names:
            return False
        self._keys.add(key)
        self._names.add(name)
        self.items.append(MustSurvive(name, {**fact, "name": name}, rule, why, source))
        return True

    def count(self, rule: str) -> int:
        return sum(item.rule == rule for item in self.items)


def _persona_name(text: str, user_name: str | None) -> str | None:
    """The persona's name: the ``user_name`` setting when it is a name of its own (not the default
    "User") and the persona says it, else the first name the persona text gives."""
    if user_name and user_name != DEFAULT_USER_NAME and user_name in text:
        return user_name
    for entity in entities(text):
        words = entity.split()
        if words and all(word[:1].isupper() and word[1:].islower() for word in words) and entity != DEFAULT_USER_NAME:
            return entity
    return None


def _quoted_results(blocks: Sequence[dict], ids: list[str], texts: list[str], history: list[int],
                    turns: list[int | None], found: _Found, most: int) -> None:
    """Tool results whose entities a later message repeats and no earlier message said: the
    latest :data:`RESULTS_READ`, newest first, each with its first :data:`ENTITIES_READ` entities
    looked for in one join of the other messages (a 10,000-message agent run is read in one pass
    per entity, not once per message)."""
    names = tool_names(blocks)
    is_result = {p for p in history if link_ids(blocks[p])[1]}
    results = [p for p in history if p in is_result and texts[p].strip()][-RESULTS_READ:]
    said = [p for p in history if p not in is_result]  # every history message that is no tool result
    joined, starts = _joined([texts[p] for p in said])
    picked: list[tuple[int, str]] = []
    for position in reversed(results):  # the newest first: the cap keeps what the next turns need
        if len(picked) == most:
            break
        after = bisect_left(said, position)
        if after == len(said):
            continue
        cut = starts[after]
        for entity in entities(texts[position])[:ENTITIES_READ]:
            where = _find(joined, entity, cut)
            if where == -1 or _find(joined, entity, 0, cut) != -1:  # quoted later, and no earlier message said it
                continue
            quoted_at = said[bisect_right(starts, where) - 1]
            picked.append((position, f"turn {turns[quoted_at]} quotes it (“{shortened(entity, 30)}”)"))
            break
    for position, why in reversed(picked):
        tool = names.get(ids[position], "tool")
        found.add(f"{tool} result {ids[position]}", {"message": ids[position]}, QUOTED_RESULT, why, ids[position])


def _referred_back(blocks: Sequence[dict], texts: list[str], kinds: list[str], history: list[int],
                   turns: list[int | None], found: _Found, recent: int, most: int) -> None:
    """The entities of the latest user messages that an earlier message, a lore entry or a memory holds."""
    asked = [position for position in history if is_request(blocks[position])][-recent:]
    reference = "\n".join(text for kind, text in zip(kinds, texts) if kind in (LOREBOOK, MEMORY))
    joined, starts = _joined([texts[p] for p in history])
    added = 0
    for position in asked:
        cut = starts[bisect_left(history, position)]  # the history before this message
        for entity in entities(texts[position]):
            if added == most:
                return
            if _find(joined, entity, 0, cut) == -1 and _find(reference, entity) == -1:
                continue
            if found.add(entity, {"text": entity, "besides": True}, REFERRED_BACK, f"turn {turns[position]} refers back to it",
                         message_id(blocks[position], position)):
                added += 1


def _joined(texts: list[str]) -> tuple[str, list[int]]:
    """``texts`` joined by newlines, and where each starts in the join (one more: the end)."""
    starts = list(accumulate((len(text) + 1 for text in texts), initial=0))
    return "\n".join(texts), starts


def _find(text: str, entity: str, start: int = 0, end: int | None = None) -> int:
    """Where ``entity`` stands in ``text[start:end]`` as the entity rule finds it (between non-word
    characters; a CJK term anywhere), else -1."""
    if has_cjk(entity):
        return text.find(entity, start, len(text) if end is None else end)
    return find_word(text, entity, start, end)
