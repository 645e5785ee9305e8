"""The FastAPI app: ``create_app(store, providers)`` and the ``/api/v2`` routes (SPEC §6).

Endpoints are module-level functions on :data:`router`, a few lines each;
the store, the providers, the worker pool and the running generations come
to them as dependencies from ``app.state``, which :func:`create_app` fills.
They hand validated JSON to the package
(``Store``, :mod:`contextfit.serving.generation`) and return what comes back. Every
:class:`~contextfit.ContextfitError` becomes ``{"error": {"code", "message"}}``
in one handler, with the status from :data:`STATUS`; any other failure is a
500 in the same shape.

In front of the routes (see ``guard`` and ``limits``): the host, origin and
API-key checks, then the body size limit. Planning (fitting, tokenizing,
lorebooks and their regex keys, card parsing) runs on the bounded
:class:`~contextfit.serving.api.workers.WorkerPool`, never on the event loop. The
documentation pages load nothing from the network: Swagger UI and ReDoc come
from the ``fastapi-offline`` package.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import sqlalchemy as sa
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic_core import to_json
from starlette.exceptions import HTTPException

from ...errors import ContextfitError, GenerationCancelled, StoreUnavailable
from ..database import is_outage
from ..outcomes import failure_reason
from ..cancellation import request_cancel, until_stopped
from ..generation import GenerationResult, RunningGenerations, check_chat_settings, generate, preview
from ..liveness import Reaper, lease_seconds
from ..providers import Provider, default_providers
from ..replay_endpoint import replay_chat
from ...replays.recommend import RETENTION
from ...pipeline.settings import unknown_setting_message
from ..store import Store
from . import schemas
from .guard import LOOPBACK_HOSTS, ContainFailures, RequestGuard
from .limits import BodySizeLimit, ServerLimits
from .workers import WorkerPool, check_deadline

#: HTTP status per error code; other codes are 400.
STATUS: dict[str, int] = {
    "CHAT_NOT_FOUND": 404,
    "CHAT_TOO_LARGE": 413,
    "AUDIT_NOT_FOUND": 404,
    "REQUEST_TOO_LARGE": 413,
    "HOST_NOT_ALLOWED": 400,
    "UNAUTHORIZED": 401,
    "CROSS_SITE_REQUEST": 403,
    "SERVER_BUSY": 503,
    "REQUEST_TIMEOUT": 503,
    "TOKEN_BUDGET_EXCEEDED": 422,
    "INVALID_REQUEST": 422,
    "INVALID_SETTINGS": 422,
    "INVALID_MESSAGES": 422,
    "INVALID_CONVERSATION": 422,
    "UNKNOWN_MODEL": 422,
    "UNKNOWN_STRATEGY": 422,
    "UNKNOWN_PROVIDER": 422,
    "TOKENIZER_UNAVAILABLE": 422,
    "CANCELLED": 409,
    "INTERRUPTED": 503,
    "PROVIDER_AUTH": 502,
    "PROVIDER_BAD_REQUEST": 502,
    "PROVIDER_CONTEXT_OVERFLOW": 502,
    "PROVIDER_ERROR": 502,
    "PROVIDER_RATE_LIMITED": 429,
    "PROVIDER_UNAVAILABLE": 503,
    "PROVIDER_TIMEOUT": 504,
    "STORE_UNAVAILABLE": 503,
}
_HTTP_CODES = {400: "INVALID_REQUEST", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route can answer (422 always: a bad request; 503 always:
    the database cannot be reached, ``STORE_UNAVAILABLE`` with ``Retry-After``)."""
    return {
        status: {"model": schemas.ErrorResponse, "description": "An error with a stable code"}
        for status in sorted({*statuses, 422, 503})
    }


def _settings(model: Any) -> dict[str, Any] | None:
    return None if model is None else model.model_dump(exclude_none=True)


def _json(data: Any) -> Response:
    """``data`` as the routes' JSON, rendered in the thread that calls this (a worker, never the
    event loop: a chat or a plan of megabytes would hold up every other request). The route's
    ``response_model`` still documents the shape; NaN and infinities become ``null``, as FastAPI's
    own encoder writes them."""
    return Response(to_json(data, inf_nan_mode="null"), media_type="application/json")


# -- what the endpoints depend on: the app's own objects, set by create_app ---------------------


async def app_store(request: Request) -> Store:
    """The store the app serves (``app.state.store``)."""
    return request.app.state.store


