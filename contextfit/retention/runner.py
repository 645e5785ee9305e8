"""Running the retention protocol: every strategy variant, every budget, every conversation.

For each generated conversation (:mod:`.protocol`) and each budget share
(10%, 15%, 25% of the conversation's tokens, counted exactly with the
model's vocabulary), the conversation is planned once with
:func:`contextfit.plan_prompt`'s stages (``context_limit`` = the budget,
``response_reserve`` = 0) and fitted with each variant; every planted fact is
scored on the plan's provider messages (:mod:`.scoring`), at the request
that asks about it (the last one).

A protocol conversation is one request: the whole chat fitted once and the
question asked. So *tokens sent* is that request's prompt, and *cost per
1,000 conversations* is 1,000 times its input at the catalog's list price
(uncached; the reply is left out: it is the same whatever the strategy).

:func:`retention_rows` returns the table rows (what ``python -m bench.retention``
prints and a dashboard view can load); :func:`measure` the raw measurements.

>>> rows = retention_rows(lengths=(20,), shares=(0.15,), seeds=(1,), variants=VARIANTS[:1])
>>> [(row.strategy, row.kind, row.facts) for row in rows]
[('truncate', 'explicit', 3), ('truncate', 'implicit', 2), ('truncate', 'all', 5)]
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..pipeline.plan import plan_prepared, prepare
from ..pipeline.settings import PlanSettings
from ..tokens.chat_counter import token_counter
from ..tokens.models import get_model
from .protocol import KINDS, ProtocolConversation, generate
from .scoring import LEDGER, LOST, RECOVERABLE, STALE, VERBATIM, FactScore, score_plan

MODEL = "gpt-4o"
LENGTHS = (50, 200, 1000)
SHARES = (0.10, 0.15, 0.25)
#: The seeds the figures are reported on, and a held-out set checked apart (never used to tune anything).
SEEDS = (1, 2, 3)
HELD_OUT_SEEDS = (101, 102, 103)
#: The budget share the published figures use.
HEADLINE_SHARE = 0.15


@dataclass(frozen=True, slots=True)
class Variant:
    """A strategy with options; an option may be a function of the budget (``summary_tokens`` = a share of it)."""

    label: str
    strategy: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def resolved(self, budget: int) -> dict[str, Any]:
        return {name: value(budget) if callable(value) else value for name, value in self.options.items()}


def _quarter(budget: int) -> int:
    return max(64, budget // 4)


def _tenth(budget: int) -> int:
    return max(64, budget // 10)


VARIANTS: tuple[Variant, ...] = (
    Variant("truncate", "truncate"),
    Variant("truncate stable_prefix", "truncate", {"stable_prefix": True}),
    Variant("summarize", "summarize"),
    Variant("summarize 25%", "summarize", {"summary_tokens": _quarter}),
    Variant("summarize stable_prefix", "summarize", {"stable_prefix": True}),
    Variant("vector-recall", "vector-recall"),
    Variant("manual", "manual"),
    Variant("clear-tool-results", "clear-tool-results"),
    Variant("clear-tool-results keep=1", "clear-tool-results", {"keep": 1}),
    Variant("clear-tool-results stable_prefix", "clear-tool-results", {"stable_prefix": True}),
    Variant("fact-ledger", "fact-ledger"),
    Variant("fact-ledger 10%", "fact-ledger", {"ledger_tokens": _tenth}),
)


@dataclass(frozen=True, slots=True)
class Measurement:
    """One conversation fitted with one variant at one budget, and its facts' scores."""

    variant: str
    share: float
    turns: int
    seed: int
    budget: int
    prompt_tokens: int
    cost: float | None
    scores: tuple[FactScore, ...]
    #: where each fact's current value was set, as a share of the conversation (0 = start)
    positions: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class RetentionRow:
    """One line of the table: a variant at a budget share, for one fact kind (or ``all``)."""

    strategy: str
    share: float
    kind: str
    facts: int
    retained: int
    verbatim: int
    ledger: int
    stale: int
    recoverable: int
    lost: int
    superseded: int
    superseded_current: int
    superseded_stale: int
    mean_tokens: float
    cost_per_1000: float | None

    @property
    def retention(self) -> float:
        return self.retained / self.facts if self.facts else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "budgetShare": self.share, "kind": self.kind, "facts": self.facts,
                "retained": self.retained, "retention": self.retention, "verbatim": self.verbatim,
                "ledger": self.ledger, "stale": self.stale, "recoverable": self.recoverable, "lost": self.lost,
                "superseded": self.superseded, "supersededCurrent": self.superseded_current,
                "supersededStale": self.superseded_stale, "meanTokens": self.mean_tokens,
                "costPer1000Conversations": self.cost_per_1000}


