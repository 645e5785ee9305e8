"""One prompt pipeline for the dashboard, the CLI, the preview endpoint and generation.

Stages: persona → lorebook → memory (``assembly``) → template → tokenizer →
fitting → interceptors → final fit (``fitting``). :func:`plan_prompt` runs
them and returns a :class:`PromptPlan`: every block in prompt order with its
kind, tokens, fate and reason, plus what is sent. Planning never writes
anything.
"""

from __future__ import annotations

import difflib
import inspect
from itertools import repeat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..fitting import registry as plugins
from ..fitting import results
from ..tokens import reasoning, tool_defs
from .assembly import Assembly, Filled, as_card, assemble, macro_values
from ..tokens.chat_counter import TokenCounter, token_counter
from ..errors import InvalidSettings, TokenBudgetExceeded, UnsupportedOption
from ..fitting.analysis import build_view
from ..fitting.host import Analyse, fit_messages
from .diagnostics import effective_context_diagnostic, image_diagnostic, reasoning_diagnostic, tool_shape_diagnostic
from ..inputs.messages import SYSTEM, SYSTEM_ROLES, kind_of, meta_of, role_of
from ..inputs.messages import message_text, refuse_lone_surrogates
from ..tokens.effective import EffectiveContext, effective_context
from ..tokens.models import ModelInfo, get_model
from .reasoning_rows import with_reasoning_rows
from .settings import DEFAULT_USER_NAME, FIELDS, PlanSettings, settings_for
from ..fitting.results import FitResult
from .settings import BY_NAME, SETTINGS
from ..fitting.strategies import is_trusted
from ..tokens.sent import SHAPES, SentCounter, sent_counter, trace

BUILTIN_STRATEGIES = ("truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger")


@dataclass(frozen=True, slots=True)
class TokenizerInfo:
    """The tokenizer profile a plan was counted with."""

    profile: str
    approximate: bool

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "approximate": self.approximate}


@dataclass(slots=True)
class PlanBlock:
    """One block of the prompt: where it stands, what it costs, and its fate.

    Not frozen, unlike the plan: a frozen dataclass pays a ``setattr`` call
    per field, three times the cost of making 10,000 blocks. Treat it as
    read-only all the same.
    """

    index: int
    id: str
    role: str
    kind: str
    content: str
    tokens: int | None
    included: bool
    reason: str
    group: int | None = None
    origin: str = "input"
    sources: tuple[int, ...] = ()
    message: dict = field(default_factory=dict, repr=False, compare=False)
    #: The point estimate of ``tokens`` for an approximate profile (``tokens`` is the band's upper end).
    tokens_estimate: int | None = None

    @property
    def fate(self) -> str:
        """What happened to it, in one word the plan's JSON carries (``fate``): protected, kept,
        summarized, compressed or excluded. Every face groups and colours blocks by it."""
        return fate_of(self.reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "id": self.id,
            "role": self.role,
            "kind": self.kind,
            "content": self.content,
            "tokens": self.tokens,
            "tokensEstimate": self.tokens if self.tokens_estimate is None else self.tokens_estimate,
            "included": self.included,
            "reason": self.reason,
            "fate": self.fate,
            "group": self.group,
            "origin": self.origin,
        }


_FATES = {
    "system": "protected",
    "character": "protected",
    "persona": "protected",
    "required": "protected",
    "pinned": "protected",
    "current_input": "protected",
    "restored": "protected",
    "within_budget": "kept",
    "summary": "summarized",
    "summarized": "summarized",
    "compressed": "compressed",
}


def fate_of(reason: str) -> str:
    """The fate a reason stands for (``excluded`` for every exclusion but ``summarized``).

    >>> fate_of("pinned"), fate_of("summary"), fate_of("low_relevance")
    ('protected', 'summarized', 'excluded')
    """
    return _FATES.get(reason, "excluded")


