"""A bounded pool of worker threads for the API's CPU-heavy calls.

Fitting, tokenizing, parsing lorebooks and cards, and user regex keys never
run on the event loop: :meth:`WorkerPool.run` hands them to one of
``workers`` threads. At most ``queue`` more calls wait; past that a request
is answered 503 ``SERVER_BUSY`` at once, with ``Retry-After``. A call that
runs past ``request_seconds`` is answered 503 ``REQUEST_TIMEOUT``; its thread
cannot be killed, so it keeps its place in the count until it really ends
(the regex budgets bound how long that is, and a replay stops at its next
turn: :func:`check_deadline`), and the pool never holds more
work than it admits.

Each call runs in a copy of the caller's context, under the pool's regex
limits (:func:`~contextfit.inputs.lorebook.matching.regex_limits`) and with its
deadline: work that can stop part-way calls :func:`check_deadline` (a replay
after each turn), so it ends soon after its answer instead of running on.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import anyio

from ...errors import ServerBusy, WorkTimedOut
from ...inputs.lorebook.matching import regex_limits
from .limits import ServerLimits

T = TypeVar("T")

#: When the pool's call running in this context is answered REQUEST_TIMEOUT (a ``time.monotonic()`` value), and
#: the limits that say so.
_DEADLINE: contextvars.ContextVar[tuple[float, ServerLimits] | None] = contextvars.ContextVar(
    "contextfit_work_deadline", default=None)


def check_deadline(*_: Any) -> None:
    """Raise ``REQUEST_TIMEOUT`` once the pool's call running this is past its time limit (its
    answer was sent; the rest of its work would be lost). Outside the pool it does nothing.
    Any arguments are ignored, so it serves as a replay's ``progress`` callback.

    >>> check_deadline(3, 10)
    """
    found = _DEADLINE.get()
    if found is not None and time.monotonic() > found[0]:
        raise WorkTimedOut(found[1].request_seconds, found[1].retry_after)


class WorkerPool:
    """``workers`` threads, ``queue`` waiting calls, ``request_seconds`` per call.

    >>> import asyncio
    >>> pool = WorkerPool(ServerLimits(workers=1, queue=0))
    >>> asyncio.run(pool.run(sum, [1, 2, 3]))
    6
    >>> pool.close()
    """

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.capacity = limits.workers + limits.queue
        self._executor: ThreadPoolExecutor | None = None  # started by the first call, again after close()
        self._lock = threading.Lock()
        self._admitted = 0  # calls accepted and not yet finished, queued or running (or given up on)
        self.idle = threading.Event()  # set whenever nothing is admitted
        self.idle.set()

    async def run(self, call: Callable[..., T], /, *args: Any) -> T:
        """``call(*args)`` on a worker thread; raises ``SERVER_BUSY`` when full, ``REQUEST_TIMEOUT`` when too slow."""
        with self._lock:
            if self._admitted >= self.capacity:
                raise ServerBusy(self.limits.retry_after)
            self._admitted += 1
            self.idle.clear()
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="contextfit-work")
            executor = self._executor
        context = contextvars.copy_context()
        context.run(_DEADLINE.set, (time.monotonic() + self.limits.request_seconds, self.limits))
        try:
            future: Future[T] = executor.submit(context.run, self._call, call, args)
        except BaseException:
            self._finished(None)
            raise
        future.add_done_callback(self._finished)
        try:
            with anyio.fail_after(self.limits.request_seconds):
                return await asyncio.wrap_future(future)
        except TimeoutError:
            raise WorkTimedOut(self.limits.request_seconds, self.limits.retry_after) from None

    def _call(self, call: Callable[..., T], args: tuple) -> T:
        with regex_limits(self.limits.regex):
            return call(*args)

    def _finished(self, _future: Future | None) -> None:
        with self._lock:
            self._admitted -= 1
            if self._admitted == 0:
                self.idle.set()

    def close(self) -> None:
        """Drop the calls still queued and let the threads end when their call does (the app's shutdown).

        A later call starts new threads (an app can be started again, as test clients do).
        """
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
