"""The dashboard's server settings (``.streamlit/config.toml``): loopback only, XSRF on,
the importers' upload limit, no tracebacks on the page, loopback Host names only; and
its server (``app_server.py``): no other page may frame it."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
import tomllib

import pytest
from support.paths import REPO

from contextfit.serving.api.guard import LOOPBACK_HOSTS
from contextfit.inputs.formats import DEFAULT_MAX_BYTES

CONFIG = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())


def test_the_config_is_strict():
    server = CONFIG["server"]
    assert server["address"] == "127.0.0.1" and CONFIG["browser"]["serverAddress"] == "127.0.0.1"
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True
    assert server["corsAllowedOrigins"] == []
    assert server["maxUploadSize"] * 1024 * 1024 == DEFAULT_MAX_BYTES  # Streamlit's megabytes are MiB
    assert sorted(server["allowedHosts"]) == sorted(LOOPBACK_HOSTS)
    assert CONFIG["client"]["showErrorDetails"] in ("type", "none")  # never "full" or "stacktrace": no traceback


def test_the_installed_streamlit_knows_every_option():
    shown = subprocess.run(
        [sys.executable, "-m", "streamlit", "config", "show"], cwd=REPO, capture_output=True, text=True, timeout=120
    ).stdout
    # Streamlit marks each value it read from the file; an option it does not know is not shown at all.
    from_file = [line for line in shown.split("# The value below was set in ")[1:]]
    read = {block.splitlines()[1].split("=")[0].strip() for block in from_file}
    expected = {key for section in CONFIG.values() for key in section}
    assert expected <= read, expected - read


def _handshake(port: int, host: str) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://{host}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request.encode())
        return sock.recv(200)


@pytest.fixture(scope="module")
def dashboard_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "streamlit", "run", "app_server.py", "--server.port", str(port)]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError("streamlit exited") from None
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.parametrize(("host", "opens"), [("127.0.0.1", True), ("localhost:8501", True), ("[::1]", True),
                                             ("evil.example", False), ("evil.example:8501", False)])  # fmt: skip
def test_the_app_websocket_opens_only_for_loopback_host_names(dashboard_port, host, opens):
    status = _handshake(dashboard_port, host).split(b"\r\n", 1)[0]
    assert (b" 101 " in status) is opens, status


def test_the_theme_colour_comes_from_the_charts_palette():
    from contextfit.dashboard.charts import FATE_COLORS

    assert CONFIG["theme"]["primaryColor"] in FATE_COLORS.values()


@pytest.mark.parametrize("path", ["/", "/_stcore/health", "/favicon.png", "/no/such/page"])
def test_no_other_page_may_frame_the_dashboard(dashboard_port, path):
    import urllib.error
    import urllib.request

    try:
        answer = urllib.request.urlopen(f"http://127.0.0.1:{dashboard_port}{path}", timeout=30)
    except urllib.error.HTTPError as error:  # an error page is framed no more than the app
        answer = error
    assert answer.headers.get_all("x-frame-options") == ["DENY"]
    assert answer.headers.get_all("content-security-policy") == ["frame-ancestors 'none'"]


def test_the_frame_policy_replaces_what_the_app_said_and_leaves_websockets_alone():
    import anyio

    from contextfit.dashboard.frame_policy import FramePolicy

    sent = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"X-Frame-Options", b"ALLOWALL")]})

    async def record(message):
        sent.append(message)

    anyio.run(FramePolicy(app), {"type": "http"}, None, record)
    anyio.run(FramePolicy(app), {"type": "websocket"}, None, record)
    assert sent[0]["headers"] == [(b"x-frame-options", b"DENY"), (b"content-security-policy", b"frame-ancestors 'none'")]
    assert sent[1]["headers"] == [(b"X-Frame-Options", b"ALLOWALL")]  # not an HTTP answer: untouched
