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

from .. import results as r
from ..analysis import FitView
from ..results import InsertedBlock


@runtime_checkable
class ContextStrategy(Protocol):
    """The plugin contract: a callable that proposes what to keep."""

    def __call__(self, messages: Sequence[dict], count_tokens: Any, budget: int, **options: Any) -> Any: ...


@dataclass(slots=True)
class Proposal:
    """A strategy's answer over a :class:`FitView`.

    ``reasons[i]`` is ``None`` for a kept input message, else why it goes
    (an excluded reason string). ``inserted`` are blocks the strategy adds.
    """

    reasons: list[str | None]
    inserted: list[InsertedBlock] = field(default_factory=list)
    diagnostics: list[dict] = field(default_factory=list)


def start_reasons(view: FitView, default: str | None = r.OVER_BUDGET) -> list[str | None]:
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
    tokens, protect, count = view.facts.tokens, view.protect, view.count
    group_of, members = view.facts.group_of, view.facts.members
    over = r.OVER_BUDGET
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


def kept_tokens(view: FitView, reasons: Sequence[str | None]) -> int:
    """Overhead plus the tokens of every kept input message."""
    count = view.count
    return view.base_tokens + sum(count(i) for i, reason in enumerate(reasons) if reason is None)


class BuiltinStrategy:
    """Base of the built-ins: callable like any plugin, with a fast ``propose``."""

    name = ""
    description = ""

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:  # pragma: no cover - abstract
        raise NotImplementedError

    #: The host that fits with a strategy object: ``engine/fitting.py`` hands in its
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
