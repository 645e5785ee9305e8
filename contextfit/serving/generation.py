"""One generation: plan, audit, call the provider, store the reply, finalize.

:func:`generate` is the whole flow for a stored chat:

1. read the chat; settings are the chat's, overridden by the request's;
2. run :func:`~contextfit.plan_prompt` (``TOKEN_BUDGET_EXCEEDED`` is recorded
   as a ``failed`` audit and raised: no provider is called);
3. record the ``pending`` audit — before any network call;
4. call the provider, and make its reply storable: plain JSON, every lone
   surrogate (which no UTF-8 database can hold) replaced by U+FFFD;
5. in one transaction store the reply and finalize the audit ``completed``,
   or finalize it ``failed`` (the provider's normalized code) or
   ``cancelled`` (the caller's task was cancelled). That write is retried;
   if the database keeps failing, the outcome is kept on disk
   (:mod:`contextfit.serving.spool`), the reply is raised back to the caller
   in ``STORE_UNAVAILABLE``, and both are recorded once the database works
   again (:mod:`contextfit.serving.outcomes`).

Blocking and CPU work (the database, the settings, planning, the audit and
its regex facts, the reply's conversion) runs in worker threads — the
planning and the audit in the caller's bounded pool (``offload``) — so many
generations can run at once on one event loop and none holds it up. :func:`send_conversation` is
the blocking helper for scripts and the dashboard.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import anyio
from anyio import to_thread

from . import native_count
from .audit import CANCELLED, COMPLETED, FAILED, PromptContextAudit, audit_from_plan, refused_audit
from ..errors import GenerationCancelled, GenerationInterrupted, ProviderError, TokenBudgetExceeded
from ..jsonpath import replace_lone_surrogates
from ..pipeline.plan import PromptPlan, macro_names, plan_prompt
from .sessions import chat_sessions
from .cancellation import watched
from .providers import Provider, ProviderReply, ProviderRequest, get_provider, reported_prompt_tokens
from ..pipeline.settings import DEFAULT_MODEL, PlanSettings
from ..pipeline.settings import merge_settings, provider_options
from ..replays.facts import Fact, declared_facts, filled_facts
from ..replays.placement import with_fact_placement
from .store import Chat, Store
from .validation import storable_messages


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """A finished generation: its ``completed`` audit and the reply stored in the chat."""

    audit: PromptContextAudit
    message: dict

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "audit": self.audit.to_dict()}


class RunningGenerations:
    """The generations running in this process, so that they can be cancelled by chat."""

    def __init__(self) -> None:
        self._scopes: dict[str, tuple[str, anyio.CancelScope]] = {}

    @contextmanager
    def track(self, chat_id: str) -> Iterator[anyio.CancelScope]:
        """A cancel scope for one generation of ``chat_id``, known here while it runs."""
        key = uuid.uuid4().hex
        with anyio.CancelScope() as scope:
            self._scopes[key] = (chat_id, scope)
            try:
                yield scope
            finally:
                del self._scopes[key]

    def cancel(self, chat_id: str) -> int:
        """Cancel every running generation of ``chat_id``; returns how many (call it on the event loop)."""
        scopes = [scope for chat, scope in self._scopes.values() if chat == chat_id]
        for scope in scopes:
            scope.cancel()
        return len(scopes)


@dataclass(frozen=True, slots=True)
class ResolvedRequest:
    """What a generation or a preview plans with: the plan settings, and the
    settings that travel to the provider."""

    settings: PlanSettings
    provider_options: dict[str, Any]
    #: the must-survive facts the audit checks (the ``facts`` setting)
    facts: tuple[Fact, ...] = ()

    @property
    def model(self) -> str:
        """The model the request plans for."""
        return self.settings.model

    def for_provider(self, plan: PromptPlan) -> ProviderRequest:
        """The provider request for ``plan``: its final messages, the reserve as the reply's limit."""
        return ProviderRequest(
            model=plan.model,
            messages=plan.provider_messages,
            max_tokens=plan.response_reserve,
            system=plan.provider_system,
            tools=self.settings.tools,
            **self.provider_options,
        )


