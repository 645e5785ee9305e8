"""Running interceptors on the provider messages, then the mandatory recount and final fit.

Counting and fitting run before the interceptors. Each interceptor gets a
copy of the request as the provider will receive it — the kept blocks
rendered by the template (OpenAI messages; for Anthropic the content-part
messages, with the ``system`` text passed as a leading
``{"role": "system", "content": ...}`` message) — and returns the new list
(or ``None`` for no change).

What it returns is mapped back to blocks: a provider message returned
unchanged stands for the blocks it was rendered from; one that is missing or
changed takes those blocks out (reason ``intercepted``); one that is new (or
changed) becomes a block the interceptor added, which is never protected.
Its changes are discarded — with ``INTERCEPTOR_FAILED`` when it raises or
returns something that is not a list of message dicts, and with
``INTERCEPTOR_REJECTED`` when it removes or alters a protected block or
would send half a tool group (a result without its call, a call without
its results, where the request had them whole or not at all). The host
never completes or cuts a group on an interceptor's behalf.

Afterwards the host recounts with the caller's counter and, when the prompt
is over budget, drops whole groups of blocks — those the interceptors added
first, then the oldest unprotected ones — with the reason ``late_overflow``;
so an interceptor cannot add messages late to slip over the limit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..inputs.messages import clone, link_states, role_problem
from . import results
from .analysis import ChatAnalysis, FitView
from .registry import InterceptorInfo
from .proposals import match_items, prompt_items
from .results import FitResult, InsertedBlock
from .strategies.base import Proposal
from ..tokens.sent import trace

_MAX_RECOUNTS = 6


class _Added:
    """Origin of a block an interceptor added."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def provider_view(blocks: list[dict], template: str) -> tuple[list[dict], list[tuple[int, ...]], set[int]]:
    """What an interceptor is shown for ``blocks``: the provider messages (for
    Anthropic the system text first, as a system message), for each the
    positions of the blocks it was rendered from, and the positions of the
    blocks folded into the system text (they keep their place among the
    blocks whatever the interceptor does with the order of the messages).

    >>> provider_view([{"role": "system", "content": "Be brief.", "meta": {"id": "s"}},
    ...                {"role": "user", "content": "Hi", "pinned": True}], "anthropic")
    ([{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': [{'type': 'text', 'text': 'Hi'}]}], [(0,), (1,)], {0})
    """
    traced = trace(blocks, template)
    messages, sources = list(traced.prompt.messages), list(traced.sources)
    if traced.prompt.system is not None:
        messages.insert(0, {"role": "system", "content": traced.prompt.system})
        sources.insert(0, traced.system_sources)
    return messages, sources, set(traced.system_sources)


def _split_links(before: list[dict], after: list[dict]) -> list[str]:
    """Link ids ``after`` sends half of, where ``before`` had them whole or not at all."""
    old = link_states(before)
    return sorted(link for link, state in link_states(after).items() if state != (True, True) and old.get(link) != state)


def run_interceptors(
    view: FitView, proposal: Proposal, result: FitResult, budget: int, chain: list[InterceptorInfo], template: str
) -> FitResult:
    """Apply ``chain`` to the fitted request and fit the outcome again."""
    # Each item: (block, origin, input position or None); origin is an input
    # index, an InsertedBlock (the strategy's) or an _Added (an interceptor's).
    items: list[tuple[dict, Any]] = prompt_items(view, proposal)
    gone: list[tuple[dict, Any, str]] = []  # (block, origin, reason) of blocks no longer sent
    diagnostics = list(result.diagnostics)

    def protected(origin: Any) -> bool:
        return isinstance(origin, int) and view.protect[origin] is not None

    def tokens_of(pairs: list[tuple[dict, Any]]) -> int:
        return view.counting.total([block for block, _ in pairs])

    for entry in chain:
        sent, sources, floating = provider_view([block for block, _ in items], template)
        given = [clone(message) for message in sent]
        before = tokens_of(items)
        try:
            output = entry.interceptor(given)
        except Exception as exc:  # a broken interceptor must not break the prompt
            diagnostics.append(_report(results.INTERCEPTOR_FAILED, entry, f"it raised {type(exc).__name__}: {exc}"))
            continue
        if output is None:
            diagnostics.append({**_report(results.INTERCEPTOR_APPLIED, entry, "no change"), "added": 0, "removed": 0,
                                "tokensBefore": before, "tokensAfter": before})
            continue
        if not isinstance(output, (list, tuple)) or not all(isinstance(m, dict) for m in output):
            diagnostics.append(
                _report(results.INTERCEPTOR_FAILED, entry, f"it returned {type(output).__name__}, not a list of message dicts")
            )
            continue
        problem = next(filter(None, map(role_problem, output)), None)
        if problem is not None:  # never sent: the caller's messages pass the same check
            diagnostics.append(_report(results.INTERCEPTOR_FAILED, entry, f"it returned a message that cannot be sent: {problem}"))
            continue
        output = [clone(message) for message in output]  # ours now: the interceptor may keep references
        matches = match_items(output, [], sent)  # by equality: a copy edited in place is a change
        matched = {j for j in matches if j is not None}
        removed = [j for j in range(len(sent)) if j not in matched]
        touched = sorted({k for j in removed for k in sources[j]})
        lost = [k for k in touched if protected(items[k][1])]
        if lost:
            diagnostics.append(
                {**_report(results.INTERCEPTOR_REJECTED, entry, f"it removed or altered {len(lost)} protected block(s)"),
                 "lost": [_label(items[k][1]) for k in lost], "ids": [_label(items[k][1], view) for k in lost]}
            )
            continue
        split = _split_links(sent, output)
        if split:
            diagnostics.append(
                {**_report(results.INTERCEPTOR_REJECTED, entry, f"it would send half of the tool group(s) {', '.join(split)}"
                           " (a call without its results, or a result without its call)"), "split": split}
            )
            continue
        gone.extend((items[k][0], items[k][1], results.INTERCEPTED) for k in touched)
        items = _rebuild(items, output, matches, sources, set(touched), floating, entry.name)
        added = sum(1 for j in matches if j is None)
        diagnostics.append(
            {**_report(results.INTERCEPTOR_APPLIED, entry, f"{added} added, {len(removed)} removed"),
             "added": added, "removed": len(removed), "tokensBefore": before, "tokensAfter": tokens_of(items)}
        )

    return _final_fit(view, result, items, gone, diagnostics, budget, protected)


