"""Running interceptors, then the mandatory recount and final fit.

Counting and fitting run before the interceptors. Each interceptor gets a
copy of the current provider messages and returns the new list (or ``None``
for no change). Its changes are discarded when it raises, returns something
that is not a list of messages, or removes or alters a protected block.
Blocks it adds are never protected. Afterwards the host recounts and, when
the prompt is over budget, drops blocks — those the interceptors added
first, then the oldest unprotected groups — with the reason
``late_overflow``; so an interceptor cannot add messages late to slip over
the limit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import messages as msg
from . import results as r
from .analysis import Facts, FitView
from .fitting import prompt_items
from .plugins import InterceptorInfo
from .proposals import match_items
from .results import FitResult, InsertedBlock
from .strategies.base import Proposal

_MAX_RECOUNTS = 6


class _Added:
    """Origin of a block an interceptor added."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def run_interceptors(
    view: FitView, proposal: Proposal, result: FitResult, budget: int, chain: list[InterceptorInfo]
) -> FitResult:
    """Apply ``chain`` to the fitted prompt and fit the outcome again."""
    count_message = view.counting.count_message
    items: list[tuple[dict, Any]] = prompt_items(view, proposal)
    gone: list[tuple[dict, Any, str]] = []  # (message, origin, reason) of blocks no longer sent
    diagnostics = list(result.diagnostics)

    def protected(origin: Any) -> bool:
        return isinstance(origin, int) and view.protect[origin] is not None

    def tokens_of(pairs: list[tuple[dict, Any]]) -> int:
        return view.base_tokens + sum(count_message(message) for message, _ in pairs)

    for entry in chain:
        current = [message for message, _ in items]
        given = [msg.clone(message) for message in current]
        before = tokens_of(items)
        try:
            output = entry.interceptor(given)
        except Exception as exc:  # a broken interceptor must not break the prompt
            diagnostics.append(_report(r.INTERCEPTOR_FAILED, entry, f"it raised {type(exc).__name__}: {exc}"))
            continue
        if output is None:
            diagnostics.append({**_report(r.INTERCEPTOR_APPLIED, entry, "no change"), "added": 0, "removed": 0,
                                "tokensBefore": before, "tokensAfter": before})
            continue
        if not isinstance(output, (list, tuple)) or not all(isinstance(m, dict) for m in output):
            diagnostics.append(
                _report(r.INTERCEPTOR_FAILED, entry, f"it returned {type(output).__name__}, not a list of message dicts")
            )
            continue
        matches = match_items(list(output), given, current)
        matched = set(m for m in matches if m is not None)
        lost = [j for j, (_, origin) in enumerate(items) if j not in matched and protected(origin)]
        if lost:
            diagnostics.append(
                {**_report(r.INTERCEPTOR_REJECTED, entry, f"it removed or altered {len(lost)} protected block(s)"),
                 "lost": [_label(items[j][1]) for j in lost]}
            )
            continue
        removed = [items[j] for j in range(len(items)) if j not in matched]
        gone.extend((message, origin, r.INTERCEPTED) for message, origin in removed)
        items = [items[j] if j is not None else (item, _Added(entry.name)) for item, j in zip(output, matches)]
        added = sum(1 for j in matches if j is None)
        diagnostics.append(
            {**_report(r.INTERCEPTOR_APPLIED, entry, f"{added} added, {len(removed)} removed"),
             "added": added, "removed": len(removed), "tokensBefore": before, "tokensAfter": tokens_of(items)}
        )

    total = tokens_of(items)
    if total > budget:
        items, dropped = _final_fit(items, view, budget, total, protected)
        gone.extend((message, origin, r.LATE_OVERFLOW) for message, origin in dropped)
        diagnostics.append(
            {
                "code": r.LATE_OVERFLOW_DROPPED,
                "dropped": len(dropped),
                "tokensBefore": total,
                "budget": budget,
                "message": f"After the interceptors the prompt needed {total} tokens for a budget of {budget}; "
                f"{len(dropped)} block(s) were dropped (interceptor additions first).",
            }
        )
    actual = view.counting.total([message for message, _ in items])
    attempts = 0
    while actual > budget and attempts < _MAX_RECOUNTS:
        attempts += 1
        estimate = tokens_of(items)
        items, dropped = _final_fit(items, view, budget - max(actual - estimate, 1), estimate, protected)
        gone.extend((message, origin, r.LATE_OVERFLOW) for message, origin in dropped)
        actual = view.counting.total([message for message, _ in items])
    if actual > budget:
        raise_budget(actual, budget)
    return _result(view, result, items, gone, diagnostics, actual)


