"""Replay: every strategy over a whole conversation, turn by turn.

One fit is a snapshot; a product lives with a strategy for a whole chat.
:func:`replay` walks a conversation model call by model call: each user
message is a request (the conversation up to it), and so is each round of
tool results the model answers without a user message in between (an agent's
tool rounds, :func:`model_calls`); the assistant messages after a request, up
to the next one, are its output (text or tool calls). Every request is fitted with every strategy — warm
refits: each turn's new messages are appended to one
:class:`~contextfit.FitSession`, which assembles and analyses only them, and
what the replay reads of a sent block (its tokens, provider messages and
text) is worked out once — and for each turn and strategy the replay records

* the prompt tokens and what was dropped, summarized and compressed;
* the tokens shared with the previous turn's request, on the rendered
  provider messages (whole messages from the start, tools first), and what
  the provider's prompt cache reads and writes of them, and why it read no
  more than it did (``prompt_cache.py``);
* the request's cost at the catalog's prices (``contextfit.tokens.prices``):
  uncached input, cached input, cache writes and the real reply's tokens as
  output; ``None`` with a note when the model has no prices;
* whether each must-survive fact is still sent (``facts.py``): the
  caller's ``facts``, else a conversation's own ``settings.facts`` (a
  bundle's, as the dashboard reads it), else the facts the conversation
  marks (``must_survive.py``), else the default entity rule.

Totals per strategy: total and mean cost, cache-hit rate (prompt tokens read
from the cache over prompt tokens sent), tokens sent, the first turn that
dropped something and the first that lost a fact, and retention (facts
present over facts in force, all turns together); and per user turn, the
totals of its requests. And the recommendation (``recommend.py``): which
strategy to ship under a priority, with what each one loses at the latest
request, in words.

>>> chat = [{"role": "system", "content": "Be brief."},
...         {"role": "user", "content": "My order is ORD-1234."}, {"role": "assistant", "content": "Noted."},
...         {"role": "user", "content": "Where is ORD-1234?"}, {"role": "assistant", "content": "In transit."}]
>>> result = replay(chat, model="gpt-4o", strategies=["truncate"])
>>> [(t.turn, t.prompt_tokens, t.output_tokens) for t in result.turns["truncate"]]
[(1, 22, 3), (2, 40, 3)]
>>> result.totals["truncate"].retention, result.fact_rule, [fact.name for fact in result.facts]
(1.0, 'default-facts', ['ORD-1234'])
>>> result.recommendation.sentence
'Ship truncate: it keeps your question and the 1 must-survive fact, sends 47 tokens and costs $0.15 per 1,000 conversations; it sends everything.'

"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from itertools import accumulate, chain, repeat
from operator import attrgetter
from typing import Any, NamedTuple

from ..errors import ContextfitError, InvalidMessages, InvalidSettings, TokenBudgetExceeded
from ..inputs.messages import (
    LOREBOOK,
    MEMORY,
    SUMMARY,
    SYSTEM_ROLES,
    TOOL_RESULT_ROLES,
    check_messages,
    kind_of,
    link_ids,
    message_id,
    message_text,
    meta_of,
    role_of,
)
from ..tokens.prices import RequestCost
from ..tokens.sent import trace
from . import prompt_cache
from ..fitting.host import Analyse
from ..inputs.macros import check_growth
from ..pipeline.assembly import fill_macros
from ..pipeline.plan import (
    BUILTIN_STRATEGIES, Prepared, assembled, fit_prepared, macro_names, plan_prepared, refuse_unsupported,
)
from ..pipeline.settings import FIELDS, PlanSettings, settings_for
from ..fitting.results import FitResult, fate_counts
from ..pipeline.session import FitSession
from .facts import (
    IN_SUMMARY, LOST, MAX_NAME, STANDING, VERBATIM, Fact, FactFinder, contains_word, conversation_facts, declared_facts,
    entities, filled_facts, has_cjk, message_ids, pinned_position, pinned_status, shortened,
)
from .losses import Reading, losses
from .must_survive import DECLARED, DEFAULT_FACTS, as_facts, default_facts
from .placement import middle_risk, placed_facts
from .recommend import (
    CONVERSATION, REQUEST, RETENTION, Outcome, Recommendation, Totals, check_priority, decide, has_question,
    plan_fact_states, relative_band,
)
from .volume import reply_of, request_cost

#: No fact declared, and the conversation marks none (or ``facts=ENTITY_RULE``): the entity rule, turn by turn.
DEFAULT_ENTITIES = "default-entities"
#: ``facts=ENTITY_RULE`` asks for the entity rule whatever the conversation marks.
ENTITY_RULE = "entities"
#: The catalog's providers as their own names spell them, for the notes (another provider is named by its id).
PROVIDER_NAMES = {"openai": "OpenAI", "anthropic": "Anthropic", "google": "Google", "meta": "Meta",
                  "mistral": "Mistral", "qwen": "Qwen", "deepseek": "DeepSeek"}


@dataclass(frozen=True, slots=True)
class Variant:
    """One strategy of a replay, under a label, with its own options (``stable_prefix``...)."""

    label: str
    strategy: Any
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FactState:
    """A fact in force at a turn: ``verbatim``, ``summary`` (a summary line quotes it) or ``lost``."""

    name: str
    status: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status}


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One request of the replay under one strategy."""

    turn: int
    message_index: int
    strategy: str
    prompt_tokens: int | None
    sent_blocks: int
    dropped: int
    summarized: int
    compressed: int
    shared_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int
    cost: RequestCost | None
    facts: tuple[FactState, ...]
    error: str | None = None
    error_message: str | None = None
    #: The user turn the request belongs to (1-based; 0 before any user message), what triggered
    #: it (``user`` or ``tool_results``) and its tool round in that turn (0 for the user's message).
    user_turn: int = 1
    trigger: str = "user"
    round: int = 0
    #: Why the request read less than the whole previous request from the cache (``prompt_cache.py``).
    cache_miss: str | None = None

    @property
    def lost(self) -> list[str]:
        """Names of the facts in force that are not sent."""
        return [fact.name for fact in self.facts if fact.status == LOST]

    @property
    def retention(self) -> float | None:
        """Share of the facts in force that are sent (``None`` when none is in force)."""
        if not self.facts:
            return None
        return sum(fact.status != LOST for fact in self.facts) / len(self.facts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "messageIndex": self.message_index,
            "strategy": self.strategy,
            "promptTokens": self.prompt_tokens,
            "sentBlocks": self.sent_blocks,
            "dropped": self.dropped,
            "summarized": self.summarized,
            "compressed": self.compressed,
            "sharedTokens": self.shared_tokens,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "outputTokens": self.output_tokens,
            "cost": None if self.cost is None else _camel(self.cost.to_dict()),
            "facts": [fact.to_dict() for fact in self.facts],
            "retention": self.retention,
            "lost": self.lost,
            "error": None if self.error is None else {"code": self.error, "message": self.error_message},
            "userTurn": self.user_turn,
            "trigger": self.trigger,
            "round": self.round,
            "cacheMiss": self.cache_miss,
        }


