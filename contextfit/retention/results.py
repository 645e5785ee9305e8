"""The retention protocol's measurements as a file: what ``make retention`` writes, what a view reads.

Running the protocol takes about half a minute (``python -m bench.retention``);
a dashboard view that a presenter opens must not. So the bench writes every
measurement it made — per conversation, per strategy variant and budget: the
budget, the prompt tokens, the cost, and each planted fact's status — into
``contextfit/data/retention.json`` (package data), and :func:`load` reads it
back as :class:`~contextfit.retention.runner.Measurement` values. The table,
the headline and the breakdowns are then made by the bench's own functions
(:func:`~contextfit.retention.runner.rows_of`, ``by_position``...), so the
view shows the bench's numbers, not a copy of them. The file names the
protocol's parameters; the tests check them against the runner's and
measure the 50-turn conversations again to compare with what it holds.

>>> from contextfit.retention import runner
>>> measured = runner.measure(lengths=(20,), shares=(0.15,), seeds=(1,), variants=runner.VARIANTS[:1])
>>> back = from_json(to_json(measured, lengths=(20,), shares=(0.15,), seeds=(1,)))
>>> back.measurements == tuple(measured), back.lengths
(True, (20,))
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..errors import ContextfitError
from ..amounts import percent
from .runner import HEADLINE_SHARE, MODEL, Measurement, RetentionRow, rows_of
from .scoring import STATUSES, FactScore

__all__ = ["FORMAT", "PUBLISHED_TRUNCATE", "RESULTS", "Headline", "Results", "ResultsUnavailable", "from_json", "headline", "load",
           "to_json", "write"]

#: Naive truncation's retention as the Context Decay Benchmark published it (clawRxiv 2604.01047), which
#: truncate's first plantings are checked against (docs/retention.md).
PUBLISHED_TRUNCATE = 0.143
#: Where ``make retention`` writes the measurements and the dashboard reads them.
RESULTS = Path(__file__).resolve().parent.parent / "data" / "retention.json"
#: The file's layout; a file of another is refused (the view says to run ``make retention``).
FORMAT = 1
#: One letter per fact status, in a measurement's ``statuses`` string (one letter per planted fact).
_LETTERS = dict(zip(STATUSES, "vlsrx"))
_STATUS_OF = {letter: status for status, letter in _LETTERS.items()}


class ResultsUnavailable(ContextfitError):
    """The results file is missing, unreadable or of another layout (the message says to run
    ``make retention``); the package's base code: nothing but the bench writes the file."""


@dataclass(frozen=True, slots=True)
class Headline:
    """The protocol's headline at a budget share: the strategy that keeps the most facts, and truncate."""

    best: str
    best_retention: float
    truncate: float
    share: float

    def text(self) -> str:
        """The one line a room reads.

        >>> Headline("fact-ledger", 0.971, 0.232, 0.15).text()
        'fact-ledger keeps 97% of the facts at a 15% budget; truncate 23%'
        """
        return (f"{self.best} keeps {percent(self.best_retention)} of the facts at a {percent(self.share)} budget; "
                f"truncate {percent(self.truncate)}")


def headline(rows: Iterable[RetentionRow], share: float = HEADLINE_SHARE) -> Headline:
    """The strategy that keeps the most facts (all kinds) at ``share``, against truncate (the first
    of the best when several tie).

    >>> from contextfit.retention.runner import RetentionRow
    >>> def row(label, kept):
    ...     return RetentionRow(label, 0.15, "all", 10, kept, kept, 0, 0, 0, 10 - kept, 0, 0, 0, 100.0, None)
    >>> headline([row("truncate", 2), row("fact-ledger", 9), row("summarize", 3)]).text()
    'fact-ledger keeps 90% of the facts at a 15% budget; truncate 20%'
    """
    at = [row for row in rows if row.kind == "all" and row.share == share]
    if not at:
        raise ResultsUnavailable(f"The results hold no row at a {percent(share)} budget.")
    best = max(at, key=lambda row: row.retention)  # max keeps the first of equals: the runner's order
    truncate = next((row for row in at if row.strategy == "truncate"), None)
    if truncate is None:
        raise ResultsUnavailable("The results hold no truncate row to compare with.")
    return Headline(best.strategy, best.retention, truncate.retention, share)


@dataclass(frozen=True, slots=True)
class Results:
    """What the bench measured (``measurements``: the reported seeds at every budget; ``held_out``: the
    held-out seeds at the headline budget), with the protocol's parameters and the day it ran."""

    model: str
    lengths: tuple[int, ...]
    shares: tuple[float, ...]
    seeds: tuple[int, ...]
    variants: tuple[str, ...]
    measurements: tuple[Measurement, ...]
    held_out_seeds: tuple[int, ...] = ()
    held_out: tuple[Measurement, ...] = ()
    measured_on: str | None = None
    #: truncate at the headline budget: facts whose *first* value is sent, of how many (the published check)
    first_plantings: tuple[int, int] | None = None

    def rows(self) -> list[RetentionRow]:
        """The table (:func:`~contextfit.retention.runner.rows_of`): variant × budget × fact kind."""
        return rows_of(self.measurements)

    def held_out_rows(self) -> list[RetentionRow]:
        return rows_of(self.held_out)

    def headline(self) -> Headline:
        return headline(self.rows())

    @property
    def facts(self) -> int:
        """The facts planted over every conversation measured (each is scored once per variant and budget)."""
        seen: dict[tuple[int, int], int] = {}
        for measurement in self.measurements:
            seen[(measurement.turns, measurement.seed)] = len(measurement.scores)
        return sum(seen.values())


