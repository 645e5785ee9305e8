"""The retention protocol's headline figures, ready for a page to cite.

The whole protocol (:mod:`.runner`) takes a minute; its headline — each
built-in strategy with its default options at a budget of 15% of the
conversation's tokens, on the reported seeds — about six seconds. A page
must not wait for either, so the headline is measured once, stored with the
package (``contextfit/data/retention_headline.json``, written by
``python -m contextfit.retention.headline``) and read from there; a test
measures it again and holds the file to it, so a change of a strategy that
moves a figure fails until the file is written again.

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

import json
import sys
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .. import caches
from ..amounts import percent

#: Where the measured figures are stored (package data).
HEADLINE_FILE = Path(__file__).resolve().parent.parent / "data" / "retention_headline.json"
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


def measure() -> dict[str, Figure]:
    """Measure the headline now: every built-in strategy with its default options, at
    :data:`~.runner.HEADLINE_SHARE`, on the reported lengths and seeds (about six seconds)."""
    from .runner import HEADLINE_SHARE, VARIANTS, retention_rows

    rows = retention_rows(shares=(HEADLINE_SHARE,), variants=[variant for variant in VARIANTS if not variant.options])
    by_kind: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_kind.setdefault(row.strategy, {})[row.kind] = row
    return {name: Figure(name, HEADLINE_SHARE, kinds["all"].facts, kinds["all"].retention,
                         kinds["explicit"].retention, kinds["implicit"].retention, kinds["all"].mean_tokens)
            for name, kinds in by_kind.items()}


def write(path: Path = HEADLINE_FILE) -> dict[str, Figure]:
    """Measure the headline and store it at ``path``."""
    figures = measure()
    path.write_text(json.dumps({name: figure.to_dict() for name, figure in figures.items()}, indent=1) + "\n",
                    encoding="utf-8")
    return figures


@cache
def headline() -> dict[str, Figure]:
    """The stored headline, by strategy (read once per process)."""
    stored = json.loads(HEADLINE_FILE.read_text(encoding="utf-8"))
    return {name: Figure(**values) for name, values in stored.items()}


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


if __name__ == "__main__":  # python -m contextfit.retention.headline: measure and store the headline again
    for name, measured in write().items():
        print(f"{name}: {measured.retention:.1%} of {measured.facts} facts", file=sys.stdout)
