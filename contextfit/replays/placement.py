"""Where each must-survive fact sits in what is sent: the start, the middle or the end of the prompt.

A model recalls a fact best near the start or the end of a long prompt and worst
in its middle (Liu et al., "Lost in the Middle", arXiv 2307.03172), and recall
falls as the prompt grows (RULER, arXiv 2404.06654; NoLiMa, arXiv 2502.05167:
:mod:`contextfit.tokens.effective`). So beside *whether* each fact is sent
(:func:`~contextfit.replays.recommend.plan_fact_states`), a plan says *where*.

**The rule.** The prompt is read in the order the provider receives it: the
request's tool definitions first (both providers put them ahead of the
conversation), then, for an Anthropic request, the ``system`` text (every
system-role block but a summary, wherever it stood), then every other sent
block in prompt order. A block starts at the sum of the ``tokens`` of the sent
blocks before it. A fact's **offset** is the start of the first block that holds
it plus the tokens of that block's text before it (counted with the model's
tokenizer, the block's role header left out); its **share** is offset /
``prompt_tokens``, and it is at the

* **start** when offset < prompt_tokens / 3,
* **middle** when prompt_tokens / 3 ≤ offset < 2 × prompt_tokens / 3,
* **end** otherwise;

``where`` is ``None`` for a fact not sent (status ``lost``). The block that
counts is the one that makes the fact's status: a ``verbatim`` fact's first sent
message or block that holds it (for a ``besides`` fact, not the user's own
question), a ``summary`` fact's summary or ledger block (the quoted line's
place in it). A pinned message is where that message is sent (or the summary
that quotes it starts).

The facts are the caller's, else the default must-survive facts
(:func:`~contextfit.replays.must_survive.default_facts`: the list the
recommendation uses).

>>> from contextfit.pipeline.plan import plan_prompt
>>> chat = [{"role": "system", "content": "The vault code is 7731."},
...         *[{"role": "user" if i % 2 == 0 else "assistant", "content": f"Filler line {i}. " * 30} for i in range(8)],
...         {"role": "user", "content": "Remind me of the vault code and of Filler line 7."}]
>>> placement = fact_placement(plan_prompt(chat, model="gpt-4o"), ["7731", "Filler line 4"])
>>> [(fact.name, fact.where) for fact in placement.facts], placement.line()
([('7731', 'start'), ('Filler line 4', 'middle')], 'facts: 1 at the start, 1 in the middle')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any

from ..errors import ContextfitError, InvalidSettings
from ..inputs.messages import SUMMARY, SYSTEM_ROLES, meta_of
from ..tokens.chat_counter import token_counter
from .facts import IN_SUMMARY, LOST, VERBATIM, Fact, FactFinder, declared_facts
from .losses import question_position
from .must_survive import DECLARED, DEFAULT_FACTS, MustSurvive, as_facts, default_facts
from .recommend import nth_input_id, plan_fact_states

__all__ = ["FactPlacement", "PlacedFact", "fact_placement", "middle_risk", "placed_facts", "third",
           "with_fact_placement"]

START, MIDDLE, END = "start", "middle", "end"
THIRDS = (START, MIDDLE, END)
#: How each third reads in the one-line summary.
_WORDS = {START: "at the start", MIDDLE: "in the middle", END: "at the end"}


def third(offset: int, prompt_tokens: int) -> str:
    """The third of a ``prompt_tokens`` prompt that token ``offset`` falls in (module docstring).

    >>> [third(offset, 9) for offset in (0, 2, 3, 5, 6, 8)], third(0, 0)
    (['start', 'start', 'middle', 'middle', 'end', 'end'], 'start')
    """
    if 3 * offset < prompt_tokens or prompt_tokens <= 0:
        return START
    return MIDDLE if 3 * offset < 2 * prompt_tokens else END


@dataclass(frozen=True, slots=True)
class PlacedFact:
    """One must-survive fact in force at the plan's request, and where it sits."""

    name: str
    #: ``verbatim``, ``summary`` (only a summary or ledger line quotes it) or ``lost``
    status: str
    #: ``start``, ``middle`` or ``end``; ``None`` when it is not sent
    where: str | None = None
    #: prompt tokens before its first occurrence; ``None`` when it is not sent
    offset: int | None = None
    #: the id of the block it is in (the summary's for a quoted fact); ``None`` when it is not sent
    block: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "where": self.where, "offset": self.offset,
                "block": self.block}


