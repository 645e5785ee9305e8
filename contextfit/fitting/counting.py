"""Turning a caller's ``count_tokens(messages)`` into per-message counts.

The engine counts each message once and adds the counts, then verifies the
sum with one full call of the caller's own function (SPEC §3.1). Two kinds
of counter are understood:

* contextfit's own counters — exactly the types :class:`~contextfit.tokens.chat_counter.TokenCounter`
  (:func:`contextfit.token_counter`) and :class:`~contextfit.tokens.sent.SentCounter`
  (the pipeline's), recognised by their type, never by their attributes —
  have a ``count_message(message)`` and ``base_tokens`` that are used
  directly. An ``additive`` ``TokenCounter`` and OpenAI-shape ``SentCounter`` guarantee
  ``count_tokens(ms) == base_tokens + sum(count_message(m) for m in ms)``, so
  their sum is the recount; the others (an Anthropic-shape ``SentCounter``,
  an exact open-model chat template) are recounted.
* any other callable — a subclass of those types and an object that merely
  has ``count_message`` and ``base_tokens`` included — is asked about each
  message alone: ``count_tokens([m]) - count_tokens([])``, and the kept
  messages are always recounted with it. Those counts are cached by the
  message's content, so a chat that grows by one message costs one call.

A :class:`CounterState` lives per counter for as long as the counter does; it
also keeps the recent analyses that let a grown chat refit almost for free.
"""

from __future__ import annotations

import inspect
import json
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..caches import register
from ..tokens.chat_counter import TokenCounter
from ..errors import InvalidCounter
from ..memo import TextMemo
from ..tokens.sent import SentCounter

CountTokens = Callable[[Sequence[dict]], int]

#: Bytes the per-message counts of a plain ``count_tokens`` callable may hold
#: (keyed by a digest of the message's JSON once it is long).
COUNTS_BYTES = 8 * 1024 * 1024
#: Bytes the summary-line costs of one counter may hold (strategies/summarize.py).
LINE_COSTS_BYTES = 4 * 1024 * 1024



def _as_count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise InvalidCounter(
            f"count_tokens must return a non-negative number of tokens; for {what} it returned {value!r}."
        )
    return int(value)


def _fingerprint(message: dict) -> str | None:
    """A content key for a message (``None`` when it cannot be serialised)."""
    try:
        return json.dumps(message, sort_keys=True, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return None


class CounterState:
    """What is kept about one counter between fits.

    It holds no reference to the counter itself (it is stored in a weak-keyed
    map), only the content-keyed counts of a plain callable and the recent
    analyses that let a grown chat refit almost for free.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.prefixes: list[Any] = []  # recent analyses (analysis.py), newest first
        self.counts: TextMemo[int] = TextMemo(COUNTS_BYTES)
        self.base_tokens: int | None = None
        # what each summary line adds (strategies/summarize.py)
        self.summary_line_costs: TextMemo[int] = TextMemo(LINE_COSTS_BYTES)


class Counting:
    """Per-message counting on top of a caller's ``count_tokens``, for one fit."""

    __slots__ = ("count_tokens", "state", "additive", "base_tokens", "count_message", "_count_joined")

    def __init__(self, count_tokens: CountTokens, state: CounterState | None = None) -> None:
        if not callable(count_tokens):
            raise InvalidCounter(
                f"count_tokens must be a callable taking a list of messages; got {type(count_tokens).__name__}."
            )
        self.count_tokens = count_tokens
        self.state = state if state is not None else CounterState()
        kind = type(count_tokens)
        if kind is TokenCounter or kind is SentCounter:  # by type: a look-alike is recounted
            self.additive = count_tokens.additive
            self.base_tokens = count_tokens.base_tokens
            self.count_message: Callable[[dict], int] = count_tokens.count_message
            self._count_joined: Callable[[dict, Sequence[str]], int] | None = count_tokens.count_joined
            return
        self._count_joined = None
        self.additive = False
        if self.state.base_tokens is None:
            try:
                self.state.base_tokens = _as_count(count_tokens([]), "an empty list")
            except InvalidCounter:
                raise
            except Exception:
                # Some counters index messages[0]; then each single-message
                # count carries the fixed overhead and the sum over-counts,
                # which is safe: the final recount is exact.
                self.state.base_tokens = 0
        self.base_tokens = self.state.base_tokens
        self.count_message = self._count_one

    def detached(self) -> "Counting":
        """The same counting with caches of its own, for a plugin's view: what
        the plugin does to them never reaches the host's."""
        state = CounterState()
        state.base_tokens = self.base_tokens
        return Counting(self.count_tokens, state)

    def count_joined(self, message: dict, parts: Sequence[str]) -> int:
        """``count_message({**message, "content": "".join(parts)})``: contextfit's own
        counters add the parts' cached counts where that is proven exact
        (``contextfit/tokens/summed_counts.py``); any other counter counts the joined message."""
        if self._count_joined is not None:
            return self._count_joined(message, parts)
        return self.count_message({**message, "content": "".join(parts)})

    def _count_one(self, message: dict) -> int:
        cache = self.state.counts
        key = _fingerprint(message)
        if key is not None:
            hit = cache.get(key)
            if hit is not None:
                return hit
        value = max(_as_count(self.count_tokens([message]), "a single message") - self.base_tokens, 0)
        if key is not None:
            cache.put(key, value)
        return value

    def total(self, messages: Sequence[dict]) -> int:
        """The caller's own count of a whole list (the final recount)."""
        return _as_count(self.count_tokens(list(messages)), "the kept messages")


_states: "weakref.WeakKeyDictionary[Any, dict[Any, CounterState]]" = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def _forget_states() -> None:
    with _states_lock:
        _states.clear()


register("counting.counter_states", _states, clear=_forget_states)


def counting_for(count_tokens: CountTokens) -> Counting:
    """Counting for one fit, sharing state with earlier fits of the same counter.

    Bound methods are new objects on every attribute access, so their state
    is keyed by the object they are bound to and their function.
    """
    if inspect.ismethod(count_tokens):
        owner, key = count_tokens.__self__, count_tokens.__func__
    else:
        owner, key = count_tokens, None
    try:
        with _states_lock:
            per_owner = _states.get(owner)
            if per_owner is None:
                per_owner = _states[owner] = {}
            state = per_owner.get(key)
            if state is None:
                state = per_owner[key] = CounterState()
    except TypeError:
        state = None  # not weak-referenceable or unhashable: no cache across fits
    return Counting(count_tokens, state)
