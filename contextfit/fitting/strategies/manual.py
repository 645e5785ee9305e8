"""``manual``: the user's exclusions first, then truncate."""

from __future__ import annotations

from typing import Any

from .. import results
from ..analysis import FitView
from .base import BuiltinStrategy, Proposal, fill_newest, room_left, start_reasons


class Manual(BuiltinStrategy):
    """Excludes messages marked ``meta.manualExcluded`` (with their tool-call
    partners), then drops the oldest groups if more room is needed."""

    name = "manual"
    description = (
        "Excludes every unprotected message marked meta.manualExcluded together with its tool-call "
        "partners, then drops the oldest groups like truncate if more room is needed."
    )

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:
        reasons = start_reasons(view)
        ignored = []
        for index in view.analysis.manual:
            if view.protect[index] is not None:
                ignored.append(index)
                continue
            for member in view.group_members(index):
                reasons[member] = results.MANUAL
        fill_newest(view, reasons, room_left(view, budget))
        diagnostics = []
        if ignored:
            diagnostics.append(
                {
                    "code": results.MANUAL_MARK_IGNORED,
                    "indices": ignored,
                    "message": "These messages are marked manualExcluded but are protected, so they stay.",
                }
            )
        return Proposal(reasons, diagnostics=diagnostics)
