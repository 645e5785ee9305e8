"""Which process owns a generation, and whether that process still lives.

Two answers, for two reaches:

- **A PID on this host.** A generation row names its owner (``host:pid:token``,
  :func:`process_owner`); :func:`owner_is_gone` tells a process of this host
  that has certainly ended.
- **A lease, for any host.** The row also carries ``expires_at``: seconds since
  the epoch **by the database's clock** (never a server's, so several machines
  agree), set to now + :func:`lease_seconds` when the generation begins and
  renewed by the process running it while it waits for its provider
  (:func:`renew`, called by :func:`contextfit.serving.cancellation.watched`).
  A process that is killed, or loses its network, stops renewing; once
  ``expires_at`` has passed, any other process finalizes the generation ``failed`` /
  ``INTERRUPTED`` (:meth:`~contextfit.serving.store.Store.recover_interrupted`,
  which every API process runs at start and every half lease through
  :class:`Reaper`). A process never finalizes its own generations so: it is
  alive, and its renewals were only held up (by another connection's lock, or
  an unreachable database). Should another process finalize one meanwhile,
  the reply is still stored when it comes, and its audit replaces the guess.

The lease is ``$CONTEXTFIT_LEASE_SECONDS`` (default 30): a live process
renews it when a third of it has gone, so only a process silent for the
whole lease loses its generations.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .database import seconds_setting, transaction

logger = logging.getLogger(__name__)


@functools.cache
def process_owner() -> str:
    """``host:pid:token`` naming this process as the owner of its generations."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"


def owner_is_gone(owner: str) -> bool:
    """Whether the process that wrote ``owner`` has certainly ended.

    Only processes on this host can be checked; another host's generations
    are left alone. A pid that is running again under a new token (a
    restarted container) counts as gone.
    """
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    mine = process_owner()
    if host != mine.split(":", 1)[0] or not pid_text.isdigit() or os.name == "nt":
        return False
    if owner == mine:
        return False
    if int(pid_text) == os.getpid():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


# -- leases: liveness any host can check, by the database's clock ---------------------------

#: Environment variable overriding :data:`LEASE_SECONDS`.
LEASE_VAR = "CONTEXTFIT_LEASE_SECONDS"
#: Seconds a generation in progress stays owned by its process without a renewal.
LEASE_SECONDS = 30.0

_generations = sa.table("generations", *map(sa.column, ("seq", "generation_id", "expires_at", "cancel_requested")))

#: The database's clock in seconds since the epoch, per dialect.
_CLOCK = {
    "postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
}


def lease_seconds(seconds: float | None = None) -> float:
    """The lease: ``seconds``, else ``$CONTEXTFIT_LEASE_SECONDS``, else :data:`LEASE_SECONDS`.

    >>> lease_seconds(5)
    5.0
    >>> lease_seconds(0)
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: The generation lease must be a number of seconds above 0, got 0.
    """
    return seconds_setting(seconds, LEASE_VAR, LEASE_SECONDS, "The generation lease")


def database_clock(connection: Connection) -> sa.ColumnElement:
    """The database's "now" in seconds since the epoch, as an SQL expression."""
    return sa.literal_column(_CLOCK.get(connection.dialect.name, _CLOCK["sqlite"]))


def expiry(connection: Connection, seconds: float | None = None) -> sa.ColumnElement:
    """``expires_at`` for a lease starting now (an SQL expression, for an insert or update)."""
    return database_clock(connection) + lease_seconds(seconds)


def renew(engine: Engine, generation_id: str, seconds: float | None = None) -> dict[str, Any] | None:
    """Read a running generation's cancel flag, renewing its lease when a third of it has gone.

    Returns ``{"cancel_requested": bool, "left": seconds}``, or ``None`` when the
    row is gone: the generation was finalized by another process (its lease ran out).
    """
    lease = lease_seconds(seconds)
    with transaction(engine) as connection:
        row = connection.execute(
            sa.select(_generations.c.cancel_requested, (_generations.c.expires_at - database_clock(connection)))
            .where(_generations.c.generation_id == generation_id)
        ).one_or_none()  # fmt: skip
    if row is None:
        return None
    cancel, left = bool(row[0]), row[1]
    if left is None or left < lease * 2 / 3:
        with transaction(engine, write=True) as connection:
            done = connection.execute(
                _generations.update()
                .where(_generations.c.generation_id == generation_id)
                .values(expires_at=expiry(connection, lease))
            )  # fmt: skip
        if done.rowcount == 0:
            return None
        left = lease
    return {"cancel_requested": cancel, "left": left}


def expired_generations(engine: Engine) -> set[str]:
    """The ids of the generations in progress whose lease has run out."""
    with transaction(engine) as connection:
        query = sa.select(_generations.c.generation_id).where(_generations.c.expires_at < database_clock(connection))
        return {generation_id for (generation_id,) in connection.execute(query)}


class Reaper:
    """A thread that calls ``recover()`` every ``interval`` seconds until :meth:`stop`.

    The API runs one per process with ``recover=store.recover_interrupted`` and
    half the lease as interval, so a dead process's generations are finalized
    ``INTERRUPTED`` at most a lease and a half after its last renewal. It logs
    each generation ``recover()`` returns: the ones it really finalized.
    """

    def __init__(self, recover, interval: float) -> None:
        self.recover, self.interval = recover, interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Reaper:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="contextfit-lease-reaper", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                recovered = self.recover()
            except Exception as exc:  # the database is down: try again next round
                logger.warning("could not look for interrupted generations: %s", exc)
                continue
            for generation_id in recovered:
                logger.warning("generation %s: its process stopped renewing its lease; finalized INTERRUPTED",
                               generation_id)  # fmt: skip