def _final_fit(items, view: FitView, target: int, total: int, protected) -> tuple[list, list]:
    """Drop units until ``total`` fits ``target``: units holding an interceptor's
    addition first, then the oldest unprotected ones. Groups stay whole."""
    facts = Facts()
    facts._add([message for message, _ in items], 0, view.counting, count_now=True)
    units: list[list[int]] = []
    seen: set[int] = set()
    for j in range(len(items)):
        if j in seen:
            continue
        root = facts.group_of.get(j)
        members = facts.members[root] if root is not None else [j]
        seen.update(members)
        if not any(protected(items[m][1]) for m in members):
            units.append(members)
    units.sort(key=lambda unit: (not any(isinstance(items[m][1], _Added) for m in unit), unit[0]))
    drop: set[int] = set()
    for unit in units:
        if total <= target:
            break
        drop.update(unit)
        total -= sum(facts.tokens[m] for m in unit)  # type: ignore[misc]
    kept = [pair for j, pair in enumerate(items) if j not in drop]
    dropped = [pair for j, pair in enumerate(items) if j in drop]
    return kept, dropped


def raise_budget(actual: int, budget: int) -> None:
    from .errors import TokenBudgetExceeded

    raise TokenBudgetExceeded(actual, budget, f"After the interceptors the protected blocks count {actual} tokens, "
                              f"over the budget of {budget}.")


def _result(view: FitView, result: FitResult, items, gone, diagnostics, tokens: int) -> FitResult:
    overrides: dict[int, str] = {}
    blocks: list[InsertedBlock] = []

    def before_of(j: int) -> int:
        """Where a block not from the input stands: before the next input message."""
        for _, origin in items[j + 1 :]:
            if isinstance(origin, int):
                return origin
            if isinstance(origin, InsertedBlock):
                return origin.before
        return view.n

    for j, (message, origin) in enumerate(items):
        if isinstance(origin, InsertedBlock):
            blocks.append(origin)
        elif isinstance(origin, _Added):
            blocks.append(InsertedBlock(message, before_of(j), r.WITHIN_BUDGET, view.counting.count_message(message),
                                        (), f"interceptor {origin.name}"))
    for message, origin, reason in gone:
        if isinstance(origin, int):
            overrides[origin] = reason
        elif isinstance(origin, InsertedBlock):
            blocks.append(replace(origin, reason=reason))
        else:
            blocks.append(InsertedBlock(message, view.n, reason, view.counting.count_message(message), (),
                                        f"interceptor {origin.name}"))
    kept = [message for message, _ in items]
    kept_ids = {id(message) for message in kept}
    decisions = result.decisions.with_changes(overrides, blocks)  # type: ignore[attr-defined]
    excluded = list(result.excluded)
    if overrides:
        excluded = [view.messages[i] for i in range(view.n) if not r.is_included(decisions.reason_of(i))]
    return FitResult(
        kept=kept,
        excluded=excluded,
        truncated=[m for m in result.truncated if id(m) in kept_ids],
        tokens=tokens,
        budget=result.budget,
        decisions=decisions,
        strategy=result.strategy,
        diagnostics=diagnostics,
        protected_tokens=result.protected_tokens,
    )


def _report(code: str, entry: InterceptorInfo, what: str) -> dict:
    return {"code": code, "interceptor": entry.name, "origin": entry.origin, "message": f"Interceptor {entry.name!r}: {what}."}


def _label(origin: Any) -> Any:
    return origin if isinstance(origin, int) else "inserted"
