"""Which process owns a generation, and whether that process has ended.

A generation row names its owner (``host:pid:token``); at start-up the store
finalizes the generations whose owner is certainly gone as ``INTERRUPTED``.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid


@functools.cache
def process_owner() -> str:
    """``host:pid:token`` naming this process as the owner of its generations."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"


def owner_is_gone(owner: str) -> bool:
    """Whether the process that wrote ``owner`` has certainly ended.

    Only processes on this host can be checked; another host's generations
    are left alone. A pid that is running again under a new token (a
    restarted container) counts as gone.
    """
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    mine = process_owner()
    if host != mine.split(":", 1)[0] or not pid_text.isdigit() or os.name == "nt":
        return False
    if owner == mine:
        return False
    if int(pid_text) == os.getpid():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
