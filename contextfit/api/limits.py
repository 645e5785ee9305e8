"""Request body size limit, as plain ASGI middleware.

The body is read up to the limit before the app sees it (``Content-Length``
is checked first), so an oversized request is answered 413 with
``REQUEST_TOO_LARGE`` and never parsed. After the body, ``receive`` passes
through, so the app still learns when the client disconnects.
"""

from __future__ import annotations

import json

from ..errors import RequestTooLarge

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


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
        body = json.dumps({"error": RequestTooLarge(self.max_bytes).to_dict()}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
