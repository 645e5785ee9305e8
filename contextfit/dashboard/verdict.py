"""The verdict row: one line per strategy, what a stakeholder reads first.

Prompt tokens, the share of the budget, how many blocks each strategy
dropped, summarized and compressed (one count: :func:`~contextfit.fitting.results.fate_counts`,
as the replay counts), what a request costs with its reply at the model's
catalog prices, and the strategy's description from the registry. The best
value of each column is marked (:func:`best_cells`) in the column's own
direction — fewer tokens, less of the budget, fewer blocks dropped, a cheaper
request; "summarized" and "compressed" are neither better nor worse, so never
marked — and never in the row of a strategy that drops or folds away the
user's question or a pinned block: its description says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..amounts import money
from ..pipeline.plan import PromptPlan
from ..replays.prompt_cache import BREAKPOINTS
from ..replays.answer import plan_outcomes
from ..replays.recommend import Recommendation
from ..replays.run import DECLARED, DEFAULT_FACTS
from ..replays.volume import ESTIMATED_REPLY_TOKENS, Reply
from ..fitting.registry import registry as default_registry
from ..errors import ContextfitError
from ..tokens.models import get_model
from .bands import short_band

#: Columns of the verdict table where the smallest value is the best.
RANKED = ("prompt_tokens", "used_percent", "dropped", "cost")
#: Columns shown with the numbers but never marked: folding a block into a summary or sending it
#: compressed is neither better nor worse than dropping it.
UNRANKED = ("summarized", "compressed")
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
    #: US dollars for a request with its reply at the catalog's prices (cached input as the
    #: provider bills it, when the recommendation priced it so); None when there is no price.
    cost: float | None = None
    error: str | None = None
    #: An approximate profile's point estimate of the prompt (``prompt_tokens`` is the band's upper end).
    prompt_tokens_estimate: int | None = None
    approximate: bool = False
    #: Why it is never recommended (it drops or folds away the question or a pinned block), else None.
    not_recommended: str | None = None


def one_line(text: str, width: int | None = 110) -> str:
    """The first sentence of a description, on one line of at most ``width`` characters (``None``: whole).

    >>> one_line("Drops the oldest groups. Then more detail.")
    'Drops the oldest groups.'
    >>> one_line("x" * 20, width=10)
    'xxxxxxxxx…'
    """
    flat = " ".join(str(text).split())
    end = flat.find(". ")
    if end != -1:
        flat = flat[: end + 1]
    return flat if width is None or len(flat) <= width else flat[: width - 1] + "…"


def descriptions(registry: Any = None) -> dict[str, str]:
    """Each registered strategy's first sentence, whole (plugins' too: from ``description=``, the
    object's ``description`` or its docstring): the verdict table wraps it, never cuts it."""
    registry = default_registry if registry is None else registry
    return {entry.name: one_line(entry.description, width=None) for entry in registry.entries()}


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


def verdict_row(name: str, plan: PromptPlan | ContextfitError, description: str = "", *,
                cost: float | None = None, not_recommended: str | None = None) -> VerdictRow:
    """The verdict of one strategy's plan (or the error that stopped it); ``cost``: the request's
    with its reply (default: the prompt alone at the input price), ``not_recommended``: why it
    never is (:attr:`~contextfit.replays.recommend.Outcome.refusal`)."""
    if isinstance(plan, ContextfitError):
        return VerdictRow(name, description, error=f"{plan.code}: {plan}")
    counts = plan.counts  # the replay's count too: a cleared tool result is compressed, not summarized
    return VerdictRow(
        strategy=name,
        description=description,
        prompt_tokens=plan.prompt_tokens,
        used_percent=round(100 * plan.prompt_tokens / plan.budget, 1) if plan.budget else 100.0,
        dropped=counts.dropped,
        summarized=counts.summarized,
        compressed=counts.compressed,
        cost=prompt_cost(plan) if cost is None else cost,
        prompt_tokens_estimate=plan.prompt_tokens_estimate,
        approximate=plan.tokenizer.approximate,
        not_recommended=not_recommended,
    )


def verdict_rows(plans: Mapping[str, PromptPlan | ContextfitError], registry: Any = None,
                 recommendation: Recommendation | None = None) -> list[VerdictRow]:
    """One :class:`VerdictRow` per strategy, in the plans' order. With the plans'
    ``recommendation`` (:func:`~contextfit.replays.answer.recommendation_for`), each row's cost is
    the request's with its reply, cached input priced as the provider bills it, and a strategy
    that is never recommended says why; without it, each is worked out from the plans alone
    (:func:`~contextfit.replays.answer.recommend`: the reply included, no cache read)."""
    if recommendation is None:
        outcomes = {o.label: o for o in plan_outcomes(plans)}
    else:
        outcomes = {o.label: o for o in recommendation.outcomes}
    known = descriptions(registry)
    rows = []
    for name, plan in plans.items():
        found = outcomes.get(name)
        rows.append(verdict_row(name, plan, known.get(name, ""),
                                cost=None if found is None else found.cost_request,
                                not_recommended=None if found is None else found.refusal))
    return rows


