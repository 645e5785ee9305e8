"""``clear-tool-results``' walk over old tool results, carried from fit to fit.

Which results a fit clears is a walk over the chat's unprotected tool
results, oldest first, each clearing saving some tokens, until the savings
reach what the fit needs. While no tool is excluded and no reasoning was
dropped first, each step of that walk depends only on the messages and the
placeholder, not on the budget: the steps made so far are kept in the analysis'
``derived`` cache (valid as long as the chat's prefix is unedited), with
their running savings, and a later fit finds where it stops by bisection and
walks on only past them. A growing chat walked every old result at every
refit (the walk grows with the chat: each turn needs more cleared).

The steps are never changed once stored: a fit that walks further stores a
new record in its own analysis, so the analysis of a shorter chat (kept for an
edit of the last message) keep theirs. ``tests/test_replay_speed.py`` holds
carried fits to fresh ones.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from ..analysis import CARRY_TRIMMERS, FitView

#: One step: (message, site, link id, sites cleared in that message so far, cleared copy, its tokens,
#: tokens saved: 0 when the copy is no shorter and the step clears nothing).
Step = tuple[int, Any, str, tuple, dict, int, int]


class Walked:
    """The steps of the walk over the first ``used`` tool results."""

    __slots__ = ("template", "used", "protected", "steps", "cum", "costs", "chosen")

    def __init__(self, template: str, used: int, protected: tuple[int, ...], steps: list[Step], cum: list[int],
                 costs: dict[int, int], chosen: dict[int, tuple]) -> None:
        self.template = template
        self.used = used  # tool results read, protected ones included
        self.protected = protected  # their positions that were left out as protected
        self.steps = steps  # one per unprotected result read, oldest first
        self.cum = cum  # cum[k]: tokens saved by steps[:k]
        self.costs = costs  # message -> its tokens after the steps (messages they cleared)
        self.chosen = chosen  # message -> its sites cleared by the steps


def _key(template: str) -> tuple[str, int, str]:
    return ("clear-walk", -1, template)


# Its steps count tool results, not messages, and it is checked against the results at each
# use: a plain tail (no tool result) leaves it as it is.
CARRY_TRIMMERS["clear-walk"] = lambda value, k: value


def carried_clear(
    view: FitView,
    target: int,
    keep: int,
    template: str,
    sites: tuple[tuple[int, Any, str], ...],
    site_index: list[int],
    copy_of: Callable[[int, tuple], tuple[dict, int, bool]],
) -> tuple[list[Step], int]:
    """The steps a fit takes (the walk stops once ``target`` tokens are saved,
    or after the oldest ``len(unprotected) - keep`` results) and the tokens they save.

    ``sites`` are the chat's tool results oldest first (message, site, link),
    ``site_index`` their messages; ``copy_of(index, trial)`` gives the cleared
    copy of a message, its tokens and whether it is cached (a result whose call
    comes later is named ``tool`` until then: the walk is not carried past it).
    """
    derived, protect, tokens = view.analysis.derived, view.protect, view.analysis.tokens
    protected_all = [p for i in view.protected for p in range(bisect_left(site_index, i), bisect_right(site_index, i))]
    candidates = max(len(sites) - len(protected_all) - keep, 0)
    walked: Walked | None = derived.get(_key(template))  # type: ignore[assignment]
    if walked is not None and (walked.used > len(sites) or walked.template != template
                               or tuple(p for p in protected_all if p < walked.used) != walked.protected):
        walked = None  # another chat's, or protection moved among the results it read: walk again
    if walked is None:
        walked = Walked(template, 0, (), [], [0], {}, {})
    stop = bisect_left(walked.cum, target)
    if stop < len(walked.cum) or len(walked.steps) >= candidates:
        stop = min(stop, candidates)
        return walked.steps[:stop], walked.cum[stop]
    # Walk on from where the carried steps end; store what may be carried.
    steps, cum, costs, chosen = list(walked.steps), list(walked.cum), dict(walked.costs), dict(walked.chosen)
    used, protected = walked.used, list(walked.protected)
    carried = True
    saved = cum[-1]
    while len(steps) < candidates and saved < target and used < len(sites):
        index, site, link = sites[used]
        used += 1
        if protect[index] is not None:
            protected.append(used - 1)
            continue
        previous = chosen.get(index)
        trial = (site,) if previous is None else (*previous, site)
        copy, copy_tokens, cached = copy_of(index, trial)
        if not cached and carried:  # store the walk up to here
            derived[_key(template)] = Walked(template, used - 1, tuple(protected), list(steps),
                                             list(cum), dict(costs), dict(chosen))
            carried = False
        cost = costs.get(index)
        if cost is None:
            cost = tokens[index]
        saving = cost - copy_tokens if copy_tokens < cost else 0
        if saving:
            costs[index] = copy_tokens
            chosen[index] = trial
        steps.append((index, site, link, trial, copy, copy_tokens, saving))
        saved += saving
        cum.append(saved)
    if carried:
        derived[_key(template)] = Walked(template, used, tuple(protected), steps, cum, costs, chosen)
    return steps, saved
