"""The answer a room can decide on: which strategy to ship, what it gives up, and at what cost.

One decision function serves every face. Its evidence is one
:class:`Outcome` per strategy, made from the plan of the latest request (what
it keeps, loses and costs there) and, when the whole conversation was
replayed, from the replay's totals (retention at every request, the cost of
every request, cache hits). :func:`decide` ranks them under a **priority**:

* ``retention`` (the default) — keep the most of what matters: the share of
  the must-survive facts sent, then the lower cost, then fewer tokens;
* ``cost`` — cheapest per conversation (fewer tokens without prices), then
  retention;
* ``cache`` — most prompt tokens read from the provider's cache, then cost.

A plan that drops or folds away the user's question or a pinned block is
never recommended (:attr:`Losses.refusal <contextfit.replays.losses.Losses.refusal>`
says why), nor one that could not fit. Strategies that score the same — equal,
or for an approximate profile within its count band — are said as a tie
(``strategy`` is ``None``). Everything is read from the evidence, in order,
with no randomness: the same conversation and settings give the same sentence
on every face.

>>> outcomes = [Outcome("truncate", prompt_tokens=1000, cost_request=0.004, facts=(("ORD-7", "lost"),),
...                     has_question=True, losses=Losses(dropped=("turns 1–2",), facts=("ORD-7",))),
...             Outcome("summarize", prompt_tokens=960, cost_request=0.0038, facts=(("ORD-7", "summary"),),
...                     has_question=True, losses=Losses(folded=("turns 1–2",)))]
>>> print(decide(outcomes).sentence)
Ship summarize: it keeps your question and the 1 must-survive fact where truncate keeps none, sends 4% fewer tokens than truncate and costs $0.20 less per 1,000 conversations; it folds turns 1–2 into its summary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

from ..amounts import money_short, percent
from ..errors import InvalidSettings
from ..fitting.results import FateCounts
from ..inputs.messages import HISTORY, SUMMARY, SYSTEM, meta_of
from .facts import IN_SUMMARY, LOST, VERBATIM, Fact, FactFinder, pinned_status
from .losses import Losses, question_position
from .volume import DEFAULT_CONVERSATIONS_PER_DAY, Reply, Volume

__all__ = ["BASES", "PRIORITIES", "Outcome", "Recommendation", "check_priority", "decide", "plan_fact_states"]

RETENTION, COST, CACHE = "retention", "cost", "cache"
PRIORITIES = (RETENTION, COST, CACHE)
#: Each priority in words, as a control and a sentence name it.
PRIORITY_WORDS = {RETENTION: "keep the most of what matters", COST: "cheapest", CACHE: "most prompt-cache hits"}
_TIE_WORDS = {RETENTION: "keeping what matters", COST: "cost", CACHE: "prompt-cache hits"}
#: What the evidence covers: the latest request only, or every request of the conversation.
REQUEST, CONVERSATION = "request", "conversation"
BASES = (REQUEST, CONVERSATION)


def check_priority(priority: Any) -> str:
    """``priority`` when it is one of :data:`PRIORITIES`, else ``INVALID_SETTINGS`` naming them.

    >>> check_priority("cost")
    'cost'
    >>> check_priority("fast")
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: priority must be one of retention, cost, cache; got 'fast'.
    """
    if priority not in PRIORITIES:
        raise InvalidSettings(f"priority must be one of {', '.join(PRIORITIES)}; got {priority!r}.")
    return priority


@dataclass(frozen=True, slots=True)
class Totals:
    """A strategy over every request of a replayed conversation."""

    requests: int
    retention: float | None
    tokens_sent: int
    cost: float | None
    cache_hit_rate: float
    first_loss_turn: int | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """One strategy's evidence: its plan of the latest request and, when replayed, its totals."""

    label: str
    #: why it could not be planned (``TOKEN_BUDGET_EXCEEDED: …``), else ``None``
    error: str | None = None
    losses: Losses | None = None
    counts: FateCounts | None = None
    prompt_tokens: int | None = None
    #: how far an approximate count may be from the real one, as a share of it (0: exact)
    band: float = 0.0
    #: whether the request has a user question to keep
    has_question: bool = False
    #: each must-survive fact in force at the latest request: (name, verbatim | summary | lost)
    facts: tuple[tuple[str, str], ...] = ()
    #: the latest request's cost, reply included, cache-aware (``None`` without prices)
    cost_request: float | None = None
    #: the share of the latest request's prompt read from the cache (``None``: not known)
    cached_share: float | None = None
    reply: Reply = field(default_factory=lambda: Reply(0, 0))
    totals: Totals | None = None
    #: must-survive facts in the middle of a prompt past the model's published effective context, in words
    #: (``placement.middle_risk``); said after what the strategy loses, never weighed in the ranking
    risk: str | None = None

    @property
    def refusal(self) -> str | None:
        """Why it is never recommended (drops the question or a pinned block), or ``None``."""
        return None if self.losses is None else self.losses.refusal

    @property
    def eligible(self) -> bool:
        return self.error is None and self.refusal is None

    @property
    def kept(self) -> int:
        return sum(status != LOST for _, status in self.facts)

    def retention(self, basis: str) -> float | None:
        if basis == CONVERSATION and self.totals is not None:
            return self.totals.retention
        return self.kept / len(self.facts) if self.facts else None

    def tokens(self, basis: str) -> int | None:
        if basis == CONVERSATION and self.totals is not None:
            return self.totals.tokens_sent
        return self.prompt_tokens

    def cost(self, basis: str) -> float | None:
        """Per conversation: every request's cost (replayed), or the latest request's."""
        if basis == CONVERSATION and self.totals is not None:
            return self.totals.cost
        return self.cost_request

    def cache(self, basis: str) -> float | None:
        if basis == CONVERSATION and self.totals is not None:
            return self.totals.cache_hit_rate
        return self.cached_share

    def volume(self, basis: str = CONVERSATION, conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY) -> Volume:
        """Its costs at volume (:class:`~contextfit.replays.volume.Volume`)."""
        requests = self.totals.requests if basis == CONVERSATION and self.totals is not None else 1
        return Volume(self.cost_request, self.cost(basis), requests, self.reply).at(conversations_per_day)

    def lost_line(self) -> str:
        """The **Lost:** line under this strategy (or why it has no plan)."""
        if self.error is not None:
            return f"No plan: {self.error}"
        return (self.losses or Losses()).line()

    def to_dict(self, basis: str = CONVERSATION,
                conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY) -> dict[str, Any]:
        volume = self.volume(basis, conversations_per_day)
        return {
            "strategy": self.label,
            "error": self.error,
            "notRecommended": self.refusal,
            "lost": self.lost_line(),
            "losses": None if self.losses is None else self.losses.to_dict(),
            "promptTokens": self.prompt_tokens,
            "tokens": self.tokens(basis),
            "dropped": None if self.counts is None else self.counts.dropped,
            "summarized": None if self.counts is None else self.counts.summarized,
            "compressed": None if self.counts is None else self.counts.compressed,
            "facts": [{"name": name, "status": status} for name, status in self.facts],
            "retention": self.retention(basis),
            "cacheHitRate": self.cache(basis),
            "costPerRequest": volume.per_request,
            "costPer1000Conversations": volume.per_1000,
            "costPerMonth": volume.per_month,
            "conversationsPerDay": volume.conversations_per_day,
            "risk": self.risk,
        }


