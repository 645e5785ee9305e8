"""The exact profiles' speed target: each exact profile's full count of the bench chat, against the o200k floor.

    .venv/bin/python -m bench.profiles                      # 10,000 messages, 5 runs (part of `make bench`)
    .venv/bin/python -m bench.profiles --messages 2000 --runs 3 --only deepseek
    .venv/bin/python -m bench.profiles --approximate --only anthropic --only gemini   # the bands' cost

In one process, on the seeded synthetic chat (``bench/conversations.py``),
each repetition times, in a rotating order with ``gc.collect()`` before each:

* ``floor``: tiktoken's ``o200k_base`` ``encode_ordinary`` on every message's
  text (the same floor as ``bench.fast``);
* for every exact profile, ``encode``: the same texts through the profile's
  exact encoding alone, ``encode_ordinary`` on each (the like-for-like cost of
  the vocabulary: no cache, no chat format);
* ``texts``: the same texts through a cold
  :class:`~contextfit.tokens.tokenizers.Tokenizer` of that profile (a fresh
  count cache, counting with the profile's exact engine: tiktoken for BPE
  vocabularies, kitoken for SentencePiece; the fast o200k/cl100k engine is
  left out so that ``o200k_base`` itself measures contextfit's overhead; a
  text repeated in the chat is counted once, as contextfit counts it);
* and ``chat``: the whole conversation through a cold
  :class:`~contextfit.tokens.chat_counter.TokenCounter` of the profile
  (chat template and per-message overhead included): what a first fit counts.

Each ratio is the median of the per-repetition ratios to the floor timed in
the same repetition; the target is ``chat`` <= 1.5x for every open-weight
profile. The load average is printed with the table: on a shared machine,
read the ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .contenders import _floor_run
from .fast import timed
from .conversations import synthetic
from .oracle import encoding

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 1.5  # each open-weight profile's full count, at most this many times the o200k floor
OPENAI = ("o200k_base", "cl100k_base")


def exact_profiles() -> list[str]:
    """Every exact profile whose vocabulary is installed (the others would count with their estimate)."""
    from contextfit.tokens.profiles import PROFILES
    from contextfit.tokens.tokenizers import get_tokenizer

    return [name for name, profile in PROFILES.items() if not profile.approximate and not get_tokenizer(name).approximate]


def approximate_profiles() -> list[str]:
    """The profiles that are always estimates (a band's upper bound is what they count)."""
    from contextfit.tokens.profiles import PROFILES

    return [name for name, profile in PROFILES.items() if profile.approximate]


def _cold(name: str) -> tuple[Any, Any]:
    """A fresh (tokenizer, counter) pair for a profile: empty caches, the vocabulary already loaded."""
    from contextfit.tokens.chat_counter import TokenCounter
    from contextfit.tokens.profiles import PROFILES
    from contextfit.tokens.tokenizers import Tokenizer, get_tokenizer

    tokenizer = Tokenizer(PROFILES[name], get_tokenizer(name).encoding)  # fast=None: the profile's own engine
    return tokenizer, TokenCounter(tokenizer)


def _contenders(messages: list[dict], names: list[str]) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """name -> (prepare, run); prepare is not timed."""
    floor = encoding().encode_ordinary
    found: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
        "floor": (lambda: (messages, floor), _floor_run),
    }
    for name in names:
        found[f"{name} encode"] = (lambda name=name: (messages, _cold(name)[0].encoding.encode_ordinary), _floor_run)
        found[f"{name} texts"] = (lambda name=name: (messages, _Counted(_cold(name)[0].count)), _floor_run)
        found[f"{name} chat"] = (lambda name=name: _cold(name)[1], lambda counter: counter(messages))
    return found


class _Counted:
    """``encode``-shaped access to a ``count``: ``len(_Counted(count)(text)) == count(text)``, no list made."""

    __slots__ = ("count",)

    def __init__(self, count: Callable[[str], int]) -> None:
        self.count = count

    def __call__(self, text: str) -> range:
        return range(self.count(text))


def measure(messages: list[dict], names: list[str], runs: int) -> dict[str, list[float]]:
    """Seconds of every contender, repetition ``i`` at index ``i`` of each list."""
    return timed(_contenders(messages, names), runs)


def ratio(times: dict[str, list[float]], name: str) -> float:
    """The median over repetitions of ``name``'s time over the floor's in the same repetition."""
    return statistics.median(a / b for a, b in zip(times[name], times["floor"]))


def rows(times: dict[str, list[float]], names: list[str]) -> list[dict[str, Any]]:
    """One row per profile: both ratios, and whether the chat count meets the target (open-weight profiles)."""
    found = []
    for name in names:
        chat = ratio(times, f"{name} chat")
        found.append({"profile": name, "encode": ratio(times, f"{name} encode"), "texts": ratio(times, f"{name} texts"),
                      "chat": chat,
                      "chat_ms": statistics.median(times[f"{name} chat"]) * 1000,
                      "met": None if name in OPENAI or name in approximate_profiles() else chat <= TARGET})
    return found


def markdown(found: list[dict[str, Any]], times: dict[str, list[float]], info: dict[str, Any]) -> str:
    lines = [f"# bench.profiles: {info['messages']:,} messages, {info['runs']} runs", "",
             f"Full count of the chat with each exact profile, as a ratio to tiktoken's o200k floor "
             f"({statistics.median(times['floor']) * 1000:.0f} ms median) in the same run. Load average at the "
             f"start {info['load_start']}, at the end {info['load_end']} (2 cores).", "",
             f"| profile | encode (the vocabulary alone) x floor | texts (cold tokenizer) x floor | "
             f"chat (cold counter, template) x floor | chat ms | chat <= {TARGET}x? |", "|---|--:|--:|--:|--:|:-:|"]
    for row in found:
        met = {True: "yes", False: "**no**", None: "—"}[row["met"]]
        lines.append(f"| {row['profile']} | {row['encode']:.2f} | {row['texts']:.2f} | {row['chat']:.2f} | "
                     f"{row['chat_ms']:.0f} | {met} |")
    return "\n".join(lines) + "\n"


def _load() -> str:
    return " / ".join(f"{value:.1f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    """Run, print the table, save ``bench/results/profiles.{md,json}``."""
    parser = argparse.ArgumentParser(prog="python -m bench.profiles", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", action="append", default=[], help="profiles whose name contains this (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where profiles.md and profiles.json go")
    parser.add_argument("--approximate", action="store_true",
                        help="also the approximate profiles (Claude, Gemini): their upper bound's count, no target")
    args = parser.parse_args(argv)
    messages = synthetic(args.messages, 6).messages
    names = exact_profiles() + (approximate_profiles() if args.approximate else [])
    names = [name for name in names if not args.only or any(part in name for part in args.only)]
    for name in names:  # load every vocabulary before timing anything
        _cold(name)[1](messages[:10])
    info = {"messages": args.messages, "runs": args.runs, "load_start": _load()}
    print(f"bench.profiles: {args.messages:,} messages, {', '.join(names)}", file=sys.stderr)
    times = measure(messages, names, args.runs)
    info["load_end"] = _load()
    found = rows(times, names)
    text = markdown(found, times, info)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "profiles.md").write_text(text)
    (args.out / "profiles.json").write_text(json.dumps({"info": info, "times": times, "rows": found}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
