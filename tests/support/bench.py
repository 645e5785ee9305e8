"""The bench as the tests run it: ``python -m bench...`` in a process of its own, from the checkout.

The tests never import ``bench/``: they run it as a user does and read what it prints and writes.
"""

from __future__ import annotations

import subprocess
import sys

from support.paths import REPO


def run_bench(module: str, *args: str, check: bool = True, timeout: float = 900) -> str:
    """Run ``python -m module args`` from the checkout; its standard output.

    With ``check`` a non-zero exit fails the test with the process's last output.
    """
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert done.returncode == 0, f"{module} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout
