"""How ``contextfit serve`` runs uvicorn: connection timeouts, a connection cap, quiet logs.

uvicorn closes an idle keep-alive connection, but by itself never closes a
client that stops half-way through its request headers or its body, nor
caps how many connections it holds: stalled sockets pile up until the
process runs out of file descriptors. :func:`protocol_for` builds uvicorn's
own h11 protocol with:

- a header deadline: the request line and headers must be complete within
  ``header_seconds`` of the connection (or of the first byte of a next
  request on a kept-alive connection);
- a body deadline: the whole body within ``body_seconds`` of the headers;
- the keep-alive timeout (``keep_alive_seconds``, uvicorn's own);
- at most ``max_connections`` open connections. When one more arrives, a
  connection that waits for its client is closed to make room, so a slow
  client (or hundreds of them) cannot lock the others out: the one that has
  sent nothing for longest, if it is :data:`STALLED_SECONDS` or more (in its
  headers, its body, or idle between requests), else the oldest still in its
  headers or idle (a flood of fresh sockets displaces itself). A request the
  app is working on, or whose body keeps coming, is never closed so; when
  every connection is such, the new one is closed at once.

A stalled client is logged once, when its connection is closed; when many
are, the first few are logged and the rest counted in one line a minute.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .limits import ServerLimits

logger = logging.getLogger("uvicorn.error")  # formatted and filtered like uvicorn's own warnings

#: Seconds without a byte from its client after which a connection waiting for it may be closed for a new one.
STALLED_SECONDS = 1.0


class QuietLog:
    """At most ``burst`` lines per ``window`` seconds; the rest are counted and summed up in one line.

    >>> lines = []
    >>> log = QuietLog(burst=2, window=60, emit=lines.append, clock=lambda: 0.0)
    >>> for n in range(5):
    ...     log.note(f"stalled {n}")
    >>> log.clock = lambda: 61.0
    >>> log.note("stalled 5")
    >>> lines
    ['stalled 0', 'stalled 1', '3 more like these in the last 60 s', 'stalled 5']
    """

    def __init__(self, burst: int = 10, window: float = 60.0, emit=None, clock=time.monotonic) -> None:
        self.burst, self.window = burst, window
        self.emit = emit or logger.warning
        self.clock = clock
        self._start = None
        self._shown = self._held = 0

    def note(self, line: str) -> None:
        """Log ``line``, unless the window's lines are spent (then count it)."""
        now = self.clock()
        if self._start is None or now - self._start >= self.window:
            if self._held:
                self.emit(f"{self._held} more like these in the last {self.window:g} s")
            self._start, self._shown, self._held = now, 0, 0
        if self._shown < self.burst:
            self._shown += 1
            self.emit(line)
        else:
            self._held += 1


class _TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with header and body deadlines and a connection cap (see the module docstring)."""

    limits: ServerLimits
    log: QuietLog

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = None
        self._phase: str | None = None
        self._heard = 0.0  # loop time of the client's last byte (or of the connection, or of the last answer)

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._heard = self.loop.time()
        if sum(not _closing(other) for other in self.connections) > self.limits.max_connections:
            victim = self._longest_stalled()
            if victim is None:
                self.log.note(f"refused a connection from {_peer(self.client)}: {self.limits.max_connections} are "
                              "open already, each working or receiving")  # fmt: skip
                self.transport.close()
                return
            idle = self.loop.time() - victim._heard
            self.log.note(f"closed the stalled connection from {_peer(victim.client)} (nothing for {idle:.1f} s) to make "
                          f"room: {self.limits.max_connections} are open")  # fmt: skip
            victim.transport.close()
        self._watch()

    def data_received(self, data: bytes) -> None:
        self._heard = self.loop.time()
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        self._heard = self.loop.time()
        self._stop_deadline()
        super().on_response_complete()  # arms uvicorn's keep-alive timeout until the next request's first byte
        self._watch()  # a pipelined next request may already be arriving

    def _waits_for_client(self) -> str | None:
        """What this connection waits for from its client: ``"headers"``, ``"body"``, ``"idle"``
        (a next request), or ``None`` (a request the app is working on: its client owes nothing)."""
        if _closing(self):
            return None
        if self._phase is not None:
            return self._phase
        done = self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)
        return "idle" if done else None

    def _longest_stalled(self) -> _TimedH11Protocol | None:
        """The connection to close for a new one (see the module docstring), or ``None``."""
        now = self.loop.time()
        waiting = [(other, other._waits_for_client()) for other in self.connections
                   if other is not self and isinstance(other, _TimedH11Protocol)]  # fmt: skip
        stalled = [other for other, phase in waiting if phase is not None and now - other._heard >= STALLED_SECONDS]
        if not stalled:  # none quiet for long: the oldest that has not even sent its headers (never a body under way)
            stalled = [other for other, phase in waiting if phase in ("headers", "idle")]
        return min(stalled, key=lambda other: other._heard, default=None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Arm the deadline of the phase the client is in: sending headers, sending a body, or neither."""
        if self.transport is None or self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE and self.timeout_keep_alive_task is None:
            phase = "headers"  # a new connection, or a next request that has started arriving
        elif state is h11.SEND_BODY:
            phase = "body"
        else:
            phase = None  # the request is in; the app's own limits apply now
        if phase != self._phase:
            self._stop_deadline()
            self._phase = phase
            if phase is not None:
                seconds = self.limits.header_seconds if phase == "headers" else self.limits.body_seconds
                self._deadline = self.loop.call_later(seconds, self._stalled, phase, seconds)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = None

    def _stalled(self, phase: str, seconds: float) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            what = "complete request headers" if phase == "headers" else "complete request body"
            self.log.note(f"closed a stalled connection from {_peer(self.client)}: no {what} within {seconds:g} s")
            self.transport.close()


def _closing(connection: Any) -> bool:
    transport = getattr(connection, "transport", None)
    return transport is None or transport.is_closing()


def _peer(client: tuple[str, int] | None) -> str:
    return "%s:%d" % client if client else "an unknown client"


def protocol_for(limits: ServerLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with ``limits``' header/body deadlines and connection cap."""
    return type("ContextfitH11Protocol", (_TimedH11Protocol,), {"limits": limits, "log": QuietLog()})


def run(app: Any, *, host: str, port: int, limits: ServerLimits, sockets: list | None = None) -> None:
    """Serve ``app`` with uvicorn until stopped (SIGINT/SIGTERM), within ``limits``
    (on ``sockets`` already listening, when given: see :mod:`contextfit.serving.api.processes`)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info",
        http=protocol_for(limits),
        timeout_keep_alive=limits.keep_alive_seconds,
        timeout_graceful_shutdown=10,  # SIGTERM never waits for ever on a slow request
    )
    uvicorn.Server(config).run(sockets=sockets)