def measure(
    lengths: Sequence[int] = LENGTHS, shares: Sequence[float] = SHARES, seeds: Sequence[int] = SEEDS,
    variants: Sequence[Variant] = VARIANTS, model: str = MODEL,
    progress: Callable[[str], Any] | None = None,
) -> list[Measurement]:
    """Fit every conversation with every variant at every budget share and score its facts."""
    counter = token_counter(model)
    prices = get_model(model).prices
    found: list[Measurement] = []
    for turns in lengths:
        for seed in seeds:
            conversation = generate(turns, seed)
            messages = list(conversation.messages)
            total = counter(messages)
            positions = tuple(fact.values[-1][1] / len(messages) for fact in conversation.facts)
            for share in shares:
                budget = int(share * total)
                settings = PlanSettings(model=model, context_limit=budget, response_reserve=0)
                prepared = prepare(messages, settings)
                for variant in variants:
                    plan = plan_prepared(prepared, settings.replace(**variant.resolved(budget)), variant.strategy)
                    scores = tuple(score_plan(plan, messages, conversation.facts))
                    cost = None if prices is None else prices.cost(plan.prompt_tokens).total
                    found.append(Measurement(variant.label, share, turns, seed, budget, plan.prompt_tokens, cost,
                                             scores, positions))
                if progress is not None:
                    progress(f"{turns} turns, seed {seed}, {share:.0%}")
    return found


def rows_of(measurements: Iterable[Measurement], kinds: Sequence[str] = (*KINDS, "all")) -> list[RetentionRow]:
    """The table rows: per variant and budget share (conversations of every length pooled), per fact kind."""
    grouped: dict[tuple[str, float], list[Measurement]] = {}
    for measurement in measurements:
        grouped.setdefault((measurement.variant, measurement.share), []).append(measurement)
    rows = []
    for (label, share), group in grouped.items():
        tokens = statistics.fmean(m.prompt_tokens for m in group)
        costs = [m.cost for m in group]
        cost = None if None in costs else 1000 * statistics.fmean(costs)  # type: ignore[arg-type]
        for kind in kinds:
            scores = [s for m in group for s in m.scores if kind == "all" or s.kind == kind]
            rows.append(_row(label, share, kind, scores, tokens, cost))
    return rows


def _row(label: str, share: float, kind: str, scores: list[FactScore], tokens: float, cost: float | None) -> RetentionRow:
    statuses = [s.status for s in scores]
    superseded = [s for s in scores if s.superseded]
    return RetentionRow(
        label, share, kind, len(scores), sum(s.retained for s in scores), statuses.count(VERBATIM),
        statuses.count(LEDGER), statuses.count(STALE), statuses.count(RECOVERABLE), statuses.count(LOST),
        len(superseded), sum(s.retained for s in superseded), sum(s.status == STALE for s in superseded),
        tokens, cost,
    )


def retention_rows(
    lengths: Sequence[int] = LENGTHS, shares: Sequence[float] = SHARES, seeds: Sequence[int] = SEEDS,
    variants: Sequence[Variant] = VARIANTS, model: str = MODEL,
) -> list[RetentionRow]:
    """The protocol's table rows (module docstring): what ``python -m bench.retention`` prints."""
    return rows_of(measure(lengths, shares, seeds, variants, model))


def by_position(measurements: Iterable[Measurement], label: str, share: float, parts: int = 4) -> list[float | None]:
    """Retention of ``label`` at ``share`` by where the fact was set, in ``parts`` equal slices of the conversation."""
    kept = [0] * parts
    seen = [0] * parts
    for measurement in measurements:
        if measurement.variant != label or measurement.share != share:
            continue
        for score, position in zip(measurement.scores, measurement.positions):
            slot = min(int(position * parts), parts - 1)
            seen[slot] += 1
            kept[slot] += score.retained
    return [k / s if s else None for k, s in zip(kept, seen)]


def by_length(measurements: Iterable[Measurement], label: str, share: float) -> dict[int, float]:
    """Retention of ``label`` at ``share`` per conversation length."""
    kept: dict[int, list[int]] = {}
    for measurement in measurements:
        if measurement.variant == label and measurement.share == share:
            slot = kept.setdefault(measurement.turns, [0, 0])
            slot[0] += sum(s.retained for s in measurement.scores)
            slot[1] += len(measurement.scores)
    return {turns: k / n for turns, (k, n) in sorted(kept.items()) if n}


def markdown_table(rows: Sequence[RetentionRow]) -> str:
    """The rows as the Markdown table the bench prints: one line per variant and budget."""
    lines = ["| strategy | budget | explicit | implicit | all | superseded: current / stale | ledger or summary | "
             "recoverable | tokens sent | $ per 1,000 conversations |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    table: dict[tuple[str, float], dict[str, RetentionRow]] = {}
    for row in rows:
        table.setdefault((row.strategy, row.share), {})[row.kind] = row
    for (label, share), kinds in table.items():
        every = kinds["all"]
        cells = [f"{kinds[kind].retention:.1%}" if kind in kinds else "" for kind in KINDS]
        superseded = (f"{every.superseded_current}/{every.superseded} · {every.superseded_stale}"
                      if every.superseded else "–")
        cost = "–" if every.cost_per_1000 is None else f"${every.cost_per_1000:,.2f}"
        lines.append(f"| {label} | {share:.0%} | {' | '.join(cells)} | **{every.retention:.1%}** | {superseded} | "
                     f"{every.ledger} | {every.recoverable} | {every.mean_tokens:,.0f} | {cost} |")
    return "\n".join(lines)


__all__ = ["HEADLINE_SHARE", "HELD_OUT_SEEDS", "LENGTHS", "MODEL", "Measurement", "ProtocolConversation",
           "RetentionRow", "SEEDS", "SHARES", "VARIANTS", "Variant", "by_length", "by_position", "markdown_table",
           "measure", "retention_rows", "rows_of"]
