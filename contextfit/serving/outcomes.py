"""Recording a generation's outcome even while the database fails.

A generation ends with one write (:meth:`~contextfit.serving.store.Store.finish_generation`):
its final audit, and the provider's reply when there is one. That write can
fail for reasons that have nothing to do with the reply — another process
holds the database's write lock longer than the lock timeout, a PostgreSQL
connection dropped, the disk is full — and by then the reply has been paid
for. :meth:`FinishQueue.settle` makes sure the outcome is not lost:

1. a reply's write is tried up to ``FinishRetry.attempts`` times, with
   doubling waits between tries; before the first wait the outcome is kept
   in the :class:`~contextfit.serving.spool.Spool` (on disk, flushed), so a
   client that leaves or a process killed during the waits loses nothing;
2. if every try failed, the audit becomes ``failed`` / ``STORE_UNAVAILABLE``,
   that outcome replaces the kept one (before anyone is answered), and
   :class:`~contextfit.errors.StoreUnavailable` is raised carrying the reply
   and that audit (the API answers 503 with both);
3. the kept outcome — the reply, which the store then adds to the chat once,
   and the ``STORE_UNAVAILABLE`` audit the client was told — or a
   ``failed``/``cancelled`` outcome that could not be written, is retried by a
   background thread with the same doubling waits until the database takes
   it, once more by ``Store.close()``, and at the next start by whichever
   process opens the database (:func:`~contextfit.serving.store.open_store`).

So nothing a provider answered is lost, and the audit says what the client
was told: a generation's own process never lets its lease reaper replace it
with ``INTERRUPTED`` (:meth:`~contextfit.serving.store.Store.recover_interrupted`),
and an ``INTERRUPTED`` written by another process meanwhile gives way to the
true outcome. Only an outcome the disk refused too (it is full) lives in
memory alone, and is lost if the process stops before the database recovers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .audit import FAILED, PromptContextAudit
from ..errors import StoreUnavailable
from .spool import Kept, Spool

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
    """Finishes generations through ``write``, keeping in ``spool`` the outcomes it could not write yet.

    ``is_outage(error)`` tells a database that cannot be reached or written (retry
    later) from an outcome it will never take (set aside, so it never blocks the others).
    """

    def __init__(self, write: Write, retry: FinishRetry | None = None, spool: Spool | None = None,
                 is_outage: Callable[[BaseException], bool] = lambda _error: True) -> None:  # fmt: skip
        self.retry = retry or FinishRetry()
        self.spool = spool or Spool(None)
        self._write = write
        self._is_outage = is_outage
        self._settling: set[str] = set()  # generations this process is still trying: the drain leaves them
        self._lock = threading.Lock()  # guards _settling and _thread
        self._draining = threading.Lock()  # one drain at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def settle(self, audit: PromptContextAudit, seq: int, reply: dict | None = None) -> dict | None:
        """Write a finalized generation (see the module docstring); returns the stored reply.

        Returns ``None`` when the chat was deleted meanwhile, or when an outcome
        without a reply was kept for later. Raises ``STORE_UNAVAILABLE``,
        carrying ``reply``, when the reply could not be stored now.
        """
        generation_id = audit.generation_id
        attempts = max(1, self.retry.attempts) if reply is not None else 1
        with self._lock:
            self._settling.add(generation_id)
        try:
            for attempt in range(attempts):
                if attempt:
                    if attempt == 1:  # kept before the waits: a client that leaves, or a kill, loses nothing
                        self.spool.keep(Kept(audit, seq, reply))
                    time.sleep(self.retry.delay(attempt - 1))
                try:
                    stored = self._write(audit, seq, reply)
                except Exception as exc:  # whatever failed, the outcome must not be lost
                    error = exc
                    continue
                if attempt:
                    self.spool.drop(generation_id)
                return stored
            if reply is None:
                self._keep(Kept(audit, seq), error)
                return None
            tries = "once" if attempts == 1 else f"{attempts} times"
            reason = f"the database failed {tries} ({failure_reason(error)})"
            failure = StoreUnavailable(f"The provider answered, but the reply could not be stored yet: {reason}.")
            failed = audit.finish(FAILED, failure)
            memory_only = self._keep(Kept(failed, seq, reply), error)
            kept = ("kept by the server, which adds it to the chat once the database takes it: do not append it "
                    "yourself" if memory_only is None else f"kept in the server's memory only ({memory_only}), and "
                    "added to the chat if the database recovers before the server stops")  # fmt: skip
            message = f"{failure.message} It is returned with this error and {kept}."
            raise StoreUnavailable(message, reply=reply, audit=failed.to_dict()) from error
        finally:
            with self._lock:
                self._settling.discard(generation_id)

    def waiting(self) -> list[str]:
        """The generation ids whose outcome is kept and not written yet (this process's and, from a
        folder shared with other processes, theirs), oldest first."""
        with self._lock:
            settling = set(self._settling)
        return [generation_id for generation_id in self.spool.ids() if generation_id not in settling]

    def drain(self) -> int:
        """Try once to write every kept outcome, oldest first; returns how many still wait."""
        with self._draining:
            for generation_id in self.waiting():
                kept = self.spool.load(generation_id)
                if kept is None:
                    continue  # written meanwhile by another process of this machine
                try:
                    self._write(kept.audit, kept.seq, kept.reply)
                except Exception as exc:
                    if self._is_outage(exc):
                        break  # the database still fails: the rest waits for the next round
                    self.spool.set_aside(generation_id, f"the database refused it ({failure_reason(exc)})")
                    continue
                self.spool.drop(generation_id)
                logger.info("generation %s: its outcome is now recorded (%s)", generation_id,
                            kept.audit.error_code or kept.audit.status)  # fmt: skip
            return len(self.waiting())

    def start(self) -> None:
        """Retry the kept outcomes in the background until the database takes them (if there are any)."""
        with self._lock:
            if self._thread is None and not self._stop.is_set() and self.spool.ids():
                self._thread = threading.Thread(target=self._retry, name="contextfit-finish-retry", daemon=True)
                self._thread.start()

    def close(self) -> list[str]:
        """Stop the background retries, try the kept outcomes once more, and return the ids left."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join()
        self.drain()
        self._stop.clear()
        left = self.waiting()
        for generation_id in left:
            if self.spool.folder is not None and self.spool.load(generation_id) is not None:
                logger.error("generation %s: the database still failed at shutdown; its outcome is kept in %s "
                             "and recorded at the next start", generation_id, self.spool.folder)  # fmt: skip
            else:
                logger.error("generation %s: the database still failed at shutdown; its outcome was not recorded "
                             "and the next start will finalize it INTERRUPTED", generation_id)  # fmt: skip
        return left

    def _keep(self, kept: Kept, error: Exception) -> str | None:
        """Keep ``kept`` and retry it in the background; returns ``None`` once it is on disk, else why not."""
        logger.warning(
            "generation %s: its outcome (%s) could not be recorded (%s); kept, and retried in the background",
            kept.audit.generation_id,
            kept.audit.error_code or kept.audit.status,
            failure_reason(error),
        )
        memory_only = self.spool.keep(kept)
        self.start()
        return memory_only

    def _retry(self) -> None:
        attempt = 0
        while True:
            stopped = self._stop.wait(self.retry.delay(attempt))
            if not stopped:
                try:
                    self.drain()
                except Exception:  # never the end of the retries: the next round tries again
                    logger.exception("could not retry the kept outcomes")
            attempt += 1
            with self._lock:  # decided under the lock, so an outcome kept meanwhile starts a new thread
                if stopped or not self.spool.ids():
                    self._thread = None
                    return
