"""``contextfit serve`` as a real process on loopback: stalled clients are closed and
logged once, connections are capped — a full server closes its longest stalled
connection for a new one, never a working or progressing one — and beyond loopback
an API key is required."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.api import API_KEY, FakeProvider
from support.servers import free_port

from contextfit.cli import main
from contextfit.serving.api.serving import STALLED_SECONDS
from contextfit.serving.api import serving

HEADER_SECONDS = 2
MAX_CONNECTIONS = 3
WAIT = 30  # seconds a test waits for an event before it calls the server stuck


class Served:
    """A ``contextfit serve`` process; its standard error goes to a file the tests read."""

    def __init__(self, tmp: Path, *flags: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.log = tmp / "serve.log"
        command = [sys.executable, "-m", "contextfit", "serve", "--db", str(tmp / "serve.db"), "--port", str(self.port), *flags]
        self._log_file = self.log.open("w")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._log_file,
                                        env={**os.environ, **(env or {})})  # fmt: skip
        for _ in range(600):  # up to a minute for the first start on a slow machine
            try:
                httpx.get(self.url("/openapi.json"), timeout=1)
                return
            except httpx.TransportError:
                if self.process.poll() is not None:
                    raise RuntimeError("contextfit serve exited: " + self.log.read_text()) from None
                time.sleep(0.1)
        raise RuntimeError("contextfit serve did not start")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)
        return sock

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log_file.close()


def closed_by_server(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (waits up to ``WAIT`` seconds)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    server = Served(
        tmp_path_factory.mktemp("serve"),
        "--header-timeout", str(HEADER_SECONDS), "--body-timeout", str(HEADER_SECONDS),
        "--keep-alive-timeout", "1", "--max-connections", str(MAX_CONNECTIONS),
    )  # fmt: skip
    yield server
    server.close()


def test_a_client_that_stops_in_its_headers_is_closed_and_logged_once(served):
    sock = served.connect()
    sock.sendall(b"GET /api/v2/chats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    assert closed_by_server(sock) == b""  # closed, with no response: it never finished asking
    port = sock.getsockname()[1]
    sock.close()
    lines = [line for line in served.log.read_text().splitlines() if f"127.0.0.1:{port}" in line]
    assert len(lines) == 1 and "no complete request headers" in lines[0], lines


def test_a_client_that_stops_in_its_body_is_closed_and_logged_once(served):
    sock = served.connect()
    sock.sendall(b"POST /api/v2/chats HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{\"messages\": [")  # fmt: skip
    assert closed_by_server(sock) == b""
    port = sock.getsockname()[1]
    sock.close()
    lines = [line for line in served.log.read_text().splitlines() if f"127.0.0.1:{port}" in line]
    assert len(lines) == 1 and "no complete request body" in lines[0], lines
    assert httpx.get(served.url("/api/v2/chats")).json() == {"chats": []}  # nothing half-created


def test_a_kept_alive_connection_that_goes_quiet_is_closed(served):
    sock = served.connect()
    sock.sendall(b"GET /api/v2/chats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    answer = closed_by_server(sock)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'{"chats":[]}')
    sock.close()


def test_a_next_request_that_stalls_on_a_kept_alive_connection_is_closed(served):
    sock = served.connect()
    sock.sendall(b"GET /api/v2/chats HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = b""
    while not first.endswith(b'{"chats":[]}'):
        first += sock.recv(65536)
    sock.sendall(b"GET /api/v2/chats HTTP/1.1\r\nHo")  # the next request starts, then stops
    assert closed_by_server(sock) == b""
    port = sock.getsockname()[1]
    sock.close()
    lines = [line for line in served.log.read_text().splitlines() if f"127.0.0.1:{port}" in line]
    assert len(lines) == 1 and "no complete request headers" in lines[0], lines


def still_open(sock: socket.socket) -> bool:
    sock.settimeout(0.3)
    try:
        return sock.recv(1) != b""
    except TimeoutError:
        return True
    except ConnectionResetError:
        return False


@pytest.fixture(scope="module")
def patient(tmp_path_factory) -> Iterator[Served]:
    """A server of 3 connections that gives a stalled client 30 s: only making room closes one sooner.

    (With ``served``'s 2 s the other stalled connections reached their own timeout while a loaded
    machine was still checking them.)"""
    server = Served(tmp_path_factory.mktemp("patient"), "--header-timeout", "30", "--body-timeout", "30",
                    "--max-connections", str(MAX_CONNECTIONS))  # fmt: skip
    yield server
    server.close()


def test_a_full_server_closes_its_longest_stalled_connection_for_a_new_one(patient):
    served = patient
    stalled = []
    for _ in range(MAX_CONNECTIONS):
        stalled.append(served.connect())
        stalled[-1].sendall(b"GET / HTTP/1.1\r\n")
        time.sleep(0.05)  # an order of arrival
    time.sleep(STALLED_SECONDS + 0.2)
    answer = httpx.get(served.url("/api/v2/chats"), headers={"connection": "close"})
    assert answer.status_code == 200  # the new client is served ...
    assert closed_by_server(stalled[0]) == b""  # ... in the place of the one that waited longest
    assert all(still_open(sock) for sock in stalled[1:])  # one is enough
    shed = [line for line in served.log.read_text().splitlines() if "to make room" in line]
    assert len(shed) == 1 and f":{stalled[0].getsockname()[1]} " in shed[0], shed
    for sock in stalled:
        sock.close()


def test_a_flood_of_fresh_sockets_displaces_itself_rather_than_a_new_client(patient):
    served = patient
    flood = [served.connect() for _ in range(MAX_CONNECTIONS)]
    for sock in flood:
        sock.sendall(b"GET / HTTP/1.1\r\n")  # no pause: none has been quiet for long yet
    answer = httpx.get(served.url("/api/v2/chats"), headers={"connection": "close"})
    assert answer.status_code == 200
    assert sum(not still_open(sock) for sock in flood) == 1  # the oldest of them made room
    for sock in flood:
        sock.close()


@pytest.fixture(scope="module")
def crowded(tmp_path_factory) -> Iterator[tuple[Served, FakeProvider]]:
    """A server of 3 connections whose generations wait for a provider until it is released."""
    with FakeProvider() as fake:
        server = Served(tmp_path_factory.mktemp("crowded"), "--max-connections", str(MAX_CONNECTIONS),
                        "--header-timeout", "30", "--body-timeout", "30",
                        env={"OPENAI_API_KEY": API_KEY, "CONTEXTFIT_OPENAI_BASE_URL": fake.url("hold")})  # fmt: skip
        yield server, fake
        server.close()


class Upload(threading.Thread):
    """A request whose body keeps coming, a few bytes every 0.1 s, until :meth:`finish`."""

    def __init__(self, served: Served) -> None:
        super().__init__(daemon=True)
        self.body = b'{"messages": []}' + b" " * 1000
        self.sock = served.connect()
        self.sock.sendall(b"POST /api/v2/chats HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(self.body))  # fmt: skip
        self.done, self.answer = threading.Event(), b""
        self.start()

    def run(self) -> None:
        sent = 0
        while not self.done.is_set() and sent < len(self.body) - 10:
            self.sock.sendall(self.body[sent:sent + 1])
            sent += 1
            time.sleep(0.1)
        self.sock.sendall(self.body[sent:])
        self.answer = closed_by_server(self.sock)

    def finish(self) -> bytes:
        self.done.set()
        self.join(WAIT)
        return self.answer


def test_working_and_progressing_requests_are_never_closed_for_a_new_one(crowded):
    served, fake = crowded
    fake.release.clear()
    chats = [httpx.post(served.url("/api/v2/chats"), json={"model": "llama-3.1-8b", "messages": [{"role": "user",
             "content": "Hi"}]}).json()["id"] for _ in range(2)]  # fmt: skip
    generating = [Background(lambda chat_id=chat_id: httpx.post(served.url(f"/api/v2/chats/{chat_id}/generate"),
                  json={"provider": "openai"}, headers={"connection": "close"}, timeout=WAIT)) for chat_id in chats]  # fmt: skip
    assert fake.arrived.acquire(timeout=WAIT) and fake.arrived.acquire(timeout=WAIT)  # two requests the app works on
    upload = Upload(served)  # and one whose body keeps coming: the server is full
    time.sleep(STALLED_SECONDS + 0.5)
    refused = served.connect()
    refused.sendall(b"GET /api/v2/chats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert closed_by_server(refused) == b""  # nothing stalled to make room with: the new one is refused
    refused.close()
    fake.release.set()
    assert [call.result().status_code for call in generating] == [200, 200]  # none was closed
    assert upload.finish().startswith(b"HTTP/1.1 201 ")
    assert "to make room" not in served.log.read_text()


class Background(threading.Thread):
    def __init__(self, call) -> None:
        super().__init__(daemon=True)
        self.call, self.value = call, None
        self.start()

    def run(self) -> None:
        self.value = self.call()

    def result(self):
        self.join(WAIT)
        return self.value


def test_many_stalled_clients_write_a_bounded_log(served):
    before = len(served.log.read_text().splitlines())
    for _ in range(4):  # waves past the cap: 25 stalled or refused connections
        wave = [served.connect() for _ in range(MAX_CONNECTIONS + 2)]
        for sock in wave:
            try:
                sock.sendall(b"GET / HTTP/1.1\r\n")
            except OSError:
                pass
        for sock in wave:
            closed_by_server(sock)
            sock.close()
    added = served.log.read_text().splitlines()[before:]
    assert len(added) <= 12, added  # ten lines a minute, then one count


def test_the_api_key_is_asked_of_every_request_of_a_served_process(tmp_path):
    server = Served(tmp_path, "--api-key", "k-123")
    try:
        assert httpx.get(server.url("/api/v2/chats")).status_code == 401
        assert httpx.get(server.url("/api/v2/chats"), headers={"authorization": "Bearer k-123"}).status_code == 200
        assert httpx.get(server.url("/api/v2/chats"), headers={"host": "evil.example"}).status_code == 400
    finally:
        server.close()
    assert "every request needs the API key" in server.log.read_text()


def test_beyond_loopback_an_api_key_or_an_explicit_opt_out_is_required(tmp_path, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(serving, "run", lambda app, **kwargs: started.append(kwargs))
    monkeypatch.delenv("CONTEXTFIT_API_KEY", raising=False)
    db = ["--db", str(tmp_path / "x.db")]
    assert main(["serve", "--host", "0.0.0.0", *db]) == 2 and started == []
    assert "--api-key" in capsys.readouterr().err
    assert main(["serve", "--host", "192.168.1.20", *db]) == 2 and started == []
    assert main(["serve", "--host", "0.0.0.0", "--insecure-no-auth", *db]) == 0
    assert "WARNING: --insecure-no-auth" in capsys.readouterr().err
    monkeypatch.setenv("CONTEXTFIT_API_KEY", "from-the-environment")
    assert main(["serve", "--host", "0.0.0.0", "--allowed-host", "chat.lan", *db]) == 0
    err = capsys.readouterr().err
    assert "every request needs the API key" in err and "chat.lan" in err and "from-the-environment" not in err
    assert [kwargs["host"] for kwargs in started] == ["0.0.0.0", "0.0.0.0"]
    assert main(["serve", "--threads", "0", *db]) == 2 and "workers" in capsys.readouterr().err


READ_ONLY_CHILD = """
import os, sys, sqlite3
import sqlalchemy.dialects.sqlite.pysqlite
import contextfit.cli, contextfit.serving.api, contextfit.serving.api.serving, contextfit.serving.store
if os.getuid() == 0:  # root writes anything: be an ordinary user, with everything imported already
    os.setgid(65534)
    os.setuid(65534)
sys.exit(contextfit.cli.main(["serve", "--db", sys.argv[1], "--port", sys.argv[2]]))
"""


def test_a_read_only_shared_memory_file_is_refused_at_start_with_its_reason():
    import shutil
    import tempfile

    from contextfit.serving.store import open_store

    folder = Path(tempfile.mkdtemp(prefix="contextfit-ro-"))  # not under pytest's folder, which is the owner's only
    try:
        folder.chmod(0o777)
        database = folder / "chats.db"
        open_store(database).close()
        shm = Path(f"{database}-shm")
        shm.write_bytes(b"\0" * 32768)
        shm.chmod(0o444)
        if os.getuid() == 0:
            os.chown(database, 65534, 65534)
        child = subprocess.run([sys.executable, "-c", READ_ONLY_CHILD, str(database), str(free_port())],
                               capture_output=True, text=True, timeout=WAIT)  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert child.returncode == 2, child.stderr  # refused, not killed by a signal
    assert f"its shared-memory file {shm} is read-only for this user" in child.stderr
    assert "chown or chmod" in child.stderr and "Traceback" not in child.stderr
