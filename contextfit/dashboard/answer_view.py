"""The answer on top of Compare: which strategy to ship, what it costs and what each one loses.

The sentence is :func:`~contextfit.replays.answer.recommendation_for`'s — the
very sentence ``contextfit fit FILE --recommend`` prints for the same
conversation and settings — decided under the sidebar's priority; the costs
are each strategy's request with its reply at the catalog's prices, per
1,000 conversations and per month at the sidebar's conversations a day (a
request's cost to four significant figures, as Replay writes it: "$0.004895";
a month at :func:`~contextfit.amounts.money_month`'s one rule: "$93", "$1.2K");
the retention protocol's figure is cited for the recommended strategy (:mod:`contextfit.retention.headline`). Under each
strategy's column: a short **Lost:** line in words, where its must-survive
facts sit (start, middle, end) and the effective-context note when the
prompt is past the model's published figure.

The recommendation is worked out once per input and kept for the session
(:func:`cached_recommendation`): changing the priority decides again from
the same evidence, without fitting anything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..amounts import money, money_month, money_short
from ..errors import ContextfitError
from ..pipeline.plan import PromptPlan
from ..pipeline.settings import PlanSettings
from ..replays.answer import recommendation_for
from ..replays.must_survive import DECLARED, DEFAULT_FACTS
from ..replays.placement import fact_placement
from ..replays.recommend import RETENTION, Recommendation
from ..replays.volume import Volume, a_day
from ..retention.headline import citation
from .answer_box import priority_text
from .fact_list import FactList

#: Page CSS for the answer (static: no user text goes into it): the sentence reads first.
CSS = """<style>
.st-key-answer [data-testid="stMarkdownContainer"]:not([data-testid="stCaptionContainer"] *) > p {
  font-size: 1.2rem; font-weight: 600; line-height: 1.4; }
