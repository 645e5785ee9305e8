"""Fixtures for the store, generation and API tests: databases and a fake provider.

The fixtures that use them live in ``api_fixtures.py``.

``FakeProvider`` is an OpenAI- and Anthropic-compatible HTTP server on
127.0.0.1 whose behaviour is chosen by the first path segment of the base
URL (``http://127.0.0.1:PORT/<behaviour>``); its error bodies carry
:data:`BODY_MARKER` so tests can prove that no response body is stored.
The ``huge`` behaviours stream a :data:`HUGE_BYTES` answer and count in
``sent`` the bytes the server managed to write before the client hung up.

``LockingProvider`` answers after another connection has taken the
database's write lock, which it keeps until ``release()``.

``TcpProxy`` forwards a loopback port to a server (PostgreSQL); switched
off, it drops every connection and refuses new ones: a database outage.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import Counter
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import sqlalchemy as sa

from contextfit.serving.database import create_database_engine, transaction
from contextfit.serving.providers import ProviderReply
from contextfit.serving.store import Store

#: The base URL of in-process test clients: the API answers only its own (loopback) host names.
LOCAL = "http://127.0.0.1"
BODY_MARKER = "PROVIDER-BODY-7f3a"
API_KEY = "sk-test-SECRET-5c9e"
BEHAVIOURS = ("success", "401", "429", "context", "500", "slow", "drop", "hold", "surrogate")
HUGE = ("huge", "huge-length", "huge-error")
HUGE_BYTES = 256 * 2**20
LONE = "\ud800"  # a lone surrogate: valid in JSON text, storable nowhere


@contextmanager
def lock_held(database: str, chat_id: str):
    """Another connection holds the write lock (SQLite) and the chat's row lock (PostgreSQL)."""
    engine = create_database_engine(database)
    try:
        with transaction(engine, write=True) as connection:
            chats = sa.table("chats", sa.column("id"))
            connection.execute(sa.select(chats.c.id).where(chats.c.id == chat_id).with_for_update())
            yield
    finally:
        engine.dispose()


class LockingProvider:
    """Replies, but first has another connection lock the chat's database until :meth:`release`."""

    name = "locking"
    template = None

    def __init__(self, database: str, chat_id: str) -> None:
        self.database, self.chat_id = database, chat_id
        self.calls = 0
        self._held = ExitStack()

    def hold(self) -> None:
        self._held.enter_context(lock_held(self.database, self.chat_id))

    def release(self) -> None:
        self._held.close()

    async def complete(self, request) -> ProviderReply:
        self.calls += 1
        self.hold()
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        message = {"role": "assistant", "content": "a paid reply", "tool_calls": [call]}
        return ProviderReply(message, request.model, "stop")


def snapshot(store: Store) -> dict[str, list[tuple]]:
    """Every row of every table, sorted: equal snapshots mean nothing was written."""
    import sqlalchemy as sa

    with store.engine.connect() as connection:
        names = sa.inspect(connection).get_table_names()
        return {
            name: sorted(tuple(map(str, row)) for row in connection.execute(sa.text(f'SELECT * FROM "{name}"')))
            for name in names
        }


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that gave up (a timeout, a cancel) closed its end: expected here


