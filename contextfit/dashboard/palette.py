"""The strategies' colours: one per strategy on every page, never a fate's.

Compare colours blocks by their fate (:data:`~contextfit.dashboard.charts.FATE_COLORS`:
blue protected, green kept, orange summary, pink compressed, grey excluded; the
response reserve vermillion). A line or bar that stands for a *strategy*
(Replay's lines, the Retention page's bars) takes a colour from this palette
instead, chosen far from every fate colour, so a room never reads "summarize"
as "protected". A built-in keeps its colour whichever others are shown; a
variant of one (``truncate+stable_prefix``, ``fact-ledger 10%``) takes its
strategy's colour; any other strategy (a plugin) one of the spare colours, in
the order shown.

>>> strategy_color("summarize"), strategy_color("fact-ledger 10%"), strategy_color("truncate+stable_prefix")
('#7B2FBE', '#A50026', '#111111')
>>> strategy_color("mine", ["truncate", "mine", "theirs"]), strategy_color("theirs", ["mine", "theirs"])
('#B5179E', '#4B6B1F')
"""

from __future__ import annotations

from collections.abc import Sequence

from ..pipeline.plan import BUILTIN_STRATEGIES

__all__ = ["SPARE_COLORS", "STRATEGY_COLORS", "SYMBOLS", "built_in", "strategy_color", "strategy_symbol"]

#: One colour per built-in strategy (black, violet, olive, brown, lime, crimson): each at least
#: 25 CIE76 units from every colour the fate charts use and 30 from each other (tests/test_palette.py).
STRATEGY_COLORS = {
    "truncate": "#111111",
    "summarize": "#7B2FBE",
    "vector-recall": "#7A7A00",
    "manual": "#8C510A",
    "clear-tool-results": "#7CB518",
    "fact-ledger": "#A50026",
}
#: For strategies that are not built in (plugins), in the order a page shows them.
SPARE_COLORS = ("#B5179E", "#4B6B1F", "#5C3317", "#00A3C4")
#: A marker per built-in (plotly symbol names), so lines that cross can be told apart without colour.
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon")
_SPARE_SYMBOLS = ("hexagon", "star", "cross", "hourglass")


def built_in(label: str) -> str | None:
    """The built-in strategy a label names (alone, or with options after ``+`` or a space), else ``None``.

    >>> built_in("truncate+stable_prefix"), built_in("summarize 25%"), built_in("my-plugin")
    ('truncate', 'summarize', None)
    """
    base = label.replace("+", " ").split(" ", 1)[0]
    return base if base in BUILTIN_STRATEGIES else None


def _spare(label: str, labels: Sequence[str] | None) -> int:
    others = [name for name in dict.fromkeys(labels or ()) if built_in(name) is None]
    return others.index(label) if label in others else 0


def strategy_color(label: str, labels: Sequence[str] | None = None) -> str:
    """The colour of a strategy's line or bar; ``labels``: every label shown (a plugin's spare colour
    is its place among the plugins there)."""
    base = built_in(label)
    if base is not None:
        return STRATEGY_COLORS[base]
    return SPARE_COLORS[_spare(label, labels) % len(SPARE_COLORS)]


def strategy_symbol(label: str, labels: Sequence[str] | None = None) -> str:
    """The marker of a strategy's line (:data:`SYMBOLS`), as :func:`strategy_color` picks its colour."""
    base = built_in(label)
    if base is not None:
        return SYMBOLS[BUILTIN_STRATEGIES.index(base) % len(SYMBOLS)]
    return _SPARE_SYMBOLS[_spare(label, labels) % len(_SPARE_SYMBOLS)]
