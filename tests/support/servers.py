"""Real ``contextfit serve`` processes and fresh databases for the multi-process tests and the load bench.

``bench/load.py`` and ``bench/hostile_serving.py`` import them from here
(``tests.support.servers``), so this module imports no other test helper.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import httpx
import sqlalchemy as sa


def free_port() -> int:
    """A loopback port free at the time of asking."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Cluster:
    """``count`` ``contextfit serve`` processes on loopback ports, all on ``database``."""

    def __init__(self, database: str, count: int, *, env: dict[str, str] | None = None, log_dir: Path | None = None,
                 extra: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.database, self.ports = database, [free_port() for _ in range(count)]
        environment = {**os.environ, **(env or {})}
        self.logs = [(log_dir or Path("/tmp")) / f"serve-{port}-{uuid.uuid4().hex[:6]}.log" for port in self.ports]
        self.processes = []
        for port, log in zip(self.ports, self.logs):
            command = [sys.executable, "-m", "contextfit", "serve", "--db", database, "--port", str(port), *extra]
            with log.open("w") as out:
                self.processes.append(subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=out))
        try:
            for index in range(count):
                self.wait_ready(index)
        except BaseException:
            self.close()
            raise

    def url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}"

    def wait_ready(self, index: int, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url(index) + "/openapi.json", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                if self.processes[index].poll() is not None:
                    raise RuntimeError(f"contextfit serve exited: {self.logs[index].read_text()}") from None
                time.sleep(0.1)
        raise RuntimeError(f"contextfit serve on port {self.ports[index]} did not start")

    def kill(self, index: int) -> None:
        """SIGKILL one process: no shutdown, no cleanup, as a crash or an OOM kill."""
        self.processes[index].send_signal(signal.SIGKILL)
        self.processes[index].wait()

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def fresh_schema(url: str):
    """A URL whose connections use a new PostgreSQL schema, dropped afterwards."""
    from contextfit.serving.database import database_url

    schema = "cf_test_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(database_url(url))
    with admin.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in url else "?"
    try:
        yield f"{url}{separator}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