def best_cells(rows: Sequence[VerdictRow]) -> dict[str, set[str]]:
    """For each ranked column, the strategies holding its best (smallest) value; the unranked
    columns (summarized, compressed) have none.

    Ties are all best; a column where every strategy has the same value, or
    fewer than two have one, has no best: nothing stands out. A strategy that
    is never recommended holds no best cell, however small its numbers.

    >>> rows = [VerdictRow("a", "", 10, 1.0, 2, 0, 0), VerdictRow("b", "", 8, 0.8, 3, 1, 0)]
    >>> best_cells(rows)["prompt_tokens"], best_cells(rows)["dropped"], best_cells(rows)["summarized"]
    ({'b'}, {'a'}, set())
    >>> rows.append(VerdictRow("c", "", 5, 0.5, 0, 9, 0, not_recommended="drops your question"))
    >>> best_cells(rows)["prompt_tokens"], best_cells(rows)["dropped"]
    ({'b'}, {'a'})
    """
    best: dict[str, set[str]] = {column: set() for column in UNRANKED}
    crowned = [row for row in rows if row.not_recommended is None]
    for column in RANKED:
        values = {row.strategy: getattr(row, column) for row in crowned if getattr(row, column) is not None}
        if len(values) < 2 or len(set(values.values())) == 1:
            best[column] = set()
            continue
        smallest = min(values.values())
        best[column] = {name for name, value in values.items() if value == smallest}
    return best


#: The verdict table's column headers, in order.
HEADERS = {
    "strategy": "strategy",
    "prompt_tokens": "prompt tokens",
    "used_percent": "% of budget",
    "dropped": "dropped",
    "summarized": "summarized",
    "compressed": "compressed",
    "cost": "cost / request",
    "description": "what it does",
}


def table(rows: Sequence[VerdictRow]) -> list[dict[str, Any]]:
    """The verdict as display rows (headers of :data:`HEADERS`, text cells)."""
    out = []
    for row in rows:
        if row.error is not None:
            cells = {HEADERS["strategy"]: row.strategy, **{HEADERS[c]: "—" for c in HEADERS if c not in ("strategy", "description")}}
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
                HEADERS["description"]: (f"Not recommended: it {row.not_recommended}. {row.description}"
                                         if row.not_recommended else row.description),
            }
        out.append(cells)
    return out


def caption(rows: Sequence[VerdictRow], recommendation: Recommendation | None = None) -> str:
    """The line under the verdict table: what is highlighted, which strategies never are and why,
    and what "cost / request" holds.

    >>> rows = [VerdictRow("a", "", 10, 1.0, 2, 0, 0), VerdictRow("b", "", 8, 0.8, 3, 1, 0, not_recommended="drops your question")]
    >>> print(caption(rows))
    The best value of each column is highlighted (fewer tokens, less of the budget, fewer blocks dropped, a cheaper request; summarized and compressed are neither better nor worse). Never highlighted: b, which drops your question. Cost / request: the prompt at the model's catalog prices, cached input as the provider bills it, and the reply (replies: estimated at 300 tokens (the conversation holds no reply)).
    """
    refused = [f"{row.strategy}, which {row.not_recommended}" for row in rows if row.not_recommended]
    never = f" Never highlighted: {and_list(refused)}." if refused else ""
    outcomes = recommendation.outcomes if recommendation is not None else ()
    reply = outcomes[0].reply.text() if outcomes else Reply(ESTIMATED_REPLY_TOKENS, 0).text()
    return ("The best value of each column is highlighted (fewer tokens, less of the budget, fewer blocks dropped, "
            "a cheaper request; summarized and compressed are neither better nor worse)." + never +
            " Cost / request: the prompt at the model's catalog prices, cached input as the provider bills it, and "
            f"the reply ({reply}).")


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
    count = len(result.facts)
    if result.fact_rule == DECLARED:
        facts = f"{count:,} declared fact{'s' if count != 1 else ''}"
    elif result.fact_rule == DEFAULT_FACTS:
        facts = (f"{count:,} found in the conversation (pins, names, required lore, quoted tool results, "
                 "what the latest turns refer back to)")
    else:
        facts = "the default rule (entities the latest message repeats)"
    return f"prompt cache: {cache} · facts: {facts}"