def _rebuild(items, output, matches, sources, touched: set[int], floating: set[int], name: str) -> list[tuple[dict, Any]]:
    """The blocks in the order of the interceptor's ``output``: an unchanged
    message brings back the blocks it was rendered from; a new one, or one
    left over from a block that lost another of its messages, is an addition.
    Blocks in the Anthropic system text, and blocks that render to nothing
    (an empty Anthropic turn), stay before the block that followed them."""
    rebuilt: list[tuple[dict, Any, int | None]] = []
    emitted: set[int] = set()
    for message, j in zip(output, matches):
        if j is None or any(k in touched for k in sources[j]):
            rebuilt.append((message, _Added(name), None))
            continue
        for k in sources[j]:
            if k not in emitted and k not in floating:
                emitted.add(k)
                rebuilt.append((*items[k], k))
    for k in range(len(items)):
        if k not in emitted and k not in touched:
            at = next((p for p, (_, _, at_k) in enumerate(rebuilt) if at_k is not None and at_k > k), len(rebuilt))
            rebuilt.insert(at, (*items[k], k))
    return [(block, origin) for block, origin, _ in rebuilt]


def _final_fit(view: FitView, result: FitResult, items, gone, diagnostics, budget: int, protected) -> FitResult:
    """Recount with the caller's counter; over budget, drop whole groups — the
    interceptors' additions first, then the oldest unprotected — until it fits."""
    count_message = view.counting.count_message
    actual = view.counting.total([block for block, _ in items])
    attempts = 0
    while actual > budget and attempts <= _MAX_RECOUNTS:
        estimate = view.base_tokens + sum(count_message(block) for block, _ in items)
        # A counter that is not the sum of its parts: aim lower by the difference
        # (from the first attempt when the parts already add up to the budget or less).
        target = budget if attempts == 0 and estimate >= actual else budget - max(actual - estimate, 1)
        items, dropped = _drop_units(items, view, target, estimate, protected)
        if not dropped:
            break
        gone.extend((block, origin, results.LATE_OVERFLOW) for block, origin in dropped)
        if attempts == 0:
            diagnostics.append(
                {
                    "code": results.LATE_OVERFLOW_DROPPED,
                    "dropped": len(dropped),
                    "tokensBefore": actual,
                    "budget": budget,
                    "message": f"After the interceptors the prompt needed {actual} tokens for a budget of {budget}; "
                    f"{len(dropped)} block(s) were dropped (interceptor additions first).",
                }
            )
        else:
            diagnostics[-1]["dropped"] += len(dropped)
        attempts += 1
        actual = view.counting.total([block for block, _ in items])
    if actual > budget:
        what = "the protected blocks count" if all(protected(origin) for _, origin in items) else "the prompt still counts"
        raise view.refusal(actual, budget, f"After the interceptors {what} {actual} tokens, over the budget of {budget}.")
    return _result(view, result, items, gone, diagnostics, actual)


def _drop_units(items, view: FitView, target: int, total: int, protected) -> tuple[list, list]:
    """Drop units until ``total`` fits ``target``: units holding an interceptor's
    addition first, then the oldest ones.

    A unit is a set of unprotected blocks linked by tool ids. Protected blocks
    do not join units: every input block linked to a protected one is
    protected too, so only additions can link to them, and dropping those
    gives the protected group back exactly as the input had it.
    """
    free = [j for j in range(len(items)) if not protected(items[j][1])]
    analysis = ChatAnalysis()
    analysis._add([items[j][0] for j in free], 0, view.counting, count_now=True)
    units: list[list[int]] = []
    for position in range(len(free)):
        root = analysis.group_of.get(position)
        if root is None:
            units.append([position])
        elif root == position:
            units.append(analysis.members[root])
    units.sort(key=lambda unit: (not any(isinstance(items[free[p]][1], _Added) for p in unit), unit[0]))
    drop: set[int] = set()
    for unit in units:
        if total <= target:
            break
        drop.update(free[p] for p in unit)
        total -= sum(analysis.tokens[p] for p in unit)  # type: ignore[misc]
    kept = [pair for j, pair in enumerate(items) if j not in drop]
    dropped = [pair for j, pair in enumerate(items) if j in drop]
    return kept, dropped


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
            blocks.append(InsertedBlock(message, before_of(j), results.WITHIN_BUDGET, view.counting.count_message(message),
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
        excluded = [view.messages[i] for i in range(view.n) if not results.is_included(decisions.reason_of(i))]
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


def _label(origin: Any, view: FitView | None = None) -> Any:
    """An input block's index (or, given ``view``, its id); ``"inserted"`` for others."""
    if not isinstance(origin, int):
        return "inserted"
    return origin if view is None else view.id_of(origin)
