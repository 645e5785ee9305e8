"""The Replay page's facts box: one must-survive fact per line, read as the person who typed it counts.

A line is text, a ``/regex/flags``, or a JSON object such as
``{"text": "ORD-7731", "message": 3}`` (a fact pinned to a message). A line
the replay cannot follow is left out with its error, named by its line in
the box, so one bad line never takes the whole replay away.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import ContextfitError, InvalidSettings
from ..replays.facts import declared_facts, fact_from_line, facts_that_check, message_ids, pinned_position
from ..replays.run import pin_refusal
from .markdown import error_text
from .setup import ReplaySetup


def facts_from_text(text: str | None) -> tuple[Any, ...]:
    """One fact per non-blank line: text, ``/pattern/flags`` for a regular expression, or a
    JSON object such as ``{"text": "ORD-7731", "message": 3}`` (a fact pinned to a message).

    >>> facts_from_text('ORD-7731\\n\\n /zenith/i \\n{"message": 2}\\n{not json}')
    ('ORD-7731', '/zenith/i', {'message': 2}, '{not json}')
    """
    return tuple(fact_from_line(line.strip()) for line in (text or "").splitlines() if line.strip())


def usable_facts(facts: Sequence[Any]) -> tuple[tuple[Any, ...], list[InvalidSettings]]:
    """The facts a replay can follow, and an error for each one it cannot, named as
    ``facts[i]`` of ``facts`` (:func:`facts_error_text` names its line): a fact that
    does not check (a /regex/ that does not compile, an unknown key) or repeats an
    earlier one is left out (:func:`~contextfit.replays.facts.facts_that_check`),
    so one bad line does not take the whole replay away.

    >>> kept, errors = usable_facts(["ORD-7731", "/([a-z/", "ORD-7731", "courier"])
    >>> kept, [str(error)[:53] for error in errors]
    (('ORD-7731', 'courier'), ['facts[1] is written as a /regex/ but does not compile', 'facts[2] repeats facts[0]; give each fact once.'])
    """
    positions, errors = facts_that_check(facts)
    return tuple(facts[position] for position in positions), errors


def held_pins(setup: ReplaySetup, messages: Sequence[dict]) -> tuple[ReplaySetup, list[InvalidSettings]]:
    """``setup`` without the facts pinned to a message ``messages`` does not hold, and an error
    for each, named as ``facts[i]`` (a replay refuses such a pin whole, and the page lost its replay).

    >>> setup = ReplaySetup("gpt-4o", 8000, 1000, facts=("AX55", {"text": "AX55", "message": 9}, {"message": 0}))
    >>> kept, errors = held_pins(setup, [{"role": "user", "content": "AX55"}])
    >>> kept.facts, [str(error)[:40] for error in errors]
    (('AX55', {'message': 0}), ['facts[1] is pinned to message 9, which t'])
    """
    ids = message_ids(list(messages))
    kept, errors = [], []
    for position, fact in enumerate(setup.facts):
        pinned = fact.get("message") if isinstance(fact, Mapping) else None
        if pinned is not None and pinned_position(declared_facts([fact])[0], ids) is None:
            errors.append(pin_refusal(position, pinned, len(ids)))
            continue
        kept.append(fact)
    return (replace(setup, facts=tuple(kept)) if errors else setup), errors


def json_line_notes(text: str | None) -> list[str]:
    """A note for each line of the facts box written like a JSON object that does not parse
    (it is looked for as text, which was silent).

    >>> lines = ["ORD-7731", "{'text': 'x'}", '{"text": "Mara"', "{{char}}"]
    >>> for note in json_line_notes(chr(10).join(lines)):
    ...     print(note)
    Line 2 of the facts is written like a JSON object but is not valid JSON (keys and strings take double quotes, and it ends with }), so it is looked for as text.
    Line 3 of the facts is written like a JSON object but is not valid JSON (keys and strings take double quotes, and it ends with }), so it is looked for as text.
    """
    notes = []
    for number, line in enumerate((text or "").splitlines(), 1):
        line = line.strip()
        # ends like an object, or starts with a key (one cut short: '{"text": "Mara"'); "{{char}}" is text
        shaped = line.startswith("{") and (line.endswith("}") and not line.startswith("{{") or _KEY_FIRST.match(line))
        if shaped and isinstance(fact_from_line(line), str):
            notes.append(f"Line {number} of the facts is written like a JSON object but is not valid JSON (keys and "
                         "strings take double quotes, and it ends with }), so it is looked for as text.")
    return notes


_KEY_FIRST = re.compile(r'\{\s*"')


def facts_error_text(error: ContextfitError, facts_text: str | None) -> str:
    """An error for the page, each fact it names (``facts[i]``: the i-th non-blank line, from 0)
    named by its line in the facts box, as the person who typed them counts.

    >>> from contextfit.errors import InvalidSettings
    >>> facts_error_text(InvalidSettings("facts[1] repeats facts[0]; give each fact once."), "a\\n\\na")
    'INVALID_SETTINGS: line 3 of the facts repeats line 1 of the facts; give each fact once.'
    >>> facts_error_text(InvalidSettings("facts[0].text must be a non-empty string, got 5."), '{"text": 5}')
    'INVALID_SETTINGS: line 1 of the facts: its text must be a non-empty string, got 5.'
    """
    lines = [number for number, line in enumerate((facts_text or "").splitlines(), 1) if line.strip()]

    def line_of(match: re.Match[str]) -> str:
        index = int(match[1])
        if index >= len(lines):  # not the box's (a chat's settings, say): as the engine said it
            return match[0]
        return f"line {lines[index]} of the facts" + (f": its {match[2]}" if match[2] else "")

    return error_text(error, re.sub(r"facts\[(\d+)\](?:\.(\w+))?", line_of, str(error)))


def facts_to_text(facts: Any) -> str:
    """The text area's lines for declared facts (a chat's ``settings.facts``): what
    :func:`facts_from_text` reads back; a fact that is not one plain line is written as JSON.

    >>> facts_to_text(["ORD-7731", {"message": 2}, "two\\nlines", "{braces}"])
    'ORD-7731\\n{"message": 2}\\n{"text": "two\\\\nlines"}\\n{"text": "{braces}"}'
    >>> facts_from_text(facts_to_text(["ORD-7731", {"message": 2}, "{braces}"]))
    ('ORD-7731', {'message': 2}, {'text': '{braces}'})
    """
    if not isinstance(facts, (list, tuple)):
        return ""
    lines = []
    for fact in facts:
        if isinstance(fact, str) and fact.strip() == fact and "\n" not in fact and not fact.startswith("{"):
            lines.append(fact)
        else:
            lines.append(json.dumps(fact if isinstance(fact, dict) else {"text": fact}, ensure_ascii=False))
    return "\n".join(lines)


#: What a warning about a line left out adds.
LEFT_OUT = " The line is left out until it is fixed."


def read_box(text: str | None) -> tuple[tuple[Any, ...], list[str]]:
    """The facts a replay can follow from the box, and a warning for each line it cannot (left out,
    :func:`usable_facts`) or reads as text though it looks like JSON (:func:`json_line_notes`).

    >>> facts, notes = read_box("ORD-7731\\n/([a-z/\\n{'text': 'x'}")
    >>> facts, [note[:58] for note in notes]
    (('ORD-7731', "{'text': 'x'}"), ['INVALID_SETTINGS: line 2 of the facts is written as a /reg', 'Line 3 of the facts is written like a JSON object but is n'])
    """
    facts, errors = usable_facts(facts_from_text(text))
    return facts, [facts_error_text(error, text) + LEFT_OUT for error in errors] + json_line_notes(text)


def held_facts(setup: ReplaySetup, messages: Sequence[dict], text: str | None) -> tuple[ReplaySetup, list[str]]:
    """:func:`held_pins`, with a warning naming the line of each fact pinned to a message the
    conversation does not hold (left out, as a line that does not check is)."""
    setup, errors = held_pins(setup, messages)
    return setup, [facts_error_text(error, text) + LEFT_OUT for error in errors]
