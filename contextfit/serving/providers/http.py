"""One JSON POST to a provider, with timeouts, retries and normalized errors.

Retries: 429 and 5xx answers, refused or dropped connections; each wait
doubles (``backoff``, ``2 * backoff``, ...), honours a numeric
``Retry-After`` and is capped at ``max_backoff``. A read timeout is not
retried. Every failure becomes a :class:`~contextfit.errors.ProviderError`
with a normalized code; of an error answer only the first 64 KiB are read,
to tell a context overflow from another bad request, and never kept.

A success answer is read as a stream and given up as soon as it passes
``max_reply_bytes`` (8 MiB by default, ``$CONTEXTFIT_PROVIDER_MAX_REPLY_BYTES``),
far more than a model writes in one reply: the reply is stored in the chat,
and every later generation of the chat tokenizes it again.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from ... import environment
from ...caches import register
from ...errors import (
    InvalidSettings,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderContextOverflow,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
)

_OVERFLOW = re.compile(
    r"context_length_exceeded|context length|context window|context size|maximum context|exceed_context"
    r"|prompt is too long|prompt too long|too many tokens|maximum number of tokens",
    re.IGNORECASE,
)
_UNAVAILABLE = {502, 503, 504, 529}
_SCANNED_BODY_BYTES = 65536
#: The default cap on a provider's answer, in bytes (decoded).
MAX_REPLY_BYTES = 8 * 2**20
#: Environment variable overriding :data:`MAX_REPLY_BYTES` for the configured providers.
MAX_REPLY_VAR = "CONTEXTFIT_PROVIDER_MAX_REPLY_BYTES"


@dataclass(frozen=True, slots=True)
class HttpPolicy:
    """Timeouts (seconds), retries and the answer's size cap (bytes) for provider calls."""

    timeout: float = 120.0
    connect_timeout: float = 10.0
    retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_reply_bytes: int = MAX_REPLY_BYTES

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HttpPolicy:
        """The default policy, with ``$CONTEXTFIT_PROVIDER_MAX_REPLY_BYTES`` when set.

        >>> HttpPolicy.from_env({MAX_REPLY_VAR: "1048576"}).max_reply_bytes
        1048576
        >>> HttpPolicy.from_env({MAX_REPLY_VAR: "lots"})
        Traceback (most recent call last):
        ...
        contextfit.errors.InvalidSettings: $CONTEXTFIT_PROVIDER_MAX_REPLY_BYTES must be a whole number ... got 'lots'.
        """
        text = env.get(MAX_REPLY_VAR)
        if not text:
            return cls()
        if not text.strip().isdigit() or int(text) < 1:
            raise InvalidSettings(f"${MAX_REPLY_VAR} must be a whole number of bytes above 0, got {text!r}.")
        return cls(max_reply_bytes=int(text))

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1``.

        >>> HttpPolicy(backoff=0.5, max_backoff=8).delay(3, retry_after="30")
        8.0
        >>> HttpPolicy(backoff=0).delay(2)
        0.0
        """
        if retry_after is not None and retry_after.strip().isdigit():
            return float(min(float(retry_after.strip()), self.max_backoff))
        wait = self.backoff * (2**attempt)
        return float(min(wait + random.uniform(0, wait / 4), self.max_backoff))


@functools.cache
def _ssl_context():
    # Building the CA bundle costs ~0.2 s; one context serves every call.
    return httpx.create_ssl_context()


register("providers.tls_context", _ssl_context)


def error_for_status(provider: str, status: int, body: str = "") -> ProviderError:
    """The normalized error for an HTTP error answer (``body`` is only scanned).

    >>> error_for_status("openai", 400, '{"error": {"code": "context_length_exceeded"}}').code
    'PROVIDER_CONTEXT_OVERFLOW'
    >>> [error_for_status("x", s).code for s in (401, 404, 429, 500, 503)]
    ['PROVIDER_AUTH', 'PROVIDER_BAD_REQUEST', 'PROVIDER_RATE_LIMITED', 'PROVIDER_ERROR', 'PROVIDER_UNAVAILABLE']
    """
    if status in (401, 403):
        return ProviderAuthError(provider, status=status)
    if status == 429:
        return ProviderRateLimited(provider, status=status)
    if status == 408:
        return ProviderTimeout(provider, status=status)
    if status == 413 or (status in (400, 422) and _OVERFLOW.search(body[:_SCANNED_BODY_BYTES])):
        return ProviderContextOverflow(provider, status=status)
    if status in _UNAVAILABLE:
        return ProviderUnavailable(provider, status=status)
    if 400 <= status < 500:
        return ProviderBadRequest(provider, status=status)
    return ProviderError(provider, status=status)


def _retryable(error: ProviderError) -> bool:
    return isinstance(error, (ProviderRateLimited, ProviderUnavailable)) or (
        type(error) is ProviderError and (error.status or 0) >= 500
    )


async def post_json(
    provider: str, url: str, body: dict[str, Any], headers: dict[str, str], policy: HttpPolicy
) -> dict[str, Any]:
    """POST ``body`` as JSON and return the JSON answer, retrying per ``policy``.

    The request (a whole prompt) is encoded and the answer (up to the reply cap) decoded
    in a worker thread: megabytes of JSON never hold up the event loop."""
    timeout = httpx.Timeout(policy.timeout, connect=min(policy.connect_timeout, policy.timeout))
    payload = await anyio.to_thread.run_sync(_encode, body)
    headers = {**headers, "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, verify=_ssl_context()) as client:
        for attempt in range(policy.retries + 1):
            retry_after = None
            try:
                async with client.stream("POST", url, content=payload, headers=headers) as response:
                    if response.is_success:
                        content = await _read_reply(provider, response, policy)
                        return await anyio.to_thread.run_sync(_json, provider, response.status_code, content)
                    error = error_for_status(provider, response.status_code, await _read_prefix(response))
                    retry_after = response.headers.get("retry-after")
            except httpx.ConnectTimeout:
                error: ProviderError = ProviderUnavailable(provider, detail="the provider could not be reached in time")
            except httpx.TimeoutException:
                raise ProviderTimeout(provider) from None
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
                error = ProviderUnavailable(provider, detail="the connection to the provider failed or was dropped")
            except httpx.HTTPError:
                raise ProviderError(provider, detail="the request to the provider failed") from None
            if attempt == policy.retries or not _retryable(error):
                raise error
            await anyio.sleep(policy.delay(attempt, retry_after))
    raise AssertionError("unreachable")  # pragma: no cover


async def _read_reply(provider: str, response: httpx.Response, policy: HttpPolicy) -> bytes:
    """The whole answer, read chunk by chunk and given up once it passes the cap."""
    limit = policy.max_reply_bytes
    too_large = ProviderError(
        provider,
        status=response.status_code,
        detail=f"the provider's answer is larger than the {limit:,}-byte limit, so it was not read "
        f"(raise ${MAX_REPLY_VAR} or HttpPolicy.max_reply_bytes if such replies are expected)",
    )
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large  # not even started
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise too_large  # leaving the stream closes the connection: the rest is never read
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_prefix(response: httpx.Response) -> str:
    """The first 64 KiB of an error answer (all that is scanned), as text."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= _SCANNED_BODY_BYTES:
            break
    return b"".join(chunks)[:_SCANNED_BODY_BYTES].decode("utf-8", errors="replace")  # the phrases are ASCII