@dataclass(frozen=True, slots=True)
class FactPlacement:
    """Where a plan's must-survive facts sit (``to_dict()``: the plan's ``factPlacement``)."""

    #: ``declared`` (the caller's facts) or ``default-facts`` (the facts the conversation marks)
    rule: str
    prompt_tokens: int
    facts: tuple[PlacedFact, ...] = ()

    def counts(self) -> dict[str, int]:
        """How many facts sit in each third, and how many are not sent (``notSent``)."""
        counts = {where: sum(fact.where == where for fact in self.facts) for where in THIRDS}
        return {**counts, "notSent": sum(fact.where is None for fact in self.facts)}

    @property
    def middle(self) -> tuple[str, ...]:
        """The names of the facts in the middle of the prompt."""
        return tuple(fact.name for fact in self.facts if fact.where == MIDDLE)

    def line(self) -> str:
        """``facts: 3 at the start, 1 in the middle, 1 not sent`` (the thirds that hold none left out).

        >>> FactPlacement(DECLARED, 90).line()
        'facts: none in force'
        """
        counts = self.counts()
        parts = [f"{counts[where]} {_WORDS[where]}" for where in THIRDS if counts[where]]
        if counts["notSent"]:
            parts.append(f"{counts['notSent']} not sent")
        return f"facts: {', '.join(parts)}" if parts else "facts: none in force"

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "promptTokens": self.prompt_tokens, "counts": self.counts(),
                "facts": [fact.to_dict() for fact in self.facts]}


def fact_placement(plan: Any, facts: Sequence[Any] | None = None, *, user_name: str | None = None,
                   rule: str | None = None) -> FactPlacement:
    """Where each must-survive fact in force at ``plan``'s request sits in what it sends.

    ``facts``: declared facts (strings, ``/regex/flags``, mappings, :class:`~contextfit.replays.facts.Fact`
    values), or the :class:`~contextfit.replays.must_survive.MustSurvive` items of
    :func:`~contextfit.replays.must_survive.must_survive`; ``None``: the default must-survive facts of
    the plan's own blocks (``user_name``: the persona's name setting, as
    :func:`~contextfit.replays.must_survive.must_survive` reads it). ``rule`` is what the placement
    says the facts are: by default ``default-facts`` for ``None`` or :class:`MustSurvive` items (a face
    that found the default list once for several plans passes ``rule="default-facts"`` with it, even empty),
    else ``declared``.
    """
    inputs = [block.message for block in plan.blocks if block.origin == "input"]
    if facts is None:
        facts, rule = as_facts(default_facts(inputs, user_name=user_name)), rule or DEFAULT_FACTS
    elif facts and all(isinstance(item, MustSurvive) for item in facts):
        facts, rule = as_facts(facts), rule or DEFAULT_FACTS
    elif any(isinstance(item, MustSurvive) for item in facts):
        facts = [dict(item.fact) if isinstance(item, MustSurvive) else item for item in facts]
    if rule is None:
        rule = DECLARED
    if rule not in (DECLARED, DEFAULT_FACTS):
        raise InvalidSettings(f"rule must be {DECLARED!r} or {DEFAULT_FACTS!r}; got {rule!r}.")
    checked = declared_facts(facts)
    return FactPlacement(rule, plan.prompt_tokens, placed_facts(plan, checked, plan_fact_states(plan, checked)))


def placed_facts(plan: Any, facts: Sequence[Fact], states: Sequence[tuple[str, str]]) -> tuple[PlacedFact, ...]:
    """Each of ``states`` (:func:`~contextfit.replays.recommend.plan_fact_states` of ``plan`` and the
    checked ``facts``) with where it sits: what :func:`fact_placement` does once the states are known."""
    return tuple(_Locator(plan, facts).place(states)) if states else ()