async def app_providers(request: Request) -> Mapping[str, Provider]:
    """The providers generation may call (``app.state.providers``)."""
    return request.app.state.providers


async def app_pool(request: Request) -> WorkerPool:
    """The bounded worker pool that planning runs on (``app.state.pool``)."""
    return request.app.state.pool


async def app_running(request: Request) -> RunningGenerations:
    """The generations this process runs, by chat (``app.state.running``)."""
    return request.app.state.running


StoreDep = Annotated[Store, Depends(app_store)]
ProvidersDep = Annotated[Mapping[str, Provider], Depends(app_providers)]
PoolDep = Annotated[WorkerPool, Depends(app_pool)]
RunningDep = Annotated[RunningGenerations, Depends(app_running)]

router = APIRouter(prefix="/api/v2")


@router.post("/chats", status_code=201, response_model=schemas.ChatCreated, operation_id="createChat",
             tags=["chats"], responses=_errors(413, 503))  # fmt: skip
async def create_chat(body: schemas.ChatCreate, store: StoreDep, pool: PoolDep) -> dict:
    """Create a chat (title, model, settings, messages); settings every generation would refuse are refused now."""
    settings = _settings(body.settings)
    await pool.run(check_chat_settings, body.model, settings)
    chat = await anyio.to_thread.run_sync(
        lambda: store.create_chat(
            title=body.title, model=body.model, settings=settings, messages=schemas.messages_json(body.messages)
        )
    )
    return {"id": chat.id}


@router.get("/chats", response_model=schemas.ChatList, operation_id="listChats", tags=["chats"], responses=_errors())
def list_chats(store: StoreDep) -> Response:
    """Every chat, most recently updated first, with its audit status."""
    return _json({"chats": [chat.to_dict() for chat in store.list_chats()]})


@router.get("/chats/{chat_id}", response_model=schemas.Chat, operation_id="getChat", tags=["chats"], responses=_errors(404))
def get_chat(chat_id: str, store: StoreDep) -> Response:
    """The chat with its messages, in order."""
    return _json(store.get_chat(chat_id).to_dict())


@router.patch("/chats/{chat_id}", response_model=schemas.Chat, operation_id="updateChat", tags=["chats"],
              responses=_errors(404, 413, 503))  # fmt: skip
async def update_chat(chat_id: str, body: schemas.ChatUpdate, store: StoreDep, pool: PoolDep) -> Response:
    """Change the title, model or settings (settings are replaced whole, and checked as at creation)."""
    changes = body.model_dump(exclude_unset=True)
    if "settings" in changes:
        changes["settings"] = _settings(body.settings) or {}
    if {"model", "settings"} & set(changes):
        chat = await anyio.to_thread.run_sync(lambda: store.get_chat(chat_id, with_messages=False))
        await pool.run(check_chat_settings, changes.get("model", chat.model), changes.get("settings", chat.settings))
    return await anyio.to_thread.run_sync(lambda: _json(store.update_chat(chat_id, **changes).to_dict()))


@router.post("/chats/{chat_id}/messages", response_model=schemas.MessagesAppended, operation_id="appendMessages",
             tags=["chats"], responses=_errors(404, 413))  # fmt: skip
def append_messages(chat_id: str, body: schemas.MessagesAppend, store: StoreDep) -> Response:
    """Append messages to the chat; returns the chat's fields with the messages just appended (not the whole chat).

    A chat past its limits (as many messages and bytes as an imported file) is 413 ``CHAT_TOO_LARGE``.
    """
    return _json(store.append_messages(chat_id, schemas.messages_json(body.messages)).to_dict())


@router.delete("/chats/{chat_id}", status_code=204, operation_id="deleteChat", tags=["chats"], responses=_errors(404))
def delete_chat(chat_id: str, store: StoreDep) -> Response:
    """Delete the chat, its messages and its audit."""
    store.delete_chat(chat_id)
    return Response(status_code=204)


@router.post("/chats/{chat_id}/generate", response_model=schemas.Generated, operation_id="generate", tags=["generation"],
             responses=_errors(404, 409, 413, 429, 502, 503, 504))  # fmt: skip