@dataclass(frozen=True, slots=True)
class StrategyTotals:
    """A strategy over the whole replay."""

    strategy: str
    turns: int
    total_cost: float | None
    mean_cost: float | None
    cache_hit_rate: float
    tokens_sent: int
    cached_tokens: int
    first_drop_turn: int | None
    first_loss_turn: int | None
    retention: float | None
    failed_turns: int
    #: Tokens written to the cache, tokens of the real replies, and requests that missed the cache
    #: (no previous request aside) — all requests together.
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cache_misses: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "turns": self.turns,
            "totalCost": self.total_cost,
            "meanCost": self.mean_cost,
            "cacheHitRate": self.cache_hit_rate,
            "tokensSent": self.tokens_sent,
            "cachedTokens": self.cached_tokens,
            "firstDropTurn": self.first_drop_turn,
            "firstLossTurn": self.first_loss_turn,
            "retention": self.retention,
            "failedTurns": self.failed_turns,
            "cacheWriteTokens": self.cache_write_tokens,
            "outputTokens": self.output_tokens,
            "cacheMisses": self.cache_misses,
        }


@dataclass(frozen=True, slots=True)
class UserTurnTotals:
    """The requests of one user turn (its message and the tool rounds after it) under one strategy."""

    user_turn: int
    message_index: int
    requests: int
    prompt_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int
    cost: float | None
    failed: int

    def to_dict(self) -> dict[str, Any]:
        return {"userTurn": self.user_turn, "messageIndex": self.message_index, "requests": self.requests,
                "promptTokens": self.prompt_tokens, "cacheRead": self.cache_read, "cacheWrite": self.cache_write,
                "outputTokens": self.output_tokens, "cost": self.cost, "failedRequests": self.failed}


@dataclass(frozen=True, slots=True)
class Replay:
    """What :func:`replay` returns: every turn of every strategy, and their totals."""

    model: str
    provider: str
    cache_rule: str
    prices: dict | None
    budget: int
    context_limit: int
    response_reserve: int
    fact_rule: str
    facts: tuple[Fact, ...]
    strategies: tuple[str, ...]
    requests: tuple[int, ...]
    turns: dict[str, list[TurnResult]]
    totals: dict[str, StrategyTotals]
    notes: tuple[str, ...] = ()
    diagnostics: tuple[dict, ...] = ()
    #: each strategy's evidence for the recommendation: its plan of the latest request, its totals
    outcomes: tuple[Outcome, ...] = ()
    #: the recommendation under the replay's priority (:meth:`recommend` for another)
    recommendation: Recommendation | None = None

    def recommend(self, priority: str = RETENTION, basis: str = REQUEST) -> Recommendation:
        """The recommendation of this replay under ``priority`` (``retention``, ``cost`` or ``cache``).

        ``basis`` ``request`` (the default) decides on the latest request, priced with what it
        shares with the one before: the answer Compare and ``contextfit fit --recommend`` give for
        the same conversation and settings, so the faces agree. ``conversation`` decides on every
        request the replay replayed (retention at every turn, the cost of every request, cache
        hits): a longer view, for a replay of the whole conversation."""
        if basis == CONVERSATION and any(o.totals is None for o in self.outcomes if o.error is None):
            raise InvalidSettings("basis='conversation' needs a replay of every request (this one replayed the last "
                                  "ones only: replay without last=).")
        return decide(self.outcomes, priority, basis)
    #: The message index of each user turn's message (the requests of a turn follow it).
    user_turns: tuple[int, ...] = ()
    cache_rules: prompt_cache.CacheRules | None = None

    def user_turn_totals(self) -> dict[str, list[UserTurnTotals]]:
        """Per strategy, the totals of each user turn's requests (:func:`user_turn_totals`)."""
        return {label: user_turn_totals(rows, self.user_turns) for label, rows in self.turns.items()}

    def verdict(self) -> dict[str, str | None]:
        """The cheapest strategy, the one that kept most facts, and the best cache-hit rate
        (a tie goes to the earlier strategy: :meth:`winners` names them all; ``None`` when
        nothing can be compared or every strategy scores the same)."""
        return {key: names[0] if names else None for key, names in self.winners().items()}

    def winners(self) -> dict[str, list[str]]:
        """Under the keys of :meth:`verdict`, every strategy that ties for the best, in
        replay order (equal within float rounding); empty when nothing can be compared
        or every strategy scores the same. A strategy whose every turn failed is none."""
        totals = [t for t in self.totals.values() if t.failed_turns < t.turns]
        priced = [(t.strategy, -t.total_cost) for t in totals if t.total_cost is not None]
        kept = [(t.strategy, t.retention) for t in totals if t.retention is not None]
        cached = [(t.strategy, t.cache_hit_rate) for t in totals]
        return {"cheapest": _best(priced), "bestRetention": _best(kept), "bestCache": _best(cached)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "provider": self.provider,
            "cacheRule": self.cache_rule,
            "prices": None if self.prices is None else _camel(self.prices),
            "budget": self.budget,
            "contextLimit": self.context_limit,
            "responseReserve": self.response_reserve,
            "factRule": self.fact_rule,
            "facts": [fact.to_dict() for fact in self.facts],
            "strategies": list(self.strategies),
            "requests": list(self.requests),
            "totals": {name: totals.to_dict() for name, totals in self.totals.items()},
            "verdict": self.verdict(),
            "winners": self.winners(),
            "turns": {name: [turn.to_dict() for turn in turns] for name, turns in self.turns.items()},
            "notes": list(self.notes),
            "diagnostics": list(self.diagnostics),
            "recommendation": None if self.recommendation is None else self.recommendation.to_dict(),
            "userTurns": list(self.user_turns),
            "userTurnTotals": {label: [row.to_dict() for row in rows]
                               for label, rows in self.user_turn_totals().items()},
            "cacheRules": None if self.cache_rules is None else self.cache_rules.to_dict(),
        }


def _best(scores: Sequence[tuple[str, float]]) -> list[str]:
    """The labels with the highest score (equal within float rounding: a sum of
    costs in another order differs in its last bits), or none when all score the same.

    >>> _best([("a", 1.0), ("b", 2.0), ("c", 2.0)]), _best([("a", 0.1 + 0.2), ("b", 0.3)]), _best([])
    (['b', 'c'], [], [])
    """
    if not scores:
        return []
    top = max(score for _, score in scores)
    tied = [label for label, score in scores if math.isclose(score, top, rel_tol=1e-9, abs_tol=1e-15)]
    return [] if len(tied) == len(scores) else tied


def _camel(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key.split("_")[0] + "".join(part.title() for part in key.split("_")[1:]): value for key, value in values.items()}


class ModelCall(NamedTuple):
    """One request of a replay: the position of its last message, what triggered it
    (``user``, or ``tool_results`` the model answers), its user turn (1-based; 0 before any
    user message) and its tool round in that turn (0 for the user's own message)."""

    position: int
    trigger: str
    user_turn: int
    round: int


USER = "user"
TOOL_RESULTS = "tool_results"
#: The conversation as it stands, past its last request: a replay's ``to_the_end`` request.
END = "end"


def model_calls(messages: Sequence[dict]) -> list[ModelCall]:
    """Every model call of a conversation (SPEC 9): a user message (not hidden, not only
    tool results), and every round of tool results the model answers without a user
    message in between — the last result before the next assistant message (or the end
    of the chat: an agent in the middle of its loop). A system message between the
    results and the answer belongs to that request.

    >>> calls = model_calls([{"role": "user", "content": "a"},
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
    ...      "function": {"name": "f", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "c", "content": "x"}, {"role": "assistant", "content": "done"}])
    >>> [(call.position, call.trigger, call.user_turn, call.round) for call in calls]
    [(0, 'user', 1, 0), (2, 'tool_results', 1, 1)]
    """
    out: list[ModelCall] = []
    pending: int | None = None  # the last message of a round of results no answer has followed yet
    user_turn = rounds = 0
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or meta_of(message).get("hidden") is True:
            continue
        role = role_of(message)
        if role == "assistant":
            if pending is not None:
                rounds += 1
                out.append(ModelCall(pending, TOOL_RESULTS, user_turn, rounds))
                pending = None
        elif role in TOOL_RESULT_ROLES or (role == "user" and link_ids(message)[1]):
            pending = position
        elif role == "user":
            pending, user_turn, rounds = None, user_turn + 1, 0
            out.append(ModelCall(position, USER, user_turn, 0))
        elif pending is not None:  # a system or developer message sent with the results
            pending = position
    if pending is not None:
        out.append(ModelCall(pending, TOOL_RESULTS, user_turn, rounds + 1))
    return out