@dataclass(frozen=True, slots=True)
class Recommendation:
    """What :func:`decide` returns; ``to_dict()`` is the ``recommendation`` of the API and the CLI."""

    strategy: str | None
    priority: str
    sentence: str
    #: what the recommended strategy does not send, in words (``None`` for a tie)
    loses: str | None
    #: US dollars per 1,000 conversations, reply included, cache-aware (``None``: a tie, or no prices)
    cost_per_1000_conversations: float | None
    basis: str
    runner_up: str | None = None
    tied: tuple[str, ...] = ()
    outcomes: tuple[Outcome, ...] = ()

    @property
    def reply_text(self) -> str:
        """Where the reply's size comes from, in words ("" with no strategy weighed)."""
        return self.outcomes[0].reply.text() if self.outcomes else ""

    @property
    def not_recommended(self) -> dict[str, str]:
        """Each strategy that is never recommended, and why."""
        return {o.label: o.refusal for o in self.outcomes if o.error is None and o.refusal is not None}

    def outcome(self, label: str) -> Outcome:
        return next(o for o in self.outcomes if o.label == label)

    def lost_lines(self) -> dict[str, str]:
        """The **Lost:** line of each strategy, in order: what a page shows under each column."""
        return {o.label: o.lost_line() for o in self.outcomes}

    def volumes(self, conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY) -> dict[str, Volume]:
        """Each strategy's costs at volume, for ``conversations_per_day``."""
        return {o.label: o.volume(self.basis, conversations_per_day) for o in self.outcomes}

    def redecide(self, priority: str) -> Recommendation:
        """The same evidence under another priority."""
        return decide(self.outcomes, priority, self.basis)

    def to_dict(self, conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY) -> dict[str, Any]:
        """The JSON shape (SPEC §10's five keys first; ``strategies`` holds each one's evidence,
        a month's cost at ``conversations_per_day``)."""
        return {
            "strategy": self.strategy,
            "priority": self.priority,
            "sentence": self.sentence,
            "loses": self.loses,
            "costPer1000Conversations": self.cost_per_1000_conversations,
            "basis": self.basis,
            "runnerUp": self.runner_up,
            "tied": list(self.tied),
            "notRecommended": [{"strategy": label, "reason": reason} for label, reason in self.not_recommended.items()],
            "reply": self.outcomes[0].reply.to_dict() if self.outcomes else None,
            "strategies": {o.label: o.to_dict(self.basis, conversations_per_day) for o in self.outcomes},
        }