async def generate_reply(
    chat_id: str,
    request: Request,
    store: StoreDep,
    providers: ProvidersDep,
    pool: PoolDep,
    running: RunningDep,
    body: schemas.GenerateRequest | None = None,
) -> Response:
    """Plan the prompt, record the audit, call the provider (echo by default) and store the reply.

    The audit is finalized ``completed``, ``failed`` (the error's code) or
    ``cancelled`` (the client disconnected, or ``/cancel`` was called).
    """
    body = body or schemas.GenerateRequest()

    async def work() -> GenerationResult:
        return await generate(
            store, providers, chat_id, provider=body.provider, model=body.model, settings=_settings(body.settings),
            offload=pool.run,
        )

    result = await _until_done_or_gone(request, running, chat_id, work)
    return await anyio.to_thread.run_sync(lambda: _json(result.to_dict()))


@router.post("/chats/{chat_id}/cancel", response_model=schemas.Cancelled, operation_id="cancelGeneration",
             tags=["generation"], responses=_errors(404))  # fmt: skip
async def cancel(chat_id: str, store: StoreDep, running: RunningDep) -> dict:
    """Cancel the chat's running generations, in whichever server process (their audits end ``cancelled``)."""
    await anyio.to_thread.run_sync(lambda: store.get_chat(chat_id, with_messages=False))
    here = running.cancel(chat_id)  # cancel scopes belong to the event loop's thread
    anywhere = await anyio.to_thread.run_sync(request_cancel, store.engine, chat_id)  # polled by their process
    return {"cancelled": max(here, anywhere)}


@router.get("/chats/{chat_id}/context-audit", response_model=schemas.ContextAudit, operation_id="getContextAudit",
            tags=["generation"], responses=_errors(404))  # fmt: skip
def context_audit(chat_id: str, store: StoreDep) -> Response:
    """The latest finalized audit: 404 ``CHAT_NOT_FOUND`` or ``AUDIT_NOT_FOUND`` otherwise."""
    return _json(store.get_audit(chat_id).to_dict())


def _preview_settings(body: schemas.PreviewRequest) -> dict[str, Any]:
    """A preview's (or replay's) settings with the persona, character, lorebook, memory and tools it carries."""
    extra = body.model_dump(include={"persona", "character", "lorebook", "memory", "tools"}, exclude_none=True)
    return {**(_settings(body.settings) or {}), **extra}


@router.post("/context-preview", response_model=schemas.PromptPlan, operation_id="previewContext", tags=["generation"],
             responses=_errors(404, 413, 503))  # fmt: skip
async def context_preview(body: schemas.PreviewRequest, store: StoreDep, providers: ProvidersDep, pool: PoolDep) -> Response:
    """The plan generation would send, for a chat or inline messages. Writes nothing."""

    def plan() -> Response:
        return _json(preview(
            store,
            providers,
            chat_id=body.chatId,
            messages=schemas.messages_json(body.messages),
            provider=body.provider,
            model=body.model,
            settings=_preview_settings(body),
        ).to_dict())

    return await pool.run(plan)


@router.post("/replay", response_model=schemas.ReplayResult, operation_id="replayConversation", tags=["generation"],
             responses=_errors(404, 413, 503))  # fmt: skip
async def replay_conversation(body: schemas.ReplayRequest, store: StoreDep, providers: ProvidersDep, pool: PoolDep) -> Response:
    """Every strategy over the conversation, turn by turn: cost, prompt cache, facts kept. Writes nothing."""

    def run() -> Response:
        # stops after the turn that passes the time limit: the answer (503) is sent, the thread is freed
        return _json(replay_chat(
            store, providers, chat_id=body.chatId, messages=schemas.messages_json(body.messages), provider=body.provider,
            model=body.model, settings=_preview_settings(body), strategies=body.strategies, facts=body.facts,
            progress=check_deadline, priority=body.priority or RETENTION,
        ).to_dict())

    return await pool.run(run)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Finalizes INTERRUPTED the generations of any process (here or elsewhere) whose lease ran out.
    reaper = Reaper(app.state.store.recover_interrupted, lease_seconds() / 2).start()
    yield
    reaper.stop()
    app.state.pool.close()


