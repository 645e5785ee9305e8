"""An agent run's requests on Compare: which request each block came in with, and which one overflowed.

An agent sends a request for every model call: the user's message, then
every round of tool results the model answers without a user message in
between (SPEC §9). Compare plans the conversation as it stands, so a
presenter needs to point at the round that pushed it past the budget.
:func:`requests_of` lists the requests of a plan's chat — what triggered
each, the messages it added, their tokens, and the prompt it would send
with nothing left out (every block before it, tool definitions and the
chat's framing included) — and marks the first one over the budget;
:func:`block_requests` names, for each block of the plan, the request it
came in with ("turn 2 · round 1"), or "every request" for what each one
sends (system prompt, card, lore, tools).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..inputs import messages as msg
from ..pipeline.plan import PlanBlock, PromptPlan
from ..replays.run import TOOL_RESULTS, model_calls

#: What a block that every request sends says in the "request" column.
EVERY_REQUEST = "every request"
#: What the chat's closing reply says (it answers the last request; no request sends it yet).
REPLY = "the reply"


@dataclass(frozen=True, slots=True)
class Request:
    """One model call of the chat: its place, what triggered it, and its prompt with nothing left out."""

    number: int
    user_turn: int
    #: 0 for the user's message, then 1, 2… for each tool round the model answers
    round: int
    trigger: str
    messages: int
    tokens_added: int
    whole_prompt: int
    over_budget: bool = False

    @property
    def name(self) -> str:
        """``turn 2`` for a user message, ``turn 2 · round 1`` for a tool round."""
        return f"turn {self.user_turn}" + (f" · round {self.round}" if self.round else "")

    def to_row(self) -> dict[str, Any]:
        """A table row (thousands separators; the first request over the budget says so)."""
        return {"request": self.number, "call": self.name, "sent because of": self.trigger,
                "messages added": f"{self.messages:,}", "tokens added": f"{self.tokens_added:,}",
                "prompt before fitting": f"{self.whole_prompt:,}",
                "budget": "overflows here" if self.over_budget else ""}


def _history(plan: PromptPlan) -> list[PlanBlock]:
    return [block for block in plan.blocks if block.origin == "input" and block.kind == msg.HISTORY]


def _every_request(block: PlanBlock) -> bool:
    """A block of the chat's own (not one a strategy inserted) that every request sends: tools, system, card, lore."""
    return block.origin in ("input", "request") and block.kind != msg.HISTORY


def _calls(history: Sequence[dict]) -> list[tuple[int, int, int, str]]:
    """``(last position, user turn, round, trigger in words)`` of each model call of the history
    messages, as a replay counts them (:func:`~contextfit.replays.run.model_calls`)."""
    return [(call.position, call.user_turn, call.round,
             _results(history, call.position) if call.trigger == TOOL_RESULTS
             else f"the user's message {msg.message_id(history[call.position], call.position)}")
            for call in model_calls(history)]


def _results(history: Sequence[dict], last: int) -> str:
    """The tool results that end at ``last``, in words."""
    first = last
    while first > 0 and msg.role_of(history[first - 1]) != "assistant":
        first -= 1
    count = sum(1 for message in history[first:last + 1] if msg.role_of(message) != "system")
    return f"{count} tool result{'' if count == 1 else 's'}"


def is_agent_run(plan: PromptPlan) -> bool:
    """Whether the chat has a tool round the model answers (a request that is no user message)."""
    return any(round_ for _, _, round_, _ in _calls([block.message for block in _history(plan)]))


def requests_of(plan: PromptPlan) -> list[Request]:
    """The requests of ``plan``'s chat, in order, the first whose prompt passes the budget marked.

    >>> from contextfit import plan_prompt
    >>> call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    >>> chat = [{"role": "user", "content": "Find it."}, {"role": "assistant", "content": None, "tool_calls": [call]},
    ...         {"role": "tool", "tool_call_id": "c1", "content": "result " * 400}, {"role": "assistant", "content": "Done."}]
    >>> [(r.name, r.trigger, r.over_budget) for r in requests_of(plan_prompt(chat, model="gpt-4o", context_limit=300,
    ...                                                                      response_reserve=50))]
    [('turn 1', "the user's message m0", False), ('turn 1 · round 1', '1 tool result', True)]
    >>> block_requests(plan_prompt(chat, model="gpt-4o"))
    ['turn 1', 'turn 1 · round 1', 'turn 1 · round 1', 'the reply']
    """
    history = _history(plan)
    framing = max(plan.prompt_tokens - sum(block.tokens or 0 for block in plan.blocks if block.included), 0)
    always = sum(block.tokens or 0 for block in plan.blocks if _every_request(block))
    out, start, total, over = [], 0, framing + always, False
    for number, (last, turn, round_, trigger) in enumerate(_calls([block.message for block in history]), start=1):
        added = sum(block.tokens or 0 for block in history[start:last + 1])
        total += added
        first_over = not over and total > plan.budget
        over = over or first_over
        out.append(Request(number, turn, round_, trigger, last + 1 - start, added, total, first_over))
        start = last + 1
    return out


def block_requests(plan: PromptPlan) -> list[str]:
    """For each block of ``plan``, the request it came in with (:attr:`Request.name`), "every request"
    for a block every request sends, "the reply" for what follows the last request."""
    history = _history(plan)
    positions = {id(block): position for position, block in enumerate(history)}
    calls = _calls([block.message for block in history])
    names = []
    for block in plan.blocks:
        position = positions.get(id(block))
        if position is None:
            names.append(EVERY_REQUEST if _every_request(block) else "")
            continue
        call = next((c for c in calls if c[0] >= position), None)
        names.append(REPLY if call is None else f"turn {call[1]}" + (f" · round {call[2]}" if call[2] else ""))
    return names


def with_request_column(rows: list[dict], plans: dict) -> tuple[list[dict], bool]:
    """The edit table's ``rows`` (each with its block ``id``) with a ``request`` column naming the
    request each block came with (:func:`block_requests`, read from the first plan) when the chat is
    an agent run; unchanged otherwise. Also whether the column was added.

    >>> from contextfit import plan_prompt
    >>> plain = plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o")
    >>> with_request_column([{"id": "m0"}], {"truncate": plain})
    ([{'id': 'm0'}], False)
    """
    first = next((plan for plan in plans.values() if isinstance(plan, PromptPlan)), None)
    if first is None or not is_agent_run(first):
        return rows, False
    named = dict(zip([block.id for block in first.blocks], block_requests(first)))
    return [{**row, "request": named.get(row["id"], "")} for row in rows], True