def _end_call(calls: Sequence[ModelCall], position: int) -> ModelCall:
    """The conversation as it stands past its last request (its reply, say) taken as one more request:
    what Compare plans (``to_the_end``, and the recommendation's latest request)."""
    user_turn = calls[-1].user_turn if calls else 0
    rounds = calls[-1].round + 1 if calls and calls[-1].user_turn == user_turn else 0
    return ModelCall(position, END, user_turn, rounds)


def _anchor(call: ModelCall, user_turns: Sequence[int]) -> int:
    """The user message a request answers (its own position before any user message)."""
    return user_turns[call.user_turn - 1] if call.user_turn else call.position


def request_positions(messages: Sequence[dict]) -> list[int]:
    """The position of the last message of each request: every model call (:func:`model_calls`).

    >>> request_positions([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
    ...                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}])
    [0, 2]
    """
    return [call.position for call in model_calls(messages)]


def user_turn_totals(rows: Sequence[TurnResult], user_turns: Sequence[int] = ()) -> list[UserTurnTotals]:
    """The totals of each user turn's requests, in order (``user_turns``: the message index of
    each user turn's message; a turn before any user message goes by its first request's)."""
    grouped: dict[int, list[TurnResult]] = {}
    for row in rows:
        grouped.setdefault(row.user_turn, []).append(row)
    out = []
    for number, turn_rows in grouped.items():
        done = [row for row in turn_rows if row.error is None]
        costs = [row.cost.total for row in done if row.cost is not None]
        index = user_turns[number - 1] if 0 < number <= len(user_turns) else turn_rows[0].message_index
        out.append(UserTurnTotals(
            number, index, len(turn_rows), sum(row.prompt_tokens or 0 for row in done),
            sum(row.cache_read for row in done), sum(row.cache_write for row in done),
            sum(row.output_tokens for row in turn_rows), sum(costs) if len(costs) == len(done) and done else None,
            len(turn_rows) - len(done)))
    return out


def variants(strategies: Sequence[Any] | str | None) -> list[Variant]:
    """The strategies of a replay: names (``"all"`` for the built-ins), strategy
    objects, or ``{"strategy", "label", "options"}`` mappings; labels must differ.

    >>> [v.label for v in variants(["truncate", {"strategy": "truncate", "options": {"stable_prefix": True}}])]
    ['truncate', 'truncate+stable_prefix']
    """
    if strategies is None or strategies == "all":
        strategies = list(BUILTIN_STRATEGIES)
    if isinstance(strategies, (str, Mapping)):
        strategies = [strategies]
    out: list[Variant] = []
    for position, entry in enumerate(strategies):
        where = f"strategies[{position}]"
        if isinstance(entry, Mapping):
            unknown = set(entry) - {"strategy", "label", "options"}
            if unknown or "strategy" not in entry:
                raise InvalidSettings(f"{where} must be a name or {{strategy, label, options}}; "
                                      f"got keys {sorted(map(str, entry))}.")
            options = entry.get("options") or {}
            if not isinstance(options, Mapping):
                raise InvalidSettings(f"{where}.options must be an object of strategy options.")
            for key in options:
                if key in _WHOLE_REPLAY:
                    raise InvalidSettings(f"{where}.options.{key} is a setting of the whole replay, not a strategy "
                                          f"option: every strategy is fitted under the same {key}; give it to "
                                          "replay().")
            name = _strategy(entry["strategy"], f"{where}.strategy")
            refuse_unsupported(name, options, f"{where}.options.stable_prefix")  # its row would repeat another's
            label = entry.get("label")
            if label is not None and (not isinstance(label, str) or not label.strip()):
                raise InvalidSettings(f"{where}.label must be a non-empty string, got {label!r}.")
            if label is not None and len(label) > MAX_NAME:  # it names the strategy in every turn's row
                raise InvalidSettings(f"{where}.label must be at most {MAX_NAME} characters, got {len(label):,}.")
            out.append(Variant(label or _label(name, options), name, dict(options)))
        else:
            out.append(Variant(_label(_strategy(entry, where), {}), entry, {}))
    labels = [variant.label for variant in out]
    if len(set(labels)) != len(labels) or not out:
        raise InvalidSettings(f"a replay needs at least one strategy and distinct labels; got {labels}.")
    return out


#: Settings a replay's strategies share: the session prepares each turn's blocks once, under them
#: (a strategy's own interceptors do run with its fits).
_WHOLE_REPLAY = frozenset(FIELDS) - {"interceptors"}


def _strategy(value: Any, where: str) -> Any:
    """A replay's strategy: a name, or a strategy object (``propose``) or callable, as ``plan_prompt`` takes.

    >>> _strategy(5, "strategies[0]")
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: strategies[0] must be a strategy name or a strategy object, got 5.
    """
    if (isinstance(value, str) and value.strip()) or callable(value) or callable(getattr(value, "propose", None)):
        return value
    raise InvalidSettings(f"{where} must be a strategy name or a strategy object, got {value!r}.")


def _label(strategy: Any, options: Mapping[str, Any]) -> str:
    """A strategy's label: its name and options, at most :data:`MAX_NAME` characters (every turn's
    row repeats it: a 100,000-character query made a 100 MB answer of a 400-turn replay).

    >>> _label("vector-recall", {"query": "q" * 500, "stable_prefix": True})
    'vector-recall+query=qqqqqqqqqqqqqqqqqqqqqqq…+stable_prefix'
    """
    name = strategy if isinstance(strategy, str) else getattr(strategy, "name", None) or type(strategy).__name__
    extra = [key if value is True else f"{key}={shortened(str(value), 24)}" for key, value in options.items()]
    return shortened("+".join([str(name), *extra]), MAX_NAME)


