"""``truncate``: drop the oldest unprotected groups until the prompt fits."""

from __future__ import annotations

from typing import Any

from ..analysis import FitView
from .base import BuiltinStrategy, Proposal, fill_newest, room_left, stable_budget, stable_prefix_step, start_reasons
from .thinking import fit_thinning


class Truncate(BuiltinStrategy):
    """Drops the oldest unprotected groups until the prompt fits."""

    name = "truncate"
    takes_stable_prefix = True
    description = "Drops the oldest unprotected groups (a tool call with all its results counts as one) until the prompt fits."

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:
        step = stable_prefix_step(budget, options)
        if step:  # stable_prefix: cut in steps, down to the low-water mark
            budget = stable_budget(view.base_tokens + view.count_all(), budget, step)
        thinned = fit_thinning(view, budget, options)  # keep_thinking: older turns' reasoning goes first
        if thinned is not None:
            return thinned
        reasons = start_reasons(view)
        fill_newest(view, reasons, room_left(view, budget))
        return Proposal(reasons)
