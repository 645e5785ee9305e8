"""The Replay page's agent runs: which user turn and tool round each request belongs to.

An agent's run is a user message and then round after round of tool calls and
results, each round a request the provider bills. The replay counts every
model call as a request (SPEC §9) and says of each its user turn, what
triggered it and its tool round; this module lays that out per strategy, each
request on a row and each user turn of several requests followed by its total
(:meth:`~contextfit.replays.run.Replay.user_turn_totals`), so a presenter can
point at the round that overflowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..amounts import money
from ..replays.run import END, TOOL_RESULTS, Replay, TurnResult, UserTurnTotals

__all__ = ["RoundsView", "request_label", "request_rows", "turn_text", "view"]

#: What a cell shows for no value.
EMPTY = "—"


@dataclass(frozen=True, slots=True)
class RoundsView:
    """What the page draws: whether to show the section, its caption, and per strategy the request rows."""

    shown: bool
    caption: str = ""
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def request_label(row: TurnResult) -> str:
    """What a request was sent after, in words.

    >>> from types import SimpleNamespace as S
    >>> request_label(S(trigger="user", round=0)), request_label(S(trigger="tool_results", round=2))
    ('the user message', 'tool round 2')
    """
    if row.trigger == TOOL_RESULTS:
        return f"tool round {row.round:,}"
    if row.trigger == END:
        return "the conversation as it stands"
    return "the user message"


def _total_row(total: UserTurnTotals) -> dict[str, Any]:
    return {
        "request": f"user turn {total.user_turn:,}",
        "user turn": f"{total.user_turn:,}",
        "sent after": f"{total.requests:,} requests" + (f", {total.failed:,} not fitted" if total.failed else ""),
        "prompt tokens": f"{total.prompt_tokens:,}",
        "read from cache": f"{total.cache_read:,}",
        "cost": money(total.cost, EMPTY),
    }


def request_rows(rows: Sequence[TurnResult], totals: Sequence[UserTurnTotals]) -> list[dict[str, Any]]:
    """One strategy's requests, each with its user turn and tool round, and after the last request of
    a user turn of several its total (``totals``: the replay's, per user turn). No cell is ``None``."""
    by_turn = {total.user_turn: total for total in totals}
    out: list[dict[str, Any]] = []
    for index, row in enumerate(rows):
        failed = row.error is not None
        out.append({
            "request": f"{row.turn:,}",
            "user turn": f"{row.user_turn:,}" if row.user_turn else EMPTY,
            "sent after": request_label(row),
            "prompt tokens": EMPTY if failed or row.prompt_tokens is None else f"{row.prompt_tokens:,}",
            "read from cache": EMPTY if failed else f"{row.cache_read:,}",
            "cost": EMPTY if failed or row.cost is None else money(row.cost.total, EMPTY),
        })
        last_of_turn = index + 1 == len(rows) or rows[index + 1].user_turn != row.user_turn
        total = by_turn.get(row.user_turn)
        if last_of_turn and total is not None and total.requests > 1:
            out.append(_total_row(total))
    return out


def view(result: Replay) -> RoundsView:
    """The section for this replay: shown when some request follows a round of tool results (an agent's run)."""
    rows = next(iter(result.turns.values()), [])
    rounds = sum(row.trigger == TOOL_RESULTS for row in rows)
    if not rounds:
        return RoundsView(False)
    users = len({row.user_turn for row in rows})
    caption = (f"Every model call is a request: {len(rows):,} requests over {users:,} user turn"
               f"{'s' if users != 1 else ''}, {rounds:,} of them after a round of tool results. A user turn of "
               "several requests is followed by its total.")
    totals = result.user_turn_totals()
    return RoundsView(True, caption, {label: request_rows(turns, totals[label]) for label, turns in result.turns.items()})


def turn_text(result: Replay, turn: int) -> str:
    """Which user turn and round the replay's ``turn`` (1-based: its requests, in order) is, for the
    "One turn" view of an agent's run.

    >>> from types import SimpleNamespace as S
    >>> result = S(turns={"truncate": [S(user_turn=1, trigger="user", round=0), S(user_turn=1, trigger="tool_results", round=1)]})
    >>> turn_text(result, 2)
    'Request 2 of 2: user turn 1, sent after tool round 1.'
    """
    rows = next(iter(result.turns.values()))
    row = rows[turn - 1]
    return f"Request {turn:,} of {len(rows):,}: user turn {row.user_turn:,}, sent after {request_label(row)}."