def decide(outcomes: Sequence[Outcome], priority: str = RETENTION, basis: str = REQUEST) -> Recommendation:
    """The recommendation over ``outcomes`` (one per strategy, in the order the faces list them)
    under ``priority``; ``basis``: what the evidence covers (``request`` or ``conversation``)."""
    check_priority(priority)
    if basis not in BASES:
        raise InvalidSettings(f"basis must be one of {', '.join(BASES)}; got {basis!r}.")
    outcomes = tuple(outcomes)
    eligible = [o for o in outcomes if o.eligible]
    if not eligible:
        return Recommendation(None, priority, _nothing(outcomes), None, None, basis, outcomes=outcomes)
    order = {o.label: position for position, o in enumerate(outcomes)}
    ranked = sorted(eligible, key=cmp_to_key(lambda a, b: _compare(a, b, priority, basis) or
                                             order[a.label] - order[b.label]))
    best = ranked[0]
    tied = [o for o in ranked if _compare(o, best, priority, basis) == 0]
    undecided = _cache_undecided(eligible, priority, basis)
    if len(tied) > 1:
        return Recommendation(None, priority, _with(_tie(tied, priority, basis), undecided), None, None, basis,
                              tied=tuple(o.label for o in tied), outcomes=outcomes)
    runner = ranked[1] if len(ranked) > 1 else None
    return Recommendation(best.label, priority, _with(_winner(best, runner, priority, basis, outcomes), undecided),
                          (best.losses or Losses()).words(), best.volume(basis).per_1000, basis,
                          None if runner is None else runner.label, outcomes=outcomes)


def _cache_undecided(eligible: Sequence[Outcome], priority: str, basis: str) -> str:
    """Under the cache priority, when every strategy reads as much from the prompt cache as the others:
    the clause that says so at the sentence's end (the ranking then falls to cost), else nothing.

    >>> _cache_undecided([Outcome("a", cached_share=0.0), Outcome("b", cached_share=0.0)], CACHE, REQUEST)
    'no strategy reads more from the prompt cache than another here (0% each), so cost decided'
    """
    if priority != CACHE or len(eligible) < 2:
        return ""
    shares = [o.cache(basis) for o in eligible]
    band = max(o.band for o in eligible)
    if any(share is None for share in shares) or any(_differs(share, shares[0], band) for share in shares):
        return ""
    return f"no strategy reads more from the prompt cache than another here ({percent(shares[0])} each), so cost decided"