def middle_risk(plan: Any, placed: Sequence[PlacedFact]) -> str | None:
    """The risk the recommendation may add to its sentence: must-survive facts in the middle of a
    prompt past the model's published effective context; ``None`` when there is none.

    >>> from contextfit.tokens.effective import EffectiveContext, EffectiveLength
    >>> class Plan: effective_context = EffectiveContext("gpt-4o", (EffectiveLength("NoLiMa", 8000),), 9120)
    >>> middle_risk(Plan(), [PlacedFact("ORD-7", "verbatim", MIDDLE, 4000, "m5")])
    "1 must-survive fact sits in the middle of a prompt past gpt-4o's published effective context (8,000 tokens, NoLiMa)"
    """
    effective = getattr(plan, "effective_context", None)
    middle = sum(fact.where == MIDDLE for fact in placed)
    if not middle or effective is None or not effective.exceeded:
        return None
    figure = effective.figure
    facts = "1 must-survive fact sits" if middle == 1 else f"{middle} must-survive facts sit"
    return (f"{facts} in the middle of a prompt past {effective.model}'s published effective context "
            f"({figure.text}, {figure.benchmark})")


def with_fact_placement(plan: Any, facts: Sequence[Any] | None = None, *, user_name: str | None = None,
                        rule: str | None = None) -> Any:
    """``plan`` with its :attr:`~contextfit.pipeline.plan.PromptPlan.fact_placement` set (its JSON then
    carries ``factPlacement``); arguments as :func:`fact_placement`. The plan given is not changed."""
    return replace(plan, fact_placement=fact_placement(plan, facts, user_name=user_name, rule=rule))


class _Locator:
    """The sent blocks of one plan in the provider's order, where each starts, and where facts stand in them."""

    def __init__(self, plan: Any, facts: Sequence[Fact]) -> None:
        self.plan = plan
        self.facts = {fact.name: (position, fact) for position, fact in enumerate(facts)}
        self.finder = FactFinder(facts)
        sent = [block for block in plan.blocks if block.included]  # a block of unknown tokens takes none
        if plan.template == "anthropic":  # the system text goes first, wherever its blocks stood
            first = [block for block in sent if block.origin == "request" or
                     (block.role in SYSTEM_ROLES and block.kind != SUMMARY)]
            taken = set(map(id, first))
            sent = first + [block for block in sent if id(block) not in taken]
        self.sent = sent
        self.starts = list(accumulate((block.tokens or 0 for block in sent), initial=0))
        inputs = [block for block in plan.blocks if block.origin == "input"]
        asking = question_position([block.message for block in inputs])
        self.asked = None if asking is None else inputs[asking]
        self.inputs = inputs
        try:
            self.count = token_counter(plan.model).tokenizer.count
        except ContextfitError:  # a model no longer in the catalog: characters stand in for tokens
            self.count = None

    def place(self, states: Sequence[tuple[str, str]]) -> list[PlacedFact]:
        placed = []
        for name, status in states:
            position, fact = self.facts[name]
            found = None if status == LOST else self._find(position, fact, status)
            if found is None:
                placed.append(PlacedFact(name, status))
                continue
            offset, block = found
            placed.append(PlacedFact(name, status, third(offset, self.plan.prompt_tokens), offset, block.id))
        return placed

    def _find(self, position: int, fact: Fact, status: str) -> tuple[int, Any] | None:
        """(offset, block) of the fact's first occurrence in the blocks that make its status."""
        summary = status == IN_SUMMARY
        for index, block in enumerate(self.sent):
            if block.origin == "reasoning" or (block.kind == SUMMARY) != summary:
                continue
            if fact.text is None and fact.regex is None:  # a pinned message
                if self._holds_message(block, fact, summary):
                    return self._offset(index, block, 0), block
                continue
            if status == VERBATIM and fact.besides and block is self.asked:
                continue
            found = self.finder.position(position, block.content)
            if found is not None:
                return self._offset(index, block, found), block
        return None

    def _holds_message(self, block: Any, fact: Fact, summary: bool) -> bool:
        wanted = str(fact.message) if not isinstance(fact.message, int) else nth_input_id(self.inputs, fact.message)
        if not summary:
            return block.id == wanted and not meta_of(block.message).get("compressed")
        return any(isinstance(source, dict) and source.get("id") == wanted
                   for source in meta_of(block.message).get("sources") or ())

    def _offset(self, index: int, block: Any, character: int) -> int:
        """The prompt tokens before ``character`` of ``block`` (the ``index``-th sent)."""
        text = block.content
        if not character or not text:
            within = 0
        elif self.count is not None:
            within = self.count(text[:character])
        else:
            within = (block.tokens or 0) * character // len(text)
        offset = self.starts[index] + min(within, max((block.tokens or 0) - 1, 0))
        return min(offset, max(self.plan.prompt_tokens - 1, 0))
