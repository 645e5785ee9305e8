"""Each strategy explained in one line, for the strategy list and the head of its column.

The registry's descriptions say how a strategy works in a paragraph; a room
choosing between them needs what each one does first, in a few words. The
built-ins have a line written here; a plugin's is the first sentence of its
own description, shortened.
"""

from __future__ import annotations

from collections.abc import Iterable

from .markdown import plain
from .verdict import descriptions, one_line

#: What each built-in strategy does, in a few words.
LINES = {
    "truncate": "drops the oldest messages first",
    "summarize": "folds the oldest messages into a local summary",
    "vector-recall": "drops the lore and memory least related to the latest turns first",
    "manual": "drops what you marked for exclusion first, then the oldest",
    "clear-tool-results": "replaces older tool results with a short placeholder",
    "fact-ledger": "drops the oldest messages but keeps their facts (names, numbers, ids, dates) in a ledger",
}


def strategy_line(name: str) -> str:
    """``name``'s one line.

    >>> strategy_line("fact-ledger")
    'drops the oldest messages but keeps their facts (names, numbers, ids, dates) in a ledger'
    """
    if name in LINES:
        return LINES[name]
    return one_line(descriptions().get(name, ""), width=90) or "a plugin strategy"


def strategies_help(names: Iterable[str]) -> str:
    """The strategy list's help: one line per strategy (Markdown).

    >>> print(strategies_help(["truncate", "manual"]))
    Each one fits the same conversation; they are shown side by side.
    <BLANKLINE>
    - **truncate**: drops the oldest messages first
    - **manual**: drops what you marked for exclusion first, then the oldest
    """
    lines = "\n".join(f"- **{plain(name)}**: {plain(strategy_line(name))}" for name in names)
    return f"Each one fits the same conversation; they are shown side by side.\n\n{lines}"
