"""Every environment variable contextfit reads, in one place.

Nothing else in the package touches ``os.environ``: modules ask :func:`read`
for one variable, or take :func:`snapshot` as the default of an ``env``
mapping they accept (the providers do, so tests pass their own). docs/operations.md's
"Environment variables" table lists exactly :data:`VARIABLES` (a test keeps
them equal).

>>> read("CONTEXTFIT_DB", {"CONTEXTFIT_DB": "chats.db"})
'chats.db'
>>> read("CONTEXTFIT_DB", {"CONTEXTFIT_DB": ""}) is None
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: name → what it sets (docs/operations.md's table says the same, with defaults).
VARIABLES: dict[str, str] = {
    "CONTEXTFIT_DB": "the database: a SQLite path or a SQLAlchemy URL",
    "CONTEXTFIT_DB_LOCK_TIMEOUT": "seconds a statement waits for another connection's lock",
    "CONTEXTFIT_LEASE_SECONDS": "seconds a generation in progress stays its process's without a renewal",
    "CONTEXTFIT_CANCEL_POLL_SECONDS": "seconds between two reads of a running generation's cancel flag",
    "CONTEXTFIT_SPOOL_DIR": "the folder where outcomes the database refused wait until it takes them",
    "CONTEXTFIT_MODELS": "a TOML file of extra or overriding models",
    "CONTEXTFIT_FAST_COUNT": "`0`/`off`/`false`/`no` keeps every count on tiktoken (no fast engine)",
    "CONTEXTFIT_API_KEY": "the bearer key `contextfit serve` requires",
    "CONTEXTFIT_PROVIDER_MAX_REPLY_BYTES": "the largest provider reply read",
    "OPENAI_API_KEY": "the `openai` provider's key",
    "CONTEXTFIT_OPENAI_BASE_URL": "the `openai` provider's base URL (first choice)",
    "OPENAI_BASE_URL": "the `openai` provider's base URL",
    "CONTEXTFIT_OPENAI_MODEL": "the `openai` provider's default model",
    "ANTHROPIC_API_KEY": "the `anthropic` provider's key",
    "ANTHROPIC_BASE_URL": "the `anthropic` provider's base URL",
    "CONTEXTFIT_ANTHROPIC_MODEL": "the `anthropic` provider's default model",
    "CONTEXTFIT_NATIVE_COUNT": "`1`/`on`/`true`/`yes`: ask the provider's token-count endpoint for each generation's request",
    "GEMINI_API_KEY": "the key for Gemini's token-count endpoint (native counting)",
    "CONTEXTFIT_GEMINI_BASE_URL": "the base URL of Gemini's token-count endpoint",
}


def snapshot() -> Mapping[str, str]:
    """The process environment, for callers that take an ``env`` mapping."""
    return os.environ


def read(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The value of one of :data:`VARIABLES` (``None`` when unset or empty)."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not one of contextfit's environment variables; add it to VARIABLES and docs/operations.md.")
    value = (snapshot() if env is None else env).get(name)
    return value or None
