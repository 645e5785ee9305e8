"""``make test`` spreads the suite over the cores and still starts a module's servers once.

The Makefile's ``XDIST`` arguments are run on a scratch module whose module-scoped fixture
counts its starts: under two workers it must start once, its tests all in one worker.
(``--dist loadgroup`` silently stopped grouping under pytest 9; this is what noticed.)
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

from support.paths import REPO

MODULE = '''
import os
import pytest

@pytest.fixture(scope="module")
def server():
    with open(os.environ["STARTS"], "a") as starts:
        starts.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    return "started"

@pytest.mark.parametrize("number", range(8))
def test_uses_the_server(server, number):
    assert server == "started"
'''


def makefile_xdist() -> list[str]:
    found = re.search(r"^XDIST \?= (.+)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert found, "the Makefile sets XDIST"
    return shlex.split(found.group(1).replace("auto", "2"))


def test_a_module_s_tests_share_one_worker_and_one_server(tmp_path) -> None:
    (tmp_path / "test_scratch.py").write_text(MODULE)
    starts = tmp_path / "starts.txt"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *makefile_xdist(),
                           "test_scratch.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"STARTS": str(starts), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "8 passed" in done.stdout
    assert len(starts.read_text().split()) == 1, starts.read_text()
