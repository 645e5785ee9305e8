"""A seeded agent conversation with exactly N model calls, for the agent replay's tests and ``bench/agent_replay.py``.

Each user turn is followed by up to 49 rounds of one or two tool calls (``read_file``, ``grep``,
``run_tests``) and their results; one result in eight is a large dump (2,500-6,000 words), the
rest are short. The words come from a small vocabulary, so fact lines repeat and turn boilerplate
as the run goes on. This module imports nothing from the tests, so the bench can import it.
"""

from __future__ import annotations

import json
import random

__all__ = ["agent_run"]

ROUNDS_PER_TURN = 49
WORDS = ("handler", "config", "parse", "request", "tests", "router", "cache", "session", "module", "fixture",
         "timeout", "retry", "payload", "schema", "index", "token", "branch", "commit", "deploy", "error")


def agent_run(requests: int, seed: int = 34) -> list[dict]:
    """A seeded agent conversation with exactly ``requests`` model calls (as the module says)."""
    rng = random.Random(seed)
    words = lambda n: " ".join(rng.choice(WORDS) for _ in range(n))  # noqa: E731
    chat: list[dict] = [{"role": "system", "content": "You are a coding agent. " + words(1100)}]
    made = turn = 0
    while made < requests:
        turn += 1
        chat.append({"role": "user", "content": f"Task {turn}: {words(rng.randint(10, 40))}?"})
        made += 1
        for _ in range(min(ROUNDS_PER_TURN, requests - made)):
            calls = [{"id": f"call_{k}", "type": "function",
                      "function": {"name": rng.choice(("read_file", "grep", "run_tests")),
                                   "arguments": json.dumps({"path": words(2)})}} for k in range(rng.choice((1, 1, 2)))]
            chat.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call in calls:
                size = rng.randint(2500, 6000) if rng.random() < 1 / 8 else rng.randint(10, 120)
                chat.append({"role": "tool", "tool_call_id": call["id"], "content": words(size)})
            made += 1
        chat.append({"role": "assistant", "content": f"Done with task {turn}: {words(30)}."})
    return chat
