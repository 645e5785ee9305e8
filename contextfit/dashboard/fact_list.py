"""The must-survive facts the pages follow: the conversation's own list, as the user edited it.

Nobody types facts before a demo. The list starts from what the conversation
itself marks as mattering — the facts it declares (a bundle's
``settings.facts``), else :func:`~contextfit.replays.must_survive.must_survive`
(pins, the character's and persona's names, required lore, quoted tool
results, what the latest turns refer back to) — and the user edits it: a
fact unticked is no longer followed, a line typed is followed too (text,
``/regex/flags`` or a JSON object, as the CLI's ``--fact`` takes it).

The session keeps only the edits (:data:`NO_EDITS`'s shape, under
``state.MUST_SURVIVE``): the defaults are worked out again on every run, so a
block pinned on Compare joins the list. :meth:`FactList.facts` is what the
recommendation and a replay follow — ``None`` while nothing is edited, so
they find the very same defaults themselves and say the very same sentence
as ``contextfit fit --recommend``.

>>> from contextfit.inputs.samples import load_sample
>>> from contextfit.pipeline.settings import PlanSettings
>>> listed = fact_list(load_sample("roleplay"), PlanSettings(model="gpt-4o"), {"off": ["Tomas Venn"], "added": ["Orrin"]})
>>> [row["fact"] for row in listed.rows()][:3], listed.rows()[1]["follow"], listed.rows()[-1]
(['Mara Quill', 'Tomas Venn', 'lore “Greywater Isle”'], False, {'follow': True, 'fact': 'Orrin', 'why': 'added by hand'})
>>> listed.facts()[-1], any(fact.get("name") == "Tomas Venn" for fact in listed.facts()[:-1])
('Orrin', False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ContextfitError
from ..pipeline.settings import PlanSettings
from ..replays.facts import conversation_facts, declared_facts
from ..replays.must_survive import must_survive
from .facts_box import facts_to_text, read_box

#: The edits of a conversation's list: the names of the facts no longer followed, and the lines added.
NO_EDITS: dict[str, list[str]] = {"off": [], "added": []}
#: What an added line's row says in the "why" column.
ADDED = "added by hand"
DECLARED = "declared by the conversation"
#: The most facts the list's one-line summary names.
NAMED = 6


@dataclass(frozen=True, slots=True)
class Item:
    """One default fact: its name (as every report says it), the fact as a replay takes it, and why it is listed."""

    name: str
    fact: Any
    why: str


@dataclass(frozen=True, slots=True)
class FactList:
    """A conversation's default facts (``items``), and the user's edits of them."""

    items: tuple[Item, ...]
    off: frozenset[str] = frozenset()
    added: tuple[str, ...] = ()
    #: whether the defaults are the facts the conversation declares (else the ones it marks)
    declared: bool = False
    #: a warning for each line or declared fact that cannot be followed (left out)
    notes: tuple[str, ...] = ()

    @property
    def edited(self) -> bool:
        """Whether the user changed the list (a fact unticked or a line added)."""
        return bool(self.off & {item.name for item in self.items} or self.added)

    def facts(self) -> list[Any] | None:
        """The facts to follow: ``None`` while the list is not edited (the recommendation and the replay
        then find the defaults themselves), else the ticked defaults and the added lines that check."""
        if not self.edited:
            return None
        added, _ = read_box("\n".join(line for line in self.added if line not in self.off))
        return [item.fact for item in self.items if item.name not in self.off] + list(added)

    def text(self) -> str:
        """:meth:`facts` as the lines of a facts box ("" while the list is not edited)."""
        facts = self.facts()
        return "" if facts is None else facts_to_text(facts)

    def followed(self) -> list[str]:
        """The names of the facts followed, in order (the added lines as typed)."""
        return [name for name in [item.name for item in self.items] + list(self.added) if name not in self.off]

    def rows(self) -> list[dict[str, Any]]:
        """The list as the page's editable table shows it: ``follow``, ``fact`` and ``why``."""
        rows = [{"follow": item.name not in self.off, "fact": item.name, "why": item.why} for item in self.items]
        return rows + [{"follow": line not in self.off, "fact": line, "why": ADDED} for line in self.added]

    def summary(self) -> str:
        """One line over the list: how many facts are followed, where they come from, the first few named.

        >>> FactList((Item("Mara", "Mara", "the character's name"), Item("ORD-7", "ORD-7", "pinned"))).summary()
        'Must-survive facts: 2, found in the conversation — Mara, ORD-7'
        >>> FactList((Item("Mara", "Mara", "x"),), off=frozenset({"Mara"})).summary()
        'Must-survive facts: none followed (every one unticked): retention follows the entity rule (what the latest message repeats).'
        """
        names = self.followed()
        if not names:
            if self.items:
                return ("Must-survive facts: none followed (every one unticked): retention follows the entity rule "
                        "(what the latest message repeats).")
            return ("Must-survive facts: the conversation marks none; add a line to follow one (retention follows "
                    "the entity rule meanwhile).")
        where = ("as the conversation declares them" if self.declared and not self.edited
                 else "edited by hand" if self.edited else "found in the conversation")
        shown = ", ".join(names[:NAMED]) + (f" and {len(names) - NAMED:,} more" if len(names) > NAMED else "")
        return f"Must-survive facts: {len(names):,}, {where} — {shown}"