class FakeProvider:
    """The fake provider server (see the module docstring). Use as a context manager."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.sent: Counter[str] = Counter()  # body bytes written by the huge behaviours
        self.huge_done = threading.Semaphore(0)  # released when a huge answer stops
        self.requests: list[dict] = []
        self.arrived = threading.Semaphore(0)  # released once per request that "hold" holds
        self.release = threading.Event()  # lets "slow" and "hold" requests finish
        self.server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, behaviour: str, anthropic: bool = False) -> str:
        """The base URL for a behaviour (OpenAI-style ends in /v1)."""
        base = f"http://127.0.0.1:{self.server.server_address[1]}/{behaviour}"
        return base if anthropic else base + "/v1"

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                behaviour = self.path.strip("/").split("/")[0]
                anthropic = self.path.endswith("/v1/messages")
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                fake.calls[behaviour] += 1
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if behaviour == "drop":
                    self.close_connection = True
                    return  # no answer at all: the connection just closes
                if behaviour in HUGE:
                    self.close_connection = True
                    try:
                        self._huge(behaviour)
                    except OSError:
                        pass  # the client hung up
                    fake.huge_done.release()
                    return
                if behaviour in ("slow", "hold"):
                    if behaviour == "hold":
                        fake.arrived.release()
                    fake.release.wait(60)
                    behaviour = "success"
                status, payload = _answer(behaviour, body, anthropic)
                if behaviour == "success" and self.path.endswith(("/v1/messages/count_tokens", ":countTokens")):
                    # a token-count endpoint (native counting): a count the test can predict
                    tokens = fake_count(body)
                    payload = {"input_tokens": tokens} if self.path.endswith("count_tokens") else {"totalTokens": tokens}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if status == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(data)

            def _huge(self, behaviour: str) -> None:
                # A valid answer if read whole: {"error"|"choices": ... "x" * HUGE_BYTES ... }.
                error = behaviour == "huge-error"
                head = b'{"error": {"message": "' if error else b'{"choices": [{"message": {"content": "'
                tail = b' maximum context length"}}' if error else b'"}, "finish_reason": "stop"}]}'
                self.send_response(400 if error else 200)
                self.send_header("content-type", "application/json")
                if behaviour == "huge-length":
                    self.send_header("content-length", str(len(head) + HUGE_BYTES + len(tail)))
                else:
                    self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                piece = b"x" * 65536
                parts = [head, *(piece for _ in range(HUGE_BYTES // len(piece))), tail]
                for part in parts:
                    self.wfile.write(part if behaviour == "huge-length" else b"%x\r\n%s\r\n" % (len(part), part))
                    fake.sent[behaviour] += len(part)
                if behaviour != "huge-length":
                    self.wfile.write(b"0\r\n\r\n")

        return Handler


def fake_count(body: dict) -> int:
    """What the fake's token-count endpoints answer for a request body."""
    return 1000 + len(json.dumps(body, sort_keys=True)) // 4


def _answer(behaviour: str, body: dict, anthropic: bool) -> tuple[int, dict]:
    error = {"type": "error", "error": {"message": f"{BODY_MARKER} key {API_KEY} refused", "type": "x"}}
    if behaviour == "401":
        return 401, error
    if behaviour == "429":
        return 429, error
    if behaviour == "500":
        return 500, error
    if behaviour == "context":
        message = (
            "prompt is too long: 300000 tokens > 200000 maximum"
            if anthropic
            else "maximum context length is 8192 tokens"
        )
        return 400, {"error": {"code": "context_length_exceeded", "message": f"{message} {BODY_MARKER}"}}
    last = body.get("messages", [{}])[-1].get("content", "")
    text = f"fake reply to: {last if isinstance(last, str) else 'parts'}"
    if behaviour == "surrogate":  # json.dumps writes them as \\ud800 escapes, as a provider might
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": f'{{"q": "{LONE}"}}'}}
        message = {"role": "assistant", "content": f"{text} {LONE}", "tool_calls": [call]}
        return 200, {"model": f"gpt-{LONE}", "choices": [{"finish_reason": "stop", "message": message}]}
    if anthropic:
        return 200, {"model": body.get("model"), "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                     "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip
    return 200, {"model": body.get("model"), "choices": [{"message": {"role": "assistant", "content": text},
                 "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}  # fmt: skip


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to ``target``; :meth:`down` drops every connection and refuses new ones."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._pairs: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.up()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in its thread (Linux)
            except OSError:
                pass
            listener.close()
        for sock in self._pairs:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._pairs.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._pairs += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def endpoint_calls(chat_id: str, doomed: str) -> dict[str, tuple[str, str, dict | None]]:
    """One request to each endpoint of the API, by name: ``(method, path, JSON body)``; ``doomed`` is deleted."""
    return {
        "create": ("POST", "/api/v2/chats", {"model": "llama-3.1-8b", "messages": [{"role": "user", "content": "Hi"}]}),
        "list": ("GET", "/api/v2/chats", None),
        "get": ("GET", f"/api/v2/chats/{chat_id}", None),
        "update": ("PATCH", f"/api/v2/chats/{chat_id}", {"title": "renamed"}),
        "append": ("POST", f"/api/v2/chats/{chat_id}/messages", {"messages": [{"role": "user", "content": "More"}]}),
        "generate": ("POST", f"/api/v2/chats/{chat_id}/generate", None),
        "audit": ("GET", f"/api/v2/chats/{chat_id}/context-audit", None),
        "preview": ("POST", "/api/v2/context-preview", {"chatId": chat_id}),
        "replay": ("POST", "/api/v2/replay", {"chatId": chat_id, "strategies": ["truncate"]}),
        "cancel": ("POST", f"/api/v2/chats/{chat_id}/cancel", None),
        "delete": ("DELETE", f"/api/v2/chats/{doomed}", None),
    }
