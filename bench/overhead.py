"""The work a fit does beyond tokenizing, measured with the tokenizer out of the way.

On a shared machine two runs of the same tokenization can differ by 30%, so a
ratio like "1.1× the floor" drowns in noise. Here the encoding is replaced by
a memo that hands back the token ids computed once before (a dict lookup per
text), and the floor and each cold contextfit fit are timed again: what is
left is the Python work around tokenizing, which is small and steady. The
floor's real time minus its memo time is the tokenizing itself; adding a
fit's memo time to it gives an estimate of the fit's real time that the
noise of the tokenizer runs does not move.
"""

from __future__ import annotations

import gc
import statistics
from time import perf_counter
from typing import Any

from .contenders import STRATEGIES, fresh_counter
from .oracle import encoding


class MemoEncoding:
    """``encode_ordinary`` from a memo (computed on the first call per text)."""

    def __init__(self) -> None:
        self.memo: dict[str, list[int]] = {}
        self.real = encoding()

    def encode_ordinary(self, text: str) -> list[int]:
        ids = self.memo.get(text)
        if ids is None:
            ids = self.memo[text] = self.real.encode_ordinary(text)
        return ids


def _floor(messages: list[dict], encode: Any) -> int:
    total = 0
    for message in messages:
        content = message.get("content")
        if content.__class__ is str:
            total += len(encode(content))
        calls = message.get("tool_calls")
        if calls:
            for call in calls:
                total += len(encode(call["function"]["name"])) + len(encode(call["function"]["arguments"]))
    return total


def beyond_tokenizing(messages: list[dict], budget: int, runs: int) -> dict[str, float]:
    """Median seconds of the floor and of each cold fit with tokenizing memoized."""
    import contextfit

    memo = MemoEncoding()
    variants = [(strategy, True) for strategy in STRATEGIES] + [("truncate", False)]

    def fit(counter: Any, strategy: str, count_excluded: bool) -> None:
        contextfit.shift_context(messages, counter, budget, strategy=strategy, count_excluded=count_excluded)

    for strategy, count_excluded in variants:  # fill the memo: no real tokenizing below
        fit(fresh_counter(memo), strategy, count_excluded)
    times: dict[str, list[float]] = {"floor (tiktoken)": []}
    for _ in range(runs):
        gc.collect()
        start = perf_counter()
        _floor(messages, memo.encode_ordinary)
        times["floor (tiktoken)"].append(perf_counter() - start)
        for strategy, count_excluded in variants:
            key = f"contextfit {strategy}{'' if count_excluded else ' lazy'} cold"
            counter = fresh_counter(memo)  # also clears the summary caches, as for a cold run
            gc.collect()
            start = perf_counter()
            fit(counter, strategy, count_excluded)
            times.setdefault(key, []).append(perf_counter() - start)
    return {key: statistics.median(values) for key, values in times.items()}
