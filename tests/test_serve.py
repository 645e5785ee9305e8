"""``contextfit serve`` as a real process on loopback: stalled clients are closed and
logged once, connections are capped, and beyond loopback an API key is required."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import contextfit.serving.api.serving
from contextfit.cli import main

HEADER_SECONDS = 2
MAX_CONNECTIONS = 3
WAIT = 30  # seconds a test waits for an event before it calls the server stuck


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Served:
    """A ``contextfit serve`` process; its standard error goes to a file the tests read."""

    def __init__(self, tmp: Path, *flags: str) -> None:
        self.port = free_port()
        self.log = tmp / "serve.log"
        command = [sys.executable, "-m", "contextfit", "serve", "--db", str(tmp / "serve.db"), "--port", str(self.port), *flags]
        self._log_file = self.log.open("w")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._log_file, env=os.environ.copy())
        for _ in range(600):  # up to a minute for the first start on a slow machine
            try:
                httpx.get(self.url("/openapi.json"), timeout=1)
                return
            except httpx.TransportError:
                if self.process.poll() is not None:
                    raise RuntimeError("contextfit serve exited: " + self.log.read_text())
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


def test_connections_past_the_cap_are_closed_at_once_and_service_resumes(served):
    stalled = [served.connect() for _ in range(MAX_CONNECTIONS)]
    for sock in stalled:
        sock.sendall(b"GET / HTTP/1.1\r\n")
    extra = served.connect()  # accepted after the three: the server already holds them
    extra.sendall(b"GET /api/v2/chats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert closed_by_server(extra) == b""  # a whole request, and no answer: refused at the door
    for sock in stalled:
        assert closed_by_server(sock) == b""
        sock.close()
    assert httpx.get(served.url("/api/v2/chats")).status_code == 200
    refused = [line for line in served.log.read_text().splitlines() if "refused a connection" in line]
    assert len(refused) == 1 and f":{extra.getsockname()[1]}" in refused[0]
    extra.close()


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
    monkeypatch.setattr(contextfit.serving.api.serving, "run", lambda app, **kwargs: started.append(kwargs))
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
