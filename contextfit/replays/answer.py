"""The recommendation in one call, for every face.

* :func:`recommendation_for` — a conversation and its settings (Compare, the
  HTML report, ``contextfit fit --recommend``): the latest request under
  each strategy, priced with what it shares with the request before it (a
  replay of the last two requests: a few fits, whatever the chat's length).
* :func:`recommend` — evidence already at hand: a
  :class:`~contextfit.replays.run.Replay` (every request: the Replay page,
  ``contextfit replay``, ``POST /api/v2/replay``), the plans of one request,
  or a :class:`~contextfit.replays.recommend.Recommendation` to decide again
  under another priority.

For the same conversation and settings, Compare, the report and ``contextfit
fit --recommend`` say the very same sentence: they make it with the same call.

>>> from contextfit.inputs.samples import load_sample
>>> answer = recommendation_for(load_sample("roleplay"))
>>> answer.strategy, answer.basis, answer.sentence.split(":")[0]
('fact-ledger', 'request', 'Ship fact-ledger')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ContextfitError
from ..inputs.messages import role_of
from ..pipeline.plan import BUILTIN_STRATEGIES, PromptPlan
from ..pipeline.settings import PlanSettings, conversation_model
from ..tokens.chat_counter import token_counter
from ..tokens.models import get_model
from .facts import LOST, declared_facts
from .losses import Reading, losses, turn_numbers
from .must_survive import as_facts, default_facts
from .placement import middle_risk, placed_facts
from .recommend import (
    REQUEST, RETENTION, Outcome, Recommendation, check_priority, decide, has_question, plan_fact_states,
    relative_band,
)
from .run import REPLIES_READ, Replay, replay
from .volume import reply_of, request_cost

__all__ = ["recommend", "recommendation_for"]


def recommendation_for(conversation: Any, settings: PlanSettings | None = None, *,
                       strategies: Sequence[Any] | str | None = BUILTIN_STRATEGIES, priority: str = RETENTION,
                       facts: Sequence[Any] | None = None, **keywords: Any) -> Recommendation:
    """The recommendation for the latest request of ``conversation`` (a
    :class:`~contextfit.Conversation` or message dicts) under ``settings`` and
    ``keywords`` as :func:`~contextfit.plan_prompt` takes them (Compare's hand edits:
    ``overrides``); ``facts``: the must-survive facts (default: what the conversation
    marks, :func:`~contextfit.replays.must_survive.must_survive`)."""
    check_priority(priority)
    if settings is None and keywords.get("model") is None:
        keywords["model"] = conversation_model(conversation)
    result = replay(conversation, settings=settings, strategies=strategies, facts=facts, last=2, to_the_end=True,
                    **keywords)
    return decide(result.outcomes, priority, REQUEST)


def recommend(source: Replay | Recommendation | Mapping[str, PromptPlan | ContextfitError],
              priority: str = RETENTION, *, facts: Sequence[Any] | None = None) -> Recommendation:
    """The recommendation from evidence at hand: a replay (over every request it replayed),
    a recommendation (decided again under ``priority``), or the plans of one request
    (strategy → plan or its error; ``facts`` as :func:`recommendation_for`'s; the request is
    priced without a cache read, as a conversation's first)."""
    check_priority(priority)
    if isinstance(source, Replay):
        return source.recommend(priority)
    if isinstance(source, Recommendation):
        return source.redecide(priority)
    return decide(plan_outcomes(source, facts), priority, REQUEST)


def plan_outcomes(plans: Mapping[str, PromptPlan | ContextfitError],
                  facts: Sequence[Any] | None = None) -> tuple[Outcome, ...]:
    """One :class:`~contextfit.replays.recommend.Outcome` per plan of one request."""
    fitted = [plan for plan in plans.values() if isinstance(plan, PromptPlan)]
    if not fitted:
        return tuple(Outcome(name, error=f"{plan.code}: {plan}") for name, plan in plans.items())
    first = fitted[0]
    inputs = [block.message for block in first.blocks if block.origin == "input"]
    checked = declared_facts(as_facts(default_facts(inputs)) if facts is None else facts)
    reply = reply_of(_replies(first, inputs)[-REPLIES_READ:])
    try:
        prices = get_model(first.model).prices
    except ContextfitError:
        prices = None
    out = []
    reading = Reading.of(first)
    for name, plan in plans.items():
        if not isinstance(plan, PromptPlan):
            out.append(Outcome(name, error=f"{plan.code}: {plan}", reply=reply))
            continue
        states = plan_fact_states(plan, checked)
        out.append(Outcome(
            name, losses=losses(plan, (fact for fact, status in states if status == LOST), reading),
            counts=plan.fit.counts(),
            prompt_tokens=plan.prompt_tokens, band=relative_band(plan), has_question=has_question(plan), facts=states,
            cost_request=request_cost(prices, plan.prompt_tokens, reply.tokens), cached_share=None, reply=reply,
            risk=middle_risk(plan, placed_facts(plan, checked, states)),
        ))
    return tuple(out)


def _replies(plan: PromptPlan, inputs: list[dict]) -> list[int]:
    """The reply tokens of each turn of the plan's request (the assistant messages after each user question)."""
    count = token_counter(plan.model).count_message
    empty = count({"role": "assistant", "content": ""})
    per_turn: dict[int, int] = {}
    for block, turn in zip(inputs, turn_numbers(inputs)):
        if turn and role_of(block) == "assistant":
            per_turn[turn] = per_turn.get(turn, 0) + max(count(block) - empty, 0)
    return list(per_turn.values())
