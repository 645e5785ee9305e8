"""`contextfit dashboard` works from an installed package, not only from a checkout.

The project is built into a wheel and installed (``--no-deps --no-index``,
offline) into a fresh venv outside the checkout; that venv sees the test
venv's dependencies through a ``.pth`` line, never the checkout. The
installed ``contextfit dashboard`` must find its packaged app and serve it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest
from support.paths import REPO

SOURCES = ["contextfit", "app.py", "app_server.py", "pages", "widgets", ".streamlit", "setup.py", "pyproject.toml", "README.md"]


def _setuptools_is_new_enough() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 77


pytestmark = pytest.mark.skipif(
    not _setuptools_is_new_enough(), reason="building the wheel offline needs setuptools>=77 (requirements-dev.txt)"
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A venv outside the checkout with the project's wheel installed; returns its bin directory."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"  # a copy, so the build writes nothing into the checkout
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.db*"))
        else:
            shutil.copy2(path, source / name)
    wheels = root / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(wheels), str(source)],
                   check=True, cwd=root, capture_output=True)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    wheel = next(wheels.glob("contextfit-*.whl"))
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
                   check=True, cwd=root, capture_output=True)
    # the test venv's dependencies (streamlit, tiktoken, ...), but not its editable contextfit
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def test_the_installed_package_is_not_the_checkout(installed, tmp_path):
    where = subprocess.run(
        [str(installed / "python"), "-c", "import contextfit, contextfit.cli as c; print(contextfit.__file__); print(c.dashboard_app())"],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    ).stdout.split()
    venv = installed.parent.resolve()
    assert all(Path(path).resolve().is_relative_to(venv) for path in where), where
    app = Path(where[1])
    assert (app.parent / "pages" / "compare.py").is_file() and (app.parent / ".streamlit" / "config.toml").is_file()
    assert (app.parent / "widgets" / "source.py").is_file()  # the sidebar's widgets, beside app.py


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_installed_dashboard_command_serves_its_app(installed, tmp_path):
    port = _free_port()
    log = tmp_path / "dashboard.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [str(installed / "contextfit"), "dashboard", "--port", str(port)],
            cwd=tmp_path, stdout=output, stderr=subprocess.STDOUT,
            env={"HOME": str(tmp_path), "PATH": str(installed), "CONTEXTFIT_DB": str(tmp_path / "dash.db")},
        )
        try:
            health = _wait_for(f"http://127.0.0.1:{port}/_stcore/health", server)
            assert health == "ok", log.read_text(errors="replace")
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
                assert page.status == 200 and b"<html" in page.read().lower()
                assert page.headers["x-frame-options"] == "DENY"  # served through app_server.py
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    # Stopping the command stops the server: nothing is left holding the port
    # (a child ``streamlit`` process outlived it before).
    assert _port_free(port), f"a server still listens on {port} after `contextfit dashboard` was stopped"


def _port_free(port: int, attempts: int = 100) -> bool:
    """Whether nothing listens on ``port`` (waits for the stopped server's socket to close)."""
    for _ in range(attempts):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return True
        time.sleep(0.1)
    return False


def _wait_for(url: str, server: subprocess.Popen, attempts: int = 600) -> str:
    """The body of ``url`` once it answers; waits on the server (not on a clock) and stops if it exits."""
    for _ in range(attempts):
        if server.poll() is not None:
            return f"the server exited with {server.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return answer.read().decode()
        except OSError:
            time.sleep(0.1)
    return "no answer"
