"""Recording a generation's outcome even while the database fails.

A generation ends with one write (:meth:`~contextfit.serving.store.Store.finish_generation`):
its final audit, and the provider's reply when there is one. That write can
fail for reasons that have nothing to do with the reply — another process
holds the database's write lock longer than the lock timeout, a PostgreSQL
connection dropped, the disk is full — and by then the reply has been paid
for. :meth:`FinishQueue.settle` makes sure the outcome is not lost:

1. a reply's write is tried up to ``FinishRetry.attempts`` times, with
   doubling waits between tries;
2. if every try failed, the reply cannot go into the chat, so it goes to the
   client: the audit becomes ``failed`` / ``STORE_UNAVAILABLE`` and
   :class:`~contextfit.errors.StoreUnavailable` is raised carrying the reply
   and that audit (the API answers 503 with both);
3. that failed audit (without the reply), or a ``failed``/``cancelled``
   outcome that could not be written, waits in this process's queue; a
   background thread retries it with the same doubling waits until the
   database takes it, and ``Store.close()`` tries once more at shutdown.

So once the database works again a live process leaves nothing ``pending``,
and the chat never receives a reply its client was told was not stored (the
client may append it itself). Only a process that stops while its database
is still failing leaves a pending row behind (each is logged at shutdown):
the next start finalizes it ``INTERRUPTED`` — "stopped before its outcome
was recorded", which is then exactly what happened.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .audit import FAILED, PromptContextAudit
from ..errors import StoreUnavailable

logger = logging.getLogger(__name__)

#: Writes one outcome: ``(audit, seq, reply) -> stored reply or None``; raises when the database fails.
Write = Callable[[PromptContextAudit, int, "dict | None"], "dict | None"]


@dataclass(frozen=True, slots=True)
class FinishRetry:
    """How often a reply's write is tried, and the waits between tries (seconds).

    Each try can itself wait up to the database's lock timeout.

    >>> [FinishRetry(backoff=0.5, max_backoff=4).delay(n) for n in range(5)]
    [0.5, 1.0, 2.0, 4.0, 4.0]
    """

    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 4.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try number ``attempt`` (from 0)."""
        return float(min(self.backoff * 2 ** min(attempt, 32), self.max_backoff))


def failure_reason(error: BaseException) -> str:
    """The database's own first line about a failure (the driver's error, not the SQL), shortened.

    >>> failure_reason(RuntimeError("database is locked\\n[SQL: INSERT ...]"))
    'RuntimeError: database is locked'
    """
    cause = getattr(error, "orig", None) or error
    lines = str(cause).strip().splitlines()
    first = lines[0][:160] if lines else ""
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__


class FinishQueue:
    """Finishes generations through ``write``, keeping the outcomes it could not write yet."""

    def __init__(self, write: Write, retry: FinishRetry | None = None) -> None:
        self.retry = retry or FinishRetry()
        self._write = write
        self._waiting: dict[str, tuple[PromptContextAudit, int]] = {}
        self._lock = threading.Lock()  # guards _waiting and _thread
        self._draining = threading.Lock()  # one drain at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def settle(self, audit: PromptContextAudit, seq: int, reply: dict | None = None) -> dict | None:
        """Write a finalized generation (see the module docstring); returns the stored reply.

        Returns ``None`` when the chat was deleted meanwhile, or when an outcome
        without a reply was queued for later. Raises ``STORE_UNAVAILABLE``,
        carrying ``reply``, when the reply could not be stored.
        """
        attempts = max(1, self.retry.attempts) if reply is not None else 1
        for attempt in range(attempts):
            if attempt:
                time.sleep(self.retry.delay(attempt - 1))
            try:
                return self._write(audit, seq, reply)
            except Exception as exc:  # whatever failed, the outcome must not be lost
                error = exc
        if reply is None:
            self._keep(audit, seq, error)
            return None
        tries = "once" if attempts == 1 else f"{attempts} times"
        failure = StoreUnavailable(
            f"The provider answered, but the reply could not be stored: the database failed {tries} "
            f"({failure_reason(error)}). The reply is returned with this error and is not in the chat."
        )
        failed = audit.finish(FAILED, failure)
        self._keep(failed, seq, error)
        raise StoreUnavailable(failure.message, reply=reply, audit=failed.to_dict()) from error

    def waiting(self) -> list[str]:
        """The generation ids whose outcome is not written yet."""
        with self._lock:
            return list(self._waiting)

    def drain(self) -> int:
        """Try once to write every waiting outcome, oldest first; returns how many still wait."""
        with self._draining:
            with self._lock:
                items = list(self._waiting.values())
            for audit, seq in items:
                try:
                    self._write(audit, seq, None)
                except Exception:
                    break  # the database still fails: the rest waits for the next round
                with self._lock:
                    del self._waiting[audit.generation_id]
                logger.info("generation %s: its outcome is now recorded (%s)", audit.generation_id, audit.error_code)
            with self._lock:
                return len(self._waiting)

    def close(self) -> list[str]:
        """Stop the background retries, try the waiting outcomes once more, and return the ids left."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join()
        self.drain()
        self._stop.clear()
        left = self.waiting()
        for generation_id in left:
            logger.error(
                "generation %s: the database still failed at shutdown; its outcome was not recorded "
                "and the next start will finalize it INTERRUPTED",
                generation_id,
            )
        return left

    def _keep(self, audit: PromptContextAudit, seq: int, error: Exception) -> None:
        logger.warning(
            "generation %s: its outcome (%s) could not be recorded (%s); retrying in the background",
            audit.generation_id,
            audit.error_code or audit.status,
            failure_reason(error),
        )
        with self._lock:
            self._waiting[audit.generation_id] = (audit, seq)
            if self._thread is None:
                self._thread = threading.Thread(target=self._retry, name="contextfit-finish-retry", daemon=True)
                self._thread.start()

    def _retry(self) -> None:
        attempt = 0
        while True:
            stopped = self._stop.wait(self.retry.delay(attempt))
            if not stopped:
                self.drain()
            attempt += 1
            with self._lock:  # decided under the lock, so an outcome kept meanwhile starts a new thread
                if stopped or not self._waiting:
                    self._thread = None
                    return
