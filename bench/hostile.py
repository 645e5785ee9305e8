"""Hostile inputs against the importers and the tokenizer: how long each takes, and how it ends.

    python -m bench.hostile            # every case below, one run each (about a minute)
    python -m bench.hostile --quick    # the small ones only
    python -m bench.hostile --serving  # hostile clients and failures against `contextfit serve` (bench/hostile_serving.py)

Each case is timed once in this process (wall clock, ``time.perf_counter``)
and prints how it ended: a count, or the error code and its location. The
inputs are the ones issues 12 and 20 found: a million spaces (tiktoken alone
panics), PNG cards of 200 and 900 compressed 16 MB ``chara`` chunks, a
400,000-message SillyTavern chat, a 200,000-entry World Info file, and the
largest inputs the limits allow. Nothing here is a pass/fail target; the
test suite asserts on work done (bytes decompressed, errors and locations).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from collections.abc import Callable


def _png_bomb(chunks: int) -> bytes:
    from tests.support.png import chunk, png  # the tests' PNG builder

    one = chunk(b"zTXt", b"chara\x00\x00" + zlib.compress(b"\x00" * (16 * 1024 * 1024), 9))
    return png(*[one] * chunks)


def _sillytavern(messages: int, text: str = "Tell me more about the wolves of the northern forest, please.") -> str:
    lines = [json.dumps({"user_name": "You", "character_name": "Ann"})]
    lines += [json.dumps({"name": "You" if i % 2 else "Ann", "is_user": bool(i % 2), "mes": text}, separators=(",", ":"))
              for i in range(messages)]
    return "\n".join(lines)


def _world_info(entries: int) -> str:
    return json.dumps({"entries": {str(i): {"uid": i, "key": [f"key{i}"], "content": f"Entry {i}."} for i in range(entries)}})


def _fit_all(source: str) -> str:
    import contextfit
    from contextfit import FitSession

    conversation = contextfit.load_conversation(source)
    plans = dict(FitSession(conversation.messages).plans(model="gpt-4o"))  # what `contextfit fit` runs
    return f"{len(conversation.messages):,} messages fitted under {len(plans)} strategies"


def cases(quick: bool) -> list[tuple[str, Callable[[], object]]]:
    import contextfit
    from contextfit import limits

    o200k = contextfit.get_tokenizer("o200k_base")
    found = [
        ("count 1,000,000 spaces (o200k_base)", lambda: o200k.count(" " * 1_000_000)),
        ("count 'x' + 1,000,000 tabs + 'x' (cl100k_base)", lambda: contextfit.get_tokenizer("cl100k_base").count("x" + "\t" * 1_000_000 + "x")),
        ("PNG card: 200 zTXt chara chunks of 16 MB (3 MB file)", lambda: contextfit.load_conversation(_png_bomb(200))),
        ("World Info: 200,000 entries", lambda: contextfit.load_conversation(_world_info(200_000))),
        (f"World Info: {limits.MAX_LOREBOOK_ENTRIES:,} entries (the limit)",
         lambda: f"{len(contextfit.load_conversation(_world_info(limits.MAX_LOREBOOK_ENTRIES)).lorebook.entries):,} entries"),
    ]
    if not quick:
        found += [
            ("count 8,000,000 spaces (o200k_base)", lambda: o200k.count(" " * 8_000_000)),
            ("PNG card: 900 zTXt chara chunks of 16 MB (15 MB file)", lambda: contextfit.load_conversation(_png_bomb(900))),
            ("SillyTavern chat: 400,000 messages (15 MB)", lambda: _fit_all(_sillytavern(400_000, "hi"))),
            (f"SillyTavern chat: {limits.MAX_MESSAGES:,} messages (the limit), every strategy",
             lambda: _fit_all(_sillytavern(limits.MAX_MESSAGES))),
        ]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="leave out the cases that take more than a few seconds")
    parser.add_argument("--serving", action="store_true",
                        help="the server's cases instead: a lock past the lease, regex facts, a client that leaves, "
                             "appends, a stalled flood, an outage (bench/hostile_serving.py)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.serving:
        from . import hostile_serving

        return hostile_serving.main([])
    import contextfit

    contextfit.get_tokenizer("o200k_base").count("warm up")
    contextfit.get_tokenizer("cl100k_base").count("warm up")
    print("| case | seconds | outcome |\n|---|--:|---|")
    for name, run in cases(args.quick):
        start = time.perf_counter()
        try:
            outcome = run()
            shown = outcome if isinstance(outcome, (str, int)) else type(outcome).__name__
        except contextfit.ContextfitError as error:
            shown = f"{error.code} at {getattr(error, 'location', None)}: {error.message[:70]}…"
        seconds = time.perf_counter() - start
        print(f"| {name} | {seconds:.2f} | {shown} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