def _with(sentence: str, clause: str) -> str:
    """``sentence`` with ``clause`` added before its full stop (one sentence still)."""
    return f"{sentence[:-1]}; {clause}." if clause and sentence.endswith(".") else sentence


# -- ranking


def _compare(a: Outcome, b: Outcome, priority: str, basis: str) -> int:
    """-1 when ``a`` ranks before ``b`` under ``priority``, 1 after, 0 when they tie."""
    band = max(a.band, b.band)
    retention = _higher(a.retention(basis), b.retention(basis), 0.0)
    cost = _lower(a.cost(basis), b.cost(basis), band)
    tokens = _lower(a.tokens(basis), b.tokens(basis), band)
    cache = _higher(a.cache(basis), b.cache(basis), band)
    money = cost if a.cost(basis) is not None and b.cost(basis) is not None else tokens
    keys = {RETENTION: (retention, money, tokens), COST: (money, retention, tokens), CACHE: (cache, money, retention)}
    return next((result for result in keys[priority] if result), 0)


def _lower(a: float | None, b: float | None, band: float) -> int:
    """-1 when ``a`` is lower than ``b`` beyond the band, 1 when higher, 0 when they tie (or one is unknown)."""
    if a is None or b is None or _same(a, b, band):
        return 0
    return -1 if a < b else 1


def _higher(a: float | None, b: float | None, band: float) -> int:
    return -_lower(a, b, band)


