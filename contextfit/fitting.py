"""The host: :func:`shift_context` runs a strategy and never trusts it.

Order of work for one fit:

1. analyse the messages (cached per counter; see analysis.py) and count them;
2. raise ``TOKEN_BUDGET_EXCEEDED`` when the protected blocks alone do not fit;
3. ask the strategy for a proposal (plugins get copies of the messages);
4. enforce: restore lost protected blocks and fall back to ``truncate``
   (``STRATEGY_REJECTED``), exclude half-kept groups whole
   (``GROUP_SPLIT_PREVENTED``), recount and cut to the budget
   (``BUDGET_ENFORCED``);
5. recount the kept messages with the caller's own ``count_tokens``;
6. run the interceptors, then the mandatory recount and final fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from itertools import compress, repeat
from operator import is_
from typing import Any

from . import messages as msg
from . import plugins
from . import results as r
from .analysis import FitView, build_view
from .counting import CountTokens, counting_for
from .errors import InvalidBudget, TokenBudgetExceeded
from .proposals import Unusable, check_proposal, proposal_from_output
from .results import Decisions, FitResult, InsertedBlock
from .strategies.base import BuiltinStrategy, Proposal
from .strategies.truncate import Truncate

_FALLBACK = Truncate()
_MAX_RECOUNTS = 6


def shift_context(
    messages: Sequence[dict],
    count_tokens: CountTokens,
    budget: int,
    strategy: str | Any = "truncate",
    *,
    interceptors: Sequence[Callable[[list[dict]], list[dict] | None]] | None = None,
    count_excluded: bool = True,
    **options: Any,
) -> FitResult:
    """Fit ``messages`` into ``budget`` tokens with a registered strategy.

    ``count_tokens(messages) -> int`` counts a list as it would be sent
    (:func:`contextfit.token_counter` makes one for a model). The result's
    ``kept`` satisfies ``count_tokens(kept) <= budget``; protected blocks
    are never dropped or altered; a tool call and its results are kept or
    dropped together. ``interceptors`` defaults to the registered ones (pass
    ``()`` for none). With ``count_excluded=False`` blocks the fit never
    needed are not counted (their decision ``tokens`` is ``None``), which
    makes ``truncate`` on a long chat much faster.

    >>> import contextfit
    >>> chat = [{"role": "system", "content": "You are terse."},
    ...         {"role": "user", "content": "Tell me a long story. " * 50},
    ...         {"role": "assistant", "content": "Once upon a time. " * 50},
    ...         {"role": "user", "content": "Shorter please."}]
    >>> result = contextfit.shift_context(chat, contextfit.token_counter("gpt-4o"), budget=40)
    >>> [d.reason for d in result.decisions]
    ['system', 'over_budget', 'over_budget', 'current_input']
    """
    budget = _check_budget(budget)
    plugins.load_plugins()
    name, impl = _resolve(strategy)
    counting = counting_for(count_tokens)
    view = build_view(messages, counting, count_all=count_excluded)
    protected_tokens = view.protected_tokens()
    if protected_tokens > budget:
        raise TokenBudgetExceeded(protected_tokens, budget)
    diagnostics = _orphans(view)
    proposal, used = _propose(view, impl, name, budget, options, count_tokens, diagnostics)
    restored, total = _enforce(view, proposal, budget, used, diagnostics, trusted=isinstance(impl, BuiltinStrategy))
    if restored:
        used = _FALLBACK.name
    result = _verify(view, proposal, budget, used, diagnostics, protected_tokens, restored, total)
    chain = plugins.interceptors.entries() if interceptors is None else _as_entries(interceptors)
    if chain:
        from .intercepting import run_interceptors

        result = run_interceptors(view, proposal, result, budget, chain)
    return result


def _check_budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget != budget:
        raise InvalidBudget(f"budget must be a whole number of tokens, got {budget!r}.")
    if isinstance(budget, float):
        if not budget.is_integer():
            raise InvalidBudget(f"budget must be a whole number of tokens, got {budget!r}.")
        budget = int(budget)
    if budget < 0:
        raise InvalidBudget(f"budget must not be negative, got {budget}. It is context_limit - response_reserve.")
    return budget


def _resolve(strategy: Any) -> tuple[str, Any]:
    if isinstance(strategy, str):
        return strategy, plugins.registry.get(strategy)
    if strategy is None:
        return _FALLBACK.name, _FALLBACK
    name = getattr(strategy, "name", None) or getattr(strategy, "__name__", None) or type(strategy).__name__
    return str(name), strategy


def _as_entries(chain: Sequence[Any]) -> list[plugins.InterceptorInfo]:
    entries = []
    for item in chain:
        if isinstance(item, plugins.InterceptorInfo):
            entries.append(item)
        else:
            label = getattr(item, "__qualname__", None) or type(item).__name__
            entries.append(plugins.InterceptorInfo(str(label), item, "argument", ""))
    return entries


def _orphans(view: FitView) -> list[dict]:
    diagnostics = []
    for members in view.orphan_groups():
        diagnostics.append(
            {
                "code": r.ORPHAN_TOOL_RESULT,
                "indices": list(members),
                "message": "Tool result(s) whose call is not in the conversation; kept or dropped as their own group.",
            }
        )
    return diagnostics


def _propose(
    view: FitView, impl: Any, name: str, budget: int, options: dict, count_tokens: Any, diagnostics: list[dict]
) -> tuple[Proposal, str]:
    """The strategy's proposal, or truncate's when the strategy's is unusable."""
    trusted = isinstance(impl, BuiltinStrategy)
    try:
        if callable(getattr(impl, "propose", None)):
            proposal = impl.propose(view, budget, **options)
            if not trusted:
                check_proposal(proposal, view.n)
        else:
            given = [msg.clone(m) for m in view.messages]
            output = impl(given, count_tokens, budget, **options)
            proposal = proposal_from_output(output, view, given)
        return proposal, name
    except (Unusable, Exception) as exc:
        if trusted and not isinstance(exc, Unusable):
            raise
        why = str(exc) if isinstance(exc, Unusable) else f"it raised {type(exc).__name__}: {exc}"
        diagnostics.append(
            {
                "code": r.STRATEGY_REJECTED,
                "strategy": name,
                "lost": [],
                "message": f"Strategy {name!r} was rejected because {why}; truncate was used instead.",
            }
        )
        return _FALLBACK.propose(view, budget), _FALLBACK.name