def replay(
    conversation: Any,
    *,
    model: str | None = None,
    strategies: Sequence[Any] | str | None = BUILTIN_STRATEGIES,
    facts: Sequence[Any] | str | None = None,
    settings: PlanSettings | None = None,
    progress: Callable[[int, int], Any] | None = None,
    priority: str = RETENTION,
    last: int | None = None,
    to_the_end: bool = False,
    **keywords: Any,
) -> Replay:
    """Replay ``conversation`` (message dicts or a :class:`~contextfit.Conversation`)
    with every strategy, turn by turn (module docstring).

    ``model`` and the other keywords are :func:`~contextfit.plan_prompt`'s
    (``context_limit``, ``response_reserve``, strategy options...);
    ``strategies`` lists names, ``"all"``, or ``{"strategy", "label",
    "options"}`` mappings (the same strategy twice with other options, e.g.
    ``{"strategy": "truncate", "options": {"stable_prefix": True}}``; a
    setting every strategy shares, such as ``context_limit``, is refused
    there with ``INVALID_SETTINGS``: it is one of these keywords);
    ``facts`` the must-survive facts (``facts.py``); without them, a
    conversation's own ``settings.facts``, else the facts the conversation
    marks (``must_survive.py``: pins, names, required lore, quoted tool
    results, what the latest turns refer back to; ``fact_rule`` is then
    ``default-facts``), else — or with ``facts=ENTITY_RULE`` — the entity
    rule, turn by turn (``default-entities``). A turn a strategy cannot fit is
    recorded with its ``TOKEN_BUDGET_EXCEEDED`` and costs nothing.

    ``priority`` (``retention``, ``cost`` or ``cache``) is the
    :attr:`Replay.recommendation`'s (``recommend.py``); ``last``, when given,
    replays only the last ``last`` requests (the earlier ones are read, not
    fitted): ``last=2`` prices the latest request with what it shares with the
    one before, as a full replay does, for a fraction of the work. With
    ``to_the_end``, a conversation that does not end at a request (an agent's
    tool results, a reply) gets one more at its end: the conversation as it
    stands, which is what Compare plans.

    ``progress(done, total)``, when given, is called with the turns replayed
    so far and the number of turns: once with 0 when the input is checked,
    then after each turn (the dashboard draws a bar with it; a 1,000-turn
    chat takes seconds). What it raises stops the
    replay and reaches the caller as it is: raise to cancel.
    """
    if progress is not None and not callable(progress):
        raise InvalidSettings(f"progress must be a callable taking (done, total), got {progress!r}.")
    check_priority(priority)
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
        raise InvalidSettings(f"last must be a whole number of requests of at least 1, got {last!r}.")
    chosen = {"model": model, **keywords}
    messages, plan_settings = settings_for(conversation, settings, chosen)
    messages = list(messages)
    calls = model_calls(messages)
    asked = len(calls)  # the requests the conversation makes (its replies are theirs)
    if to_the_end and messages and (not calls or calls[-1].position != len(messages) - 1):
        calls.append(_end_call(calls, len(messages) - 1))
    requests = [call.position for call in calls]
    if not requests:
        raise InvalidMessages("A replay needs at least one user message: each user message is one request, and so "
                              "is each round of tool results the model answers.")
    plan_variants = [(variant, plan_settings.replace(**variant.options)) for variant in variants(strategies)]
    if facts is None:  # a conversation's own, as its limits fill what the caller leaves unchosen
        facts = conversation_facts(conversation)
    rule = DECLARED
    if facts is None:  # what the conversation marks as mattering, else the entity rule
        found = default_facts(assembled(messages, plan_settings).blocks, user_name=plan_settings.user_name)
        facts, rule = as_facts(found), DEFAULT_FACTS
    elif isinstance(facts, str) and facts == ENTITY_RULE:
        facts = []
    walker = _Walker(messages, plan_settings, requests, declared_facts(facts))
    turns: dict[str, list[TurnResult]] = {variant.label: [] for variant, _ in plan_variants}
    previous: dict[str, _Sent | None] = {variant.label: None for variant, _ in plan_variants}
    first_turn = 1 if last is None else max(len(requests) - last + 1, 1)
    if progress is not None:
        progress(0, len(requests) - first_turn + 1)
    user_turns = [call.position for call in calls if call.trigger == USER]
    for turn, call in enumerate(calls, start=1):
        if turn < first_turn:
            continue
        position = call.position
        # the default fact rule reads the turn's user message, whichever round of it this is
        anchor = _anchor(call, user_turns)
        prepared, analyse = walker.prepared(position)
        output = walker.output_tokens(prepared, turn - 1)
        in_force = walker.in_force(position, anchor)
        # Strategies that send the same blocks this turn (everything fits, say) share what the replay
        # reads of them and their facts' states. The entries hold the blocks, so no id is reused.
        same: dict[tuple[int, ...], _Sent] = {}
        for variant, variant_settings in plan_variants:
            try:
                fit = fit_prepared(prepared, variant_settings, variant.strategy, analyse=analyse)
            except TokenBudgetExceeded as exc:
                turns[variant.label].append(_failed(turn, call, variant.label, output, in_force, exc))
                previous[variant.label] = None
                continue
            key = (fit.tokens, *map(id, fit.kept))
            sent = same.get(key)
            if sent is None:
                sent = same[key] = walker.sent(prepared, fit)
            record = walker.turn(turn, call, variant.label, prepared, fit, sent, previous[variant.label], output,
                                 in_force, anchor)
            turns[variant.label].append(record)
            previous[variant.label] = sent
        if progress is not None:
            progress(turn - first_turn + 1, len(requests) - first_turn + 1)
    info = walker.info
    notes = []
    if info.prices is None:
        notes.append(f"The catalog has no prices for {info.id}: costs are not computed (add a [models.\"{info.id}\".prices] "
                     "table to your models file).")
    provider = PROVIDER_NAMES.get(info.provider, info.provider)  # a note's words, not an id ("google prompt...")
    if walker.rule == prompt_cache.AUTOMATIC and info.provider not in prompt_cache.MODELLED:
        notes.append(f"{provider} prompt caching is modelled with OpenAI's automatic prefix rules.")
    largest = max((row.prompt_tokens or 0 for rows in turns.values() for row in rows), default=0)
    if 0 < largest < walker.minimum:  # a cache-hit rate of 0 everywhere, said why (0: no turn was sent)
        notes.append(f"No request reaches the {walker.minimum:,} tokens a prompt needs before {provider} "
                     f"caches it (the largest is {largest:,}): no turn reads from the cache.")
    else:
        notes.extend(_no_cache_notes(turns, walker.rule, walker.minimum, provider))
    notes.extend(_failure_notes(turns))
    notes.extend(_search_notes(walker.finder.budget.diagnostics if walker.finder else ()))
    totals = {label: totals_of(label, rows) for label, rows in turns.items()}
    # The recommendation judges the conversation as it stands, as Compare plans it: past the last request
    # (its reply, an agent's tool results) that is one more request, priced against the last one, not a row.
    final = {label: rows[-1] for label, rows in turns.items()}
    if requests[-1] < len(messages) - 1:
        end = _end_call(calls, len(messages) - 1)
        anchor = _anchor(end, user_turns)
        prepared, analyse = walker.prepared(end.position)
        in_force = walker.in_force(end.position, anchor)
        for variant, variant_settings in plan_variants:
            try:
                fit = fit_prepared(prepared, variant_settings, variant.strategy, analyse=analyse)
            except TokenBudgetExceeded as exc:
                final[variant.label] = _failed(len(requests) + 1, end, variant.label, 0, in_force, exc)
                continue
            final[variant.label] = walker.turn(len(requests) + 1, end, variant.label, prepared, fit,
                                               walker.sent(prepared, fit), previous[variant.label], 0, in_force,
                                               anchor)
    outcomes = _outcomes(walker, plan_variants, prepared, analyse, turns, final, totals, whole=first_turn == 1,
                         asked=asked)
    result = Replay(
        model=info.id,
        provider=info.provider,
        cache_rule=walker.rule,
        prices=None if info.prices is None else info.prices.to_dict(),
        budget=walker.last.budget,
        context_limit=walker.last.context_limit,
        response_reserve=walker.last.response_reserve,
        fact_rule=rule if walker.facts else DEFAULT_ENTITIES,
        facts=tuple(walker.facts),
        strategies=tuple(turns),
        requests=tuple(requests),
        turns=turns,
        totals=totals,
        notes=tuple(notes),
        diagnostics=tuple(walker.finder.budget.diagnostics) if walker.finder else (),
        outcomes=outcomes,
        user_turns=tuple(user_turns),
        cache_rules=walker.rules,
    )
    return replace(result, recommendation=result.recommend(priority))


