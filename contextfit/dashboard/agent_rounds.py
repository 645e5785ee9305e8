"""The Replay page's agent runs: which user turn and tool round each request belongs to.

An agent's run is a user message and then round after round of tool calls and
results, each round a billed request. A replay that counts every model call
as a request (SPEC §9: its rows carry ``user_turn``, ``trigger`` and
``round``) is shown per request, each with its user turn and tool round, and
each user turn's total. A replay whose rows do not carry them counts a
request per user message: the page then says so where the rounds would be,
for a conversation that holds tool results (its costs and cache figures are
per user turn, not per round).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..amounts import money
from ..inputs import messages as msg

__all__ = ["RoundsView", "counts_rounds", "has_tool_results", "request_rows", "view"]

#: What a cell shows for no value.
EMPTY = "—"
#: What the page says when the replay counts a request per user message and the chat holds tool rounds.
PER_USER_MESSAGE = ("This replay counts one request per user message: the tool rounds of an agent run (each a "
                    "request the provider bills) are inside the request of the user message before them, so an "
                    "agent's costs and cache figures here are per user turn.")


@dataclass(frozen=True, slots=True)
class RoundsView:
    """What the page draws: whether to show the section, its caption, and per strategy the request rows."""

    shown: bool
    caption: str = ""
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def has_tool_results(messages: Sequence[Any]) -> bool:
    """Whether the conversation holds a tool result (an agent's run).

    >>> has_tool_results([{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "c", "content": "x"}])
    True
    >>> has_tool_results([{"role": "user", "content": "a"}])
    False
    """
    return any(isinstance(message, dict) and msg.link_ids(message)[1] for message in messages)


def counts_rounds(result: Any) -> bool:
    """Whether the replay's rows say which user turn and tool round each request is (SPEC §9)."""
    rows = next(iter(result.turns.values()), [])
    return bool(rows) and all(hasattr(rows[0], name) for name in ("user_turn", "trigger", "round"))


def request_rows(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """One strategy's requests, each with its user turn and tool round, and each user turn's total
    after its last request.

    >>> from types import SimpleNamespace as S
    >>> def row(turn, user_turn, trigger, round_, tokens, cost):
    ...     return S(turn=turn, user_turn=user_turn, trigger=trigger, round=round_, prompt_tokens=tokens,
    ...              cache_read=0, output_tokens=5, cost=S(total=cost), error=None)
    >>> for line in request_rows([row(1, 1, "user", 0, 364, 0.001), row(2, 1, "tool_results", 1, 423, 0.0012),
    ...                           row(3, 2, "user", 0, 1_448, None)]):
    ...     print(line)
    {'request': '1', 'user turn': '1', 'sent after': 'the user message', 'prompt tokens': '364', 'read from cache': '0', 'cost': '$0.001000'}
    {'request': '2', 'user turn': '1', 'sent after': 'tool round 1', 'prompt tokens': '423', 'read from cache': '0', 'cost': '$0.001200'}
    {'request': 'user turn 1', 'user turn': '1', 'sent after': '2 requests', 'prompt tokens': '787', 'read from cache': '0', 'cost': '$0.002200'}
    {'request': '3', 'user turn': '2', 'sent after': 'the user message', 'prompt tokens': '1,448', 'read from cache': '0', 'cost': '—'}
    """
    out: list[dict[str, Any]] = []
    turn_rows: list[Any] = []

    def close() -> None:
        if len(turn_rows) > 1:  # a turn of one request is its own total
            done = [row for row in turn_rows if row.error is None]
            costs = [row.cost.total for row in done if row.cost is not None]
            out.append({
                "request": f"user turn {turn_rows[0].user_turn:,}", "user turn": f"{turn_rows[0].user_turn:,}",
                "sent after": f"{len(turn_rows):,} requests",
                "prompt tokens": f"{sum(row.prompt_tokens or 0 for row in done):,}",
                "read from cache": f"{sum(row.cache_read for row in done):,}",
                "cost": money(sum(costs), EMPTY) if costs and len(costs) == len(done) else EMPTY,
            })
        turn_rows.clear()

    for row in rows:
        if turn_rows and row.user_turn != turn_rows[0].user_turn:
            close()
        turn_rows.append(row)
        failed = row.error is not None
        out.append({
            "request": f"{row.turn:,}",
            "user turn": f"{row.user_turn:,}" if row.user_turn else EMPTY,
            "sent after": "the user message" if row.trigger == "user" else (
                f"tool round {row.round:,}" if row.trigger == "tool_results" else "the conversation's end"),
            "prompt tokens": EMPTY if failed or row.prompt_tokens is None else f"{row.prompt_tokens:,}",
            "read from cache": EMPTY if failed else f"{row.cache_read:,}",
            "cost": EMPTY if failed or row.cost is None else money(row.cost.total, EMPTY),
        })
    close()
    return out


def view(result: Any, messages: Sequence[Any]) -> RoundsView:
    """The section for this replay: per request with its round, when the replay counts rounds and
    some request follows tool results; the note on how requests are counted, when it does not and
    the conversation holds tool results; nothing otherwise."""
    if counts_rounds(result):
        rows = next(iter(result.turns.values()))
        rounds = sum(row.trigger == "tool_results" for row in rows)
        if not rounds:
            return RoundsView(False)
        users = len({row.user_turn for row in rows})
        caption = (f"Every model call is a request: {len(rows):,} requests over {users:,} user "
                   f"turn{'s' if users != 1 else ''}, {rounds:,} of them after a round of tool results. Each user "
                   "turn with several requests is followed by its total.")
        return RoundsView(True, caption, {label: request_rows(turns) for label, turns in result.turns.items()})
    if has_tool_results(messages):
        return RoundsView(True, PER_USER_MESSAGE)
    return RoundsView(False)
