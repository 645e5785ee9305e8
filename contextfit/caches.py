"""Every cache contextfit keeps, in one registry, and one function that empties them.

A module that keeps a cache registers it here, next to where it is made
(``register(name, cache)``), so :func:`clear_caches` cannot miss it;
``tests/test_caches.py`` walks the package's source and fails on a cache
(an ``lru_cache``, a module-level ``TextMemo``, weak map or empty dict)
that is neither registered nor named there as something else. Besides the
named caches, every :class:`contextfit.memo.TextMemo` ever made (a
tokenizer's counts, a counter's per-message counts) is tracked weakly and
emptied too, wherever it lives.

This module imports nothing from contextfit: every layer may register here.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["clear_caches", "entries", "register", "registered", "track_memo"]

Cache = TypeVar("Cache")


@dataclass(frozen=True, slots=True)
class _Entry:
    cache: Any
    clear: Callable[[], None]
    size: Callable[[], int]
    vocabulary: bool


_LOCK = threading.Lock()
_NAMED: dict[str, _Entry] = {}
_MEMOS: "weakref.WeakSet[Any]" = weakref.WeakSet()
MEMOS = "text memos"  # the name :func:`entries` reports every tracked TextMemo under


def register(
    name: str,
    cache: Cache,
    *,
    clear: Callable[[], None] | None = None,
    size: Callable[[], int] | None = None,
    vocabulary: bool = False,
) -> Cache:
    """Register ``cache`` under ``name`` and return it.

    ``cache`` is an ``functools.lru_cache`` function (emptied with
    ``cache_clear``) or anything with ``clear()`` and ``len()`` (a dict, a
    weak map, a ``TextMemo``); ``clear`` and ``size`` replace those when the
    owner must do more (reset a byte count, take its lock).
    ``vocabulary=True`` marks a loaded vocabulary (slow to load again, kept
    by ``clear_caches(vocabularies=False)``). Registering a name again (a
    reloaded module) replaces the entry.

    >>> table = register("doctest.table", {})
    >>> table["a"] = 1
    >>> entries()["doctest.table"]
    1
    >>> clear_caches(vocabularies=False)
    >>> entries()["doctest.table"], table
    (0, {})
    >>> _ = _NAMED.pop("doctest.table")
    """
    if hasattr(cache, "cache_clear"):
        clear = clear or cache.cache_clear
        size = size or (lambda: cache.cache_info().currsize)
    elif clear is None or size is None:
        if not (callable(getattr(cache, "clear", None)) and hasattr(cache, "__len__")):
            raise TypeError(f"register({name!r}, ...): give clear= and size= for a {type(cache).__name__}.")
        clear = clear or cache.clear
        size = size or (lambda: len(cache))
    with _LOCK:
        _NAMED[name] = _Entry(cache, clear, size, vocabulary)
    return cache


def track_memo(memo: Any) -> None:
    """Track a ``TextMemo`` (weakly) so that :func:`clear_caches` empties it (memo.py calls it)."""
    with _LOCK:
        _MEMOS.add(memo)


def registered() -> dict[str, Any]:
    """The registered caches by name (the memos tracked weakly are not listed).

    >>> isinstance(registered(), dict)
    True
    """
    with _LOCK:
        return {name: entry.cache for name, entry in _NAMED.items()}


def entries() -> dict[str, int]:
    """How many entries each registered cache holds now, and all tracked memos together.

    >>> entries()[MEMOS] >= 0
    True
    """
    with _LOCK:
        named = list(_NAMED.items())
        memos = list(_MEMOS)
    found = {name: entry.size() for name, entry in named}
    found[MEMOS] = sum(len(memo) for memo in memos)
    return found


def clear_caches(*, vocabularies: bool = True) -> None:
    """Empty every cache contextfit holds: the next fit starts cold.

    That is token counts (of every tokenizer and counter), per-counter
    analyses and summary costs, summary candidates, relevance word bags,
    folded words, compiled lorebook regex keys and blank-run scanners, the
    per-profile tokenizers and counters, the TLS context of the provider
    client and, unless ``vocabularies=False``, the loaded tokenizer
    vocabularies and fast counting engines (reloading one takes 0.1-2 s). Objects you hold keep
    working: a counter or tokenizer you kept starts over with empty caches.
    Not caches, and kept: the model catalog (it holds ``register_model``
    registrations; :func:`contextfit.tokens.models.reload_models` re-reads it), registered
    plugins, the process's owner id and open stores. The dashboard's own
    Streamlit caches are Streamlit's (``st.cache_resource.clear()``).

    >>> import contextfit
    >>> _ = contextfit.token_counter("gpt-4o")([{"role": "user", "content": "Hello"}])
    >>> contextfit.caches.clear_caches()
    >>> sum(entries().values())
    0
    """
    with _LOCK:
        named = [entry for entry in _NAMED.values() if vocabularies or not entry.vocabulary]
        memos = list(_MEMOS)
    for entry in named:
        entry.clear()
    for memo in memos:
        memo.clear()
