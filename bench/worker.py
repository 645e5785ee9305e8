"""Runs contenders in another process: the capped ones (killed at the time
cap) and every peak-memory measurement (a fresh process per measurement).

``python -m bench.worker serve`` answers JSON lines on stdin: ``prepare``
(not timed, kept for the repeats) then ``run`` (timed, stopped by an alarm at
the cap; a worker that does not answer soon after is killed). ``python -m
bench.worker memory SPEC`` prepares one contender on one input, resets the
process's peak-RSS mark (``/proc/self/clear_refs``), runs it once and prints
the peak; ``ru_maxrss`` is reported too.
"""

from __future__ import annotations

import gc
import json
import os
import re
import resource
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from time import perf_counter
from typing import Any

from .contenders import by_key, litellm_offline
from .conversations import from_source
from .oracle import Outcome

REPO = Path(__file__).resolve().parent.parent


class OverCap(Exception):
    """A run took longer than the cap."""


class _Alarm(BaseException):
    """Raised inside a run at the cap; a BaseException, so that a library's
    ``except Exception`` (LiteLLM's ``trim_messages`` has one) cannot swallow it."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Alarm()


def _run_capped(contender: Any, state: Any, cap: float | None) -> tuple[float | None, Any]:
    """``(seconds, output)``, or ``(None, None)`` when the run reached ``cap`` seconds."""
    if cap:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, cap)
    start = perf_counter()
    try:
        output = contender.run(state)
    except _Alarm:
        return None, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return perf_counter() - start, output


def _outcome_json(outcome: Outcome) -> dict:
    return {"kept": outcome.kept, "altered": outcome.altered, "sent": outcome.sent, "error": outcome.error,
            "note": outcome.note}


def serve() -> None:
    """Answer ``prepare`` and ``run`` requests, one JSON line each."""
    chats: dict[str, Any] = {}
    states: dict[tuple, Any] = {}
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "import":  # load the library now, before anything is timed
            __import__(request["module"])
            sys.stdout.write(json.dumps({"ok": True}) + "\n")
            sys.stdout.flush()
            continue
        source_key = json.dumps(request["source"], sort_keys=True)
        key = (source_key, request["budget"], request["key"])
        contender = by_key(request["key"])
        try:
            if source_key not in chats:
                chats.clear()
                states.clear()
                chats[source_key] = from_source(request["source"]).messages
            messages = chats[source_key]
            if request["op"] == "prepare" and key not in states:  # kept for the next runs
                states[key] = contender.prepare(messages, request["budget"])
                gc.collect()
                gc.freeze()  # LangChain and LiteLLM bring ~1M objects: no run should pay to scan them
            if request["op"] == "prepare":
                reply: dict = {"ok": True}
            else:
                state = states[key]
                gc.collect()
                seconds, output = _run_capped(contender, state, request.get("cap"))
                if seconds is None:
                    reply = {"over_cap": True}
                else:
                    reply = {"seconds": seconds}
                    if request.get("judge"):
                        reply["outcome"] = _outcome_json(contender.outcome(state, output))
        except Exception as exc:  # reported as the contender's error, not the bench's
            reply = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


class Worker:
    """A ``serve`` process, restarted if it ever has to be killed."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.process: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        if self.process is None or self.process.poll() is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self.log.open("a") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "bench.worker", "serve"],
                    cwd=REPO,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                )
        return self.process

    def ask(self, request: dict, timeout: float) -> dict:
        """Send one request; kill the worker and raise :class:`OverCap` after ``timeout`` seconds."""
        self.send(request)
        return self.receive(timeout)

    def send(self, request: dict) -> None:
        """Send one request without waiting for the answer."""
        process = self._start()
        assert process.stdin is not None
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()

    def receive(self, timeout: float) -> dict:
        """The answer to the last request sent."""
        process = self.process
        assert process is not None and process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout)
        if not ready:
            self.stop()
            raise OverCap(f"no answer within {timeout:g} s")
        line = process.stdout.readline()
        if not line:
            self.stop()
            return {"error": f"the worker died (exit {process.poll()}); see {self.log}"}
        return json.loads(line)

    def stop(self) -> None:
        """End the worker process this object started."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process = None


# -- peak memory ----------------------------------------------------------------


def _status() -> dict[str, int]:
    text = Path("/proc/self/status").read_text()
    return {key: int(value) for key, value in re.findall(r"^(Vm\w+):\s+(\d+) kB", text, re.MULTILINE)}


def memory(spec: dict) -> dict:
    """Peak memory of one run of one contender, in a fresh process (KiB)."""
    contender = by_key(spec["key"])
    messages = from_source(spec["source"]).messages
    state = contender.prepare(messages, spec["budget"])
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        method = "VmHWM after a clear_refs reset"
    except OSError:
        method = "ru_maxrss (peak before the call included)"
    before = _status().get("VmRSS", 0)
    if _run_capped(contender, state, spec.get("cap"))[0] is None:
        return {"over_cap": True}
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak = _status().get("VmHWM", maxrss) if method.startswith("VmHWM") else maxrss
    return {"before_kib": before, "peak_kib": peak, "maxrss_kib": maxrss, "during_call_kib": peak - before, "method": method}


def measure_memory(spec: dict, timeout: float) -> dict:
    """:func:`memory` in a fresh process."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.worker", "memory", json.dumps(spec)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"over_cap": True}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1][:300] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    litellm_offline()  # before anything can import LiteLLM
    if sys.argv[1:2] == ["serve"]:
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        serve()
    elif sys.argv[1:2] == ["memory"]:
        print(json.dumps(memory(json.loads(sys.argv[2]))))
    else:
        sys.exit("usage: python -m bench.worker serve | memory SPEC")