def _encode(body: dict[str, Any]) -> bytes:
    """``body`` as httpx's ``json=`` sends it: compact UTF-8, no NaN."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _json(provider: str, status: int, content: bytes) -> dict[str, Any]:
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ProviderError(provider, status=status, detail="the provider's answer is not a JSON object")
    return data


def malformed(provider: str) -> ProviderError:
    """The error for a success answer that lacks the expected fields."""
    return ProviderError(provider, detail="the provider's answer does not have the expected shape")


class HttpProvider:
    """Shared set-up of the HTTP providers: where to send, which key, which model name.

    Subclasses set ``default_base_url`` and the environment variable names
    that :meth:`from_env` reads, and implement ``complete``.
    """

    name = "http"
    template: str | None = None
    default_base_url = ""
    env_base_url: tuple[str, ...] = ()
    env_api_key = ""
    env_model = ""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        policy: HttpPolicy | None = None,
        name: str | None = None,
    ) -> None:
        self.name = name or type(self).name
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self._api_key = api_key
        self.model = model
        self.policy = policy or HttpPolicy()

    def __repr__(self) -> str:
        key = "set" if self._api_key else None
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, api_key={key})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any):
        """A provider configured from environment variables (see the subclass's docstring)."""
        env = environment.snapshot() if env is None else env
        options.setdefault("policy", HttpPolicy.from_env(env))
        return cls(
            base_url=next((env[name] for name in cls.env_base_url if env.get(name)), None),
            api_key=env.get(cls.env_api_key) or None,
            model=env.get(cls.env_model) or None,
            **options,
        )
