"""How large a regex key would compile, read from its text before anything is compiled.

The ``regex`` package unrolls a counted repeat into as many copies of what it
repeats as its minimum count: ``a{1000}`` compiles to a thousand nodes, and
nested counts multiply, so the 24-character ``(?:a{999999}){999999}`` would
take about 10^12 nodes: it compiled for seconds into gigabytes before it was
refused. :func:`pattern_units` estimates the nodes from the pattern's text
alone, in one pass with no recursion, so a key can be refused before it
reaches the compiler.

Measured with ``regex`` 2026.11 (``sys.getsizeof`` of the compiled pattern,
``tracemalloc`` for the peak while compiling): a node costs about 108 bytes
once compiled and 250 while compiling. Per repetition, a literal, ``.``, an
escape, an anchor or a one-range class costs 1 node, ``\\X`` 6, a class of
``n`` ranges or escapes about ``n``, a group 3 plus its contents, ``*``,
``+``, ``?`` and ``{n,m}`` 2 more, a lookaround 3, and full case folding
(``(?fi)``) up to 3 times as much, and up to 24 KB for a class that holds
many letters (``(?fi)[\\p{L}\\p{N}]``). The estimate is an upper bound of those:

- an atom (literal, escape, ``.``, anchor, backreference, group call) is 1,
  ``\\X`` is 12, a class is 1 plus the characters between its brackets;
- a group is 3 plus its branches, an alternation 1 more per ``|``;
- a quantifier with minimum ``n`` makes its atom ``n + 1`` times as large
  (the compiler writes the body out ``n`` times, and a small count of a group
  once more), plus 2, and 3 more when possessive; a fuzzy constraint
  (``{e<=2}``) adds 3;
- a pattern that may be verbose (``(?x)``, whose white space and ``#``
  comments are ignored, even inside ``{1 000}``) is measured both ways and
  the larger counts; full case folding (an ``f`` flag) counts 3 times, with
  every class at least :data:`FOLDED_CLASS_UNITS`, and a pattern that calls a
  group (``(?1)``, ``(?R)``, ``(?&name)``), whose body is compiled again, 3 times.

Reading a pattern its own way where it is malformed only makes the estimate
differ for a pattern the compiler then refuses anyway; every counted repeat
multiplies whatever it follows.

>>> pattern_units("shadow ?fangs?"), pattern_units(r"\\d{4}-\\d{2}-\\d{2}")
(16, 19)
>>> pattern_units("(?:a{999999}){999999}") > 10**12
True
"""

from __future__ import annotations

import re

__all__ = ["BYTES_PER_UNIT", "FOLDED_CLASS_UNITS", "pattern_units", "without_captures"]

#: Bytes one unit of :func:`pattern_units` stands for once compiled (measured:
#: about 108; ``tests/inputs/test_lorebook.py`` checks the estimate against ``sys.getsizeof``).
BYTES_PER_UNIT = 120

#: The least a class counts under full case folding (measured: ``(?fi)[\\x00-\\U0010ffff]``
#: compiles to 24 KB, 200 units).
FOLDED_CLASS_UNITS = 250

# A counted repeat ({n}, {n,}, {,m}, {n,m}; white space inside when verbose) and a fuzzy constraint.
_COUNT = re.compile(r"\{\s*(\d*)\s*(?:,\s*\d*\s*)?\}")
_FUZZY = re.compile(r"\{[\s\d+,<=]*[eids][\s\deids+,<=]*\}")
# What follows "(?": a flag set (no body), a backreference or call (no body), or a group's opening.
_FLAGS_ONLY = re.compile(r"[a-zA-Z0-9^-]*\)")
_NO_BODY = re.compile(r"(?:P=\w+|P>\w+|&\w+|R|[-+]?\d+)\)")
_OPENING = re.compile(r"(?:[:=!>|]|<[=!]|P?<\w+>|'\w+'|[a-zA-Z0-9^-]*:)")
_CALL = re.compile(r"\(\?(?:P>\w+|&\w+|R|[-+]?\d+)\)")
# Inline flags that may turn on verbose mode or full case folding, wherever they stand.
_INLINE_FLAGS = re.compile(r"\(\?([a-zA-Z0-9^-]*)[:)]")
_ESCAPE_WITH_BRACES = "pPN"