def to_json(measurements: Iterable[Measurement], *, lengths: Sequence[int], shares: Sequence[float],
            seeds: Sequence[int], variants: Sequence[str] | None = None, model: str = MODEL,
            held_out: Iterable[Measurement] = (), held_out_seeds: Sequence[int] = (),
            measured_on: str | None = None, first_plantings: tuple[int, int] | None = None) -> dict[str, Any]:
    """The file's JSON: the parameters, then each conversation's facts once and each run's statuses."""
    measurements = list(measurements)
    return {
        "format": FORMAT,
        "protocol": "docs/retention.md",
        "model": model,
        "measuredOn": measured_on,
        "lengths": list(lengths),
        "shares": list(shares),
        "seeds": list(seeds),
        "variants": list(variants) if variants is not None else list(dict.fromkeys(m.variant for m in measurements)),
        "heldOutSeeds": list(held_out_seeds),
        "firstPlantings": None if first_plantings is None else {"found": first_plantings[0],
                                                               "total": first_plantings[1]},
        "conversations": _conversations(measurements),
        "heldOut": _conversations(held_out),
    }


def _conversations(measurements: Iterable[Measurement]) -> list[dict[str, Any]]:
    grouped: dict[tuple[int, int], list[Measurement]] = {}
    for measurement in measurements:
        grouped.setdefault((measurement.turns, measurement.seed), []).append(measurement)
    out = []
    for (turns, seed), group in grouped.items():
        first = group[0]
        out.append({
            "turns": turns,
            "seed": seed,
            "facts": [{"key": s.key, "kind": s.kind, "sort": s.sort, "superseded": s.superseded}
                      for s in first.scores],
            "positions": list(first.positions),
            "runs": [{"variant": m.variant, "share": m.share, "budget": m.budget, "promptTokens": m.prompt_tokens,
                      "cost": m.cost, "statuses": "".join(_LETTERS[s.status] for s in m.scores)} for m in group],
        })
    return out


def _measurements(conversations: Sequence[Mapping[str, Any]]) -> tuple[Measurement, ...]:
    out = []
    for conversation in conversations:
        facts = conversation["facts"]
        positions = tuple(conversation["positions"])
        for run in conversation["runs"]:
            statuses = run["statuses"]
            if len(statuses) != len(facts):
                raise ResultsUnavailable(f"A run of {run['variant']} scores {len(statuses)} facts of {len(facts)}.")
            scores = tuple(FactScore(fact["key"], fact["kind"], fact["sort"], fact["superseded"], _STATUS_OF[letter])
                           for fact, letter in zip(facts, statuses))
            out.append(Measurement(run["variant"], run["share"], conversation["turns"], conversation["seed"],
                                   run["budget"], run["promptTokens"], run["cost"], scores, positions))
    return tuple(out)


def from_json(data: Mapping[str, Any]) -> Results:
    """:class:`Results` from the file's JSON (:func:`to_json`); another layout raises :class:`ResultsUnavailable`."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise ResultsUnavailable("The retention results are of another layout: run `make retention` to measure again.")
    try:
        first = data.get("firstPlantings")
        return Results(
            model=data["model"], lengths=tuple(data["lengths"]), shares=tuple(data["shares"]),
            seeds=tuple(data["seeds"]), variants=tuple(data["variants"]),
            measurements=_measurements(data["conversations"]), held_out_seeds=tuple(data.get("heldOutSeeds") or ()),
            held_out=_measurements(data.get("heldOut") or ()), measured_on=data.get("measuredOn"),
            first_plantings=None if not first else (int(first["found"]), int(first["total"])),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ResultsUnavailable(f"The retention results could not be read ({error!r}): run `make retention`.") from None


def write(path: Path, measurements: Iterable[Measurement], **keywords: Any) -> Path:
    """Write the results file (:func:`to_json`'s keywords; ``measured_on`` defaults to today)."""
    keywords.setdefault("measured_on", date.today().isoformat())
    text = json.dumps(to_json(measurements, **keywords), ensure_ascii=False, separators=(",", ":"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def load(path: Path | str | None = None) -> Results:
    """The results ``make retention`` wrote (``path``: another file); raises
    :class:`ResultsUnavailable` when there are none to read."""
    path = RESULTS if path is None else Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsUnavailable(f"No retention results at {path.name}: run `make retention` to measure them.") from None
    except (OSError, ValueError) as error:
        raise ResultsUnavailable(f"The retention results could not be read ({error.__class__.__name__}): run "
                                 "`make retention`.") from None
    return from_json(data)
