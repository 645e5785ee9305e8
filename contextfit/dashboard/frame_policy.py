"""Who may show the dashboard inside a frame: nobody but itself.

:class:`FramePolicy` is plain ASGI middleware that adds, to every HTTP answer,
``X-Frame-Options: DENY`` and ``Content-Security-Policy: frame-ancestors 'none'``,
so no other page can frame the dashboard and trick its user into clicking in it
(clickjacking). Streamlit has no server option for response headers; its
documented door for middleware is ``st.App`` (Streamlit ≥ 1.67), which the
checkout's ``app_server.py`` uses to serve ``app.py``. It imports nothing of
Streamlit, so it is tested on its own.

>>> FRAME_HEADERS[0]
(b'x-frame-options', b'DENY')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]

#: The headers every HTTP answer of the dashboard carries.
FRAME_HEADERS = ((b"x-frame-options", b"DENY"), (b"content-security-policy", b"frame-ancestors 'none'"))


class FramePolicy:
    """Adds :data:`FRAME_HEADERS` to every HTTP answer of ``app`` (websockets pass through as they are)."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:  # fmt: skip
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def framed(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in FRAME_HEADERS}
                kept = [(name, value) for name, value in message.get("headers", ()) if name.lower() not in names]
                message["headers"] = [*kept, *FRAME_HEADERS]
            await send(message)

        await self.app(scope, receive, framed)