def _enforce(
    view: FitView, proposal: Proposal, budget: int, name: str, diagnostics: list[dict], *, trusted: bool = False
) -> tuple[list[int], int]:
    """Make the proposal safe in place; returns the protected indices restored
    and the proposal's total tokens.

    The built-ins keep and drop whole units by construction (the property
    tests hold them to it), so only plugin proposals are checked for split
    groups; protection and the budget are checked for every proposal.
    """
    reasons = proposal.reasons
    lost = [index for index in view.protected if reasons[index] is not None]
    if lost:
        diagnostics.append(
            {
                "code": r.STRATEGY_REJECTED,
                "strategy": name,
                "lost": lost,
                "message": f"Strategy {name!r} removed or altered {len(lost)} protected block(s); they were "
                f"restored and truncate was used instead.",
            }
        )
        fallback = _FALLBACK.propose(view, budget)
        proposal.reasons, proposal.inserted = fallback.reasons, []
        proposal.diagnostics = []
        reasons = proposal.reasons
    diagnostics.extend(proposal.diagnostics)
    split = []
    for members in () if trusted and not lost else view.facts.members.values():
        if len(members) > 1:
            kept = [m for m in members if reasons[m] is None]
            if kept and len(kept) < len(members):
                why = next(reasons[m] for m in members if reasons[m] is not None)
                for member in kept:
                    reasons[member] = why
                split.append(list(members))
    if split:
        diagnostics.append(
            {
                "code": r.GROUP_SPLIT_PREVENTED,
                "groups": split,
                "message": "A tool call and its results were partly kept; the kept part was excluded too.",
            }
        )
    total = _total(view, proposal)
    if total > budget:
        proposed = total
        _reduce(view, proposal, budget, total)
        total = _total(view, proposal)  # rare: recount rather than trust the running sum
        diagnostics.append(
            {
                "code": r.BUDGET_ENFORCED,
                "strategy": name,
                "proposed": proposed,
                "budget": budget,
                "message": f"The proposal needed {proposed} tokens for a budget of {budget}; the oldest "
                f"unprotected blocks were dropped until it fit.",
            }
        )
    return lost, total


def _kept_mask(reasons: list[str | None]) -> Iterator[bool]:
    return map(is_, reasons, repeat(None))


def _total(view: FitView, proposal: Proposal) -> int:
    """Overhead plus every kept message and inserted block (kept messages are
    always counted: strategies count what they keep)."""
    inserted = sum(block.tokens or 0 for block in proposal.inserted)
    facts = view.facts
    if facts.counted_total is not None:  # all counted: subtract the excluded (reasons are truthy exactly there)
        return view.base_tokens + inserted + facts.counted_total - sum(compress(facts.tokens, proposal.reasons))  # type: ignore[arg-type]
    return view.base_tokens + inserted + sum(compress(facts.tokens, _kept_mask(proposal.reasons)))  # type: ignore[arg-type]