def resolve_request(
    chat: Chat | None,
    backend: Provider | None,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> ResolvedRequest:
    """The request's model and settings over the chat's, then the defaults.

    The provider's message shape (``template``) applies unless the settings
    name one.

    >>> resolve_request(None, None, None, {"contextStrategy": "summarize", "temperature": 0.5})
    ResolvedRequest(settings=PlanSettings(model='gpt-4o', context_strategy='summarize'), provider_options={'temperature': 0.5}, facts=())
    """
    merged = merge_settings(chat.settings if chat else None, settings)
    plan = PlanSettings.from_json(merged, model=model or (chat.model if chat else None) or DEFAULT_MODEL)
    if backend is not None and backend.template and plan.template is None:
        plan = plan.replace(template=backend.template)
    return ResolvedRequest(plan, provider_options(merged), tuple(declared_facts(merged.get("facts"))))


def preview(
    store: Store,
    providers: Mapping[str, Provider],
    *,
    chat_id: str | None = None,
    messages: list[dict] | None = None,
    provider: str | None = None,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> PromptPlan:
    """The plan a generation would send, writing nothing.

    Starts from the stored chat when ``chat_id`` is given; ``messages``,
    ``model`` and ``settings`` replace or override its own. The plan carries
    where each must-survive fact sits in it (``factPlacement``): the ``facts``
    setting's, else the facts the conversation marks.
    """
    chat = store.get_chat(chat_id) if chat_id is not None and messages is None else None
    if chat is not None:  # the stored chat as it is: its session refits only what was appended
        backend = get_provider(providers, provider) if provider is not None else None
        request = resolve_request(chat, backend, model, settings)
        plan = chat_sessions().plan(chat, request.settings)
    else:
        checked, request = preview_request(store, providers, chat_id=chat_id, messages=messages, provider=provider,
                                           model=model, settings=settings)
        plan = plan_prompt(checked, request.settings)
    # declared facts as the prompt says them ({{char}} filled in), as the audit reads them
    facts = filled_facts(request.facts, macro_names(request.settings)) if request.facts else None
    return with_fact_placement(plan, facts, user_name=request.settings.user_name)


def preview_request(
    store: Store,
    providers: Mapping[str, Provider],
    *,
    chat_id: str | None = None,
    messages: list[dict] | None = None,
    provider: str | None = None,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> tuple[list[dict], ResolvedRequest]:
    """The checked messages and the resolved request (plan settings, declared ``facts``) of a preview
    or a replay: the stored chat's when ``chat_id`` is given, with ``messages``, ``model`` and
    ``settings`` over them."""
    chat = store.get_chat(chat_id) if chat_id is not None else None
    backend = get_provider(providers, provider) if provider is not None else None
    request = resolve_request(chat, backend, model, settings)
    if messages is None:
        messages = chat.messages if chat else []
    return storable_messages(messages), request


def check_chat_settings(model: str | None, settings: Mapping[str, Any] | None) -> None:
    """Raise the error every generation of a chat with this model and these settings would raise.

    Plans an empty conversation through the same :func:`resolve_request` and
    :func:`~contextfit.plan_prompt` as :func:`generate`, so a chat is stored
    only with settings generation accepts. ``TOKEN_BUDGET_EXCEEDED`` is not
    raised: whether a prompt fits depends on its messages too.

    >>> check_chat_settings("gpt-4o", {"contextStrategy": "summarize"})
    >>> check_chat_settings("gpt-4o", {"overrides": {"m0": 5}})
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: overrides["m0"] must be an object such as {"pinned": true}, got a number.
    """
    request = resolve_request(None, None, model, settings)
    try:
        plan_prompt([], request.settings)
    except TokenBudgetExceeded:
        pass


def reply_message(reply: ProviderReply, audit: PromptContextAudit) -> dict:
    """The provider's reply as a chat message whose ``meta`` names the generation,
    made storable (:func:`storable_reply`)."""
    meta = {
        "id": "msg_" + uuid.uuid4().hex,
        "kind": "history",
        "generationId": audit.generation_id,
        "provider": audit.provider,
        "model": reply.model or audit.model,
        "finishReason": reply.finish_reason,
    }
    if reply.usage:
        meta["usage"] = reply.usage
    return storable_reply({**reply.message, "role": "assistant", "meta": meta}, audit.provider)


def storable_reply(message: dict, provider: str) -> dict:
    """A copy of ``message`` that any database can store: plain JSON, every lone
    surrogate in every string and key (content, tool call arguments, meta)
    replaced by U+FFFD, ``NaN``/``Infinity`` as ``null``.

    Raises ``PROVIDER_ERROR`` when the reply is not JSON at all.

    >>> storable_reply({"role": "assistant", "content": "ok \\ud800", "usage": {"x": float("nan")}}, "p")
    {'role': 'assistant', 'content': 'ok \\ufffd', 'usage': {'x': None}}
    """
    try:
        # Lone surrogates only occur inside JSON strings, so one pass over the text reaches them all.
        text = json.dumps(message, ensure_ascii=False)
    except (TypeError, ValueError):
        raise ProviderError(provider, detail="the provider's reply is not plain JSON") from None
    return json.loads(replace_lone_surrogates(text), parse_constant=lambda _constant: None)


async def generate(
    store: Store,
    providers: Mapping[str, Provider],
    chat_id: str,
    *,
    provider: str | None = None,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    offload: Callable[..., Awaitable[Any]] | None = None,
    native: Mapping[str, native_count.NativeCounter] | None = None,
) -> GenerationResult:
    """Generate the next reply of a stored chat, with its audit (see the module docstring).

    ``native`` maps catalog providers to their token-count endpoints
    (:mod:`contextfit.serving.native_count`; default: what the environment
    enables, usually nothing): the provider's count of the request is then
    recorded in the audit next to contextfit's, and a failure only noted there.
    A completed audit also records the prompt tokens the provider reported.

    ``offload(fn)`` runs the planning (CPU work) off the event loop: a worker
    thread by default; the API passes its bounded pool.

    Raises ``CHAT_NOT_FOUND``, ``UNKNOWN_PROVIDER``, the settings and model
    errors of :func:`plan_prompt` (no audit: nothing was attempted),
    ``TOKEN_BUDGET_EXCEEDED`` or a ``PROVIDER_*`` error (audit ``failed``),
    or ``STORE_UNAVAILABLE`` (the database failed: before the provider call,
    or after it, then with the reply and the ``failed`` audit attached);
    cancelling the calling task finalizes the audit ``cancelled``.
    """
    chat = await to_thread.run_sync(store.get_chat, chat_id)
    backend = get_provider(providers, provider)

    def prepare() -> tuple[ResolvedRequest, PromptPlan | TokenBudgetExceeded, PromptContextAudit]:
        # Every CPU step before the call, off the event loop: the settings (regex facts compile),
        # the plan, and the audit (whose must-survive facts run regexes against the whole chat).
        request = resolve_request(chat, backend, model, settings)
        try:
            plan = chat_sessions().plan(chat, request.settings)
        except TokenBudgetExceeded as exc:
            return request, exc, refused_audit(
                exc,
                chat_id=chat_id,
                provider=backend.name,
                model=request.model,
                context_limit=request.settings.context_limit,
                response_reserve=request.settings.response_reserve,
            )
        audit = audit_from_plan(plan, chat_id=chat_id, provider=backend.name, facts=request.facts,
                                messages=chat.messages, names=macro_names(request.settings))  # fmt: skip
        return request, plan, audit

    request, plan, audit = await (offload or to_thread.run_sync)(prepare)
    if isinstance(plan, TokenBudgetExceeded):  # recorded as a failed audit; no provider is called
        await to_thread.run_sync(store.record_audit, audit)
        raise plan
    counters = native_count.configured() if native is None else native
    counted: list[dict] = []
    seq = None

    async def count_and_complete() -> ProviderReply:
        if counters:  # the provider's own count first: a short call, never an error (native_count.py)
            found = await native_count.count_plan(plan, counters, request.settings.tools)
            counted.extend([found] if found is not None else [])
        return await backend.complete(request.for_provider(plan))

    try:
        seq = await to_thread.run_sync(store.begin_generation, audit)
        # Any process may cancel it through the database, which also renews its lease meanwhile.
        try:
            reply = await watched(store.engine, audit.generation_id, count_and_complete)
        finally:
            if counted:
                audit = replace(audit, provider_count=counted[0])
        with anyio.CancelScope(shield=True):  # paid for: a client leaving now does not drop it
            message = await to_thread.run_sync(reply_message, reply, audit)
    except anyio.get_cancelled_exc_class():
        await _finish_shielded(store, audit.finish(CANCELLED, GenerationCancelled()), seq)
        raise
    except GenerationCancelled as exc:  # a /cancel request, received by whichever process
        await _finish_shielded(store, audit.finish(CANCELLED, exc), seq)
        raise
    except ProviderError as exc:
        await _finish_shielded(store, audit.finish(FAILED, exc), seq)
        raise
    except Exception as exc:
        if seq is None:  # the chat went away, or the database failed: nothing was begun
            raise
        error = ProviderError(backend.name, detail=f"the provider raised {type(exc).__name__}")
        await _finish_shielded(store, audit.finish(FAILED, error), seq)
        raise error from exc
    done = replace(audit.finish(COMPLETED), provider_prompt_tokens=reported_prompt_tokens(reply.usage))
    stored = await _finish_shielded(store, done, seq, message)
    if stored is None:  # the chat was deleted while the provider answered
        await to_thread.run_sync(store.get_chat, chat_id)  # raises CHAT_NOT_FOUND
        raise GenerationInterrupted("The provider answered, but the generation's chat could not be found.")
    return GenerationResult(done, stored)


async def _finish_shielded(store: Store, audit: PromptContextAudit, seq: int | None, reply: dict | None = None):
    """Finalize even while being cancelled; an audit never begun (``seq`` None) is recorded whole."""
    with anyio.CancelScope(shield=True):
        if seq is None:
            await to_thread.run_sync(store.record_audit, audit)
            return None
        return await to_thread.run_sync(store.settle_generation, audit, seq, reply)


def send_conversation(
    conversation: Any,
    *,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    title: str | None = None,
    provider: str | None = None,
    store: Store | str | None = None,
    providers: Mapping[str, Provider] | None = None,
) -> GenerationResult:
    """Store a conversation as a new chat and generate once (``echo`` by default); blocking.

    ``conversation`` is a :class:`~contextfit.Conversation` (its character,
    persona, lorebook, memory and tools become chat settings) or a list of
    messages. ``store`` is a :class:`~contextfit.serving.store.Store`, a database
    path or URL, or ``None`` for the default database. The result's
    ``audit.chat_id`` names the new chat.

    >>> result = send_conversation([{"role": "user", "content": "Hi!"}], store=":memory:")
    >>> result.audit.status, result.message["content"]
    ('completed', 'Hi!')
    """
    from .chat_json import conversation_chat
    from .providers import default_providers
    from .store_cache import shared_store

    if not isinstance(store, Store):
        store = shared_store(store)
    messages, extra = conversation_chat(conversation)
    chat = store.create_chat(title=title, model=model, settings=merge_settings(extra, settings), messages=messages)
    work = generate(store, providers if providers is not None else default_providers(), chat.id, provider=provider)
    # A thread of its own, so that this also works where an event loop is already running.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, work).result()
