"""The dashboard's HTML tables: numbers read down a column, right-aligned.

``st.table`` draws a pandas Styler as HTML, every cell left-aligned: "up to 1,781", "$0.004895" and
"81.2%" did not line up under one another. :func:`aligned` takes the data frame or Styler a page
draws and returns it styled with the column's numbers right-aligned (cells and header), and a plain
frame's numbers with thousands separators and its missing values "—", as the data grids show them.
Nothing here imports pandas or Streamlit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["RIGHT", "aligned", "is_number", "numeric_columns"]

#: The CSS of a right-aligned cell (important: Streamlit writes "text-align: left" on a text cell itself).
RIGHT = "text-align: right !important"
#: A figure as the dashboard writes it: "1,781", "up to 1,781", "about 1.8K", "$0.004895", "-$0.41",
#: "81.2%", "<1%", "$1.2K".
_FIGURE = re.compile(r"(?:about |up to |[<>~≈])?[-−]?\$?\d[\d,]*(?:\.\d+)?[KMBT]?%?")
#: A cell that says there is no value: it leaves a column numeric.
_EMPTY = ("", "—", "-", "–")


def is_number(value: Any) -> bool | None:
    """Whether a cell is a figure; ``None`` for an empty one (no value, "—"), which does not count.

    >>> [is_number(v) for v in (1781, 0.5, "up to 1,781", "$0.004895", "81.2%", "-$0.41", "$1.2K", "<1%")]
    [True, True, True, True, True, True, True, True]
    >>> [is_number(v) for v in ("truncate", True, "1–2", "turn 3", "—", None, float("nan"))]
    [False, False, False, False, None, None, None]
    """
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    text = str(value).strip()
    if text in _EMPTY or text.lower() in ("nan", "none", "<na>"):
        return None
    return _FIGURE.fullmatch(text) is not None


def numeric_columns(columns: Iterable[tuple[Any, Iterable[Any]]]) -> list[Any]:
    """The names of the ``(name, cells)`` columns whose every cell with a value is a figure (at least one).

    >>> numeric_columns([("strategy", ["a", "b"]), ("tokens", ["up to 1,781", "—"]), ("empty", ["—"])])
    ['tokens']
    """
    found = []
    for name, cells in columns:
        kinds = [kind for kind in map(is_number, cells) if kind is not None]
        if kinds and all(kinds):
            found.append(name)
    return found


def aligned(table: Any) -> Any:
    """``table`` (a pandas DataFrame or Styler) as a Styler whose numeric columns are right-aligned,
    their headers too; a DataFrame gets thousands separators and "—" for a missing value first."""
    styler = table.style.format(thousands=",", na_rep="—") if not hasattr(table, "hide") else table
    frame = styler.data
    numeric = numeric_columns((name, frame[name].tolist()) for name in frame.columns)
    if not numeric:
        return styler
    positions = [frame.columns.get_loc(name) for name in numeric]
    return styler.set_properties(subset=numeric, **{"text-align": "right !important"}).set_table_styles(
        [{"selector": f"th.col_heading.col{position}", "props": RIGHT} for position in positions], overwrite=False)
