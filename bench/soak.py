"""Soak: many distinct large previews in one process, and whether memory stays flat.

    python -m bench.soak                          # 200 previews of ~2 MB through the API app, in-process
    python -m bench.soak --via plan               # the same through plan_prompt alone
    python -m bench.soak --shape many --mb 7      # 7 MB of small messages per preview
    python -m bench.soak --requests 40 --mb 6     # 40 distinct 6 MB messages
    python -m bench.soak --via appends            # appends to one chat until the chat limit refuses them
    python -m bench.soak --via outcomes --requests 40   # generations whose finish meets a locked database

Every preview holds text no earlier one held (each is a different slice of
a seeded word corpus, so nothing can be answered from a cache). The resident
set size is read after each preview; the run passes when it grows by at most
``--bound`` MB between the end of the warm-up (the first ``--warmup``
previews, while the caches fill) and the end, and prints the numbers either
way. The bound is the sum of the engine's cache budgets that one model's
previews can fill (docs/operations.md, "Caches and memory"), rounded up: 128 MB.

``--via appends`` appends ``--batch`` messages at a time to one chat through
the API app until the chat limit refuses one (and ``--requests`` more after
that): it passes when the answers stay the size of what they appended and
memory stays within the bound. ``--via outcomes`` runs ``--requests``
generations whose reply arrives while another connection holds the database's
write lock past both the lock timeout and the lease: it passes when no reply
is lost (each ends in its chat exactly once, its audit never ``INTERRUPTED``),
the spool is empty at the end, and memory stays within the bound.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

_WORDS = (
    "the a wolf forest river night moon tavern sword shield dragon ember quiet storm old road king queen "
    "village fire light shadow stone tower gate silver gold song memory dream winter summer rain wind "
    "ancient hidden broken bright cold warm fast slow whisper shout laugh cry remember forget travel rest"
).split()
PAGE = 4096


def rss_mb() -> float:
    """This process's resident set size, in MB (Linux /proc)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * PAGE / 1e6