def create_app(
    store: Store,
    providers: Mapping[str, Provider] | None = None,
    *,
    max_body_bytes: int | None = None,
    limits: ServerLimits | None = None,
    hosts: Iterable[str] = LOOPBACK_HOSTS,
    api_key: str | None = None,
) -> FastAPI:
    """The HTTP API over ``store``, generating with ``providers`` (default: echo, openai, anthropic).

    The store must be migrated already (:func:`~contextfit.serving.store.open_store` does it).
    ``hosts`` are the ``Host`` names answered (default: the loopback names);
    with ``api_key`` every request but the documentation pages must carry it.
    ``limits`` (:class:`~contextfit.serving.api.limits.ServerLimits`) bound the body
    size, the worker pool and the regex keys; ``max_body_bytes`` overrides its body size.
    The endpoints are :data:`router`'s; they reach the store, the providers,
    the pool and the running generations through ``app.state``.
    """
    limits = limits or ServerLimits()
    if max_body_bytes is not None:
        limits = dataclasses.replace(limits, max_body_bytes=max_body_bytes)
    app = FastAPIOffline(
        title="contextfit",
        version="2.0.0",
        description="See exactly what an LLM will see: chats, generation with a context audit, and previews.",
        lifespan=_lifespan,
        swagger_ui_parameters={"validatorUrl": None},  # Swagger UI would send the document to a public validator
    )
    app.state.store = store
    app.state.providers = default_providers() if providers is None else dict(providers)
    app.state.limits = limits
    app.state.pool = WorkerPool(limits)
    app.state.running = RunningGenerations()
    # The last added runs first: failures contained, then who is asking, then how much they send.
    app.add_middleware(BodySizeLimit, max_bytes=limits.max_body_bytes)
    app.add_middleware(RequestGuard, hosts=hosts, api_key=api_key)
    app.add_middleware(ContainFailures)
    app.add_exception_handler(ContextfitError, contextfit_error)
    app.add_exception_handler(sa.exc.SQLAlchemyError, database_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)
    app.include_router(router)
    return app


async def _until_done_or_gone(
    request: Request, running: RunningGenerations, chat_id: str, work: Callable[[], Awaitable[GenerationResult]]
) -> GenerationResult:
    """Run ``work`` in a cancel scope that a client disconnect or ``/cancel`` cancels."""

    async def watch(scope: anyio.CancelScope) -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    outcome = await until_stopped(work, watch, running.track(chat_id))
    if "error" in outcome:
        raise outcome["error"]
    if "result" not in outcome:
        raise GenerationCancelled()
    return outcome["result"]


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


async def contextfit_error(request: Request, exc: ContextfitError) -> JSONResponse:
    """Every :class:`~contextfit.ContextfitError` as ``{"error": {"code", "message", ...}}`` with its status;
    a 503 says when to try again (``Retry-After``)."""
    detail = exc.to_dict()
    status = STATUS.get(exc.code, 400)
    response = _error(status, detail.pop("code"), detail.pop("message"), **detail)
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is None and status == 503:
        retry_after = request.app.state.limits.retry_after
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


async def database_error(request: Request, exc: sa.exc.SQLAlchemyError) -> JSONResponse:
    """The database cannot be reached or written (down, a dropped connection, locked past the
    timeout, a full disk): 503 ``STORE_UNAVAILABLE`` with ``Retry-After``, from every endpoint.
    Any other database error is a 500 like any other failure."""
    if not is_outage(exc):
        raise exc  # on to the 500 handler, which answers without details and leaves the traceback to the log
    error = StoreUnavailable(f"The database cannot be reached or written now ({failure_reason(exc)}); nothing was "
                             "changed by this request. Try again shortly.")  # fmt: skip
    return await contextfit_error(request, error)


async def invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
    """A body or parameter that does not validate: 422 ``INVALID_REQUEST`` naming the first few problems."""
    return _error(422, "INVALID_REQUEST", "; ".join(_describe(error) for error in exc.errors()[:5]))


async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
    """Starlette's own errors (404 for an unknown path, 405, ...) in the same shape."""
    return _error(exc.status_code, _HTTP_CODES.get(exc.status_code, "HTTP_ERROR"), str(exc.detail))


async def internal_error(_request: Request, _exc: Exception) -> JSONResponse:
    """Anything else: a 500 that says nothing about the failure."""
    return _error(500, "INTERNAL_ERROR", "An unexpected error occurred; it was logged by the server.")


def _describe(error: Mapping[str, Any]) -> str:
    """One validation error as ``where: what`` (``settings.contextLimit: Input should be ...``)."""
    location = [str(part) for part in error.get("loc", ()) if part not in ("body", "query", "path")]
    if error.get("type") in (schemas.LONE_SURROGATE, schemas.TOO_DEEP):
        return str(error.get("msg"))
    if error.get("type") == "extra_forbidden" and location[-2:-1] == ["settings"]:
        return unknown_setting_message(location[-1])
    where = ".".join(location) or "body"
    return f"{where}: {error.get('msg', 'invalid value')}"
