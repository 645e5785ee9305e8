"""The host: :func:`shift_context` runs a strategy and never trusts a plugin.

Trust is decided by origin: only the package's own built-in strategy objects
(the ones it registered) are trusted to keep whole groups and not to raise;
anything else — a plugin, a subclass of a built-in, a fresh ``Truncate()``
passed as ``strategy=`` — is checked in full.

Order of work for one fit:

1. analyse the messages (cached per counter; see analysis.py) and count them;
2. raise ``TOKEN_BUDGET_EXCEEDED`` when the protected blocks alone do not fit;
3. ask the strategy for a proposal (plugins get copies of the messages, or
   a detached copy of the view, never the caller's dicts);
4. enforce: restore protected blocks a plugin removed or altered and fall
   back to ``truncate`` (``STRATEGY_REJECTED``; a plugin that raised or
   answered nonsense falls back too), exclude half-kept groups whole
   (``GROUP_SPLIT_PREVENTED``), recount and cut to the budget
   (``BUDGET_ENFORCED``);
5. recount the kept messages with the caller's own ``count_tokens`` (skipped
   only for contextfit's own additive counter types: their sum is the count);
6. run the interceptors on the provider messages, then the mandatory
   recount and final fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import compress
from typing import Any

from ..inputs.messages import clone, link_ids, link_states
from . import registry as plugins
from . import result_cap
from . import results
from .analysis import FitView, build_view
from .counting import CountTokens, Counting, counting_for
from ..errors import InvalidBudget, InvalidSettings
from .interceptors import run_interceptors
from .proposals import Unusable, check_proposal, equal, insertions, kept_mask, proposal_from_output
from .results import Decisions, FitResult, InsertedBlock
from .strategies import BUILTINS, is_trusted
from .strategies.base import BuiltinStrategy, Proposal
from .strategies.carried_walk import walked_truncate
from ..tokens.sent import SHAPES

_FALLBACK = BUILTINS[0]  # the package's own truncate
_MAX_RECOUNTS = 6


def shift_context(
    messages: Sequence[dict],
    count_tokens: CountTokens,
    budget: int,
    strategy: str | Any = "truncate",
    *,
    interceptors: Sequence[Callable[[list[dict]], list[dict] | None]] | None = None,
    count_excluded: bool = True,
    template: str = "openai",
    **options: Any,
) -> FitResult:
    """Fit ``messages`` into ``budget`` tokens with a registered strategy.

    ``count_tokens(messages) -> int`` counts a list as it would be sent
    (:func:`contextfit.token_counter` makes one for a model). The result's
    ``kept`` satisfies ``count_tokens(kept) <= budget``; protected blocks
    are never dropped or altered; a tool call and its results are kept or
    dropped together. ``interceptors`` defaults to the registered ones (pass
    ``()`` for none); they receive the kept messages in ``template``'s
    provider shape (``openai``, or ``anthropic`` with the system text as a
    leading system message). With ``count_excluded=False`` blocks the fit
    never needed are not counted (their decision ``tokens`` is ``None``),
    which makes ``truncate`` on a long chat much faster.

    >>> import contextfit
    >>> chat = [{"role": "system", "content": "You are terse."},
    ...         {"role": "user", "content": "Tell me a long story. " * 50},
    ...         {"role": "assistant", "content": "Once upon a time. " * 50},
    ...         {"role": "user", "content": "Shorter please."}]
    >>> result = contextfit.shift_context(chat, contextfit.token_counter("gpt-4o"), budget=40)
    >>> [d.reason for d in result.decisions]
    ['system', 'over_budget', 'over_budget', 'current_input']
    """
    return fit_messages(messages, count_tokens, budget, strategy, interceptors, count_excluded, template, options)


#: How a fit gets its :class:`FitView`: ``analyse(messages, counting, count_all)``.
#: :func:`build_view` reuses a cached analysis of an unedited prefix; a
#: :class:`~contextfit.pipeline.session.FitSession` knows which messages are new.
Analyse = Callable[[Sequence[dict], Counting, bool], FitView]


def fit_messages(
    messages: Sequence[dict],
    count_tokens: CountTokens,
    budget: int,
    strategy: str | Any,
    interceptors: Sequence[Callable[[list[dict]], list[dict] | None]] | None,
    count_excluded: bool,
    template: str,
    options: dict[str, Any],
    analyse: Analyse = build_view,
) -> FitResult:
    """:func:`shift_context` with its options as one dict, and the analysis
    step passed in (``analyse``): the one path every fit takes."""
    budget = _check_budget(budget)
    if template not in SHAPES:
        raise InvalidSettings(f"template must be one of {', '.join(SHAPES)}, got {template!r}.")
    plugins.load_plugins()
    name, impl = _resolve(strategy)
    trusted = is_trusted(impl)
    options = dict(options)
    cap = result_cap.cap_option(options)  # applied here, before fitting: no strategy sees it
    counting = counting_for(count_tokens)
    view = analyse(messages, counting, count_excluded)
    protected_tokens = view.protected_tokens()
    if protected_tokens > budget:
        raise view.refusal(protected_tokens, budget)
    diagnostics = _link_notes(view)
    copies = result_cap.capped(view, cap) if cap is not None else None
    # The strategy fits the conversation with its oversized results capped (result_cap.py).
    fitted = result_cap.capped_view(view, copies) if copies is not None and copies.copies else view
    if trusted:
        proposal = None
        if fitted.walks is not None and impl is _FALLBACK:  # a session's truncate: from its last walk
            proposal = walked_truncate(fitted, budget, options, fitted.walks)
        if proposal is None:
            proposal = impl.propose(fitted, budget, **options)
        why, altered = None, []
    else:
        proposal, why, altered = _plugin_proposal(fitted, impl, budget, options, count_tokens)
    proposal, used, restored = _accept(fitted, proposal, name, budget, why, altered, diagnostics)
    total = _enforce(fitted, proposal, budget, used, diagnostics, check_groups=not trusted and not restored and why is None)
    if fitted is not view:  # back to the caller's messages: a capped result kept is sent as its copy
        proposal = result_cap.with_capped(proposal, copies)
    result = _verify(view, proposal, budget, used, diagnostics, protected_tokens, restored, total)
    chain = plugins.interceptors.entries() if interceptors is None else _as_entries(interceptors)
    if chain:
        result = run_interceptors(view, proposal, result, budget, chain, template)
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


def _link_notes(view: FitView) -> list[dict]:
    """What the tool links of the conversation say (SPEC 3.2): results with no call,
    ids that several calls use, and calls with no result."""
    diagnostics = []
    for members in view.orphan_groups():
        diagnostics.append(
            {
                "code": results.ORPHAN_TOOL_RESULT,
                "indices": list(members),
                "message": "Tool result(s) whose call is not in the conversation; kept or dropped as their own group.",
            }
        )
    repeated = view.repeated_ids()
    if repeated:
        named = ", ".join(f"{link!r} ({calls} calls)" for link, calls, _ in repeated[:10])
        more = f" and {len(repeated) - 10} more" if len(repeated) > 10 else ""
        diagnostics.append(
            {
                "code": results.REPEATED_TOOL_CALL_ID,
                "ids": [link for link, _, _ in repeated],
                "calls": [calls for _, calls, _ in repeated],
                "groups": [groups for _, _, groups in repeated],
                "message": f"Tool call id(s) used by more than one call: {named}{more}. Each call is grouped with "
                f"the results that answer it (a result answers the nearest earlier call with its id that is still "
                f"unanswered), so each is kept or dropped on its own.",
            }
        )
    unanswered = view.unanswered_calls()
    if unanswered:
        ids = list(dict.fromkeys(link for link, _ in unanswered))
        named = ", ".join(map(repr, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
        diagnostics.append(
            {
                "code": results.TOOL_CALL_WITHOUT_RESULT,
                "ids": ids,
                "indices": [members for _, members in unanswered],
                "message": f"Tool call(s) with no result in the conversation: {named}. Providers refuse a request "
                f"that sends a tool call without its result; add the result or leave the call out.",
            }
        )
    return diagnostics


def _plugin_proposal(
    view: FitView, impl: Any, budget: int, options: dict, count_tokens: Any
) -> tuple[Proposal | None, str | None, list[int]]:
    """An untrusted strategy's proposal (``None`` with why, when it raised or
    answered something unusable), and the protected blocks it altered.

    It works on copies: a ``propose`` object gets a detached view, a callable
    a list of copies. The copies are compared afterwards, so a protected block
    it edited in place counts as altered even when its answer keeps it.
    """
    given = [clone(m) for m in view.messages]
    copies = list(given)  # the plugin may empty or reorder the list it got
    proposal: Proposal | None = None
    why: str | None = None
    altered: list[int] = []
    try:
        if callable(getattr(impl, "propose", None)):
            proposal = check_proposal(impl.propose(view.detached(given), budget, **options), view)
        else:
            proposal, altered = proposal_from_output(impl(given, count_tokens, budget, **options), view, given)
    except Unusable as exc:
        why, altered = str(exc), exc.altered
    except Exception as exc:  # a broken plugin must not break the fit
        why = f"it raised {type(exc).__name__}: {exc}"
    edited = [i for i in view.protected if not equal(copies[i], view.messages[i])]
    return proposal, why, sorted({*altered, *edited})


def _accept(
    view: FitView,
    proposal: Proposal | None,
    name: str,
    budget: int,
    why: str | None,
    altered: list[int],
    diagnostics: list[dict],
) -> tuple[Proposal, str, list[int]]:
    """The proposal to use, the strategy it is from, and the protected blocks
    restored: a proposal that lost or altered a protected block, or none at
    all, is rejected for truncate's (one ``STRATEGY_REJECTED`` naming why and
    the blocks)."""
    removed = [] if proposal is None else [i for i in view.protected if proposal.reasons[i] is not None]
    lost = sorted({*removed, *altered})
    if proposal is not None and not lost:
        diagnostics.extend(proposal.diagnostics)
        return proposal, name, []
    parts = []
    if why is not None:
        parts.append(f"Strategy {name!r} was rejected because {why}; truncate was used instead.")
    if lost:
        labels = ", ".join(f"{view.id_of(i)!r} ({'altered' if i in altered else 'removed'})" for i in lost)
        parts.append(f"Strategy {name!r} removed or altered {len(lost)} protected block(s): {labels}; they were "
                     f"restored and truncate was used instead.")
    diagnostics.append(
        {
            "code": results.STRATEGY_REJECTED,
            "strategy": name,
            "lost": lost,
            "altered": [i for i in lost if i in altered],
            "ids": [view.id_of(i) for i in lost],
            "message": " ".join(parts),
        }
    )
    return _FALLBACK.propose(view, budget), _FALLBACK.name, lost


def _enforce(
    view: FitView, proposal: Proposal, budget: int, name: str, diagnostics: list[dict], *, check_groups: bool
) -> int:
    """Make the proposal safe in place; returns its total tokens.

    The trusted built-ins keep and drop whole units by construction (the
    property tests hold them to it), so only other proposals are checked for
    split groups; the budget is checked for every proposal.
    """
    reasons = proposal.reasons
    split = []
    for members in view.analysis.members.values() if check_groups else ():
        if len(members) > 1:
            kept = [m for m in members if reasons[m] is None]
            if kept and len(kept) < len(members):
                why = next(reasons[m] for m in members if reasons[m] is not None)
                for member in kept:
                    reasons[member] = why
                split.append(list(members))
    if split:
        proposal.assembled = None  # (never set on an untrusted proposal, the only one checked for groups)
        diagnostics.append(
            {
                "code": results.GROUP_SPLIT_PREVENTED,
                "groups": split,
                "message": "A tool call and its results were partly kept; the kept part was excluded too.",
            }
        )
    if check_groups and proposal.inserted:
        _drop_half_linked(view, proposal, diagnostics)
    total = _total(view, proposal)
    if total > budget:
        proposed = total
        _reduce(view, proposal, budget, total)
        if check_groups and proposal.inserted:  # a unit cut for room may have been an added block's partner
            _drop_half_linked(view, proposal, diagnostics)
        total = _total(view, proposal)  # rare: recount rather than trust the running sum
        diagnostics.append(
            {
                "code": results.BUDGET_ENFORCED,
                "strategy": name,
                "proposed": proposed,
                "budget": budget,
                "message": f"The proposal needed {proposed} tokens for a budget of {budget}; the oldest "
                f"unprotected blocks were dropped until it fit.",
            }
        )
    return total


def _drop_half_linked(view: FitView, proposal: Proposal, diagnostics: list[dict]) -> None:
    """Drop the blocks a plugin inserted that would send half a tool group (a
    shortened result whose call is not kept, a call with no result): links
    half present in what is kept, and not half in the same way in the input."""
    kept = [*compress(view.messages, kept_mask(proposal.reasons)), *(block.message for block in proposal.inserted)]
    states = link_states(kept)
    if all(state == (True, True) for state in states.values()):
        return
    before = link_states(view.messages)
    half = {link for link, state in states.items() if state != (True, True) and before.get(link) != state}
    keep = [not half.intersection(link_ids(block.message)[0]) for block in proposal.inserted]
    dropped = keep.count(False)
    if dropped:
        proposal.inserted = list(compress(proposal.inserted, keep))
        diagnostics.append(
            {
                "code": results.GROUP_SPLIT_PREVENTED,
                "groups": [],
                "links": sorted(half),
                "message": f"{dropped} block(s) the strategy added would have sent half of a tool group "
                f"({', '.join(sorted(half))}); they were left out.",
            }
        )


def _total(view: FitView, proposal: Proposal) -> int:
    """Overhead plus every kept message and inserted block (kept messages are
    always counted: strategies count what they keep)."""
    if proposal.assembled is not None:
        return proposal.assembled[0]
    inserted = sum(block.tokens or 0 for block in proposal.inserted)
    analysis = view.analysis
    if analysis.counted_total is not None:  # all counted: subtract the excluded (reasons are truthy exactly there)
        return view.base_tokens + inserted + analysis.counted_total - sum(compress(analysis.tokens, proposal.reasons))  # type: ignore[arg-type]
    return view.base_tokens + inserted + sum(compress(analysis.tokens, kept_mask(proposal.reasons)))  # type: ignore[arg-type]


def _reduce(view: FitView, proposal: Proposal, target: int, total: int) -> int:
    """Drop the oldest unprotected kept units (inserted blocks included) until
    ``total`` fits ``target``; returns the new total."""
    if proposal.assembled is not None:  # the reasons are a walk's own (strategies/carried_walk.py): change a copy
        proposal.reasons, proposal.assembled = list(proposal.reasons), None
    reasons = proposal.reasons
    # A compressed block that stands for one input message (a cleared tool
    # result) goes with that message's unit: dropping one without the other
    # would send half a tool group.
    stand_ins = {block.sources[0]: block for block in proposal.inserted
                 if block.reason == results.COMPRESSED and len(block.sources) == 1}
    units: list[tuple[float, Any]] = [
        (float(unit[0]), unit) for unit in view.units_oldest_first()
        if reasons[unit[0]] is None or any(index in stand_ins for index in unit)
    ]
    attached = {id(stand_ins[index]) for _, unit in units for index in unit if index in stand_ins}
    units += [(block.before - 0.5, block) for block in proposal.inserted if id(block) not in attached]
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
                block = stand_ins.get(index)
                if block is not None and block in proposal.inserted:
                    proposal.inserted.remove(block)
                    total -= block.tokens
                elif reasons[index] is None:
                    total -= count(index)
                reasons[index] = results.OVER_BUDGET
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
        raise view.refusal(
            actual,
            budget,
            f"count_tokens counts the protected blocks as {actual} tokens, over the budget of {budget}, "
            f"although their parts add up to {protected_tokens}.",
        )
    if attempts:
        diagnostics.append(
            {
                "code": results.COUNT_ADJUSTED,
                "message": "count_tokens is not the sum of per-message counts; more was dropped to fit its own total.",
            }
        )
        result = replace(result, diagnostics=list(diagnostics))  # the result holds a copy made before this note
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
    if proposal.assembled is not None:  # a walk carried from the last fit knows them (strategies/carried_walk.py)
        kept, excluded = list(proposal.assembled[1]), list(proposal.assembled[2])
    else:
        kept = list(compress(messages, kept_mask(reasons)))
        excluded = list(compress(messages, reasons))  # an exclusion reason is a non-empty string
    for position, block in insertions(reasons, proposal.inserted):
        kept.insert(position, block.message)
    analysis = view.analysis
    decisions = Decisions(
        messages,
        list(reasons),
        view.protect,
        dict.fromkeys(restored, results.RESTORED),
        analysis.tokens if analysis.counted_total is not None else list(analysis.tokens),  # all counted: never written again
        analysis.roles,
        analysis.kinds,
        analysis.ids,
        analysis.group_of,
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


BuiltinStrategy.host = staticmethod(shift_context)  # built-ins are callable like plugins (strategies/base.py)
