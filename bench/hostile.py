"""Hostile inputs against the importers and the tokenizer: how long each takes, and how it ends.

    python -m bench.hostile            # every case below, one run each (about a minute)
    python -m bench.hostile --quick    # the small ones only
    python -m bench.hostile --serving  # hostile clients and failures against `contextfit serve` (bench/hostile_serving.py)

Each case is timed once in this process (wall clock, ``time.perf_counter``)
and prints how it ended: a count, or the error code and its location, and
how far its resident set rose over where it stood when the case began (the
high-water mark is reset before each case through ``/proc/self/clear_refs``;
Linux). The process runs under an address-space cap
(``--cap-gb``, 4 by default), so a case that regresses ends in a MemoryError
instead of taking the machine. The inputs are the hostile ones reported so
far: a million spaces (tiktoken alone panics, for the open vocabularies
too), PNG cards of 200 and 900 compressed 16 MB ``chara`` chunks, a
400,000-message SillyTavern chat, a 200,000-entry World Info file, a
24-character lorebook key that compiled into gigabytes, ``{{user}}`` ten
thousand times with a long name, and the largest inputs the limits allow.
Nothing here is a pass/fail target; the test suite asserts on work done
(bytes decompressed, errors and locations) and on memory
(``tests/test_hostile_inputs.py``).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path


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


def _plan_codes(messages: list[dict], **keywords: object) -> str:
    import contextfit

    plan = contextfit.plan_prompt(messages, model=keywords.pop("model", "gpt-4o"), **keywords)
    return f"{plan.prompt_tokens:,} tokens; " + (", ".join(d["code"] for d in plan.diagnostics) or "no diagnostics")


def _preview(body: dict) -> str:
    """POST /api/v2/context-preview on the API app, in this process: the status and the error code."""
    import tempfile

    from fastapi.testclient import TestClient

    from contextfit.serving.api import create_app
    from contextfit.serving.api.guard import LOOPBACK_HOSTS
    from contextfit.serving.providers import EchoProvider
    from contextfit.serving.store import open_store

    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "hostile.db")
        app = create_app(store, {"echo": EchoProvider()}, hosts=[*LOOPBACK_HOSTS, "testserver"])
        with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
            response = client.post("/api/v2/context-preview", json=body)
        store.close()
    answer = response.json()
    detail = answer["error"]["code"] if "error" in answer else ", ".join(d["code"] for d in answer["diagnostics"])
    return f"HTTP {response.status_code} {detail}"


KEY_BOMB = "/(?:a{999999}){999999}/"
_USER = {"role": "user", "content": "Tell me about the forest."}
_BOOK = {"entries": {"0": {"uid": 0, "key": [KEY_BOMB, "forest"], "content": "The forest is old."}}}
_MACROS = [{"role": "system", "content": "You are {{char}}."}, {"role": "user", "content": "{{user}}" * 10_000}]


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
        (f"lorebook key {KEY_BOMB} (plan_prompt)", lambda: _plan_codes([_USER], lorebook=_BOOK)),
        ("{{user}} x 10,000 with a 3,000-character user name (83 KB, plan_prompt)",
         lambda: _plan_codes(_MACROS, user_name="N" * 3_000)),
        (f"{{{{user}}}} x 40,000 with a {limits.MAX_NAME_CHARS}-character user name (320 KB, plan_prompt)",
         lambda: _plan_codes([{"role": "user", "content": "{{user}}" * 40_000}], user_name="N" * limits.MAX_NAME_CHARS,
                             context_limit=20_000_000, response_reserve=1_000)),
        ("role 'wizard' (plan_prompt)", lambda: _plan_codes([{"role": "wizard", "content": "hi"}])),
        (f"JSON list of {limits.MAX_MESSAGES + 1:,} messages",
         lambda: contextfit.load_conversation(json.dumps([{"role": "user", "content": "hi"}] * (limits.MAX_MESSAGES + 1)))),
    ]
    for profile in ("llama3", "llama4", "qwen", "qwen3.5", "mistral", "mistral-tekken", "deepseek"):
        counted = contextfit.get_tokenizer(profile)
        found.append((f"count 'x' + 1,000,000 spaces + 'x' ({profile})", lambda counted=counted: counted.count(
            "x" + " " * 1_000_000 + "x")))
    deepseek = contextfit.get_tokenizer("deepseek")
    found.append(("count 1,000,000 NUL (deepseek)", lambda: deepseek.count("\x00" * 1_000_000)))
    if not quick:
        found += [
            ("count 8,000,000 spaces (o200k_base)", lambda: o200k.count(" " * 8_000_000)),
            ("PNG card: 900 zTXt chara chunks of 16 MB (15 MB file)", lambda: contextfit.load_conversation(_png_bomb(900))),
            ("SillyTavern chat: 400,000 messages (15 MB)", lambda: _fit_all(_sillytavern(400_000, "hi"))),
            (f"SillyTavern chat: {limits.MAX_MESSAGES:,} messages (the limit), every strategy",
             lambda: _fit_all(_sillytavern(limits.MAX_MESSAGES))),
            (f"lorebook key {KEY_BOMB} (POST /api/v2/context-preview)",
             lambda: _preview({"model": "gpt-4o", "messages": [_USER], "lorebook": _BOOK})),
            ("{{user}} x 10,000 with a 3,000-character userName (POST /api/v2/context-preview)",
             lambda: _preview({"model": "gpt-4o", "messages": _MACROS, "settings": {"userName": "N" * 3_000}})),
            ("preview of 1,000,000 spaces (qwen2.5-72b, POST /api/v2/context-preview)",
             lambda: _preview({"model": "qwen2.5-72b", "messages": [{"role": "user", "content": " " * 1_000_000}],
                               "settings": {"contextLimit": 2_000_000, "responseReserve": 1_000}})),
        ]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="leave out the cases that take more than a few seconds")
    parser.add_argument("--serving", action="store_true",
                        help="the server's cases instead: a lock past the lease, regex facts, a client that leaves, "
                             "appends, a stalled flood, an outage (bench/hostile_serving.py)")  # fmt: skip
    parser.add_argument("--cap-gb", type=float, default=4.0, help="address-space cap of this process (0: none)")
    args = parser.parse_args(argv)
    if args.serving:
        from . import hostile_serving

        return hostile_serving.main([])
    if args.cap_gb:
        cap = int(args.cap_gb * 1024**3)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import contextfit

    contextfit.get_tokenizer("o200k_base").count("warm up")
    contextfit.get_tokenizer("cl100k_base").count("warm up")
    print("| case | seconds | peak MB over its start | outcome |\n|---|--:|--:|---|")
    for name, run in cases(args.quick):
        start_mb = _reset_peak()
        start = time.perf_counter()
        try:
            outcome = run()
            shown = outcome if isinstance(outcome, (str, int)) else type(outcome).__name__
        except contextfit.ContextfitError as error:
            shown = f"{error.code} at {getattr(error, 'location', None)}: {error.message[:70]}…"
        except MemoryError:
            shown = f"MemoryError (the {args.cap_gb:g} GB cap)"
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # noqa: BLE001 - a Rust panic (PanicException) is a BaseException
            shown = f"{type(error).__name__}: {str(error)[:70]}"
        seconds = time.perf_counter() - start
        print(f"| {name} | {seconds:.2f} | {_peak_mb() - start_mb:,.0f} | {shown} |", flush=True)
    return 0


def _reset_peak() -> float:
    """Start this process's high-water mark over at its current resident set (Linux 4.0+); that set, in MB."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass  # not Linux: the column shows the rise of the peak so far
    return _status_mb("VmRSS:")


def _peak_mb() -> float:
    """This process's peak resident set since :func:`_reset_peak`, in MB (VmHWM)."""
    return _status_mb("VmHWM:")


def _status_mb(field: str) -> float:
    try:
        with open("/proc/self/status") as handle:
            return next(int(line.split()[1]) for line in handle if line.startswith(field)) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    sys.exit(main())
