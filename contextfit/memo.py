"""Caches keyed by text that stay within a byte budget and never keep a large text alive.

Every cache of something computed from a text (a token count, a summary
candidate, a bag of words) is a :class:`TextMemo`. A text of
:data:`DIGEST_FROM` characters or more is keyed by 16 bytes of its SHA-256
(with the CPU's SHA instructions it hashed 1 MB in 1.2 ms here, BLAKE2b in
3.2 ms), so a cached count does not keep a 6 MB message alive after its
request. A shorter text is its own key: a digest of a 700-character message
costs about 7% of counting it, a dictionary lookup well under 1%; its bytes
count against the budget like everything else. When the bytes accounted pass
``max_bytes``, the oldest entries are dropped until half the budget is free.

The size of an entry is estimated as the key's ``sys.getsizeof``, what the
caller says the value costs, and :data:`ENTRY_OVERHEAD`; ``tests/tokens/test_memo.py``
checks the estimate against ``tracemalloc``.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .caches import track_memo

__all__ = ["DIGEST_FROM", "ENTRY_OVERHEAD", "TextMemo", "digest", "text_key"]

#: Texts at least this long are keyed by their digest rather than themselves.
DIGEST_FROM = 4096

#: Bytes charged per entry besides its key and value: its share of the dict's
#: table (measured: under 100 on CPython 3.11, the table at its fullest) and a
#: margin for the side table of value sizes.
ENTRY_OVERHEAD = 128

Value = TypeVar("Value")
_getsizeof = sys.getsizeof


def digest(text: str) -> bytes:
    """The first 16 bytes of the SHA-256 of ``text`` (lone surrogates included, as they are).

    >>> len(digest("hello")), digest("hello") == digest("hello"), digest("a") == digest("b")
    (16, True, False)
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def text_key(text: str) -> str | bytes:
    """The key a :class:`TextMemo` files ``text`` under: itself when short, else its digest.

    >>> text_key("short"), len(text_key("x" * DIGEST_FROM))
    ('short', 16)
    """
    return text if len(text) < DIGEST_FROM else digest(text)


class TextMemo(Generic[Value]):
    """A map from texts to values (never ``None``) within ``max_bytes``, safe to share between threads.

    ``lookup(key)`` is the dict's own ``get``, for hot paths that computed
    :func:`text_key` themselves.

    >>> memo = TextMemo(max_bytes=4096)
    >>> memo.get("hello") is None
    True
    >>> memo.put("hello", 5)
    5
    >>> memo.get("hello"), memo.get("x" * 10_000) is None
    (5, True)
    >>> memo.put("x" * 10_000, 7), memo.get("x" * 10_000)
    (7, 7)
    >>> memo.nbytes <= memo.max_bytes
    True
    """

    __slots__ = ("__weakref__", "max_bytes", "nbytes", "lookup", "_data", "_extra", "_lock")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._data: dict[Any, Any] = {}
        self._extra: dict[Any, int] = {}  # value bytes of the entries whose value is more than a small int
        self.lookup: Callable[[Any], Any] = self._data.get
        self._lock = threading.Lock()
        track_memo(self)  # contextfit.caches.clear_caches() empties every memo

    def __len__(self) -> int:
        return len(self._data)

    def get(self, text: str) -> Value | None:
        """The value stored for ``text``, or ``None``."""
        return self._data.get(text if len(text) < DIGEST_FROM else digest(text))

    def put(self, text: str, value: Value, value_bytes: int = 0) -> Value:
        """Store ``value`` for ``text`` (``value_bytes``: what the value costs beyond
        a small int); returns ``value``."""
        return self.put_key(text if len(text) < DIGEST_FROM else digest(text), value, value_bytes)

    def put_key(self, key: Any, value: Value, value_bytes: int = 0) -> Value:
        """:meth:`put` under a key the caller computed (see :func:`text_key`)."""
        size = _getsizeof(key) + value_bytes + ENTRY_OVERHEAD
        limit = self.max_bytes
        if size > limit >> 2:
            return value  # one entry may not take a quarter of the budget: not worth keeping
        # No lock on this path (it runs once per text counted): a store of the same
        # key twice, or two threads adding at once, only makes the count err high
        # for a while; the trimming below runs under the lock.
        self._data[key] = value
        if value_bytes:
            self._extra[key] = value_bytes
        nbytes = self.nbytes = self.nbytes + size
        if nbytes > limit:
            self._shrink()
        return value

    def memoize(self, text: str, compute: Callable[[str], Value], value_bytes: Callable[[Value], int] | None = None) -> Value:
        """The value for ``text``, computed (and stored) on a miss."""
        key = text if len(text) < DIGEST_FROM else digest(text)
        value = self._data.get(key)
        if value is not None:
            return value
        value = compute(text)
        return self.put_key(key, value, value_bytes(value) if value_bytes is not None else 0)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data = {}
            self._extra = {}
            self.lookup = self._data.get
            self.nbytes = 0

    def _size(self, key: Any) -> int:
        return sys.getsizeof(key) + ENTRY_OVERHEAD + self._extra.get(key, 0)

    def _shrink(self) -> None:
        # Oldest first (dicts keep insertion order) until half the budget is free.
        with self._lock:
            data, extra = self._data, self._extra
            target = self.max_bytes >> 1
            if self.nbytes <= self.max_bytes:
                return  # another thread trimmed it already
            stale = []
            for key in list(data):
                if self.nbytes <= target:
                    break
                stale.append(key)
                self.nbytes -= self._size(key)
            for key in stale:
                data.pop(key, None)
                extra.pop(key, None)