def _outcomes(walker: _Walker, plan_variants: list[tuple[Variant, PlanSettings]], prepared: Prepared,
              analyse: Analyse, turns: Mapping[str, list[TurnResult]], final: Mapping[str, TurnResult],
              totals: Mapping[str, StrategyTotals], whole: bool, asked: int) -> tuple[Outcome, ...]:
    """Each strategy's evidence for the recommendation: its plan of the latest request (``prepared``:
    the conversation as it stands; ``final``: that request's row) — what it keeps and loses there,
    in words, its cost with its reply —, and — when every request was replayed — its totals. A
    strategy that could not fit some request has none."""
    prices = walker.info.prices
    asked_at = walker.requests[:asked]
    ends = [*asked_at[1:], len(walker.messages)]
    reply = reply_of([walker.reply_tokens(prepared, position + 1, following)  # the latest replies only: bounded work
                      for position, following in list(zip(asked_at, ends))[-REPLIES_READ:]])
    reading = None
    out = []
    for variant, variant_settings in plan_variants:
        rows = turns[variant.label]
        checked = rows if final[variant.label] is rows[-1] else [*rows, final[variant.label]]
        failed = [row for row in checked if row.error is not None]
        if failed:
            error = f"{failed[0].error}: {failed[0].error_message}"
            if len(failed) < len(checked):
                error = f"could not fit {len(failed)} of {len(checked)} requests ({error})"
            out.append(Outcome(variant.label, error=error, reply=reply))
            continue
        plan = plan_prepared(prepared, variant_settings, variant.strategy, analyse=analyse)
        row = final[variant.label]
        states = (plan_fact_states(plan, walker.facts) if walker.facts
                  else tuple((state.name, state.status) for state in row.facts))
        cost = request_cost(prices, plan.prompt_tokens, row.output_tokens or reply.tokens, row.cache_read, row.cache_write)
        conversation = None
        if whole:
            sums = totals[variant.label]
            spent = None
            if prices is not None and sums.total_cost is not None:  # every request with a reply: its own, else the mean
                spent = sums.total_cost + sum(request_cost(prices, r.prompt_tokens or 0, reply.tokens) -
                                              request_cost(prices, r.prompt_tokens or 0, 0)
                                              for r in rows if not r.output_tokens)
            conversation = Totals(len(rows), sums.retention, sums.tokens_sent, spent, sums.cache_hit_rate,
                                  sums.first_loss_turn)
        reading = reading or Reading.of(plan)  # every plan of the request has the same input blocks
        out.append(Outcome(
            variant.label, losses=losses(plan, (name for name, status in states if status == LOST), reading),
            counts=plan.fit.counts(), prompt_tokens=plan.prompt_tokens, band=relative_band(plan),
            has_question=has_question(plan), facts=states, cost_request=cost,
            cached_share=row.cache_read / plan.prompt_tokens if plan.prompt_tokens else None,
            reply=reply, totals=conversation,
            risk=middle_risk(plan, placed_facts(plan, walker.facts, states)) if walker.facts else None,
        ))
    return tuple(out)


def totals_of(label: str, rows: Sequence[TurnResult]) -> StrategyTotals:
    """A strategy's totals over its turns."""
    done = [row for row in rows if row.error is None]
    costs = [row.cost.total for row in done if row.cost is not None]
    priced = len(costs) == len(done) and done
    sent = sum(row.prompt_tokens or 0 for row in done)
    cached = sum(row.cache_read for row in done)
    in_force = sum(len(row.facts) for row in rows)
    present = sum(len(row.facts) - len(row.lost) for row in rows)
    return StrategyTotals(
        strategy=label,
        turns=len(rows),
        total_cost=sum(costs) if priced else None,
        mean_cost=sum(costs) / len(costs) if priced else None,
        cache_hit_rate=cached / sent if sent else 0.0,
        tokens_sent=sent,
        cached_tokens=cached,
        first_drop_turn=next((row.turn for row in done if row.dropped or row.summarized or row.compressed), None),
        first_loss_turn=next((row.turn for row in rows if row.lost), None),
        retention=present / in_force if in_force else None,
        failed_turns=len(rows) - len(done),
        cache_write_tokens=sum(row.cache_write for row in done),
        output_tokens=sum(row.output_tokens for row in rows),
        cache_misses=sum(1 for row in done if row.cache_miss not in (None, prompt_cache.NO_PREVIOUS)),
    )


def pin_refusal(index: int, message: Any, count: int) -> InvalidSettings:
    """The error for ``facts[index]`` pinned to ``message``, which a conversation of ``count`` messages does not hold."""
    return InvalidSettings(f"facts[{index}] is pinned to message {message!r}, which the conversation does not hold "
                           f"(it has {count} messages: give an index from 0 to {count - 1}, or a message's id).")


def _no_cache_notes(turns: Mapping[str, Sequence[TurnResult]], rule: str, minimum: int, provider: str) -> list[str]:
    """A line per set of strategies that never read from the cache although a request was long
    enough: why (a rate of 0.0% said nothing of it).

    >>> rows = [TurnResult(t, 2 * t, "a", 1500, 3, 1, 0, 0, 241, 0, 1500 if t > 1 else 0, 9, None, ()) for t in (1, 2)]
    >>> _no_cache_notes({"a": rows, "b": rows}, "automatic-prefix", 1024, "OpenAI")
    ['Under a and b, no turn reads from the cache: no request shares the 1,024 tokens OpenAI caches from with the one before it (at most 241).']
    """
    groups: dict[tuple[str, int], list[str]] = {}
    for label, rows in turns.items():
        done = [row for row in rows if row.error is None]
        if len(done) < 2 or any(row.cache_read for row in done):
            continue
        shared = max(row.shared_tokens for row in done[1:])
        why = "short" if shared < minimum else "moved"
        groups.setdefault((why, shared if why == "short" else 0), []).append(label)
    notes = []
    for (why, shared), labels in groups.items():
        who = _and_list(labels)
        if why == "short":
            reason = (f"no request shares the {minimum:,} tokens {provider} caches from with the one before it "
                      f"(at most {shared:,}).")
        elif rule == prompt_cache.BREAKPOINTS:
            reason = (f"no request starts with the whole request before it (the cut moved), and the tools and "
                      f"system text alone are no cached prefix of {minimum:,} tokens or more.")
        else:
            reason = "no request shares a cacheable prefix with the one before it."
        notes.append(f"Under {who}, no turn reads from the cache: {reason}")
    return notes


