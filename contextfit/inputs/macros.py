"""How far ``{{user}}`` and ``{{char}}`` may grow a prompt, checked before anything is filled in.

Filling a macro in copies a name: an 83 KB request holding ``{{user}}`` ten
thousand times with a 3,000-character user name became a 30 MB prompt and
peaked at 1.7 GB. Two limits (``contextfit/limits.py``) hold that to what the
written text could hold anyway:

- a name that fills ``{{user}}`` or ``{{char}}`` (``user_name``, ``char_name``,
  or the card's name when no ``char_name`` is given) has at most
  :data:`~contextfit.limits.MAX_NAME_CHARS` characters (:func:`check_names`);
- the characters that filling every macro of one plan would add (each
  ``{{user}}``, ``{{char}}``, ``<USER>``, ``<BOT>`` or ``<CHAR>`` becomes its
  name) are at most :data:`~contextfit.limits.MAX_MACRO_GROWTH` in all
  (:func:`check_growth`), counted before a single macro is filled in.

Both refuse with ``INVALID_SETTINGS`` and a message naming the field.

>>> macro_growth("{{user}} meets <BOT>", {"user": "Annabelle", "char": "Seraphina"})
5
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..errors import InvalidSettings, shown
from ..limits import MAX_MACRO_GROWTH, MAX_NAME_CHARS

__all__ = ["check_growth", "check_names", "macro_growth"]

# Every spelling the fillers replace (pipeline/assembly.py, inputs/lorebook/matching.py).
_MACRO = re.compile(r"\{\{\s*(char|user)\s*\}\}|<(USER|BOT|CHAR)>", re.IGNORECASE)
_LEGACY = {"user": "user", "bot": "char", "char": "char"}


def check_names(user_name: object, char_name: object, card_name: object = None) -> dict[str, str]:
    """What ``{{user}}`` and ``{{char}}`` stand for, once checked: strings of at most
    :data:`~contextfit.limits.MAX_NAME_CHARS` characters; ``{{char}}`` is
    ``char_name``, else ``card_name``, else "Assistant".

    >>> check_names("Ann", None, "Seraphina")
    {'user': 'Ann', 'char': 'Seraphina'}
    >>> check_names("A" * 3000, None)
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: user_name (userName) is 3,000 characters long; a name that fills {{user}} may have at most 256 (contextfit.limits.MAX_NAME_CHARS).
    """
    _check_name("user_name (userName)", "{{user}}", user_name)
    if char_name is not None:
        _check_name("char_name (charName)", "{{char}}", char_name)
    if char_name:
        return {"user": user_name, "char": char_name}
    if card_name:
        _check_name("The character card's name (character.name)", "{{char}}", card_name,
                    "; give a shorter char_name (charName) to use instead")
    return {"user": user_name, "char": card_name or "Assistant"}


def _check_name(field: str, macro: str, value: object, fix: str = "") -> None:
    if not isinstance(value, str):
        raise InvalidSettings(f"{field} must be a string (it fills {macro}), got {shown(value, 40)}.")
    if len(value) > MAX_NAME_CHARS:
        raise InvalidSettings(f"{field} is {len(value):,} characters long; a name that fills {macro} may have "
                              f"at most {MAX_NAME_CHARS:,} (contextfit.limits.MAX_NAME_CHARS){fix}.")


def macro_growth(text: str, names: Mapping[str, str]) -> int:
    """The characters ``text`` gains when its macros are filled in with ``names`` (0 when it loses some).

    >>> macro_growth("{{user}}" * 10, {"user": "N" * 3000, "char": "A"}), macro_growth("no macros", {})
    (29920, 0)
    """
    if "{{" not in text and "<" not in text:
        return 0
    lengths = {"user": len(names.get("user", "")), "char": len(names.get("char", ""))}
    grown = 0
    for found in _MACRO.finditer(text):
        which = found.group(1) or _LEGACY[found.group(2).lower()]
        grown += lengths[which.lower()] - (found.end() - found.start())
    return max(grown, 0)


def check_growth(texts: Iterable[tuple[str, str]], names: Mapping[str, str], already: int = 0) -> int:
    """The characters filling ``texts`` (``(where, text)`` pairs) would add, plus ``already``
    (what earlier texts of the same prompt added); refused past
    :data:`~contextfit.limits.MAX_MACRO_GROWTH`, naming the text that adds the most.

    >>> check_growth([("persona", "I am {{user}}.")], {"user": "Ann", "char": "A"})
    0
    >>> check_growth([("messages[1].content", "{{user}}" * 2000)], {"user": "N" * 1001, "char": "A"})
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: Filling in {{user}} and {{char}} would add 1,986,000 characters to the prompt, more than the 1,000,000 allowed (contextfit.limits.MAX_MACRO_GROWTH)...
    """
    total, largest, where_largest = already, 0, ""
    for where, text in texts:
        grown = macro_growth(text, names)
        total += grown
        if grown > largest:
            largest, where_largest = grown, where
    if total > MAX_MACRO_GROWTH:
        raise InvalidSettings(
            f"Filling in {{{{user}}}} and {{{{char}}}} would add {total:,} characters to the prompt, more than the "
            f"{MAX_MACRO_GROWTH:,} allowed (contextfit.limits.MAX_MACRO_GROWTH); {where_largest or 'the chat'} adds "
            f"{largest:,} of them (user name: {len(names.get('user', '')):,} characters, character name: "
            f"{len(names.get('char', '')):,}). Use shorter names (user_name, char_name) or fewer macros."
        )
    return total