def corpus(chars: int, seed: int) -> str:
    """Seeded English-like text: sentences of 6-18 words."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 18))).capitalize() + rng.choice(".!?")
        parts.append(sentence)
        size += len(sentence) + 1
    return " ".join(parts)


def conversation(text: str, request: int, chars: int, shape: str) -> list[dict]:
    """A distinct conversation of about ``chars`` characters: a slice of ``text`` no other request reads."""
    start = (request * 7919) % max(1, len(text) - chars)
    body = f"[preview {request}] " + text[start:start + chars]
    if shape == "few":  # a few large messages
        third = len(body) // 3
        pieces = [body[:third], body[third:2 * third], body[2 * third:]]
    else:  # many small ones: 9,000 (the API takes up to 10,000 messages)
        size = max(200, len(body) // 9_000 + 1)
        pieces = [body[i:i + size] for i in range(0, len(body), size)]
    roles = ("user", "assistant")
    messages = [{"role": "system", "content": "You are a storyteller."}]
    messages += [{"role": roles[i % 2], "content": piece} for i, piece in enumerate(pieces)]
    messages.append({"role": "user", "content": f"Go on ({request})."})  # the large ones stay droppable
    return messages


def run(args: argparse.Namespace) -> dict:
    import contextfit

    chars = int(args.mb * 1_000_000)
    text = corpus(chars * 2, args.seed)
    if args.via == "api":
        _store, client = _api(tempfile.mkdtemp(prefix="contextfit-soak-"), max_body_bytes=chars * 2 + 1_000_000)

        def preview(messages: list[dict]) -> int:
            body = json.dumps({"messages": messages, "model": args.model, "settings": {"contextStrategy": args.strategy}})
            response = client.post("/api/v2/context-preview", content=body, headers={"content-type": "application/json"})
            assert response.status_code == 200, response.text[:300]
            return response.json()["promptTokens"]
    else:
        def preview(messages: list[dict]) -> int:
            return contextfit.plan_prompt(messages, model=args.model, context_strategy=args.strategy).prompt_tokens

    samples: list[float] = []
    started = time.perf_counter()
    for request in range(args.requests):
        preview(conversation(text, request, chars, args.shape))
        gc.collect()
        samples.append(rss_mb())
        if args.verbose and (request + 1) % 20 == 0:
            print(f"  {request + 1:>4} previews: RSS {samples[-1]:7.1f} MB", file=sys.stderr)
    seconds = time.perf_counter() - started
    warm = samples[min(args.warmup, len(samples)) - 1]
    growth = samples[-1] - warm
    return {
        "via": args.via, "shape": args.shape, "requests": args.requests, "mb": args.mb, "model": args.model,
        "strategy": args.strategy, "seconds": round(seconds, 1), "rss_after_warmup_mb": round(warm, 1),
        "rss_final_mb": round(samples[-1], 1), "rss_max_mb": round(max(samples), 1), "growth_mb": round(growth, 1),
        "bound_mb": args.bound, "flat": growth <= args.bound,
    }


def _api(folder: str, **options):
    from fastapi.testclient import TestClient

    from contextfit.serving.api import create_app
    from contextfit.serving.store import open_store

    app_options = {name: options.pop(name) for name in ("providers", "max_body_bytes") if name in options}
    store = open_store(str(Path(folder) / "soak.db"), **options)
    return store, TestClient(create_app(store, **app_options), base_url="http://127.0.0.1")  # a loopback Host


def run_appends(args: argparse.Namespace) -> dict:
    """Appends to one chat far past the chat limit: answer sizes and memory."""
    folder = tempfile.mkdtemp(prefix="contextfit-soak-")
    store, client = _api(folder)
    samples, sizes, refused = [], [], Counter()
    started = time.perf_counter()
    with client:
        chat_id = client.post("/api/v2/chats", json={"model": args.model}).json()["id"]
        for request in range(args.requests):
            batch = [{"role": "user", "content": f"{request}-{n}: a line of a long chat"} for n in range(args.batch)]
            response = client.post(f"/api/v2/chats/{chat_id}/messages", json={"messages": batch})
            if response.status_code == 200:
                sizes.append(len(response.content))
            else:
                refused[response.json()["error"]["code"]] += 1
            gc.collect()
            samples.append(rss_mb())
        held = client.get("/api/v2/chats").json()["chats"][0]["messageCount"]
    store.close()
    warm = samples[min(args.warmup, len(samples)) - 1]
    growth = samples[-1] - warm
    return {"via": "appends", "appends": args.requests, "accepted": len(sizes), "refused": dict(refused),
            "held_messages": held, "answer_bytes_min": min(sizes), "answer_bytes_max": max(sizes),
            "seconds": round(time.perf_counter() - started, 1), "rss_after_warmup_mb": round(warm, 1),
            "rss_final_mb": round(samples[-1], 1), "growth_mb": round(growth, 1), "bound_mb": args.bound,
            "flat": growth <= args.bound and set(refused) <= {"CHAT_TOO_LARGE"}}  # fmt: skip


def run_outcomes(args: argparse.Namespace) -> dict:
    """Generations whose reply meets a write lock held past the lock timeout and the lease."""
    import os
    import sqlite3
    import threading

    from contextfit.serving.providers import ProviderReply

    os.environ["CONTEXTFIT_LEASE_SECONDS"] = "1"
    os.environ["CONTEXTFIT_CANCEL_POLL_SECONDS"] = "0.1"
    folder = tempfile.mkdtemp(prefix="contextfit-soak-")
    database = str(Path(folder) / "soak.db")

    class LockedOnReply:
        name, template = "locked", None

        async def complete(self, request):
            lock = sqlite3.connect(database, timeout=60, isolation_level=None, check_same_thread=False)
            lock.execute("BEGIN IMMEDIATE")  # held 2.5 leases: past the lock timeout (0.5 s) and the lease
            release = threading.Timer(2.5, lambda: (lock.execute("COMMIT"), lock.close()))
            releases.append(release)
            release.start()
            return ProviderReply({"role": "assistant", "content": f"paid {request.messages[-1]['content']}"},
                                 request.model, "stop")  # fmt: skip

    from contextfit.serving.outcomes import FinishRetry

    store, client = _api(folder, lock_timeout=0.5, finish_retry=FinishRetry(attempts=2, backoff=0.1),
                         providers={"locked": LockedOnReply()})  # fmt: skip
    samples, answers, chats, releases = [], Counter(), [], []
    started = time.perf_counter()
    with client:
        for request in range(args.requests):
            chat_id = client.post("/api/v2/chats", json={"model": args.model, "messages": [
                {"role": "user", "content": f"question {request}"}]}).json()["id"]  # fmt: skip
            chats.append((chat_id, f"paid question {request}"))
            answers[client.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": "locked"}).status_code] += 1
            releases[-1].join()  # the next chat is created once the lock is gone
            gc.collect()
            samples.append(rss_mb())
        deadline = time.monotonic() + 60
        while store.finishes.waiting() and time.monotonic() < deadline:
            time.sleep(0.2)
        stored_once = sum([m.get("content") for m in store.get_chat(chat_id).messages].count(reply) == 1
                          for chat_id, reply in chats)  # fmt: skip
        audits = Counter(store.get_audit(chat_id).error_code or store.get_audit(chat_id).status for chat_id, _ in chats)
        waiting = len(store.finishes.waiting())
    store.close()
    warm = samples[min(args.warmup, len(samples)) - 1]
    growth = samples[-1] - warm
    not_stored = args.requests - stored_once
    return {"via": "outcomes", "generations": args.requests, "answers": dict(answers), "stored_once": stored_once,
            "not_stored": not_stored, "audits": dict(audits), "spool_left": waiting, "seconds": round(time.perf_counter() - started, 1),
            "rss_after_warmup_mb": round(warm, 1), "rss_final_mb": round(samples[-1], 1), "growth_mb": round(growth, 1),
            "bound_mb": args.bound,
            "flat": growth <= args.bound and not_stored == 0 and waiting == 0 and "INTERRUPTED" not in audits}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--via", choices=("api", "plan", "appends", "outcomes"), default="api")
    parser.add_argument("--batch", type=int, default=5_000, help="with --via appends: messages per append")
    parser.add_argument("--shape", choices=("few", "many"), default="few", help="a few large messages, or many small ones")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--mb", type=float, default=2.0, help="characters per preview, in millions")
    parser.add_argument("--model", default="gpt-4o")
    parser.add_argument("--strategy", default="truncate")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--bound", type=float, default=128.0, help="allowed RSS growth after the warm-up, MB")
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    if args.via in ("appends", "outcomes"):
        result = (run_appends if args.via == "appends" else run_outcomes)(args)
        print(json.dumps(result))
        return 0 if result["flat"] else 1
    result = run(args)
    print(json.dumps(result))
    print(
        f"{result['requests']} distinct {result['mb']:g} MB previews ({result['shape']}, via {result['via']}) in "
        f"{result['seconds']} s: RSS {result['rss_after_warmup_mb']} MB after {args.warmup}, "
        f"{result['rss_final_mb']} MB at the end (max {result['rss_max_mb']} MB); growth {result['growth_mb']} MB, "
        f"bound {result['bound_mb']:g} MB: {'flat' if result['flat'] else 'NOT FLAT'}"
    )
    return 0 if result["flat"] else 1


if __name__ == "__main__":
    sys.exit(main())