def _failure_notes(turns: Mapping[str, Sequence[TurnResult]]) -> list[str]:
    """A line per set of strategies that could not fit the same turns: which, and the first error.

    The verdict table counts failed turns, but a reader of the totals (the CLI's table, say)
    saw a retention of 0% and no cost with nothing saying that no prompt was built.

    >>> error = dict(error="TOKEN_BUDGET_EXCEEDED", error_message="The protected context alone needs 9 tokens.")
    >>> rows = [TurnResult(1, 0, "a", None, 0, 0, 0, 0, 0, 0, 0, 1, None, (), **error),
    ...         TurnResult(2, 2, "a", 5, 1, 0, 0, 0, 0, 0, 0, 1, None, ())]
    >>> _failure_notes({"a": rows, "b": rows, "c": rows[1:]})
    ['Under a and b, turn 1 of 2 could not be fitted (no prompt: no cost, nothing cached, its facts count as lost): The protected context alone needs 9 tokens.']
    """
    groups: dict[tuple[int, ...], list[str]] = {}
    for label, rows in turns.items():
        failed = tuple(row.turn for row in rows if row.error is not None)
        if failed:
            groups.setdefault(failed, []).append(label)
    notes = []
    for failed, labels in groups.items():
        rows = turns[labels[0]]
        message = next(row.error_message or row.error for row in rows if row.error is not None)
        if len(failed) == len(rows):  # the first turn's words (another turn's protected context is another size)
            notes.append(f"Under {_and_list(labels)}, no turn could be fitted; at turn {failed[0]}: {message}")
        else:
            which = f"turn{'s' if len(failed) > 1 else ''} {_turn_list(failed)} of {len(rows)}"
            notes.append(f"Under {_and_list(labels)}, {which} could not be fitted (no prompt: no cost, nothing cached, "
                         f"its facts count as lost): {message}")
    return notes


def _and_list(labels: Sequence[str]) -> str:
    """Labels as a sentence lists them: ``a``, ``a and b``, ``a, b and c``."""
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def _turn_list(turns: Sequence[int], most: int = 6) -> str:
    """Turn numbers as runs, the first ``most`` of them.

    >>> _turn_list([1, 2, 3, 7]), _turn_list([2]), _turn_list(list(range(1, 30, 2)), 3)
    ('1–3, 7', '2', '1, 3, 5 and 12 more')
    """
    runs: list[list[int]] = []
    for turn in turns:
        if runs and turn == runs[-1][1] + 1:
            runs[-1][1] = turn
        else:
            runs.append([turn, turn])
    text = ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs[:most])
    return text + (f" and {len(runs) - most} more" if len(runs) > most else "")


def _search_notes(diagnostics: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the facts' regex limits stopped (``survival.FactFinder``'s diagnostics), as notes (one
    for several facts, naming the first ten): a fact not searched for counts as not found, so a
    turn can show it lost where it is sent.

    >>> _search_notes([{"code": "LOREBOOK_KEY_TIMEOUT", "key": "/(a+)+$/", "message": "It ran past 0.25 s."}])
    ['The fact /(a+)+$/ was not searched for everywhere, to stay within the regex time and size limits (It ran past 0.25 s.): where it was not, it counts as not found, so a turn may show it lost while it is sent.']
    """
    if len(diagnostics) > 1:  # one note, not one each: 300 regex facts over 1,000 turns made 208
        keys = [str(diagnostic.get("key") or "?") for diagnostic in diagnostics]
        named = ", ".join(keys[:10]) + (f" and {len(keys) - 10:,} more" if len(keys) > 10 else "")
        return [f"{len(keys):,} regex facts were not searched for everywhere, to stay within the regex time and size "
                f"limits (the diagnostics say which limit stopped each): {named}. Where one was not, it counts as not "
                "found, so a turn may show it lost while it is sent."]
    notes = []
    for diagnostic in diagnostics:
        key = diagnostic.get("key")
        subject = f"The fact {key}" if key else "A regular-expression fact"
        notes.append(f"{subject} was not searched for everywhere, to stay within the regex time and size limits "
                     f"({diagnostic.get('message')}): where it was not, it counts as not found, so a turn may show it "
                     "lost while it is sent.")
    return notes


def _failed(turn: int, call: ModelCall, label: str, output: int, in_force: list, exc: ContextfitError) -> TurnResult:
    return TurnResult(turn, call.position, label, None, 0, 0, 0, 0, 0, 0, 0, output, None,
                      tuple(FactState(name, LOST) for name, _ in in_force), exc.code, str(exc),
                      call.user_turn, call.trigger, call.round)


class _Block(NamedTuple):
    """What a replay reads of one sent block, worked out once: a block sent
    turn after turn (the session keeps its blocks) costs its memo lookup."""

    block: dict  # held, so that the memo's key (its id) stays its own
    tokens: int
    rendered: tuple[dict, ...] | None  # its OpenAI provider messages (None for other templates)
    text: str
    summary: bool
    ident: Any
    role: str
    compressed: bool


_RENDERED = attrgetter("rendered")
_TOKENS = attrgetter("tokens")
_TEXT = attrgetter("text")
_SUMMARY = attrgetter("summary")
_IDENT = attrgetter("ident")
_WORD = re.compile(r"\w+")  # str.isalnum() characters and "_": survival's word characters
#: The replies a reply's size is the mean of: the latest requests' (a long chat's replies are not all counted).
REPLIES_READ = 100
#: The kinds of block whose facts are in force from the first request that assembles them.
_IN_FORCE_FROM_THE_START = STANDING | {LOREBOOK, MEMORY}


@dataclass(slots=True)
class _Sent:
    """What one request sent, for the next turn's cache comparison."""

    messages: list[dict]
    system: str | None
    blocks: list[_Block]
    sources: list[tuple[int, ...]] | None  # per provider message, the blocks it is made of (general template)
    ends: list[int] | None  # OpenAI: per block, how many provider messages up to its last
    cumulative: list[int] | None  # OpenAI: cumulative[k], the tokens of the first k blocks
    system_sources: tuple[int, ...]
    cacheable: int
    facts: tuple[FactState, ...] | None = None  # the facts' states, once worked out (this turn's)


def _equality_key(block: dict) -> Any:
    """Where :meth:`_Walker.blocks` files a block for a look-up by equality:
    its role, string content (hashed once per string object) or number of
    content parts, tool call id and ``meta.id`` (every hashable one, else
    ``None``); the entry found is compared in full.

    >>> _equality_key({"role": "tool", "tool_call_id": "c1", "content": "[cleared]", "meta": {"id": "m3"}})
    ('tool', '[cleared]', 'c1', 'm3')
    >>> _equality_key({"role": "user", "content": [{}], "meta": "odd"})
    ('user', 1, None, None)
    """
    content, role, link, meta = block.get("content"), block.get("role"), block.get("tool_call_id"), block.get("meta")
    ident = meta.get("id") if meta.__class__ is dict else None
    return (role if role.__class__ is str else None,
            content if content.__class__ is str else len(content) if isinstance(content, list) else None,
            link if link.__class__ is str else None, ident if ident.__class__ is str else None)


def _positions(values: list, wanted: Any) -> list[int]:
    """Where ``values`` holds ``wanted`` (searched in C: a few hits in a long list).

    >>> _positions([0, 1, 0, 1, 1], 1), _positions([], 1)
    ([1, 3, 4], [])
    """
    found, start = [], 0
    while True:
        try:
            start = values.index(wanted, start)
        except ValueError:
            return found
        found.append(start)
        start += 1


def _common_prefix(a: list, b: list) -> int:
    """How many items ``a`` and ``b`` share from the start (list comparisons:
    an item sent again as the same object compares at once).

    >>> _common_prefix([1, 2, 3, 4], [1, 2, 5]), _common_prefix([1], [1, 2]), _common_prefix([], [1])
    (2, 1, 0)
    """
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