@dataclass(frozen=True, slots=True)
class PromptPlan:
    """What the model will see, and why (``to_dict`` gives the API's JSON)."""

    model: str
    strategy: str
    blocks: list[PlanBlock]
    provider_messages: list[dict]
    provider_system: str | None
    template: str
    prompt_tokens: int
    tools_tokens: int
    budget: int
    context_limit: int
    response_reserve: int
    tokenizer: TokenizerInfo
    diagnostics: list[dict]
    fit: FitResult = field(repr=False, compare=False)
    #: tokens per tool definition, largest first, and whether they are exact (tool_defs.py)
    tools_view: dict = field(default_factory=dict, repr=False, compare=False)
    #: The point estimate of ``prompt_tokens`` (``None``: exact, the same number); ``prompt_tokens``,
    #: which the fit holds to the budget, is the upper end of an approximate profile's band.
    prompt_tokens_estimate: int | None = None
    #: The prompt against the model's published effective context (``None``: the catalog has no figure
    #: for the model); JSON ``effectiveContext``.
    effective_context: EffectiveContext | None = field(default=None, compare=False)
    #: Where each must-survive fact sits in what is sent, when a face asked for it
    #: (:func:`contextfit.replays.placement.with_fact_placement`); JSON ``factPlacement``, absent when not asked.
    fact_placement: Any = field(default=None, repr=False, compare=False)

    @property
    def excluded(self) -> list[PlanBlock]:
        """Blocks that are not sent."""
        return [block for block in self.blocks if not block.included]

    @property
    def counts(self) -> results.FateCounts:
        """How many input blocks it dropped, summarized and sent compressed: the one count every
        face shows, a replay's too (:func:`~contextfit.fitting.results.fate_counts`)."""
        return self.fit.counts()

    @property
    def summary(self) -> PlanBlock | None:
        """The summary block, when the strategy made one."""
        return next((block for block in self.blocks if block.reason == "summary" and block.included), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "strategy": self.strategy,
            "contextLimit": self.context_limit,
            "responseReserve": self.response_reserve,
            "budget": self.budget,
            "promptTokens": self.prompt_tokens,
            "promptTokensEstimate": self.prompt_tokens if self.prompt_tokens_estimate is None else self.prompt_tokens_estimate,
            "toolsTokens": self.tools_tokens,
            "tools": self.tools_view,
            "tokenizer": self.tokenizer.to_dict(),
            "template": self.template,
            "blocks": [block.to_dict() for block in self.blocks],
            "providerMessages": self.provider_messages,
            "providerSystem": self.provider_system,
            "diagnostics": self.diagnostics,
            "effectiveContext": None if self.effective_context is None else self.effective_context.to_dict(),
            **({} if self.fact_placement is None else {"factPlacement": self.fact_placement.to_dict()}),
        }


