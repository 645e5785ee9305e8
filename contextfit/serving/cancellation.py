"""Cancelling a generation from any process, through the database.

``POST /api/v2/chats/{id}/cancel`` may reach any of the API's processes,
while the generation runs in one of them. :func:`request_cancel` sets the
``cancel_requested`` flag on the chat's generations in progress (one
``UPDATE``, whichever process runs them); the process running a generation
reads that flag every :func:`poll_seconds` while it waits for the provider
(:func:`watched`), stops the provider call, and finalizes the audit
``cancelled`` — exactly as when its own client asks. The same poll renews
the generation's lease (:mod:`contextfit.serving.liveness`). A generation
another process finalized meanwhile (its lease ran out while the database
was locked or unreachable) is not stopped: its reply, when it comes, is
still stored (:meth:`~contextfit.serving.store.Store.finish_generation`).

The poll interval is ``$CONTEXTFIT_CANCEL_POLL_SECONDS`` (default 0.5): a
cancel takes effect within about that long, and an idle generation costs
one indexed read per interval.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import anyio
import sqlalchemy as sa
from anyio import to_thread
from sqlalchemy.engine import Engine

from ..errors import GenerationCancelled
from .database import seconds_setting, transaction
from .liveness import renew

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Environment variable overriding :data:`POLL_SECONDS`.
POLL_VAR = "CONTEXTFIT_CANCEL_POLL_SECONDS"
#: Seconds between two reads of a running generation's cancel flag.
POLL_SECONDS = 0.5

_generations = sa.table("generations", sa.column("chat_id"), sa.column("cancel_requested"))


def poll_seconds(seconds: float | None = None) -> float:
    """``seconds``, else ``$CONTEXTFIT_CANCEL_POLL_SECONDS``, else :data:`POLL_SECONDS`.

    >>> poll_seconds(0.25)
    0.25
    """
    return seconds_setting(seconds, POLL_VAR, POLL_SECONDS, "The cancel poll interval")


def request_cancel(engine: Engine, chat_id: str) -> int:
    """Flag every generation in progress of ``chat_id`` for cancelling; returns how many."""
    with transaction(engine, write=True) as connection:
        done = connection.execute(
            _generations.update().where(_generations.c.chat_id == chat_id).values(cancel_requested=1)
        )
        return done.rowcount


async def watched(engine: Engine, generation_id: str, work: Callable[[], Awaitable[T]]) -> T:
    """``await work()`` while polling the generation's cancel flag and renewing its lease.

    Raises ``CANCELLED`` when any process asked to cancel. A failing database
    does not stop the work: the poll tries again at the next interval. Once
    another process has finalized the generation (this process could not renew
    its lease in time), the poll stops and the work goes on: the reply is paid
    for, and is stored when it comes.
    """
    outcome = await until_stopped(work, lambda scope: _poll(engine, generation_id, scope))
    if "error" in outcome:
        raise outcome["error"]
    if "result" in outcome:
        return outcome["result"]
    raise GenerationCancelled("The generation was cancelled by a /cancel request before the provider answered.")


async def until_stopped(
    work: Callable[[], Awaitable[T]],
    watch: Callable[[anyio.CancelScope], Awaitable[None]],
    scope: AbstractContextManager[anyio.CancelScope] | None = None,
) -> dict[str, Any]:
    """``await work()`` in a cancel scope (``scope``, else a new one) that ``watch(scope)``, running
    beside it, may cancel. Returns ``{"result": ...}``, ``{"error": exception}``, or ``{}`` when cancelled.
    """
    outcome: dict[str, Any] = {}
    async with anyio.create_task_group() as group:
        with scope if scope is not None else anyio.CancelScope() as cancel_scope:
            group.start_soon(watch, cancel_scope)
            try:
                outcome["result"] = await work()
            except Exception as exc:  # handed back, to be raised outside the task group
                outcome["error"] = exc
        group.cancel_scope.cancel()
    return outcome


async def _poll(engine: Engine, generation_id: str, scope: anyio.CancelScope) -> None:
    interval = poll_seconds()
    while True:
        await anyio.sleep(interval)
        try:
            state = await to_thread.run_sync(renew, engine, generation_id)
        except sa.exc.SQLAlchemyError as exc:
            logger.warning("generation %s: could not read its cancel flag: %s", generation_id, exc)
            continue
        if state is None:  # finalized by another process: nothing left to renew, and its reply still counts
            logger.warning("generation %s: another process finalized it while its lease could not be renewed; "
                           "its reply will still be stored", generation_id)  # fmt: skip
            return
        if state["cancel_requested"]:
            scope.cancel()
            return
