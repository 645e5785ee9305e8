"""The server's limits (:class:`ServerLimits`), and the request body size limit as plain ASGI middleware.

The body is read up to the limit before the app sees it (``Content-Length``
is checked first), so an oversized request is answered 413 with
``REQUEST_TOO_LARGE`` and never parsed. After the body, ``receive`` passes
through, so the app still learns when the client disconnects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InvalidSettings, RequestTooLarge
from ...inputs.lorebook.matching import RegexLimits
from .guard import send_error

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """Every limit of ``contextfit serve`` (docs/operations.md, "Limits", lists them).

    The app uses the body size, the worker pool (``workers`` threads for
    fitting, tokenizing and importing, ``queue`` more requests waiting, each
    answered 503 ``REQUEST_TIMEOUT`` after ``request_seconds``) and the regex
    budgets; the server (:mod:`contextfit.serving.api.serving`) uses the connection
    timeouts and the connection cap.

    >>> ServerLimits().workers, ServerLimits().queue, ServerLimits().max_connections
    (4, 16, 200)
    """

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    workers: int = 4
    queue: int = 16
    request_seconds: float = 60.0
    retry_after: int = 2
    regex: RegexLimits = field(default_factory=RegexLimits)
    header_seconds: float = 10.0
    body_seconds: float = 60.0
    keep_alive_seconds: int = 5
    max_connections: int = 200

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "workers", "max_connections", "keep_alive_seconds"):
            if getattr(self, name) < 1:
                raise InvalidSettings(f"The server limit {name} must be at least 1, got {getattr(self, name)}.")
        for name in ("queue", "retry_after"):
            if getattr(self, name) < 0:
                raise InvalidSettings(f"The server limit {name} cannot be negative, got {getattr(self, name)}.")
        for name in ("request_seconds", "header_seconds", "body_seconds"):
            if not getattr(self, name) > 0:
                raise InvalidSettings(f"The server limit {name} must be more than 0 seconds, got {getattr(self, name)}.")
        if not (self.regex.key_seconds > 0 and self.regex.request_seconds > 0):
            raise InvalidSettings("The regex time limits must be more than 0 seconds.")


class BodySizeLimit:
    """Wraps an ASGI app; ``max_bytes`` is the largest body accepted."""

    def __init__(self, app, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before sending its body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send) -> None:
        await send_error(send, 413, RequestTooLarge(self.max_bytes))