def _whole(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidSettings(f"{name} must be a whole number of tokens of at least {minimum}, got {value!r}.")
    return value


def resolve_limits(info: ModelInfo, context_limit: Any = None, response_reserve: Any = None) -> tuple[int, int, int]:
    """(context limit, response reserve, budget), defaulting from the catalog."""
    limit = info.context_limit if context_limit is None else _whole("context_limit", context_limit, 1)
    reserve = info.max_output if response_reserve is None else _whole("response_reserve", response_reserve, 0)
    if reserve >= limit:
        raise InvalidSettings(
            f"response_reserve ({reserve}) must be smaller than context_limit ({limit}): nothing would be left for the prompt."
        )
    return limit, reserve, limit - reserve


@dataclass(frozen=True, slots=True)
class Prepared:
    """Everything before fitting, shared by every strategy: the assembled
    blocks, their texts, the model, counters, limits and template.

    ``counter`` counts blocks as the template sends them (what the fit uses);
    ``tokenizer`` is the profile's plain counter (tool definitions, the plan's
    tokenizer info)."""

    info: ModelInfo
    blocks: list[dict]
    texts: list[str]
    diagnostics: list[dict]
    template: str
    counter: SentCounter
    tokenizer: TokenCounter
    context_limit: int
    response_reserve: int
    budget: int
    tools_tokens: int
    #: the tool definitions sent, and the deferred ones registered but not sent (tokens/tool_defs.py)
    tools: tuple = ()
    deferred_tools: tuple = ()
    #: blocks whose reasoning the provider drops (tokens/reasoning.py): the original, by id of the block fitted
    reasoning_originals: dict = field(default_factory=dict)
    #: whether any block carries reasoning (then plans get ``reasoning`` rows)
    has_reasoning: bool = False
    #: characters filling in {{user}} and {{char}} added to the blocks (``contextfit/inputs/macros.py``)
    macro_growth: int = 0


def assembled(messages: Sequence[dict], settings: PlanSettings, filled: Filled | None = None) -> Assembly:
    """The persona, lorebook and memory stages: every block of the prompt in order, nothing counted
    (``filled``: a session's blocks of messages met before, :func:`~contextfit.pipeline.assembly.assemble`)."""
    if settings.scan_depth is not None:
        _whole("scan_depth", settings.scan_depth, 0)
    return assemble(
        messages,
        character=settings.character,
        persona=settings.persona,
        lorebook=settings.lorebook,
        memory=settings.memory,
        user_name=DEFAULT_USER_NAME if settings.user_name is None else settings.user_name,
        char_name=settings.char_name,
        scan_depth=settings.scan_depth,
        overrides=settings.overrides,
        filled=filled,
    )


def macro_names(settings: PlanSettings) -> dict[str, str]:
    """What ``{{user}}`` and ``{{char}}`` stand for under ``settings``, as assembly fills them in
    (:func:`~contextfit.pipeline.assembly.fill_macros`): a fact written ``{{char}}`` is looked for
    as the prompt says it.

    >>> macro_names(PlanSettings("gpt-4o", user_name="Kael", character={"name": "Mara Quill", "description": "A guide."}))
    {'user': 'Kael', 'char': 'Mara Quill'}
    >>> macro_names(PlanSettings("gpt-4o"))
    {'user': 'User', 'char': 'Assistant'}
    """
    return macro_values(DEFAULT_USER_NAME if settings.user_name is None else settings.user_name,
                        settings.char_name, as_card(settings.character))


def prepare(
    messages: Sequence[dict], settings: PlanSettings, filled: Filled | None = None, previous: Prepared | None = None
) -> Prepared:
    """The stages before fitting (persona, lorebook, memory, template,
    tokenizer); :func:`plan_prepared` fits the result with a strategy.

    A session passes what it made before: ``filled``, the blocks of messages
    met before (:func:`~contextfit.pipeline.assembly.assemble`), and
    ``previous``, its last :class:`Prepared` for these settings, whose blocks
    met again keep their texts."""
    info = get_model(settings.model)
    limit, reserve, budget = resolve_limits(info, settings.context_limit, settings.response_reserve)
    shape = settings.template or ("anthropic" if info.provider == "anthropic" else "openai")
    if shape not in SHAPES:
        raise InvalidSettings(f"template must be one of {', '.join(SHAPES)}, got {shape!r}.")
    assembly = assembled(messages, settings, filled)
    texts = _known_texts(assembly.blocks, previous)
    if texts is not None:  # no block carries reasoning: the provider is sent them as they are
        blocks, originals, has_reasoning = list(assembly.blocks), {}, False
    else:
        # Earlier turns' reasoning the provider strips is not sent, so not counted.
        blocks, originals = reasoning.provider_view(assembly.blocks,
                                                    reasoning.keeps_earlier_reasoning(info.id, info.provider))
        texts = [message_text(block) for block in blocks]
        has_reasoning = bool(originals) or any(map(reasoning.has_reasoning, blocks))
    tokenizer = token_counter(info.id)
    refuse_lone_surrogates(settings.tools, "tools")
    sent, deferred = tool_defs.split_deferred(settings.tools, blocks)  # deferred tools are registered, not sent
    # more than the budget: every fit refuses them (fit_prepared)
    extra = tool_defs.request_tokens(tokenizer, sent, deferred, _opening_systems(blocks))
    return Prepared(
        info=info,
        blocks=blocks,
        texts=texts,
        diagnostics=assembly.diagnostics,
        template=shape,
        counter=sent_counter(tokenizer, shape),
        tokenizer=tokenizer,
        context_limit=limit,
        response_reserve=reserve,
        budget=budget,
        tools_tokens=extra,
        tools=tuple(sent),
        deferred_tools=tuple(deferred),
        reasoning_originals=originals,
        has_reasoning=has_reasoning,
        macro_growth=assembly.macro_growth,
    )


def _opening_systems(blocks: list[dict]) -> list[dict]:
    """The system messages a fit of ``blocks`` can open with, when it surely opens with one: the
    leading system-role blocks up to the first protected one (a fit always sends it); none when
    the prompt may open with something else."""
    found = []
    for block in blocks:
        if role_of(block) not in SYSTEM_ROLES:
            return []
        found.append(block)
        meta = meta_of(block)
        if kind_of(block) == SYSTEM or any(flag is True for flag in (block.get("pinned"), meta.get("pinned"),
                                                                             meta.get("required"))):
            return found
    return []


def _known_texts(blocks: list[dict], previous: Prepared | None) -> list[str] | None:
    """The texts of ``blocks`` when neither they nor ``previous``'s carry
    reasoning, those of the blocks ``previous`` holds taken from it; else
    ``None``. A block ``previous`` holds is the same dict, unedited: a session
    makes a block again when its message or the block changed
    (:class:`~contextfit.pipeline.assembly.Filled`)."""
    if previous is None or previous.has_reasoning or previous.reasoning_originals:
        return None
    known = dict(zip(map(id, previous.blocks), previous.texts))
    fresh = [block for block in blocks if id(block) not in known]
    if any(map(reasoning.has_reasoning, fresh)):
        return None
    missing = object()
    return [text if text is not missing else message_text(block)
            for block, text in zip(blocks, map(known.get, map(id, blocks), repeat(missing)))]


def plan_prepared(
    prepared: Prepared, settings: PlanSettings, context_strategy: Any = None, *, analyse: Analyse = build_view
) -> PromptPlan:
    """Fit prepared blocks with one strategy (``context_strategy``, else the
    settings'), run the interceptors and the final fit.

    ``prompt_tokens`` is the count of exactly what is sent: the provider
    messages (and, for Anthropic, the system text as one system message),
    the reply priming and the tool definitions. Raises ``INVALID_SETTINGS``
    for a keyword that is neither a setting nor an option of the strategy.
    ``analyse`` makes the fit's view (a :class:`~contextfit.pipeline.session.FitSession`
    passes its own, which knows which blocks are new).
    """
    if context_strategy is None:
        context_strategy = settings.strategy
    fit = fit_prepared(prepared, settings, context_strategy, analyse=analyse)
    tools = prepared.tools_tokens
    texts = prepared.texts
    # the request's tools come first
    blocks = [tools_block(prepared)] if prepared.tools or prepared.deferred_tools else []
    blocks += [
        PlanBlock(position, ident, role, kind, texts[index] if index is not None else message_text(message),
                  tokens, included, reason, group, origin, sources, message)
        for position, (index, ident, role, kind, tokens, included, reason, group, origin, sources, message)
        in enumerate(fit.decisions.rows(), start=len(blocks))
    ]
    if prepared.has_reasoning:
        blocks = with_reasoning_rows(blocks, prepared.counter, prepared.tokenizer, prepared.reasoning_originals, PlanBlock)
    traced = trace(fit.kept, prepared.template)
    prompt = traced.prompt
    tokenizer = prepared.tokenizer
    unsent = _unsent_diagnostic(traced.unsent, fit.kept, blocks)
    guessed = image_diagnostic(blocks, tokenizer.images)  # images of unknown size make the count approximate
    guessed += reasoning_diagnostic(blocks)  # so does encrypted reasoning
    guessed += tool_shape_diagnostic(tokenizer, prepared.tools, prepared.deferred_tools,
                                     _sent_messages(traced, fit.kept, blocks))  # and unmeasured tool shapes
    prompt_tokens = fit.tokens + tools
    effective = effective_context(prepared.info.id, prepared.info.effective_context, prompt_tokens)
    return PromptPlan(
        model=prepared.info.id,
        strategy=fit.strategy,
        blocks=blocks,
        provider_messages=prompt.messages,
        provider_system=prompt.system,
        template=prepared.template,
        prompt_tokens=prompt_tokens,
        tools_tokens=prepared.tools_tokens,
        budget=prepared.budget,
        context_limit=prepared.context_limit,
        response_reserve=prepared.response_reserve,
        tokenizer=TokenizerInfo(tokenizer.profile, tokenizer.approximate or bool(guessed)),
        diagnostics=[*prepared.diagnostics, *fit.diagnostics, *unsent, *guessed,
                     *effective_context_diagnostic(effective)],
        fit=fit,
        tools_view=_tools_view(prepared),
        prompt_tokens_estimate=_point_estimates(prepared, fit.kept, blocks) if tokenizer.approximate else None,
        effective_context=effective,
    )


def fit_prepared(
    prepared: Prepared, settings: PlanSettings, context_strategy: Any = None, *, analyse: Analyse = build_view
) -> FitResult:
    """The fit of :func:`plan_prepared` alone (no plan blocks, no rendering):
    what a replay refits turn after turn. Raises as :func:`plan_prepared`."""
    if context_strategy is None:
        context_strategy = settings.strategy
    check_options(context_strategy, settings.options)
    tools = prepared.tools_tokens
    if tools > prepared.budget:  # no strategy can help: a replay records it for every turn
        raise TokenBudgetExceeded(tools, prepared.budget,
                                  f"The tool definitions alone need {tools} tokens; the budget is {prepared.budget}.")
    try:
        options = dict(settings.options)
        count_excluded = options.pop("count_excluded", True)
        return fit_messages(prepared.blocks, prepared.counter, prepared.budget - tools, context_strategy,
                            settings.interceptors, count_excluded, prepared.template, options, analyse)
    except TokenBudgetExceeded as exc:
        if not tools:
            raise
        raise TokenBudgetExceeded(
            exc.protected_tokens + tools, prepared.budget,
            f"The protected context and the tool definitions need {exc.prompt_tokens + tools} tokens but the "
            f"budget is {prepared.budget}. Raise the context limit, lower the response reserve, or unpin or "
            f"shorten protected messages.", blocks=exc.blocks, prompt_tokens=exc.prompt_tokens + tools,
        ) from None


def _point_estimates(prepared: Prepared, kept: list[dict], blocks: list[PlanBlock]) -> int:
    """Give each counted block its point estimate; return the prompt's (an approximate
    profile counts the band's upper end, which the fit uses, and this typical value)."""
    point = prepared.tokenizer.estimator()
    tools = tool_defs.request_tokens(point, prepared.tools, prepared.deferred_tools)
    sent = sent_counter(point, prepared.template)
    for block in blocks:
        if block.tokens is not None:
            block.tokens_estimate = tools if block.origin == "request" else sent.count_message(block.message)
    return sent(kept) + tools


def _tools_view(prepared: Prepared) -> dict:
    if not prepared.tools and not prepared.deferred_tools:
        return {}
    costs = tool_defs.tool_costs(prepared.tools, prepared.tokenizer)
    view = {"tokens": prepared.tools_tokens, "exact": tool_defs.is_exact(prepared.tokenizer),
            "perTool": [cost.to_dict() for cost in costs]}
    if prepared.deferred_tools:  # additive: plans without deferred tools keep their JSON
        view["deferred"] = [{"name": tool_defs.tool_name(tool), "status": tool_defs.NOT_SENT,
                             "tokens": tool_defs.deferred_tokens([tool], prepared.tokenizer)}
                            for tool in prepared.deferred_tools]
    return view


def tools_block(prepared: Prepared) -> PlanBlock:
    """The request's tool definitions as one protected block of kind ``tools``
    (reason ``required``: they cannot be dropped without changing the request)."""
    return PlanBlock(0, tool_defs.TOOLS_ID, "system", tool_defs.TOOLS,
                     tool_defs.summary(prepared.tools, prepared.deferred_tools),
                     prepared.tools_tokens, True, results.REQUIRED, None, "request")


def _sent_messages(traced: Any, kept: list[dict], blocks: list[PlanBlock]) -> list[tuple[str, dict]]:
    """Each provider message with the id of the (first) plan block it was made from."""
    ids = {id(block.message): block.id for block in blocks if block.included}
    return [(ids.get(id(kept[sources[0]]), str(sources[0])) if sources else str(position), message)
            for position, (sources, message) in enumerate(zip(traced.sources, traced.prompt.messages))]


def _unsent_diagnostic(unsent: dict[int, list[str]], kept: list[dict], blocks: list[PlanBlock]) -> list[dict]:
    """``PARTS_NOT_SENT`` for kept blocks whose thinking the template leaves out."""
    if not unsent:
        return []
    ids = {id(block.message): block.id for block in blocks if block.included}
    parts = sorted({part for found in unsent.values() for part in found})
    return [
        {
            "code": results.PARTS_NOT_SENT,
            "blocks": [ids.get(id(kept[position]), str(position)) for position in sorted(unsent)],
            "parts": parts,
            "message": f"{', '.join(parts)} part(s) from another provider are not sent in this model's message shape; "
            f"they are not counted.",
        }
    ]


#: Options the built-in strategies read that are not settings (callables for ``vector-recall``).
_BUILTIN_OPTIONS = ("scorer", "embed")
#: Parameter names a strategy's signature has that are not options.
_NOT_OPTIONS = frozenset({"self", "messages", "count_tokens", "budget", "view"})


def accepted_keywords(context_strategy: Any = "truncate") -> list[str]:
    """The keywords :func:`plan_prompt` takes with ``context_strategy``: its own,
    the settings table's, the built-ins' options, and the keyword parameters a
    plugin strategy names in its signature.

    >>> accepted_keywords()[:4]
    ['model', 'context_strategy', 'context_limit', 'response_reserve']
    """
    names = list(FIELDS)
    names += [s.keyword for s in SETTINGS if s.target == "plan" and s.keyword not in names]
    names += _BUILTIN_OPTIONS
    impl = plugins.registry.get(context_strategy) if isinstance(context_strategy, str) else context_strategy
    if not is_trusted(impl):
        target = getattr(impl, "propose", None) if callable(getattr(impl, "propose", None)) else impl
        try:
            parameters = inspect.signature(target).parameters.values()
        except (TypeError, ValueError):  # a builtin or odd callable: no named options
            parameters = ()
        for parameter in parameters:
            if parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD):
                if parameter.name not in _NOT_OPTIONS and parameter.name not in names:
                    names.append(parameter.name)
    return names


