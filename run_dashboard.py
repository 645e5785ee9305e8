"""Start the dashboard: ``streamlit run app.py`` with these arguments, warmed once it serves.

    python run_dashboard.py --server.port 8501

``make run`` starts it this way, and so does ``bench.dashboard`` (its first-paint
and refit measurements). Once the server accepts connections, a background
thread loads what a first page view needs (``contextfit.views.warmup``):
nothing of contextfit is imported before, so the server is up as soon as
with ``streamlit run app.py``.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"
#: How long the warm-up waits for the server to accept connections before it loads anyway.
WAIT_SECONDS = 60.0


def option(args: list[str], name: str, default: str) -> str:
    """A ``--name value`` or ``--name=value`` command-line option (the last one given), else ``default``.

    >>> option(["--server.port", "9000"], "server.port", "8501"), option(["--server.port=9001"], "server.port", "8501")
    ('9000', '9001')
    >>> option([], "server.port", "8501")
    '8501'
    """
    found = default
    for position, arg in enumerate(args):
        if arg == f"--{name}" and position + 1 < len(args):
            found = args[position + 1]
        elif arg.startswith(f"--{name}="):
            found = arg.split("=", 1)[1]
    return found


def serving(host: str, port: int) -> bool:
    """Whether something accepts connections at ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def warm_once_serving(host: str, port: int, wait: float = WAIT_SECONDS) -> None:
    """Wait until the server accepts connections (at most ``wait`` seconds), then warm the process."""
    deadline = time.monotonic() + wait
    while not serving(host, port) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        from contextfit.views import warmup

        took = warmup.warm()
    except Exception:  # the dashboard works cold; a failed warm-up only costs the first visitor time
        logging.getLogger("contextfit.warmup").exception("the dashboard's warm-up failed")
        return
    logging.getLogger("contextfit.warmup").info(
        "warmed once serving: modules %.2f s, vocabulary %.2f s", took["modules"], took["vocabulary"])


def main(args: list[str]) -> None:
    port = int(option(args, "server.port", "8501"))
    host = option(args, "server.address", "127.0.0.1")
    threading.Thread(target=warm_once_serving, args=("127.0.0.1" if host in ("", "0.0.0.0") else host, port),
                     name="contextfit-warmup", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *args]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    log = logging.getLogger("contextfit.warmup")
    log.setLevel(logging.INFO)
    log.addHandler(logging.StreamHandler())
    main(sys.argv[1:])
