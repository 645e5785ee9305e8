"""The API in FastAPI's own shape: module-level endpoints on one router, the store as a dependency."""

from __future__ import annotations

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from contextfit.serving.api import app as api
from contextfit.serving.api import create_app
from contextfit.serving.store import open_store

from support.api import LOCAL

#: SPEC §6's routes (and the two this API adds), with their operation ids.
ROUTES = {
    ("POST", "/api/v2/chats"): "createChat",
    ("GET", "/api/v2/chats"): "listChats",
    ("GET", "/api/v2/chats/{chat_id}"): "getChat",
    ("PATCH", "/api/v2/chats/{chat_id}"): "updateChat",
    ("POST", "/api/v2/chats/{chat_id}/messages"): "appendMessages",
    ("DELETE", "/api/v2/chats/{chat_id}"): "deleteChat",
    ("POST", "/api/v2/chats/{chat_id}/generate"): "generate",
    ("POST", "/api/v2/chats/{chat_id}/cancel"): "cancelGeneration",
    ("GET", "/api/v2/chats/{chat_id}/context-audit"): "getContextAudit",
    ("POST", "/api/v2/context-preview"): "previewContext",
    ("POST", "/api/v2/replay"): "replayConversation",
}


def test_every_endpoint_is_a_module_level_function_on_the_router():
    routes = {(method, route.path): route for route in api.router.routes if isinstance(route, APIRoute)
              for method in route.methods}  # fmt: skip
    assert {key: route.operation_id for key, route in routes.items()} == ROUTES
    for route in routes.values():
        assert getattr(api, route.endpoint.__name__) is route.endpoint  # not a closure made per app


def test_the_openapi_document_lists_the_same_operations():
    document = create_app(open_store(":memory:")).openapi()
    operations = {(method.upper(), path): op["operationId"] for path, item in document["paths"].items()
                  for method, op in item.items()}  # fmt: skip
    assert operations == ROUTES


def test_two_apps_over_one_router_keep_their_own_stores():
    first, second = open_store(":memory:"), open_store(":memory:")
    with TestClient(create_app(first), base_url=LOCAL) as one, TestClient(create_app(second), base_url=LOCAL) as two:
        chat_id = one.post("/api/v2/chats", json={"title": "mine"}).json()["id"]
        assert one.get(f"/api/v2/chats/{chat_id}").json()["title"] == "mine"
        missing = two.get(f"/api/v2/chats/{chat_id}")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "CHAT_NOT_FOUND"
    assert [chat.id for chat in first.list_chats()] == [chat_id] and second.list_chats() == []


def test_the_store_is_a_dependency_a_test_can_replace():
    served, other = open_store(":memory:"), open_store(":memory:")
    chat = other.create_chat(title="elsewhere")
    app = create_app(served)
    app.dependency_overrides[api.app_store] = lambda: other
    with TestClient(app, base_url=LOCAL) as client:
        assert client.get(f"/api/v2/chats/{chat.id}").json()["title"] == "elsewhere"
        preview = client.post("/api/v2/context-preview", json={"chatId": chat.id})
        assert preview.status_code == 200, preview.text
    assert served.list_chats() == []