</style>"""

#: The session key of the latest recommendation: (its input's digest, the recommendation).
_KEPT = "compare_recommendation"


def cached_recommendation(state: MutableMapping[str, Any], conversation: Any, conversation_key: Any,
                          settings: PlanSettings, strategies: Sequence[str], facts: Sequence[Any] | None,
                          priority: str = RETENTION) -> Recommendation:
    """:func:`~contextfit.replays.answer.recommendation_for` of the conversation (named by
    ``conversation_key``, its source's key), kept in ``state`` while its input stays the same;
    another ``priority`` decides again from the kept evidence."""
    digest = hashlib.sha256(json.dumps([repr(conversation_key), repr(settings), list(strategies), facts],
                                       sort_keys=True, default=repr).encode("utf-8", "surrogatepass")).hexdigest()
    found = state.get(_KEPT)
    if found is None or found[0] != digest:
        found = (digest, recommendation_for(conversation, settings, strategies=list(strategies), facts=facts))
        state[_KEPT] = found
    answer = found[1]
    return answer if answer.priority == priority else answer.redecide(priority)


@dataclass(frozen=True, slots=True)
class ColumnAnswer:
    """What the answer says under one strategy's column."""

    #: "$0.0050 a request · $150 a month" (reply included), or why there is none
    cost: str
    #: the **Lost:** line (or why it could not plan)
    lost: str
    #: "Not recommended: it drops your question." or ``None``
    refusal: str | None = None


@dataclass(frozen=True, slots=True)
class AnswerView:
    """The answer, as Compare draws it."""

    sentence: str
    strategy: str | None
    #: what the ranking favours, and where the reply's size comes from
    basis: str
    #: the recommended strategy's costs at volume, in one line (``None``: a tie, or no prices)
    costs: str | None
    #: the retention protocol's figure for the recommended strategy (``None``: none measured)
    citation: str | None
    columns: Mapping[str, ColumnAnswer]


def answer_view(answer: Recommendation, conversations_per_day: int) -> AnswerView:
    """What the page says about ``answer`` at ``conversations_per_day``.

    >>> from contextfit.inputs.samples import load_sample
    >>> from contextfit.dashboard.setup import suggested_setup
    >>> conversation = load_sample("roleplay")
    >>> view = answer_view(recommendation_for(conversation, suggested_setup(conversation).settings), 2_000)
    >>> view.strategy, view.costs
    ('fact-ledger', 'A request costs $0.004895 with its reply · $4.90 per 1,000 conversations · $294 a month at 2,000 conversations a day')
    >>> view.columns["truncate"]
    ColumnAnswer(cost='$0.005052 a request · $303 a month', lost='Lost: lore “The Lamp of Orrin”, “The Drowned Bell”, 2 example chats and memories 1–2.', refusal=None)
    """
    volumes = answer.volumes(conversations_per_day)
    reply = answer.reply_text
    basis = priority_text(answer.priority) + (f" · {reply}" if reply else "")
    costs = None
    if answer.strategy is not None and volumes[answer.strategy].per_request is not None:
        costs = volume_line(volumes[answer.strategy])
    columns = {}
    for outcome in answer.outcomes:
        volume = volumes[outcome.label]
        cost = ("no catalog price" if volume.per_request is None else
                f"{money(volume.per_request)} a request · {money_month(volume.per_month)} a month")
        columns[outcome.label] = ColumnAnswer("no plan" if outcome.error else cost, outcome.lost_line(),
                                              f"Not recommended: it {outcome.refusal}." if outcome.refusal else None)
    return AnswerView(answer.sentence, answer.strategy, basis, costs, citation(answer.strategy), columns)


def volume_line(volume: Volume) -> str:
    """A strategy's costs at volume, reply included, as money reads.

    >>> from contextfit.replays.volume import Reply
    >>> volume_line(Volume(0.00041, 0.00041, 1, Reply(80, 3), 25_000))
    'A request costs $0.0004100 with its reply · $0.41 per 1,000 conversations · $308 a month at 25,000 conversations a day'
    >>> volume_line(Volume(0.0031123, 0.0031123, 1, Reply(80, 3), 1)).endswith("$0.093 a month at 1 conversation a day")
    True
    """
    return (f"A request costs {money(volume.per_request)} with its reply · {money_short(volume.per_1000)} per "
            f"1,000 conversations · {money_month(volume.per_month)} a month at {a_day(volume.conversations_per_day)}")


def facts_line(listed: FactList) -> str:
    """The answer's line on the must-survive facts it weighed, and where to edit them: in brackets after a
    list of names, a sentence of its own after a line that ends one (its own brackets included).

    >>> from contextfit.dashboard.fact_list import FactList, Item
    >>> facts_line(FactList((Item("Mara", "Mara", "the character's name"),)))
    'Must-survive facts: 1, found in the conversation — Mara (edit the list under Edit the conversation).'
    >>> facts_line(FactList(()))[-89:]
    '(retention follows the entity rule meanwhile). Edit the list under Edit the conversation.'
    """
    summary = listed.summary()
    if summary.endswith("."):
        return f"{summary} Edit the list under Edit the conversation."
    return f"{summary} (edit the list under Edit the conversation)."


def placement_line(plan: PromptPlan, listed: FactList) -> str | None:
    """Where the followed must-survive facts sit in ``plan``'s prompt ("facts: 3 at the start, 1 in the
    middle"); ``None`` when none is followed."""
    facts = listed.facts()
    if facts is None:
        facts = [item.fact for item in listed.items]
    if not facts:
        return None
    try:
        placement = fact_placement(plan, facts, rule=DECLARED if listed.declared or listed.edited else DEFAULT_FACTS)
    except ContextfitError:  # a fact the list keeps out says so above; placement is only a note
        return None
    if not placement.facts:
        return None
    return "Where the " + placement.line().replace("facts: ", "must-survive facts sit: ", 1)


def effective_note(plan: PromptPlan) -> str | None:
    """The effective-context note, when the prompt is past the model's published effective length."""
    effective = plan.effective_context
    return effective.message() if effective is not None and effective.exceeded else None
