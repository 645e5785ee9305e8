"""Soak: many distinct large previews in one process, and whether memory stays flat.

    python -m bench.soak                          # 200 previews of ~2 MB through the API app, in-process
    python -m bench.soak --via plan               # the same through plan_prompt alone
    python -m bench.soak --shape many --mb 7      # 7 MB of small messages per preview
    python -m bench.soak --requests 40 --mb 6     # the issue's case: 40 distinct 6 MB messages

Every preview holds text no earlier one held (each is a different slice of
a seeded word corpus, so nothing can be answered from a cache). The resident
set size is read after each preview; the run passes when it grows by at most
``--bound`` MB between the end of the warm-up (the first ``--warmup``
previews, while the caches fill) and the end, and prints the numbers either
way. The bound is the sum of the engine's cache budgets that one model's
previews can fill (README, "Limits"), rounded up: 128 MB.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tempfile
import time
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
        from fastapi.testclient import TestClient

        from contextfit.serving.api import create_app
        from contextfit.serving.store import open_store

        folder = tempfile.mkdtemp(prefix="contextfit-soak-")
        client = TestClient(create_app(open_store(str(Path(folder) / "soak.db")), max_body_bytes=chars * 2 + 1_000_000))

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--via", choices=("api", "plan"), default="api")
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
