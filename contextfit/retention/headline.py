"""The retention protocol's figures for each built-in strategy, ready for a page to cite.

Each built-in strategy with its default options at the headline budget (15% of
the conversation's tokens), on the reported seeds: read from the measurements
``make retention`` stored with the package (:func:`.results.load`), the very
rows the Retention page shows, so the two cannot disagree (the results' own
test measures them again). No results file: no figures, no citation.

>>> figure = headline()["fact-ledger"]
>>> figure.share, figure.facts > 300, figure.retention > 0.9
(0.15, True, True)
>>> citation("truncate")
'On the standard retention protocol (synthetic agent chats of 50 to 1,000 turns, a budget of 15% of their tokens), truncate keeps 23% of the facts; on such long chats fact-ledger keeps 97%.'
>>> citation("fact-ledger").endswith("fact-ledger keeps 97% of the facts (truncate: 23%).")
True
>>> citation("my-plugin") is None
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from .. import caches
from ..amounts import percent

#: The strategy the others are set against in a citation (the published baseline is naive truncation).
BASELINE = "truncate"
#: How many points better another strategy must keep on the protocol for a citation to name it too.
FAR_BETTER = 0.10


@dataclass(frozen=True, slots=True)
class Figure:
    """One strategy's headline: retention of all facts, and of each kind, at the headline budget share."""

    strategy: str
    share: float
    facts: int
    retention: float
    explicit: float
    implicit: float
    mean_tokens: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@cache
def headline() -> dict[str, Figure]:
    """The figures by strategy, from the stored results (read once per process; empty without them)."""
    from .results import ResultsUnavailable, load
    from .runner import HEADLINE_SHARE, VARIANTS

    try:
        rows = load().rows()
    except ResultsUnavailable:
        return {}
    plain = {variant.label for variant in VARIANTS if not variant.options}
    by_kind: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.share == HEADLINE_SHARE and row.strategy in plain:
            by_kind.setdefault(row.strategy, {})[row.kind] = row
    return {name: Figure(name, HEADLINE_SHARE, kinds["all"].facts, kinds["all"].retention,
                         kinds["explicit"].retention, kinds["implicit"].retention, kinds["all"].mean_tokens)
            for name, kinds in by_kind.items()}


caches.register("retention.headline", headline)


def citation(strategy: str | None) -> str | None:
    """One sentence citing the protocol for ``strategy``, set against truncate's figure; ``None``
    for a strategy the protocol does not measure (a plugin) or no strategy (a tie)."""
    figures = headline()
    figure = figures.get(strategy or "")
    if figure is None:
        return None
    said = (f"On the standard retention protocol (synthetic agent chats of 50 to 1,000 turns, a budget of "
            f"{figure.share:.0%} of their tokens), {strategy} keeps {percent(figure.retention)} of the facts")
    base = figures.get(BASELINE)
    if base is not None and strategy != BASELINE:
        said += f" ({BASELINE}: {percent(base.retention)})"
    # what the protocol says this conversation's answer would be on long chats, when it is far better
    best = max(figures.values(), key=lambda other: other.retention)
    if best.strategy != strategy and best.retention - figure.retention >= FAR_BETTER:
        said += f"; on such long chats {best.strategy} keeps {percent(best.retention)}"
    return said + "."