def fact_list(conversation: Any, settings: PlanSettings, edits: Mapping[str, Any] | None = None) -> FactList:
    """The list a page shows and follows for ``conversation`` under ``settings`` (Compare's hand edits
    in ``settings.overrides``: a pinned block is a fact), with the session's ``edits`` applied."""
    edits = edits or NO_EDITS
    declared = conversation_facts(conversation)
    notes: list[str] = []
    if declared is not None:
        usable, notes = read_box(facts_to_text(declared))
        items = tuple(Item(fact.name, raw, DECLARED) for fact, raw in zip(_named(usable), usable))
    else:
        items = tuple(Item(item.name, dict(item.fact), item.why) for item in must_survive(conversation, settings))
    added = tuple(str(line).strip() for line in edits.get("added") or () if str(line).strip())
    _, bad = read_box("\n".join(added))
    return FactList(items, frozenset(edits.get("off") or ()), added, declared is not None, tuple(notes + bad))


def _named(facts: Sequence[Any]) -> list[Any]:
    """The checked :class:`~contextfit.replays.facts.Fact` of each usable fact (for its name)."""
    try:
        return declared_facts(list(facts))
    except ContextfitError:  # read_box kept only facts that check, one by one; together they check too
        return [declared_facts([fact])[0] for fact in facts]


def edits_after(listed: FactList, change: Mapping[str, Any]) -> dict[str, list[str]]:
    """The edits once the page's table changed: ``change`` is Streamlit's data-editor state
    (``edited_rows`` by row, ``added_rows``, ``deleted_rows``) over :meth:`FactList.rows`.

    A default fact unticked or deleted is no longer followed (ticked again, it is); its text
    edited, it is unticked and the new text added. An added line stays listed, ticked or not,
    until it is deleted or emptied; a new row with text is an added line.

    >>> listed = FactList((Item("Mara", "Mara", "x"), Item("Tomas", "Tomas", "x")), added=("ORD-7", "Orrin"))
    >>> edits_after(listed, {"edited_rows": {0: {"follow": False}, 2: {"fact": "ORD-8"}, 3: {"follow": False}},
    ...                      "added_rows": [{"fact": " AX55 "}, {"follow": True}], "deleted_rows": [1]})
    {'off': ['Mara', 'Tomas', 'Orrin'], 'added': ['ORD-8', 'Orrin', 'AX55']}
    """
    edited = {int(index): values for index, values in (change.get("edited_rows") or {}).items()}
    deleted = {int(index) for index in change.get("deleted_rows") or ()}
    names = {item.name for item in listed.items}
    off: list[str] = []
    added: list[str] = []
    for index, row in enumerate(listed.rows()):
        values = {**row, **edited.get(index, {})}
        text = str(values.get("fact") or "").strip()
        follow = bool(values.get("follow"))
        if index < len(listed.items):  # a default: never removed, only unticked
            name = row["fact"]
            if not (follow and index not in deleted and text == name):
                off.append(name)
            if text and text != name and index not in deleted:
                added.append(text)
        elif text and index not in deleted:
            added.append(text)
            if not follow:
                off.append(text)
    for row in change.get("added_rows") or ():
        text = str(row.get("fact") or "").strip()
        if text and text not in names:
            added.append(text)
            if row.get("follow") is False:
                off.append(text)
    return {"off": list(dict.fromkeys(off)), "added": list(dict.fromkeys(added))}