def pattern_units(pattern: str) -> int:
    """An upper bound of the nodes ``regex`` would compile ``pattern`` into (see the module docstring).

    >>> pattern_units("a{1000}"), pattern_units("(?x)a{1 000}"), pattern_units("(?:ab){10}")
    (1003, 1003, 57)
    """
    flags = "".join(_INLINE_FLAGS.findall(pattern))
    class_units = FOLDED_CLASS_UNITS if "f" in flags else 1
    units = _units(pattern, class_units)
    if "x" in flags:  # verbose somewhere: read it that way too
        units = max(units, _units(_without_verbose_space(pattern), class_units))
    if "f" in flags:
        units *= 3
    if _CALL.search(pattern):
        units *= 3
    return units


class _Frame:
    """One open group: the units of its finished branches, of the branch being read, and of its last item."""

    __slots__ = ("branches", "done", "sequence", "last")

    def __init__(self) -> None:
        self.branches = 0
        self.done = 0
        self.sequence = 0
        self.last: int | None = None

    def add(self, units: int) -> None:
        self.sequence += units
        self.last = units

    def repeat(self, times: int, extra: int) -> None:
        """The last item written out ``times`` times (``extra``: the repeat's own nodes)."""
        if self.last is None:  # nothing to repeat: the compiler refuses it; count it as text
            self.add(1)
            return
        times = max(times, 1)
        grown = self.last * times + extra
        self.sequence += grown - self.last
        self.last = grown

    def close_branch(self) -> None:
        self.done += self.sequence
        self.branches += 1
        self.sequence = 0
        self.last = None

    def total(self) -> int:
        return self.done + self.sequence + self.branches


def _units(pattern: str, class_units: int) -> int:
    frames = [_Frame()]
    position, end = 0, len(pattern)
    while position < end:
        char = pattern[position]
        frame = frames[-1]
        if char == "\\":
            position, units = _escape(pattern, position)
            frame.add(units)
        elif char == "[":
            stop = _class_end(pattern, position)
            frame.add(max(1 + max(stop - position - 2, 0), class_units))
            position = stop
        elif char == "(":
            position = _open(pattern, position, frames)
        elif char == ")":
            if len(frames) > 1:
                frames.pop()
                frames[-1].add(3 + frame.total())
            else:
                frame.add(1)  # unbalanced: the compiler refuses it
            position += 1
        elif char == "|":
            frame.close_branch()
            position += 1
        elif char in "*+?":
            position = _repeat(frame, pattern, position + 1, 1 if char == "+" else 0)
        elif char == "{" and (count := _COUNT.match(pattern, position)):
            position = _repeat(frame, pattern, count.end(), int(count.group(1) or 0))
        elif char == "{" and (fuzzy := _FUZZY.match(pattern, position)):
            frame.repeat(1, 3)
            position = fuzzy.end()
        else:
            frame.add(1)
            position += 1
    while len(frames) > 1:  # unclosed: the compiler refuses it
        inner = frames.pop()
        frames[-1].add(3 + inner.total())
    return frames[0].total()


# What reads groups back: backreferences, group calls and conditionals (a search may also
# match "\\\\1", an escaped backslash before a digit: the pattern is then kept as it is).
_READS_GROUPS = re.compile(r"\\[1-9gk]|\(\?(?:P[=>]|&|R\)|[-+]?\d|\()")
_NAMED_OPENING = re.compile(r"\(\?(?:P?<(?![=!])\w+>|'\w+')")