def _reduce(view: FitView, proposal: Proposal, target: int, total: int) -> int:
    """Drop the oldest unprotected kept units (inserted blocks included) until
    ``total`` fits ``target``; returns the new total."""
    reasons = proposal.reasons
    units: list[tuple[float, Any]] = [
        (float(unit[0]), unit) for unit in view.units_oldest_first() if reasons[unit[0]] is None
    ]
    units += [(block.before - 0.5, block) for block in proposal.inserted]
    units.sort(key=lambda pair: pair[0])
    count = view.count
    for _, unit in units:
        if total <= target:
            break
        if isinstance(unit, InsertedBlock):
            proposal.inserted.remove(unit)
            total -= unit.tokens
        else:
            for index in unit:
                reasons[index] = r.OVER_BUDGET
                total -= count(index)
    return total


def _verify(
    view: FitView,
    proposal: Proposal,
    budget: int,
    strategy: str,
    diagnostics: list[dict],
    protected_tokens: int,
    restored: list[int],
    estimate: int,
) -> FitResult:
    """Assemble the result (``estimate``: its tokens by per-message counts) and
    check it with the caller's own counter."""
    result = _assemble(view, proposal, budget, strategy, diagnostics, protected_tokens, restored, estimate)
    # contextfit's own counters are sums of per-message counts by contract, and
    # every kept message was counted by that counter: the sum is the recount.
    actual = estimate if view.counting.additive else view.counting.total(result.kept)
    attempts = 0
    while actual > budget and attempts < _MAX_RECOUNTS:
        # The counter is not the sum of its parts: aim lower by the difference.
        attempts += 1
        target = budget - max(actual - estimate, 1)
        if _reduce(view, proposal, target, estimate) > target:
            break
        estimate = _total(view, proposal)
        result = _assemble(view, proposal, budget, strategy, diagnostics, protected_tokens, restored, estimate)
        actual = view.counting.total(result.kept)
    if actual > budget:
        raise TokenBudgetExceeded(
            actual,
            budget,
            f"count_tokens counts the protected blocks as {actual} tokens, over the budget of {budget}, "
            f"although their parts add up to {protected_tokens}.",
        )
    if attempts:
        diagnostics.append(
            {
                "code": r.COUNT_ADJUSTED,
                "message": "count_tokens is not the sum of per-message counts; more was dropped to fit its own total.",
            }
        )
    if actual != result.tokens:
        result = replace(result, tokens=actual)
    return result


def _assemble(
    view: FitView,
    proposal: Proposal,
    budget: int,
    strategy: str,
    diagnostics: list[dict],
    protected_tokens: int,
    restored: list[int],
    tokens: int,
) -> FitResult:
    messages, reasons = view.messages, proposal.reasons
    kept = list(compress(messages, _kept_mask(reasons)))
    for position, block in _insertions(reasons, proposal.inserted):
        kept.insert(position, block.message)
    excluded = list(compress(messages, reasons))  # an exclusion reason is a non-empty string
    facts = view.facts
    decisions = Decisions(
        messages,
        list(reasons),
        view.protect,
        dict.fromkeys(restored, r.RESTORED),
        list(facts.tokens),
        facts.roles,
        facts.kinds,
        facts.ids,
        facts.group_of,
        proposal.inserted,
    )
    return FitResult(
        kept=kept,
        excluded=excluded,
        truncated=[block.message for block in sorted(proposal.inserted, key=lambda block: block.before)],
        tokens=tokens,
        budget=budget,
        decisions=decisions,
        strategy=strategy,
        diagnostics=list(diagnostics),
        protected_tokens=protected_tokens,
    )


def _insertions(reasons: list[str | None], inserted: list[InsertedBlock]) -> list[tuple[int, InsertedBlock]]:
    """Where each inserted block goes among the kept messages, in order: before
    its input position, after the kept messages in front of it and the blocks
    inserted before it."""
    ordered = sorted(inserted, key=lambda block: block.before)
    return [(reasons[: block.before].count(None) + k, block) for k, block in enumerate(ordered)]


def prompt_items(view: FitView, proposal: Proposal) -> list[tuple[dict, int | InsertedBlock]]:
    """The kept blocks in prompt order, each with where it came from: its
    input index, or the :class:`InsertedBlock` it is."""
    messages, reasons = view.messages, proposal.reasons
    items: list[tuple[dict, int | InsertedBlock]] = [
        (messages[index], index) for index in compress(range(view.n), _kept_mask(reasons))
    ]
    for position, block in _insertions(reasons, proposal.inserted):
        items.insert(position, (block.message, block))
    return items