def _same(a: float, b: float, band: float) -> bool:
    """Equal, or within the count band of an approximate profile (``band``: a share of the larger)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or abs(a - b) <= band * max(abs(a), abs(b))


# -- the sentences


def _winner(best: Outcome, runner: Outcome | None, priority: str, basis: str, outcomes: Sequence[Outcome]) -> str:
    keeps = _keeps(best, basis)
    if runner is None:
        others = [o for o in outcomes if o is not best]
        why = _why_alone(others)
        trade = _figures(best, basis)
        return f"Ship {best.label}{why}: it {keeps}{trade}; it {(best.losses or Losses()).words()}{_risk(best)}."
    clauses = [_keeps(best, basis, runner)]
    mine, theirs = best.cache(basis), runner.cache(basis)
    if _differs(mine, theirs, max(best.band, runner.band)) and percent(mine) != percent(theirs):
        clauses.append(_cache_clause(best, runner, basis))
    clauses.append(_tokens_clause(best, runner, basis))
    cost = _cost_clause(best, runner, basis)
    if cost:
        clauses.append(cost)
    said = ", ".join(clauses[:-1]) + " and " + clauses[-1]
    return f"Ship {best.label}: it {said}; it {(best.losses or Losses()).words()}{_risk(best)}."


def _risk(o: Outcome) -> str:
    """``; 2 must-survive facts sit in the middle of …``: the risk, in the same sentence, or nothing."""
    return f"; {o.risk}" if o.risk else ""


def _keeps(o: Outcome, basis: str, other: Outcome | None = None) -> str:
    """``keeps your question and all 3 must-survive facts`` (and, against ``other``, where it differs)."""
    question = "your question and " if o.has_question else ""
    share = o.retention(basis)
    if share is None:
        return "keeps your question" if o.has_question else "keeps every block it can"
    if basis == CONVERSATION and o.totals is not None:
        facts = ("every must-survive fact at every request" if share >= 1
                 else f"{percent(share)} of the must-survive facts over the {o.totals.requests:,} requests")
    else:
        total = len(o.facts)
        facts = (f"all {total} must-survive facts" if share >= 1 and total > 1
                 else "the 1 must-survive fact" if share >= 1
                 else f"{o.kept} of the {total} must-survive facts")
    said = f"keeps {question}{facts}"
    if other is not None:
        theirs = other.retention(basis)
        if theirs is not None and not _same(share, theirs, 0.0):
            said += f" where {other.label} keeps {_share_words(other, basis)}"
    return said


def _share_words(o: Outcome, basis: str) -> str:
    share = o.retention(basis) or 0.0
    if basis == CONVERSATION and o.totals is not None:
        return percent(share)
    return "none" if o.kept == 0 else f"{o.kept} of them"


def _tokens_clause(best: Outcome, runner: Outcome, basis: str) -> str:
    mine, theirs = best.tokens(basis), runner.tokens(basis)
    if mine is None or theirs is None or not theirs:
        return f"sends as many tokens as {runner.label}"
    change = (theirs - mine) / theirs
    if _same(mine, theirs, max(best.band, runner.band)):
        near = "about " if mine != theirs else ""
        return f"sends {near}as many tokens as {runner.label}"
    if round(abs(change) * 100) == 0:
        return f"sends {abs(theirs - mine):,} {'fewer' if change > 0 else 'more'} tokens than {runner.label}"
    return f"sends {round(abs(change) * 100)}% {'fewer' if change > 0 else 'more'} tokens than {runner.label}"


def _cost_clause(best: Outcome, runner: Outcome, basis: str) -> str | None:
    mine, theirs = best.cost(basis), runner.cost(basis)
    if mine is None or theirs is None:
        return None
    difference = (theirs - mine) * 1000
    if _same(mine, theirs, max(best.band, runner.band)) or money_short(abs(difference)) == "$0":
        return "costs the same per 1,000 conversations"
    return f"costs {money_short(abs(difference))} {'less' if difference > 0 else 'more'} per 1,000 conversations"


def _cache_clause(best: Outcome, runner: Outcome, basis: str) -> str:
    mine, theirs = best.cache(basis), runner.cache(basis)
    if mine is None or theirs is None:
        return "reads no more of its prompt from the cache"
    return f"reads {percent(mine)} of its prompt from the cache where {runner.label} reads {percent(theirs)}"


def _differs(a: float | None, b: float | None, band: float) -> bool:
    return a is not None and b is not None and not _same(a, b, band)


def _figures(o: Outcome, basis: str) -> str:
    cost = o.volume(basis).per_1000
    tokens = o.tokens(basis)
    parts = []
    if tokens is not None:
        parts.append(f"sends {tokens:,} tokens")
    if cost is not None:
        parts.append(f"costs {money_short(cost)} per 1,000 conversations")
    return (", " + " and ".join(parts)) if parts else ""


def _why_alone(others: Sequence[Outcome]) -> str:
    if not others:
        return ""
    refused = [o for o in others if o.error is None and o.refusal]
    failed = [o for o in others if o.error is not None]
    reasons = [f"{o.label} {o.refusal}" for o in refused] + [f"{o.label} could not fit" for o in failed]
    return f" (the only choice: {_and(reasons)})" if reasons else ""


def _tie(tied: Sequence[Outcome], priority: str, basis: str) -> str:
    first = tied[0]
    names = _and([o.label for o in tied])
    if all(o.losses is not None and o.losses.nothing for o in tied):  # everything fits
        cost = first.volume(basis).per_1000
        at = f", {money_short(cost)} per 1,000 conversations" if cost is not None else ""
        every = "all" if len(tied) > 2 else "both"
        return (f"Any of {names} will do: {every} send every block ({first.tokens(basis) or 0:,} tokens{at}); "
                f"they differ only once the conversation outgrows the budget{_risk(first)}.")
    keeps = "each " + _keeps(first, basis).replace("keeps", "keep", 1)
    cost = first.volume(basis).per_1000
    at = f" at {money_short(cost)} per 1,000 conversations" if cost is not None else ""
    if len({(o.tokens(basis), o.losses) for o in tied}) == 1:  # the same prompt: nothing to choose between here
        return (f"Any of {names} will do: they send the same prompt here — each {_keeps(first, basis)}{at} and "
                f"{first.losses.words() if first.losses is not None else 'loses the same'}; they part ways only on "
                f"conversations that give each of them work of its own{_risk(first)}.")
    why = "within the count band of the approximate profile" if any(o.band for o in tied) else "equal figures"
    return (f"No single answer for {_TIE_WORDS[priority]}: {names} tie — they {keeps}{at} ({why}); "
            "choose by what each loses, or by another priority.")


def _nothing(outcomes: Sequence[Outcome]) -> str:
    if not outcomes:
        return "Nothing to recommend: no strategy was planned."
    reasons = [f"{o.label} {o.refusal}" for o in outcomes if o.error is None and o.refusal] + \
              [f"{o.label} could not fit" for o in outcomes if o.error is not None]
    advice = (" Raise the context limit or lower the reserve, or pin what must stay." if any(o.refusal for o in outcomes)
              else " Raise the context limit or lower the reserve.")
    return f"No strategy can be shipped as it stands: {_and(reasons)}.{advice}"


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# -- the evidence of one plan


def plan_fact_states(plan: Any, facts: Sequence[Fact]) -> tuple[tuple[str, str], ...]:
    """Each fact in force at ``plan``'s request — a text or regex one that one of its blocks holds
    (sent or not: the card, the lore, the memory and the messages alike), a pinned message it
    holds — with its status: ``verbatim`` (a sent block holds it), ``summary`` (only a summary
    line quotes it) or ``lost``."""
    if not facts:
        return ()
    finder = FactFinder(facts)
    inputs = [block for block in plan.blocks if block.origin == "input"]
    ids = {block.id for block in inputs}
    said = frozenset().union(*(finder.found_in(block.content) for block in inputs))
    asking = question_position([block.message for block in inputs])  # a "besides" fact is not kept by the question
    asked = None if asking is None else inputs[asking]
    before = asking if asking is not None else len(inputs)
    said_before = frozenset().union(*(finder.found_in(block.content) for block in inputs[:before]
                                      if block.kind == HISTORY or block.kind == SYSTEM),
                                    *(finder.found_in(block.content) for block in inputs
                                      if block.kind not in (HISTORY, SYSTEM)))
    sent = [block for block in plan.blocks if block.included and block.origin != "reasoning"]
    summaries = [block for block in sent if block.kind == SUMMARY]
    plain = [block for block in sent if block.kind != SUMMARY]
    in_plain = frozenset().union(*(finder.found_in(block.content) for block in plain))
    besides_plain = frozenset().union(*(finder.found_in(block.content) for block in plain if block is not asked))
    in_summary = frozenset().union(*(finder.found_in(block.content) for block in summaries))
    pairs = [(block.id, bool(meta_of(block.message).get("compressed"))) for block in plain]
    states = []
    for index, fact in enumerate(facts):
        if fact.text is None and fact.regex is None:
            wanted = str(fact.message) if not isinstance(fact.message, int) else nth_input_id(inputs, fact.message)
            if wanted not in ids:
                continue
            states.append((fact.name, pinned_status(wanted, pairs, [block.message for block in summaries])))
        elif index in (said_before if fact.besides else said):
            kept = besides_plain if fact.besides else in_plain
            states.append((fact.name, VERBATIM if index in kept else IN_SUMMARY if index in in_summary else LOST))
    return tuple(states)


def nth_input_id(inputs: Sequence[Any], position: int) -> str | None:
    """The id of the message a fact pinned to message ``position`` (an index) names among a plan's
    input blocks: the ``position``-th chat message (system or history), as :func:`plan_fact_states` reads it."""
    history = [block for block in inputs if block.kind == HISTORY or block.kind == SYSTEM]
    return history[position].id if 0 <= position < len(history) else None


def has_question(plan: Any) -> bool:
    """Whether ``plan``'s request holds a user question (a user message that is no tool result)."""
    return question_position([block.message for block in plan.blocks if block.origin == "input"]) is not None


def relative_band(plan: Any) -> float:
    """How far the plan's count may be above its point estimate, as a share of the count (0: exact)."""
    estimate = getattr(plan, "prompt_tokens_estimate", None)
    if not plan.tokenizer.approximate or estimate is None or not plan.prompt_tokens:
        return 0.0
    return max(plan.prompt_tokens - estimate, 0) / plan.prompt_tokens


def lost_facts(states: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(name for name, status in states if status == LOST)


