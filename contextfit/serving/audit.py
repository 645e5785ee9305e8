"""The context audit of one generation: what was sent, what was left out, and why.

A :class:`PromptContextAudit` is built from a :class:`~contextfit.PromptPlan`
before the provider is called (status ``pending``) and finalized with a
terminal status: ``completed``, ``failed`` or ``cancelled``. ``to_dict`` gives
the JSON of SPEC §5. It holds contextfit's own error code and message, never
a provider's response body or a credential.

The dashboard reads stored audits through :mod:`contextfit.serving.audits`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from ..inputs.messages import explicit_id, message_text
from ..fitting import results
from .json_names import camel_dict, from_camel_dict
from ..errors import ContextfitError
from ..pipeline.plan import PlanBlock, PromptPlan, TokenizerInfo
from ..replays.facts import Fact, fact_report

PENDING = "pending"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
TERMINAL = (COMPLETED, FAILED, CANCELLED)

#: Diagnostics that report what the interceptors did (kept in the audit).
INTERCEPTOR_CODES = frozenset(
    {results.INTERCEPTOR_APPLIED, results.INTERCEPTOR_FAILED, results.INTERCEPTOR_REJECTED, results.LATE_OVERFLOW_DROPPED}
)


def utc_now() -> str:
    """The current time as ISO 8601 UTC with milliseconds (``2025-01-31T12:00:00.000Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_generation_id() -> str:
    """A fresh generation id, e.g. ``gen_9f1c...``."""
    return "gen_" + uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class AuditBlock:
    """One prompt block as the audit records it (no content: the chat holds that)."""

    index: int
    id: str
    role: str
    kind: str
    tokens: int | None
    included: bool
    reason: str
    #: The point estimate of ``tokens`` (an approximate profile's ``tokens`` is the band's upper end).
    tokens_estimate: int | None = None

    def __post_init__(self) -> None:
        if self.tokens_estimate is None:  # exact, or an audit stored before estimates: the same number
            object.__setattr__(self, "tokens_estimate", self.tokens)

    def to_dict(self) -> dict[str, Any]:
        return camel_dict(self)


@dataclass(frozen=True, slots=True)
class PromptContextAudit:
    """The audit of one generation (SPEC §5).

    >>> import contextfit
    >>> plan = contextfit.plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o")
    >>> audit = audit_from_plan(plan, chat_id="chat_1", provider="echo", generation_id="gen_1")
    >>> audit.status, audit.prompt_tokens, [b.reason for b in audit.blocks]
    ('pending', 8, ['current_input'])
    >>> done = audit.finish(COMPLETED)
    >>> done.status, done.finished_at is not None, sorted(done.to_dict())[:4]
    ('completed', True, ['blocks', 'budget', 'chatId', 'contextLimit'])
    >>> PromptContextAudit.from_dict(done.to_dict()) == done
    True
    """

    generation_id: str
    chat_id: str
    provider: str
    model: str
    status: str
    blocks: tuple[AuditBlock, ...]
    context_limit: int
    response_reserve: int
    budget: int
    prompt_tokens: int | None
    tokenizer: TokenizerInfo
    strategy: str | None
    provider_messages: list[dict] = field(default_factory=list)
    provider_system: str | None = None
    interceptor_diagnostics: list[dict] = field(default_factory=list)
    error_code: str | None = None
    error_message: str | None = None
    created_at: str = field(default_factory=utc_now)
    finished_at: str | None = None
    #: The point estimate of ``prompt_tokens`` (equal for an exact profile; ``prompt_tokens``
    #: is the upper end of an approximate profile's band, the number the fit used).
    prompt_tokens_estimate: int | None = None
    #: The provider's own count of the final request, from its token-count endpoint
    #: (``contextfit.serving.native_count``): ``{"provider", "tokens", "cached"}``, or
    #: ``{"provider", "tokens": None, "code", "message"}`` when it failed; ``None`` when not asked.
    provider_count: dict | None = None
    #: The prompt tokens the provider reported having read, from a completed generation's usage.
    provider_prompt_tokens: int | None = None
    #: The chat's must-survive facts (the ``facts`` setting) in force, each
    #: ``{"name", "status"}``: ``verbatim``, ``summary`` or ``lost`` in what is sent.
    facts: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.prompt_tokens_estimate is None:  # exact, or an audit stored before estimates: the same number
            object.__setattr__(self, "prompt_tokens_estimate", self.prompt_tokens)

    def finish(self, status: str, error: ContextfitError | None = None) -> PromptContextAudit:
        """This audit with a terminal ``status`` and, on failure, the error's code and message."""
        if status not in TERMINAL:
            raise ValueError(f"status must be one of {', '.join(TERMINAL)}, got {status!r}")
        return replace(
            self,
            status=status,
            error_code=error.code if error is not None else None,
            error_message=error.message if error is not None else None,
            finished_at=utc_now(),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of SPEC §5 (camelCase keys)."""
        data = camel_dict(self)
        data["blocks"] = [block.to_dict() for block in self.blocks]
        data["tokenizer"] = self.tokenizer.to_dict()
        return data

    def as_plan(self, messages: Sequence[dict] = ()) -> PromptPlan:
        """The audit as a :class:`~contextfit.PromptPlan`, for the charts that draw plans.

        Audits keep no block text; it is taken from ``messages`` (the chat's)
        by block id, and is empty for blocks that are not chat messages.
        """
        texts = {explicit_id(m) or f"m{i}": message_text(m) for i, m in enumerate(messages)}
        return PromptPlan(
            model=self.model,
            strategy=self.strategy or "",
            blocks=[
                PlanBlock(b.index, b.id, b.role, b.kind, texts.get(b.id, ""), b.tokens, b.included, b.reason,
                          tokens_estimate=b.tokens_estimate)
                for b in self.blocks
            ],
            provider_messages=self.provider_messages,
            provider_system=self.provider_system,
            template="anthropic" if self.provider_system is not None else "openai",
            prompt_tokens=self.prompt_tokens or 0,
            tools_tokens=0,
            budget=self.budget,
            context_limit=self.context_limit,
            response_reserve=self.response_reserve,
            tokenizer=self.tokenizer,
            diagnostics=self.interceptor_diagnostics,
            fit=None,
            prompt_tokens_estimate=self.prompt_tokens_estimate,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PromptContextAudit:
        """Read back what :meth:`to_dict` wrote."""
        blocks = tuple(AuditBlock(**from_camel_dict(AuditBlock, block)) for block in data["blocks"])
        return cls(**from_camel_dict(cls, data, blocks=blocks, tokenizer=TokenizerInfo(**data["tokenizer"])))


def audit_from_plan(
    plan: PromptPlan, *, chat_id: str, provider: str, generation_id: str | None = None,
    facts: Sequence[Fact] = (), messages: Sequence[dict] = (), names: Mapping[str, str] | None = None,
) -> PromptContextAudit:
    """A ``pending`` audit of ``plan``: every block, the final provider messages, the interceptors' reports,
    and whether each of the must-survive ``facts`` in force in ``messages`` (the chat planned) is still sent
    (``names``: what ``{{user}}`` and ``{{char}}`` stand for, :func:`~contextfit.replays.facts.fact_report`)."""
    return PromptContextAudit(
        generation_id=generation_id or new_generation_id(),
        chat_id=chat_id,
        provider=provider,
        model=plan.model,
        status=PENDING,
        blocks=tuple(AuditBlock(**{name: getattr(b, name) for name in AuditBlock.__slots__}) for b in plan.blocks),
        context_limit=plan.context_limit,
        response_reserve=plan.response_reserve,
        budget=plan.budget,
        prompt_tokens=plan.prompt_tokens,
        tokenizer=plan.tokenizer,
        strategy=plan.strategy,
        provider_messages=plan.provider_messages,
        provider_system=plan.provider_system,
        interceptor_diagnostics=[d for d in plan.diagnostics if d.get("code") in INTERCEPTOR_CODES],
        prompt_tokens_estimate=plan.prompt_tokens_estimate,
        facts=fact_report(facts, messages, plan.fit.kept, names) if facts and plan.fit is not None else [],
    )


def refused_audit(
    error: ContextfitError,
    *,
    chat_id: str,
    provider: str,
    model: str,
    context_limit: int | None = None,
    response_reserve: int | None = None,
    generation_id: str | None = None,
) -> PromptContextAudit:
    """A ``failed`` audit for a generation stopped before planning finished
    (``TOKEN_BUDGET_EXCEEDED``): nothing sent, but the limits and tokenizer
    that refused it and, from the error, every block with its tokens and
    reason (the protected ones, ``included``, are those that did not fit)
    and ``promptTokens``, what the smallest possible prompt needs.
    """
    from ..tokens.chat_counter import token_counter
    from ..tokens.models import get_model
    from ..pipeline.plan import resolve_limits

    info = get_model(model)
    limit, reserve, budget = resolve_limits(info, context_limit, response_reserve)
    counter = token_counter(info.id)
    audit = PromptContextAudit(
        generation_id=generation_id or new_generation_id(),
        chat_id=chat_id,
        provider=provider,
        model=info.id,
        status=PENDING,
        blocks=tuple(AuditBlock(**block) for block in getattr(error, "blocks", ())),
        context_limit=limit,
        response_reserve=reserve,
        budget=budget,
        prompt_tokens=getattr(error, "prompt_tokens", None),
        tokenizer=TokenizerInfo(counter.profile, counter.approximate),
        strategy=None,
    )
    return audit.finish(FAILED, error)
