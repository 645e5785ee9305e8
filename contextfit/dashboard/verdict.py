"""The verdict row: one line per strategy, what a stakeholder reads first.

Prompt tokens, the share of the budget, how many blocks each strategy
dropped, summarized and compressed, what the prompt costs at the model's
catalog price, and the strategy's description from the registry. The best
value of each column is marked (:func:`best_cells`) — the smallest: fewer
tokens, less of the budget, fewer blocks lost or rewritten, a cheaper
request.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..fitting import results as reasons
from ..pipeline.plan import PromptPlan
from ..replays.prompt_cache import BREAKPOINTS
from ..replays.run import DECLARED
from ..fitting.registry import registry as default_registry
from ..errors import ContextfitError
from ..tokens.models import get_model
from .bands import short_band

#: Columns of the verdict table where the smallest value is the best.
RANKED = ("prompt_tokens", "used_percent", "dropped", "summarized", "compressed", "cost")
#: Shown for a model the catalog has no prices for.
NO_PRICE = "no catalog price"
#: How the best cell of a column is marked (a pale green that keeps text readable).
BEST_STYLE = "background-color: #D8F0E6; font-weight: 600"


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """One strategy's outcome; the numbers are ``None`` when it could not fit (``error``)."""

    strategy: str
    description: str
    prompt_tokens: int | None = None
    used_percent: float | None = None
    dropped: int | None = None
    summarized: int | None = None
    compressed: int | None = None
    #: US dollars for the prompt at the catalog's input price; None when there is no price.
    cost: float | None = None
    error: str | None = None
    #: An approximate profile's point estimate of the prompt (``prompt_tokens`` is the band's upper end).
    prompt_tokens_estimate: int | None = None
    approximate: bool = False


def one_line(text: str, width: int = 110) -> str:
    """The first sentence of a description, on one line of at most ``width`` characters.

    >>> one_line("Drops the oldest groups. Then more detail.")
    'Drops the oldest groups.'
    >>> one_line("x" * 20, width=10)
    'xxxxxxxxx…'
    """
    flat = " ".join(str(text).split())
    end = flat.find(". ")
    if end != -1:
        flat = flat[: end + 1]
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def descriptions(registry: Any = None) -> dict[str, str]:
    """Each registered strategy's one-line description (plugins' too: from
    ``description=``, the object's ``description`` or its docstring)."""
    registry = default_registry if registry is None else registry
    return {entry.name: one_line(entry.description) for entry in registry.entries()}


def prompt_cost(plan: PromptPlan) -> float | None:
    """What the plan's prompt costs in US dollars at the catalog's input price, or None without one.

    >>> from contextfit import plan_prompt
    >>> plan = plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o")
    >>> prompt_cost(plan) == plan.prompt_tokens * 2.50 / 1_000_000
    True
    """
    try:
        prices = get_model(plan.model).prices
    except ContextfitError:
        return None
    return None if prices is None else prices.cost(plan.prompt_tokens).total


def verdict_row(name: str, plan: PromptPlan | ContextfitError, description: str = "") -> VerdictRow:
    """The verdict of one strategy's plan (or the error that stopped it)."""
    if isinstance(plan, ContextfitError):
        return VerdictRow(name, description, error=f"{plan.code}: {plan}")
    counts = {reasons.SUMMARIZED: 0, reasons.COMPRESSED: 0}
    dropped = 0
    for block in plan.blocks:
        if block.reason in counts:
            counts[block.reason] += 1
        elif not block.included:
            dropped += 1
    return VerdictRow(
        strategy=name,
        description=description,
        prompt_tokens=plan.prompt_tokens,
        used_percent=round(100 * plan.prompt_tokens / plan.budget, 1) if plan.budget else 100.0,
        dropped=dropped,
        summarized=counts[reasons.SUMMARIZED],
        compressed=counts[reasons.COMPRESSED],
        cost=prompt_cost(plan),
        prompt_tokens_estimate=plan.prompt_tokens_estimate,
        approximate=plan.tokenizer.approximate,
    )


