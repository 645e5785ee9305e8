"""One opened :class:`~contextfit.serving.store.Store` per database for this process.

The dashboard and :func:`~contextfit.serving.generation.send_conversation` share
these stores across reruns and sessions; a store is safe to use from many threads.
"""

from __future__ import annotations

import functools
import os

from .database import database_url
from .store import Store, open_store


@functools.lru_cache(maxsize=8)
def _shared(url: str) -> Store:
    return open_store(url)


def shared_store(database: str | os.PathLike | None = None) -> Store:
    """One opened :class:`Store` per database for this process (for the dashboard)."""
    return _shared(database_url(database))