class _Walker:
    """The per-conversation state of a replay: the prepared blocks, the reply
    sizes, the facts in force, and per-block memos shared by every strategy."""

    def __init__(self, messages: list[dict], settings: PlanSettings, requests: list[int], facts: list[Fact]) -> None:
        self.messages = messages
        self.settings = settings
        self.requests = requests
        self.facts = facts  # filled in below, once the settings are checked
        self.finder: FactFinder | None = None
        # A replay is a sequence of appends: the session assembles and analyses
        # only each turn's new messages, and every strategy fits the same blocks.
        self.session = FitSession()
        check_messages(messages, range(requests[-1] + 1, len(messages)))  # the last replies, which no request holds
        self._blocks: dict[int, _Block] = {}
        self._equal: dict[Any, _Block] = {}  # the newest entry per content (blocks.__doc__)
        # the model and limits are checked first (tool definitions over the budget fail each fit)
        self.last, _ = self.prepared(requests[0])
        self.info = self.last.info
        self.rules = prompt_cache.cache_rules(self.info)
        self.rule, self.minimum = self.rules.rule, self.rules.minimum
        self.ids = message_ids(messages)
        # facts and texts as the prompt says them: {{char}} and {{user}} filled in
        names = macro_names(settings)
        self.facts = filled_facts(facts, names)
        self.finder = FactFinder(self.facts) if facts else None
        texts = [message_text(m) if isinstance(m, dict) else "" for m in messages]
        check_growth(((f"messages[{position}]", text) for position, text in enumerate(texts)), names)  # before filling
        self.texts = [fill_macros(text, names) for text in texts]
        self._first_seen = self._first_positions() if facts else []
        self._said: dict[str, tuple[int, bool]] = {}  # entity -> (messages searched, found in them)
        self._joined = ""  # the texts of all the messages, joined by newlines (at the first search)
        self._starts: list[int] = []
        # each word (run of word characters) of the messages before the latest request an entity
        # was searched for -> the first message holding it; _worded: how many messages those are
        self._first_in: dict[str, int] = {}
        self._worded = 0

    # -- the request of a turn

    def prepared(self, position: int) -> tuple[Prepared, Analyse]:
        """The blocks of the request at ``position`` and their analysis step, from the session."""
        self.session.extend(self.messages[len(self.session): position + 1])
        self.last, analyse = self.session.prepared(self.settings)
        if len(self._blocks) > 4 * len(self.last.blocks) + 4096:  # blocks of earlier assemblies, old summaries
            self._blocks.clear()
            self._equal.clear()
        return self.last, analyse

    def output_tokens(self, prepared: Prepared, index: int) -> int:
        """The tokens of the assistant messages after request ``index`` up to the next request."""
        start = self.requests[index] + 1
        end = self.requests[index + 1] if index + 1 < len(self.requests) else len(self.messages)
        return self.reply_tokens(prepared, start, end)

    def reply_tokens(self, prepared: Prepared, start: int, end: int) -> int:
        """The tokens of the assistant messages from position ``start`` to ``end``."""
        count = prepared.tokenizer.count_message
        empty = count({"role": "assistant", "content": ""})
        return sum(max(count(m) - empty, 0) for m in self.messages[start:end]
                   if isinstance(m, dict) and role_of(m) == "assistant")

    # -- what was sent, and what the cache makes of it

    def blocks(self, prepared: Prepared, kept: list[dict], counted: Mapping[int, int] | None = None) -> list[_Block]:
        """The memo entries of ``kept``; only blocks not seen before are worked on.

        A block sent again as a new dict equal to one seen before (a strategy
        hands out copies of what it caches: a cleared tool result is cloned
        every fit) takes that entry's values: equal dicts count, render and
        read the same. ``counted`` maps ``id(block)`` to the tokens the fit
        counted for a block it inserted (a summary: its count is not redone)."""
        memo, equal = self._blocks, self._equal
        counted = counted or {}
        found = list(map(memo.get, map(id, kept)))
        openai, index = prepared.template == "openai", 0
        while True:  # C-level searches for the blocks not seen before
            try:
                index = found.index(None, index)
            except ValueError:
                return found
            block = kept[index]
            key = _equality_key(block)
            entry = equal.get(key)
            if entry is not None and entry.block == block:
                entry = _Block(block, *entry[1:])  # held: its id is the memo's key
            else:
                tokens = counted.get(id(block))
                entry = _Block(
                    block, prepared.counter.count_message(block) if tokens is None else tokens,
                    tuple(trace([block], "openai").prompt.messages) if openai else None, message_text(block),
                    kind_of(block) == SUMMARY, message_id(block, -1), role_of(block),
                    bool(meta_of(block).get("compressed")),
                )
            found[index] = memo[id(block)] = equal[key] = entry

    def sent(self, prepared: Prepared, fit: FitResult) -> _Sent:
        # The fit counted what it inserted with the request's counter (a plugin's blocks
        # are recounted by the host): those counts are the blocks' own.
        counted = {id(block.message): block.tokens for block in fit.decisions.inserted() if block.tokens is not None}
        blocks = self.blocks(prepared, fit.kept, counted)
        cacheable = fit.tokens - prepared.counter.base_tokens + prepared.tools_tokens
        if prepared.template == "openai":  # each block is its own provider messages, in order
            rendered = list(map(_RENDERED, blocks))
            return _Sent(list(chain.from_iterable(rendered)), None, blocks, None, list(accumulate(map(len, rendered))),
                         list(accumulate(map(_TOKENS, blocks), initial=0)), (), cacheable)
        traced = trace(fit.kept, prepared.template)
        return _Sent(traced.prompt.messages, traced.prompt.system, blocks, traced.sources, None, None,
                     traced.system_sources, cacheable)

    def shared(self, prepared: Prepared, sent: _Sent, before: _Sent | None) -> tuple[int, int, bool, bool, str | None]:
        """(tokens shared with the previous request, head tokens, whole previous request is a prefix, head unchanged,
        what differs first when it is not: ``system-changed`` or ``messages-changed``)."""
        blocks = sent.blocks
        head = prepared.tools_tokens + sum(blocks[p].tokens for p in sent.system_sources)
        if before is None:
            return 0, head, False, False, None
        same_system = before.system == sent.system
        j = _common_prefix(before.messages, sent.messages)
        whole = same_system and j == len(before.messages)
        # the blocks all of whose provider messages are among the first j
        if sent.ends is not None:
            covered = sent.cumulative[bisect_right(sent.ends, j)]  # type: ignore[index]
        else:
            inside = set(chain.from_iterable(sent.sources[:j])) - set(chain.from_iterable(sent.sources[j:]))
            covered = sum(blocks[p].tokens for p in inside)
        shared = prepared.tools_tokens + covered
        if same_system:
            shared += head - prepared.tools_tokens
        elif sent.system is not None or before.system is not None:
            shared = prepared.tools_tokens  # the system text comes before every message
        changed = None
        if not whole:  # the tools are the replay's own, the same in every request
            # the system text changed when the first message that differs, in either request, is still
            # part of the leading system messages (a lorebook entry that came or went among them, say)
            firsts = [m[j] for m in (before.messages, sent.messages) if j < len(m)]
            leading = any(isinstance(m, dict) and m.get("role") in SYSTEM_ROLES for m in firsts) and all(
                isinstance(m, dict) and m.get("role") in SYSTEM_ROLES for m in sent.messages[:j])
            changed = prompt_cache.SYSTEM_CHANGED if not same_system or leading else prompt_cache.MESSAGES_CHANGED
        return min(shared, sent.cacheable), head, whole, same_system, changed

    def turn(self, turn: int, call: ModelCall, label: str, prepared: Prepared, fit: FitResult, sent: _Sent,
             before: _Sent | None, output: int, in_force: list, anchor: int) -> TurnResult:
        position = call.position
        shared, head, whole, same_head, changed = self.shared(prepared, sent, before)
        rules = self.rules
        if rules.rule == prompt_cache.BREAKPOINTS:
            use = prompt_cache.anthropic_cache(sent.cacheable, head, None if before is None else before.cacheable, whole,
                                     same_head, rules.minimum)
        else:
            use = prompt_cache.automatic_cache(sent.cacheable, shared, rules.minimum, rules.unit, rules.bills_writes)
        prompt = fit.tokens + prepared.tools_tokens
        prices = self.info.prices
        cost = None if prices is None else prices.cost(prompt, output_tokens=output, cached_input_tokens=use.read,
                                                      cache_write_tokens=use.write)
        counts = fate_counts(fit)  # the one count: Compare's verdict reads the same
        return TurnResult(turn, position, label, prompt, len(fit.kept), counts.dropped, counts.summarized,
                          counts.compressed, shared, use.read, use.write, output, cost,
                          self._facts_of(sent, anchor, in_force), None, None, call.user_turn, call.trigger,
                          call.round, prompt_cache.miss_reason(before is not None, whole, use.read, changed))

    # -- facts

    def _first_positions(self) -> list[int | None]:
        """Per declared fact, the first message position from which it is in force."""
        first: list[int | None] = [None] * len(self.facts)
        for index, fact in enumerate(self.facts):
            if fact.message is not None:
                first[index] = pinned_position(fact, self.ids)
                if first[index] is None:  # a replay holds the whole conversation: the message is not in it
                    raise pin_refusal(index, fact.message, len(self.ids))
        # the character card and persona: sent with every request, so what they say is in force from the first
        # (the character's name was said to be in no message, and checked at no turn); the lore and memory
        # the first request assembles too, which a strategy may drop (a fact only a memory held was never checked)
        standing = [text for block, text in zip(self.last.blocks, self.last.texts)
                    if kind_of(block) in _IN_FORCE_FROM_THE_START]
        for position, text in chain(zip(repeat(-1), standing), enumerate(self.texts)):  # -1: before any message
            for index in self.finder.found_in(text):
                if first[index] is None and self.facts[index].message is None:
                    first[index] = position
        return first

    def in_force(self, position: int, anchor: int | None = None) -> list[tuple[str, Any]]:
        """``(name, key)`` of the facts in force at the request at ``position``:
        declared facts by index, else the default rule's entities — those of the user
        message the request answers (``anchor``: its position, the request's own by
        default; a tool round answers its turn's user message)."""
        if self.facts:  # a "besides" fact once a message before the request says it (the request's own does not)
            first = self._first_seen
            return [(fact.name, index) for index, fact in enumerate(self.facts)
                    if first[index] is not None and (first[index] < position if fact.besides else first[index] <= position)]
        anchor = position if anchor is None else anchor
        found = entities(self.texts[anchor])
        return [(entity, entity) for entity in found if self._said_before(entity, anchor)]

    def _said_before(self, entity: str, position: int) -> bool:
        """Whether the messages before ``position``, joined by newlines, hold
        ``entity`` between non-word characters. Once found it stays found, so
        an entity is searched for only in the messages it was not yet
        searched in (one with a newline may span two messages: it is searched
        for in all of them)."""
        starts = self._starts  # where each message's text starts in the join
        if not starts:  # every message joined once; a search stops before the request's own message
            starts.extend(accumulate((len(text) + 1 for text in self.texts[:-1]), initial=0))
            self._joined = "\n".join(self.texts)
        if self._worded < position:  # the words of the messages before the request
            first_in = self._first_in
            for index in range(self._worded, position):
                fresh = set(_WORD.findall(self.texts[index])).difference(first_in)
                if fresh:
                    first_in.update(zip(fresh, repeat(index)))
            self._worded = position
        # Where the entity stands between non-word characters, its first run of
        # word characters is a whole word of the text: no such word, no search;
        # and no occurrence starts before that word's first message, less the
        # word's offset in the entity (the search starts there).
        first = _WORD.search(entity)
        earliest = 0
        if first is not None and not has_cjk(first.group()):  # CJK words are no runs of their own
            holder = self._first_in.get(first.group())
            if holder is None:
                return False
            earliest = starts[holder] - first.start()
        searched, found = self._said.get(entity, (0, False))
        if "\n" in entity or searched > position:
            searched, found = 0, False
        if not found and searched < position:
            found = contains_word(self._joined, entity, max(starts[searched], earliest), starts[position] - 1)
        self._said[entity] = (position, found)
        return found

    def _facts_of(self, sent: _Sent, position: int, in_force: list) -> tuple[FactState, ...]:
        """The facts' states of what ``sent`` sent this turn, worked out once (strategies share a ``_Sent``)."""
        if sent.facts is None:
            sent.facts = self.fact_states(sent.blocks, position, in_force)
        return sent.facts

    def fact_states(self, blocks: list[_Block], position: int, in_force: list) -> tuple[FactState, ...]:
        """Each fact in force: sent verbatim, quoted by a summary, or lost (``blocks``: what was sent)."""
        if not in_force:
            return ()
        summaries = _positions(list(map(_SUMMARY, blocks)), True)
        summary = [blocks[p] for p in summaries]
        if not self.facts:
            # the default rule asks whether the latest message's entities are sent besides it: the
            # last user block with its id (the newest message, always sent; an earlier message given
            # the same id is another block, and what it says counts)
            current = self.ids[position]
            latest = [p for p in _positions(list(map(_IDENT, blocks)), current) if blocks[p].role == "user"][-1:]
            left_out = {*summaries, *latest}
            texts = list(map(_TEXT, blocks))
            if left_out:  # a few blocks (the summary, the latest message): join the runs between them
                bounds = [-1, *sorted(left_out), len(texts)]
                texts = list(chain.from_iterable(texts[a + 1:b] for a, b in zip(bounds, bounds[1:])))
            plain_text = "\n".join(texts)
            summary_text = "\n".join([entry.text for entry in summary])
            return tuple(
                FactState(name, VERBATIM if contains_word(plain_text, name) else IN_SUMMARY
                          if contains_word(summary_text, name) else LOST)
                for name, _ in in_force
            )
        plain = [entry for entry in blocks if not entry.summary] if len(summary) else blocks
        finder = self.finder
        in_plain: frozenset[int] = frozenset().union(*[finder.found_in(entry.text) for entry in plain])
        besides_plain = in_plain
        if any(self.facts[index].besides for _, index in in_force):  # sent besides the request's own message:
            current = self.ids[position]  # the last user block with its id (an earlier one so named counts)
            own = next((k for k in range(len(plain) - 1, -1, -1)
                        if plain[k].ident == current and plain[k].role == "user"), None)
            besides_plain = frozenset().union(*[finder.found_in(entry.text) for k, entry in enumerate(plain) if k != own])
        in_summary: frozenset[int] = frozenset().union(*[finder.found_in(entry.text) for entry in summary])
        states = []
        for name, index in in_force:
            fact = self.facts[index]
            if fact.text is None and fact.regex is None:
                status = self._pinned_status(fact, plain, summary)
            else:
                sent = besides_plain if fact.besides else in_plain
                status = VERBATIM if index in sent else IN_SUMMARY if index in in_summary else LOST
            states.append(FactState(name, status))
        return tuple(states)

    def _pinned_status(self, fact: Fact, plain: list[_Block], summary: list[_Block]) -> str:
        wanted = self.ids[pinned_position(fact, self.ids)]
        return pinned_status(wanted, [(entry.ident, entry.compressed) for entry in plain], [entry.block for entry in summary])


__all__ = ["FactState", "Replay", "StrategyTotals", "TurnResult", "Variant", "replay", "request_positions", "variants"]
