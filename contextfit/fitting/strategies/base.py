"""What a strategy is, and the helpers the built-ins share.

A strategy is any callable ``strategy(messages, count_tokens, budget,
**options)`` returning the messages to keep or a :class:`FitResult` (SPEC
§3.4). A strategy may also offer ``propose(view, budget, **options)``
returning a :class:`Proposal` over the host's :class:`FitView`; the host then
skips re-deriving what the strategy kept. Built-ins do; either way the host
checks the outcome (protection, whole groups, the budget) itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from .. import results
from ..analysis import FitView
from ..results import InsertedBlock
from ...errors import InvalidSettings


@runtime_checkable
class ContextStrategy(Protocol):
    """The plugin contract: a callable that proposes what to keep."""

    def __call__(self, messages: Sequence[dict], count_tokens: Any, budget: int, **options: Any) -> Any: ...


@dataclass(slots=True)
class Proposal:
    """A strategy's answer over a :class:`FitView`.

    ``reasons[i]`` is ``None`` for a kept input message, else why it goes
    (an excluded reason string). ``inserted`` are blocks the strategy adds.
    ``assembled`` is what the host would derive from ``reasons``, given by a
    built-in that knows it already (:mod:`.walk`): ``(tokens, kept messages,
    excluded messages)``, read-only; the host reads it only from a trusted
    strategy, and drops it when it changes ``reasons``.
    """

    reasons: list[str | None]
    inserted: list[InsertedBlock] = field(default_factory=list)
    diagnostics: list[dict] = field(default_factory=list)
    assembled: tuple[int, list[dict], list[dict]] | None = None


def start_reasons(view: FitView, default: str | None = results.OVER_BUDGET) -> list[str | None]:
    """Every message set to ``default`` except the protected ones (kept)."""
    reasons: list[str | None] = [default] * view.n
    for index in view.protected:
        reasons[index] = None
    return reasons


def room_left(view: FitView, budget: int) -> int:
    """Tokens left for unprotected blocks."""
    return budget - view.protected_tokens()


def fill_newest(view: FitView, reasons: list[str | None], room: int) -> int:
    """Keep unprotected units newest first while they fit; return what is left.

    Units whose first member is already excluded for another reason than
    ``over_budget`` (manual, low relevance) are skipped. The walk stops at the
    first unit that does not fit, so the kept history is the longest recent
    run: exactly "drop the oldest groups until the prompt fits".
    """
    # The hot loop of every refit: a plain index walk over first members of units.
    # A group is as old as its first member, so stopping at the first unit that
    # does not fit keeps the longest run of recent units.
    tokens, protect, count = view.analysis.tokens, view.protect, view.count
    group_of, members = view.analysis.group_of, view.analysis.members
    over = results.OVER_BUDGET
    for index in range(view.n - 1, -1, -1):
        if protect[index] is not None:
            continue
        root = group_of.get(index)
        if root is None:  # a message on its own
            if reasons[index] != over:
                continue
            cost = tokens[index]
            if cost is None:
                cost = count(index)
            if cost > room:
                break
            room -= cost
            reasons[index] = None
            continue
        if root != index:  # a later member of a group: handled with its first member
            continue
        unit = members[root]
        if reasons[index] != over:
            continue
        cost = 0
        for member in unit:
            cost += count(member)
        if cost > room:
            break
        room -= cost
        for member in unit:
            reasons[member] = None
    return room


#: ``stable_prefix``'s default low-water mark: a cut goes down to 70% of the budget.
DEFAULT_LOW_WATER = 0.7


def stable_prefix_step(budget: int, options: dict) -> int:
    """The cut step of ``stable_prefix`` (0 when it is off): ``(1 - low_water) * budget`` tokens.

    ``stable_prefix`` (for ``truncate``, ``summarize`` and ``clear-tool-results``)
    is hysteresis for the provider's prompt cache: when the prompt must shrink,
    the tokens dropped are rounded up to a multiple of this step, so a cut
    goes down to about ``low_water`` of the budget and the next turns append
    to an unchanged prefix until the prompt reaches the budget again.

    >>> stable_prefix_step(10_000, {"stable_prefix": True}), stable_prefix_step(10_000, {})
    (3000, 0)
    >>> stable_prefix_step(10_000, {"stable_prefix": True, "low_water": 0.9})
    1000
    """
    on = options.get("stable_prefix")
    low = options.get("low_water")
    if on is not None and not isinstance(on, bool):
        raise InvalidSettings(f"stable_prefix must be true or false, got {on!r}.")
    if low is not None and (isinstance(low, bool) or not isinstance(low, (int, float)) or not 0.1 <= low <= 0.95):
        raise InvalidSettings(f"low_water must be a share of the budget between 0.1 and 0.95, got {low!r}.")
    if not on:
        return 0
    return max(int(round((1 - (DEFAULT_LOW_WATER if low is None else low)) * budget)), 1)


def stable_budget(total: int, budget: int, step: int) -> int:
    """The budget to cut to so that the tokens dropped from ``total`` are a
    multiple of ``step`` (``budget`` itself when it fits or ``step`` is 0).

    While a chat grows within one step the cut stays where it is (the same
    oldest units make up the same multiple of the step).

    >>> stable_budget(12_500, 10_000, 3000), stable_budget(9_000, 10_000, 3000), stable_budget(12_500, 10_000, 0)
    (9500, 10000, 10000)
    """
    if step <= 0 or total <= budget:
        return budget
    return total - -(-(total - budget) // step) * step


class BuiltinStrategy:
    """Base of the built-ins: callable like any plugin, with a fast ``propose``."""

    name = ""
    description = ""
    #: Whether it cuts in ``stable_prefix`` steps (:func:`stable_prefix_step`); a built-in that does
    #: not is given ``stable_prefix`` only to refuse it (``INVALID_SETTINGS``), never to ignore it.
    takes_stable_prefix: ClassVar[bool] = False

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:  # pragma: no cover - abstract
        raise NotImplementedError

    #: The host that fits with a strategy object: ``fitting/host.py`` hands in its
    #: ``shift_context`` when it is imported (the package always imports it), so this
    #: layer never imports the one above it.
    host: ClassVar[Callable[..., Any] | None] = None

    def __call__(self, messages: Sequence[dict], count_tokens: Any, budget: int, **options: Any) -> Any:
        host = BuiltinStrategy.host
        if host is None:  # pragma: no cover - contextfit/__init__ imports the fitting host
            raise RuntimeError("import contextfit before calling a strategy")
        return host(messages, count_tokens, budget, strategy=self, **options)

    def __repr__(self) -> str:
        return f"<contextfit strategy {self.name!r}>"
