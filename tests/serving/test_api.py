"""The /api/v2 endpoints: chats, 404 codes, previews that write nothing, limits, OpenAPI.

Fuzzing (schemathesis and hand-written hostile bodies) is in ``test_api_hostile.py``.
"""

from __future__ import annotations

import json

import pytest
from support.api import LOCAL, snapshot
from support.paths import TEST_DATA
from fastapi.testclient import TestClient

from contextfit.serving.api import create_app
from contextfit.serving.providers import EchoProvider


CHAT = {
    "title": "Support",
    "model": "gpt-4o-mini",
    "settings": {"contextStrategy": "summarize", "contextLimit": 4000, "responseReserve": 500},
    "messages": [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "My router drops wifi.", "meta": {"id": "q1"}},
        {"role": "assistant", "content": "Which model?", "pinned": True},
        {"role": "user", "content": "AX55."},
    ],
}


@pytest.fixture
def client(store):
    with TestClient(create_app(store, {"echo": EchoProvider()}, max_body_bytes=200_000), base_url=LOCAL) as test_client:
        yield test_client


def error(response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"]) and body["error"]["message"]
    return body["error"]["code"]


def test_chat_crud(client):
    created = client.post("/api/v2/chats", json=CHAT)
    assert created.status_code == 201 and set(created.json()) == {"id"}
    chat_id = created.json()["id"]
    chat = client.get(f"/api/v2/chats/{chat_id}").json()
    assert {key: chat[key] for key in CHAT} == CHAT and chat["createdAt"] == chat["updatedAt"]
    more = client.post(f"/api/v2/chats/{chat_id}/messages", json={"messages": [{"role": "user", "content": "Still?"}]})
    appended = more.json()  # the chat's fields, and only what was appended
    assert appended["messages"] == [{"role": "user", "content": "Still?"}]
    assert (appended["appendedFrom"], appended["messageCount"], appended["id"], appended["title"]) == (4, 5, chat_id, "Support")
    assert appended["createdAt"] == chat["createdAt"] and appended["updatedAt"] >= chat["updatedAt"]
    patched = client.patch(
        f"/api/v2/chats/{chat_id}", json={"title": "Router", "settings": {"contextStrategy": "truncate"}}
    )
    assert patched.json()["title"] == "Router" and patched.json()["settings"] == {"contextStrategy": "truncate"}
    assert patched.json()["model"] == "gpt-4o-mini"  # fields not sent are kept
    [summary] = client.get("/api/v2/chats").json()["chats"]
    assert summary["id"] == chat_id and summary["messageCount"] == 5 and summary["audit"] is None
    client.post(f"/api/v2/chats/{chat_id}/generate")
    assert client.get("/api/v2/chats").json()["chats"][0]["audit"]["status"] == "completed"
    assert client.post("/api/v2/chats", json={}).status_code == 201  # everything is optional


def test_unknown_ids_give_the_documented_404_codes(client):
    chat_id = client.post("/api/v2/chats", json={}).json()["id"]
    assert error(client.get(f"/api/v2/chats/{chat_id}/context-audit"), 404) == "AUDIT_NOT_FOUND"
    for method, path in [
        ("get", "/api/v2/chats/nope"),
        ("get", "/api/v2/chats/nope/context-audit"),
        ("delete", "/api/v2/chats/nope"),
        ("post", "/api/v2/chats/nope/generate"),
        ("post", "/api/v2/chats/nope/cancel"),
    ]:
        assert error(getattr(client, method)(path), 404) == "CHAT_NOT_FOUND", path
    assert (
        error(client.post("/api/v2/chats/nope/messages", json={"messages": [{"role": "user"}]}), 404)
        == "CHAT_NOT_FOUND"
    )
    assert error(client.post("/api/v2/context-preview", json={"chatId": "nope"}), 404) == "CHAT_NOT_FOUND"
    assert error(client.get("/api/v2/nothing-here"), 404) == "NOT_FOUND"


def test_delete_cascades(client, store):
    chat_id = client.post("/api/v2/chats", json=CHAT).json()["id"]
    other = client.post("/api/v2/chats", json={"messages": [{"role": "user", "content": "other"}]}).json()["id"]
    client.post(f"/api/v2/chats/{chat_id}/generate")
    assert client.delete(f"/api/v2/chats/{chat_id}").status_code == 204
    rows = snapshot(store)
    assert all(chat_id not in row for table in rows.values() for row in table)
    assert len(rows["messages"]) == 1 and error(client.get(f"/api/v2/chats/{chat_id}"), 404) == "CHAT_NOT_FOUND"
    assert client.get(f"/api/v2/chats/{other}").status_code == 200


def test_preview_runs_the_same_stages_and_writes_nothing(client, store):
    chat_id = client.post("/api/v2/chats", json=CHAT).json()["id"]
    client.post(f"/api/v2/chats/{chat_id}/generate")
    card = json.loads((TEST_DATA / "formats" / "card_v2.json").read_text())
    book = json.loads((TEST_DATA / "formats" / "world_info.json").read_text())
    before = snapshot(store)
    stored = client.post("/api/v2/context-preview", json={"chatId": chat_id})
    inline = client.post(
        "/api/v2/context-preview",
        json={
            "messages": CHAT["messages"],
            "model": "claude-sonnet-4",
            "persona": "I am Ann, a network engineer.",
            "character": card,
            "lorebook": book,
            "memory": ["Ann's router is an AX55.", {"content": "Ann likes short answers.", "relevance": 0.9}],
            "settings": {"contextStrategy": "vector-recall", "contextLimit": 3000, "responseReserve": 200},
        },
    )
    assert snapshot(store) == before  # no message, no audit, no generation row
    assert stored.status_code == 200 and inline.status_code == 200, inline.text
    plan = stored.json()
    assert plan["model"] == "gpt-4o-mini" and plan["strategy"] == "summarize" and plan["contextLimit"] == 4000
    assert plan["blocks"][-1]["reason"] == "within_budget"  # the echo reply stored by the generation
    audit = client.get(f"/api/v2/chats/{chat_id}/context-audit").json()
    assert audit["providerMessages"] == plan["providerMessages"][:-1]  # the same stages, one message later
    kinds = {block["kind"] for block in inline.json()["blocks"]}
    assert {"persona", "character", "memory"} <= kinds and inline.json()["template"] == "anthropic"


def test_the_preview_says_where_facts_land_and_the_effective_context(client):
    filler = " ".join(["word"] * 100)
    messages = [{"role": "system", "content": "The vault code is 7731."},
                *({"role": "user" if i % 2 == 0 else "assistant", "content": filler} for i in range(90)),
                {"role": "user", "content": "And the vault code?"}]
    messages[45] = {"role": "user", "content": f"Ann's courier is Ilse Brandt. {filler}"}
    declared = client.post("/api/v2/context-preview", json={"messages": messages, "settings": {
        "facts": ["7731", "{{user}}'s courier"], "userName": "Ann"}}).json()
    placement = declared["factPlacement"]
    assert placement["rule"] == "declared" and placement["promptTokens"] == declared["promptTokens"]
    # {{user}} is read as the prompt fills it in, as the audit reads it
    assert [(fact["name"], fact["where"]) for fact in placement["facts"]] == [("7731", "start"),
                                                                            ("{{user}}'s courier", "middle")]
    assert declared["effectiveContext"]["tokens"] == 8000 and declared["effectiveContext"]["exceeded"] is True
    assert "EFFECTIVE_CONTEXT_EXCEEDED" in [d["code"] for d in declared["diagnostics"]]
    # none declared: the facts the conversation marks; a model without a published figure: null
    marked = client.post("/api/v2/context-preview", json={"messages": messages[-3:], "model": "claude-sonnet-4"}).json()
    assert marked["factPlacement"]["rule"] == "default-facts" and marked["effectiveContext"] is None
    schema = client.get("/openapi.json").json()["components"]["schemas"]["PromptPlan"]["properties"]
    assert {"factPlacement", "effectiveContext"} <= set(schema)


def test_validation_errors_are_clear_422s(client):
    assert error(client.post("/api/v2/chats", json={"settings": {"contextlimit": 1}}), 422) == "INVALID_REQUEST"
    message = client.post("/api/v2/chats", json={"settings": {"contextlimit": 1}}).json()["error"]["message"]
    assert "Unknown setting 'contextlimit' (did you mean 'contextLimit'?)" in message
    message = client.post("/api/v2/chats", json={"messages": [{"content": "no role"}]}).json()["error"]["message"]
    assert message.startswith("messages.0.role:")
    chat_id = client.post("/api/v2/chats", json={"messages": [{"role": "user", "content": "hi"}]}).json()["id"]
    generate = f"/api/v2/chats/{chat_id}/generate"
    assert error(client.post(generate, json={"provider": "nope"}), 422) == "UNKNOWN_PROVIDER"
    assert error(client.post(generate, json={"model": "gpt-0"}), 422) == "UNKNOWN_MODEL"
    assert error(client.post(generate, json={"settings": {"contextStrategy": "nope"}}), 422) == "UNKNOWN_STRATEGY"
    bad = {"settings": {"contextLimit": 100, "responseReserve": 100}}
    assert error(client.post(generate, json=bad), 422) == "INVALID_SETTINGS"
    assert (
        error(client.post("/api/v2/context-preview", json={"lorebook": {"entries": 5}}), 422) == "INVALID_CONVERSATION"
    )
    assert error(client.post("/api/v2/chats", content=b"{not json", headers={"content-type": "application/json"}), 422)


def test_request_size_is_limited(client):
    huge = {"messages": [{"role": "user", "content": "x" * 250_000}]}
    assert error(client.post("/api/v2/chats", json=huge), 413) == "REQUEST_TOO_LARGE"
    assert client.get("/api/v2/chats").json() == {"chats": []}


def test_openapi_is_complete_enough_for_a_client_generator(client):
    document = client.get("/openapi.json").json()
    operations = [op for path in document["paths"].values() for op in path.values()]
    assert len(operations) == 11
    ids = [op["operationId"] for op in operations]
    assert len(set(ids)) == len(ids) and "previewContext" in ids and "replayConversation" in ids and "getContextAudit" in ids
    for op in operations:
        success = next(code for code in op["responses"] if code.startswith("2"))
        if success != "204":
            assert "$ref" in json.dumps(op["responses"][success]), op["operationId"]
        for code, response in op["responses"].items():
            if code >= "400":
                assert response["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorResponse"
                }
    schemas = document["components"]["schemas"]
    refs = {ref.rsplit("/", 1)[1] for ref in _refs(document)}
    assert refs <= set(schemas)
    audit = schemas["ContextAudit"]["properties"]
    for key in ("generationId", "chatId", "provider", "model", "status", "blocks", "contextLimit", "responseReserve",
                "promptTokens", "tokenizer", "providerMessages", "interceptorDiagnostics", "errorCode", "createdAt",
                "finishedAt"):  # fmt: skip
        assert key in audit
    assert set(schemas["Settings"]["properties"]) >= {"contextStrategy", "contextLimit", "responseReserve"}


def _refs(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


@pytest.mark.parametrize("role", ["wizard", "System", "model", ""])
def test_roles_outside_the_spec_are_refused_everywhere(client, store, role):
    bad = [{"role": role, "content": "abracadabra"}]
    assert error(client.post("/api/v2/chats", json={"messages": bad}), 422) == "INVALID_REQUEST"
    assert error(client.post("/api/v2/context-preview", json={"messages": bad}), 422) == "INVALID_REQUEST"
    chat_id = client.post("/api/v2/chats", json={"messages": [{"role": "user", "content": "hi"}]}).json()["id"]
    assert error(client.post(f"/api/v2/chats/{chat_id}/messages", json={"messages": bad}), 422) == "INVALID_REQUEST"
    assert [m["role"] for m in client.get(f"/api/v2/chats/{chat_id}").json()["messages"]] == ["user"]
    for role in ("system", "developer", "user", "assistant", "tool", "function"):
        message = {"role": role, "content": "ok"} if role not in ("tool", "function") else {"role": role, "content": "ok", "tool_call_id": "c"}
        assert client.post(f"/api/v2/chats/{chat_id}/messages", json={"messages": [message]}).status_code == 200
