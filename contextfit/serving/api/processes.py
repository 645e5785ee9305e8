"""``contextfit serve --workers N`` (alias ``--processes``): N API processes sharing one listening socket.

The parent binds the address once, then starts N children (``spawn``: a
fresh interpreter each, nothing inherited but the socket) that each open the
database and serve the same socket with uvicorn; the kernel hands each new
connection to one of them. The parent only supervises: a child that dies is
replaced (after a short pause, so a crash loop does not spin), and SIGINT or
SIGTERM stops them all.

Nothing is shared between the children but the database: the audits, the
cancel flags and the generation leases all live there
(:mod:`contextfit.serving.cancellation`, :mod:`contextfit.serving.liveness`), so N processes
behave as one — on one machine with ``--workers``, or on several machines
with one ``contextfit serve`` each behind a load balancer.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
import threading
from dataclasses import dataclass

from .limits import ServerLimits

logger = logging.getLogger("uvicorn.error")

#: Seconds between two checks of the children (and the pause before a replacement).
CHECK_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What each child needs to serve: the database, the address, the guard and the limits."""

    database: str | None
    host: str
    port: int
    hosts: frozenset[str]
    api_key: str | None
    limits: ServerLimits


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when ``host`` is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve_child(options: ServeOptions, sock: socket.socket) -> None:
    """One child: open the store (migrating under the lock), then serve ``sock`` until stopped."""
    from ..store import open_store
    from . import create_app, serving

    store = open_store(options.database)
    try:
        app = create_app(store, limits=options.limits, hosts=options.hosts, api_key=options.api_key)
        serving.run(app, host=options.host, port=options.port, limits=options.limits, sockets=[sock])
    finally:
        store.close()


def run_processes(options: ServeOptions, count: int) -> None:
    """Serve with ``count`` child processes until SIGINT or SIGTERM."""
    sock = bind(options.host, options.port)
    context = multiprocessing.get_context("spawn")
    stop = threading.Event()

    def start() -> multiprocessing.process.BaseProcess:
        child = context.Process(target=serve_child, args=(options, sock), name="contextfit-serve")
        child.start()
        logger.info("started API process [%s]", child.pid)
        return child

    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    children = [start() for _ in range(count)]
    try:
        while not stop.wait(CHECK_SECONDS):
            for index, child in enumerate(children):
                if not child.is_alive():
                    logger.warning("API process [%s] ended (exit code %s); starting another", child.pid, child.exitcode)
                    children[index] = start()
    finally:
        for child in children:
            child.terminate()
        for child in children:
            child.join()
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