def verdict_rows(plans: Mapping[str, PromptPlan | ContextfitError], registry: Any = None) -> list[VerdictRow]:
    """One :class:`VerdictRow` per strategy, in the plans' order."""
    known = descriptions(registry)
    return [verdict_row(name, plan, known.get(name, "")) for name, plan in plans.items()]


def best_cells(rows: Sequence[VerdictRow]) -> dict[str, set[str]]:
    """For each ranked column, the strategies holding its best (smallest) value.

    Ties are all best; a column where every strategy has the same value, or
    fewer than two have one, has no best: nothing stands out.

    >>> rows = [VerdictRow("a", "", 10, 1.0, 2, 0, 0), VerdictRow("b", "", 8, 0.8, 3, 0, 0)]
    >>> best_cells(rows)["prompt_tokens"], best_cells(rows)["dropped"], best_cells(rows)["summarized"]
    ({'b'}, {'a'}, set())
    """
    best: dict[str, set[str]] = {}
    for column in RANKED:
        values = {row.strategy: getattr(row, column) for row in rows if getattr(row, column) is not None}
        if len(values) < 2 or len(set(values.values())) == 1:
            best[column] = set()
            continue
        smallest = min(values.values())
        best[column] = {name for name, value in values.items() if value == smallest}
    return best


def money(dollars: float | None, missing: str = NO_PRICE) -> str:
    """Dollars for a table cell: cents from a dollar, else four significant figures,
    written out (a short prompt on a cheap model read "$1.2e-06") and kept to four
    (a column read "$0.0456" under "$0.04579"); ``missing`` for no price.

    >>> money(None), money(0.00041), money(2.5), money(1.2e-06), money(0.0456), money(0.0123456), money(0.0)
    ('no catalog price', '$0.0004100', '$2.50', '$0.000001200', '$0.04560', '$0.01235', '$0')
    >>> money(0.99996), money(0.0099996), money(None, "—")
    ('$1.00', '$0.01000', '—')
    """
    if dollars is None:
        return missing
    if dollars <= 0:
        return "$0"
    rounded = float(f"{dollars:.4g}")  # 0.99996 is "$1.00", 0.0099996 "$0.01000"
    if rounded >= 1:
        return f"${dollars:,.2f}"
    return f"${rounded:.{3 - math.floor(math.log10(rounded))}f}"


#: The verdict table's column headers, in order.
HEADERS = {
    "strategy": "strategy",
    "prompt_tokens": "prompt tokens",
    "used_percent": "% of budget",
    "dropped": "dropped",
    "summarized": "summarized",
    "compressed": "compressed",
    "cost": "prompt cost",
    "description": "what it does",
}


def table(rows: Sequence[VerdictRow]) -> list[dict[str, Any]]:
    """The verdict as display rows (headers of :data:`HEADERS`, text cells)."""
    out = []
    for row in rows:
        if row.error is not None:
            cells = {HEADERS["strategy"]: row.strategy, **{HEADERS[c]: "—" for c in RANKED}}
            cells[HEADERS["description"]] = row.error
        else:
            cells = {
                HEADERS["strategy"]: row.strategy,
                HEADERS["prompt_tokens"]: short_band(row.prompt_tokens, row.prompt_tokens_estimate, row.approximate),
                HEADERS["used_percent"]: f"{row.used_percent}%",
                HEADERS["dropped"]: str(row.dropped),
                HEADERS["summarized"]: str(row.summarized),
                HEADERS["compressed"]: str(row.compressed),
                HEADERS["cost"]: money(row.cost),
                HEADERS["description"]: row.description,
            }
        out.append(cells)
    return out


def styles(rows: Sequence[VerdictRow]) -> list[dict[str, str]]:
    """CSS per cell of :func:`table` (same rows, same headers): the best values marked."""
    best = best_cells(rows)
    return [
        {HEADERS[c]: (BEST_STYLE if row.strategy in best.get(c, set()) else "") for c in HEADERS}
        for row in rows
    ]