def check_options(context_strategy: Any, options: Mapping[str, Any]) -> None:
    """Raise ``INVALID_SETTINGS`` for a keyword :func:`plan_prompt` does not take."""
    if not options:
        return
    accepted = accepted_keywords(context_strategy)
    for name in options:
        if name in accepted:
            continue
        setting = BY_NAME.get(name)
        close = [setting.keyword] if setting is not None else difflib.get_close_matches(name, accepted, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidSettings(f"plan_prompt got an unknown keyword {name!r}{hint}. Accepted: {', '.join(accepted)}.")
    refuse_unsupported(context_strategy, options)


def refuse_unsupported(context_strategy: Any, options: Mapping[str, Any], where: str = "stable_prefix") -> None:
    """Raise ``INVALID_SETTINGS`` (:class:`~contextfit.errors.UnsupportedOption`) when a built-in
    strategy that does not cut in steps is asked for ``stable_prefix``: it would be ignored, and a
    replay's ``vector-recall+stable_prefix`` row would repeat ``vector-recall``'s. ``where`` names
    the option as the caller wrote it (``strategies[1].options.stable_prefix``).

    >>> refuse_unsupported("vector-recall", {"stable_prefix": True})
    Traceback (most recent call last):
    ...
    contextfit.errors.UnsupportedOption: stable_prefix: vector-recall does not take stable_prefix; truncate, summarize and clear-tool-results do (they cut in steps, so the cached prompt prefix holds). Leave it out for vector-recall, or choose one of them.
    """
    if not options.get("stable_prefix"):
        return
    impl = plugins.registry.get(context_strategy) if isinstance(context_strategy, str) else context_strategy
    if not is_trusted(impl) or getattr(impl, "takes_stable_prefix", False):
        return
    takers = [entry.name for entry in plugins.registry.entries()
              if entry.origin == plugins.BUILT_IN and getattr(entry.strategy, "takes_stable_prefix", False)]
    listed = takers[0] if len(takers) == 1 else f"{', '.join(takers[:-1])} and {takers[-1]}"
    raise UnsupportedOption(f"{where}: {impl.name} does not take stable_prefix; {listed} do (they cut in steps, so "
                            f"the cached prompt prefix holds). Leave it out for {impl.name}, or choose one of them.")


def plan_prompt(messages: Any, settings: PlanSettings | None = None, **keywords: Any) -> PromptPlan:
    """Plan the prompt for ``messages`` with one strategy.

    ``messages`` is a list of message dicts or a :class:`~contextfit.Conversation`
    (its character, persona, lorebook, memory, tools and suggested settings
    fill what the settings leave unchosen). ``settings`` is a
    :class:`~contextfit.pipeline.settings.PlanSettings`; SPEC's keywords (``model``,
    ``context_strategy``, ``context_limit``, ``character``, ..., strategy
    options such as ``summary_tokens``) may replace it or go on top of it.
    ``character`` is a :class:`~contextfit.inputs.formats.CharacterCard` or card JSON,
    ``lorebook`` a :class:`~contextfit.inputs.lorebook.Lorebook` or World Info JSON,
    ``memory`` strings or ``{"content", "relevance"}`` objects. ``overrides``
    maps block ids to edits (``pinned``, ``manualExcluded``, ``relevance``).
    Raises ``TOKEN_BUDGET_EXCEEDED`` when the protected blocks do not fit,
    ``INVALID_SETTINGS`` for a keyword that is neither a setting nor an option
    of the strategy.

    >>> plan = plan_prompt([{"role": "system", "content": "Be brief."},
    ...                     {"role": "user", "content": "Hello!"}], model="gpt-4o")
    >>> plan.prompt_tokens, plan.budget, [b.reason for b in plan.blocks]
    (16, 111616, ['system', 'current_input'])
    >>> plan_prompt([{"role": "user", "content": "Hello!"}], PlanSettings(model="gpt-4o")).prompt_tokens
    9
    """
    messages, settings = settings_for(messages, settings, keywords)
    return plan_prepared(prepare(messages, settings), settings)
