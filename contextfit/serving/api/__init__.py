"""The HTTP API (``/api/v2``, FastAPI): ``create_app(store, providers)``.

>>> from contextfit.serving.store import open_store
>>> app = create_app(open_store(":memory:"))
>>> sorted(path for path in app.openapi()["paths"] if path.startswith("/api/v2/chats/{chat_id}/"))
['/api/v2/chats/{chat_id}/cancel', '/api/v2/chats/{chat_id}/context-audit', '/api/v2/chats/{chat_id}/generate', '/api/v2/chats/{chat_id}/messages']
"""

from .app import STATUS, create_app

__all__ = ["STATUS", "create_app"]