def replay_verdict(result: Any, more: str) -> str:
    """One sentence naming a replay's winners, or saying why there is none: every
    strategy scored the same, nothing could be compared (no prices, no fact in
    force, every turn failed), or only one strategy was replayed (``more`` says
    how to add others: the page's sidebar, the CLI's ``--strategy all``).

    >>> from contextfit.replays.run import replay
    >>> chat = [{"role": "user", "content": "Hi"}]
    >>> replay_verdict(replay(chat, model="gpt-4o", strategies=["truncate"]), "pass --strategy all")
    'Only truncate was replayed: pass --strategy all to compare it with others.'
    >>> replay_verdict(replay(chat, model="gpt-4o", strategies=["truncate", "manual"]), "")
    'Cheapest: all equal ($0.00002000) · best retention: no fact in force · best cache: all equal (0.0%)'

    Strategies tied for the best are all named, with the value they share:
    "Cheapest: truncate, manual and vector-recall ($0.006875)".
    """
    if len(result.totals) == 1:
        return f"Only {next(iter(result.totals))} was replayed: {more} to compare it with others."
    winners = result.winners()
    totals = [t for t in result.totals.values() if t.failed_turns < t.turns]
    if not totals:
        return "No strategy could fit any turn, so none can be compared: the notes say why."
    of = {t.strategy: t for t in totals}
    costs = [t.total_cost for t in totals if t.total_cost is not None]
    kept_facts = [t.retention for t in totals if t.retention is not None]
    cached = [t.cache_hit_rate for t in totals]

    def said(names: list[str], value: Callable[[Any], Any], values: list[Any], shown: Callable[[Any], str],
             missing: str) -> str:
        if names:
            return f"{and_list(names)} ({shown(value(of[names[0]]))})"
        if not values:
            return missing
        return f"all equal ({shown(values[0])})"

    percent, failed = "{:.1%}".format, "—"  # failed: every turn of every strategy
    cheapest = said(winners["cheapest"], lambda t: t.total_cost, costs, money, "no prices" if totals else failed)
    # a fact is in force from its first mention on (the same turns under every strategy): a share over a
    # few turns read as if it held at all of them
    rows = next(iter(result.turns.values()), [])
    in_force = sum(1 for row in rows if row.facts)
    held = "the one turn" if in_force == 1 else f"the {in_force:,} turns"  # "at the 1 of 12 turns" read oddly
    over = f", at {held} of {len(rows):,} with a fact in force" if 0 < in_force < len(rows) else ""
    retention = said(winners["bestRetention"], lambda t: t.retention, kept_facts,
                     lambda value: percent(value) + over, "no fact in force" if totals else failed)
    cache = said(winners["bestCache"], lambda t: t.cache_hit_rate, cached, percent, failed)
    return f"Cheapest: {cheapest} · best retention: {retention} · best cache: {cache}"


def and_list(names: Sequence[str]) -> str:
    """Names joined as a sentence says them.

    >>> and_list(["a"]), and_list(["a", "b"]), and_list(["a", "b", "c"])
    ('a', 'a and b', 'a, b and c')
    """
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def rules_text(result: Any) -> str:
    """The replay's cache and fact rules in words, for the caption under the verdict (the API's ids,
    "automatic-prefix" and "default-entities", said nothing to a reader).

    >>> from contextfit.replays.run import replay
    >>> rules_text(replay([{"role": "user", "content": "Hi"}], model="gpt-4o", strategies=["truncate"]))
    'prompt cache: automatic prefix caching · facts: the default rule (entities the latest message repeats)'
    """
    cache = "cache breakpoints" if result.cache_rule == BREAKPOINTS else "automatic prefix caching"
    if result.fact_rule == DECLARED:
        count = len(result.facts)
        facts = f"{count:,} declared fact{'s' if count != 1 else ''}"
    else:
        facts = "the default rule (entities the latest message repeats)"
    return f"prompt cache: {cache} · facts: {facts}"