def without_captures(pattern: str) -> str:
    """``pattern`` with every capturing group made non-capturing, when nothing reads a group back.

    A key only needs where it matches, and the ``regex`` package keeps every
    capture of a group inside a repeat: ``(a)*`` over a million ``a`` held
    163 MB within its 0.25 s; ``(?:a)*`` holds nothing.

    >>> without_captures("(wolf|wolves)(?P<n>es)?[(]"), without_captures(r"(a)\\1")
    ('(?:wolf|wolves)(?:es)?[(]', '(a)\\\\1')
    """
    if _READS_GROUPS.search(pattern):
        return pattern
    kept, position, end = [], 0, len(pattern)
    while position < end:
        char = pattern[position]
        if (stop := _literal_end(pattern, position)) > position:  # an escape or a class: kept as it is
            kept.append(pattern[position:stop])
            position = stop
        elif char == "(" and not pattern.startswith("(?", position):
            kept.append("(?:")
            position += 1
        elif char == "(" and (named := _NAMED_OPENING.match(pattern, position)):
            kept.append("(?:")
            position = named.end()
        else:
            kept.append(char)
            position += 1
    return "".join(kept)


def _repeat(frame: _Frame, pattern: str, after: int, minimum: int) -> int:
    """Apply a quantifier of ``minimum`` ending at ``after`` (and its ``?`` or ``+``); where reading goes on."""
    possessive = pattern.startswith("+", after)
    frame.repeat(minimum + 1, 5 if possessive else 2)
    return after + 1 if possessive or pattern.startswith("?", after) else after


def _open(pattern: str, position: int, frames: list[_Frame]) -> int:
    """Read a ``(``: push a group, or add what has no body; where reading goes on."""
    if not pattern.startswith("(?", position):
        frames.append(_Frame())
        return position + 1
    after = position + 2
    if pattern.startswith("#", after):  # a comment
        close = pattern.find(")", after)
        return len(pattern) if close < 0 else close + 1
    no_body = _NO_BODY.match(pattern, after)
    if no_body:  # a backreference or a group call
        frames[-1].add(1)
        return no_body.end()
    flags = _FLAGS_ONLY.match(pattern, after)
    if flags:  # (?i), (?x-s): no body, nothing to repeat
        return flags.end()
    frames.append(_Frame())
    opening = _OPENING.match(pattern, after)
    return opening.end() if opening else after


def _escape(pattern: str, position: int) -> tuple[int, int]:
    """(where the escape at ``position`` ends, its units)."""
    letter = pattern[position + 1: position + 2]
    if letter in _ESCAPE_WITH_BRACES and pattern.startswith("{", position + 2):
        close = pattern.find("}", position + 2)
        return (len(pattern) if close < 0 else close + 1), 1
    if letter == "g" and pattern.startswith("<", position + 2):
        close = pattern.find(">", position + 2)
        return (len(pattern) if close < 0 else close + 1), 1
    return position + 2, 12 if letter == "X" else 1


def _class_end(pattern: str, position: int) -> int:
    """Where the class opened at ``position`` ends (a ``]`` first, or after ``^``, is a member)."""
    index = position + 1
    if pattern.startswith("^", index):
        index += 1
    if pattern.startswith("]", index):
        index += 1
    end = len(pattern)
    while index < end:
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[" and pattern.startswith("[:", index):  # a POSIX class such as [:alpha:]
            close = pattern.find(":]", index + 2)
            if close >= 0:
                index = close + 2
                continue
        if char == "]":
            return index + 1
        index += 1
    return end


def _literal_end(pattern: str, position: int) -> int:
    """Where the escape (``\\x``) or character class (``[...]``) at ``position`` ends, read as one piece
    by the scanners above; ``position`` when neither starts there.

    >>> _literal_end(r"a\\(b", 1), _literal_end("[#(]x", 0), _literal_end("ab", 0)
    (3, 4, 0)
    """
    if pattern.startswith("\\", position):
        return position + 2
    if pattern.startswith("[", position):
        return _class_end(pattern, position)
    return position


def _without_verbose_space(pattern: str) -> str:
    """``pattern`` as verbose mode reads it: white space and ``#`` comments outside classes left out."""
    kept = []
    position, end = 0, len(pattern)
    while position < end:
        char = pattern[position]
        if (stop := _literal_end(pattern, position)) > position:  # an escape or a class: kept as it is
            kept.append(pattern[position:stop])
            position = stop
        elif char == "#":
            newline = pattern.find("\n", position)
            position = end if newline < 0 else newline + 1
        elif char.isspace():
            position += 1
        else:
            kept.append(char)
            position += 1
    return "".join(kept)
