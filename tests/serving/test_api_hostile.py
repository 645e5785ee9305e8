"""Hostile requests to every endpoint never get a 5xx.

Two sources: schemathesis generates requests from the OpenAPI document (valid
and invalid), and a hand-written list of bodies that are valid JSON but
hostile — lone surrogates, deep nesting, huge numbers, every settings field
with every wrong type, roles outside SPEC 3.2, malformed parts — is sent to
every operation that takes a body. Every answer under 500 that is an error is
in the JSON error shape. Chats that were accepted must generate without a 5xx
too (settings are checked when stored).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import schemathesis
from support.api import LOCAL
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from support.depth import examples
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from contextfit.serving.api import create_app
from contextfit.serving.api.guard import LOOPBACK_HOSTS
from contextfit.serving.providers import EchoProvider
from contextfit.pipeline.settings import SETTINGS
from contextfit.serving.store import open_store

USER = {"role": "user", "content": "Hello"}
WRONG_VALUES = [-1, 1.5, "x", True, [1], {"a": 1}, 10**30]  # one of each JSON type, and the extremes


def _nested(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


def hostile_bodies() -> Iterator[tuple[str, str]]:
    """``(name, JSON text)``: each is valid JSON (Python's reading of it) and hostile."""
    def dump(value: object) -> str:
        return json.dumps(value)  # ASCII escapes: lone surrogates travel as \\udxxx

    for surrogate in ("\ud800", "\udfff", "a\udc00b"):
        yield "surrogate content", dump({"messages": [{"role": "user", "content": surrogate}]})
        yield "surrogate meta key", dump({"messages": [{**USER, "meta": {surrogate: True}}]})
        yield "surrogate setting", dump({"messages": [USER], "settings": {"persona": surrogate}})
        yield "surrogate lorebook key", dump({"messages": [USER], "lorebook": {"entries": {"0": {"key": [surrogate]}}}})
        yield "surrogate title", dump({"title": surrogate})
    for depth in (50, 300, 3000):
        yield f"nested meta {depth}", '{"messages": [{"role": "user", "content": "x", "meta": ' + _nested(depth) + "}]}"
        yield f"nested lorebook {depth}", '{"messages": [], "lorebook": ' + _nested(depth) + "}"
    yield "nested lists", '{"messages": [{"role": "user", "content": "x", "meta": {"a": ' + "[" * 50_000 + "]" * 50_000 + "}}]}"
    for number in ("1" + "0" * 400, "1e400", "-1e400", "NaN", "-0", "9" * 5000):
        for name in ("contextLimit", "responseReserve", "summaryTokens", "scanDepth", "temperature", "relevanceWindow"):
            yield f"{name}={number[:12]}", '{"messages": [{"role": "user", "content": "x"}], "settings": {"' + name + '": ' + number + "}}"
        yield f"relevance={number[:12]}", (
            '{"messages": [{"role": "user", "content": "x", "meta": {"kind": "memory", "relevance": ' + number + "}},"
            ' {"role": "user", "content": "y"}], "settings": {"contextStrategy": "vector-recall"}}'
        )
    for setting in SETTINGS:
        for value in WRONG_VALUES:
            yield f"{setting.name}={value!r}"[:60], dump({"messages": [USER], "settings": {setting.name: value}})
    for value in WRONG_VALUES:
        yield f"overrides.m0={value!r}"[:60], dump({"messages": [USER], "settings": {"overrides": {"m0": value}}})
        yield f"overrides.m0.pinned={value!r}"[:60], dump({"messages": [USER], "settings": {"overrides": {"m0": {"pinned": value, "relevance": value}}}})
        yield f"meta={value!r}"[:60], dump({"messages": [{**USER, "meta": {"kind": value, "pinned": value, "id": value, "relevance": value, "manualExcluded": value, "required": value}}]})
    for role in ("robot", "", "SYSTEM", "tool", "function", "x" * 64, "developer"):
        yield f"role {role[:10]!r}", dump({"messages": [{"role": role, "content": "hi"}, USER]})
    yield "content parts", dump({"messages": [{"role": "user", "content": [{"type": "image_url"}, {"text": 5}, {}, {"type": "text", "text": None}]}]})
    yield "tool calls", dump({"messages": [
        {"role": "assistant", "content": None, "tool_calls": [{"id": 5}, {}, {"id": "a", "function": "x"}, {"id": "b", "function": {"arguments": {}}}]},
        {"role": "tool", "tool_call_id": "nowhere", "content": [{"type": "tool_result", "tool_use_id": 3}]}, USER]})  # fmt: skip
    yield "anthropic parts", dump({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": {}, "input": 5}]},
                                                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": None, "content": 7}]}]})  # fmt: skip
    yield "card", dump({"messages": [USER], "character": {"spec": "chara_card_v3", "data": {"name": 5, "character_book": {"entries": 7}}}})
    yield "lorebook", dump({"messages": [USER], "lorebook": {"entries": {"0": {"key": [5, None, "/(/"], "keysecondary": {}, "order": "x", "position": 99, "depth": -5, "probability": 1e400}}}})
    yield "memory", dump({"messages": [USER], "memory": [None, 5, {"content": 5}, {"content": "ok", "relevance": "high"}]})
    yield "tools", dump({"messages": [USER], "tools": [5, {"type": "function"}, {"function": {"name": 5, "parameters": []}}]})
    yield "name", dump({"messages": [{**USER, "name": 5}]})
    yield "empty object", "{}"
    for scalar in ("[]", '"text"', "5", "null", "true", "[{}]"):
        yield f"body {scalar}", scalar
    yield "duplicate keys", '{"messages": [], "messages": [{"role": "user", "content": "x"}]}'
    yield "huge string", dump({"messages": [{"role": "user", "content": "word " * 40_000}]})


BODIES = list(hostile_bodies())


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    store = open_store(tmp_path_factory.mktemp("hostile") / "hostile.db")
    yield create_app(store, {"echo": EchoProvider()}, hosts=[*LOOPBACK_HOSTS, "testserver"])
    store.close()


def assert_no_server_error(response, what) -> None:
    assert response.status_code < 500, (what, response.status_code, response.text[:300])
    if response.status_code >= 400:
        content_type = response.headers["content-type"]  # schemathesis keeps every value in a list
        assert content_type in ("application/json", ["application/json"]), what
        assert set(response.json()["error"]) >= {"code", "message"}, what


def test_hand_written_hostile_bodies_to_every_operation(app):
    operations = [(method.upper(), path) for path, item in app.openapi()["paths"].items() for method, op in item.items()
                  if "requestBody" in op]  # fmt: skip
    assert len(operations) == 6  # create, update, append, generate, preview, replay
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        chat_id = client.post("/api/v2/chats", json={"messages": [USER]}).json()["id"]
        for name, text in BODIES:
            for method, path in operations:
                url = path.replace("{chat_id}", chat_id)
                response = client.request(method, url, content=text, headers={"content-type": "application/json"})
                assert_no_server_error(response, (name, method, path))
        for chat in client.get("/api/v2/chats").json()["chats"]:  # whatever was accepted still generates
            assert_no_server_error(client.post(f"/api/v2/chats/{chat['id']}/generate"), chat["id"])


@pytest.mark.parametrize("chat_id", ["x" * 5000, "%ED%A0%80", "..%2F..%2Fetc", "%00", "chat_" + "9" * 40, "%F0%9F%92%A9"])
def test_hostile_chat_ids_on_every_operation(app, chat_id):
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        for path, item in app.openapi()["paths"].items():
            if "{chat_id}" not in path:
                continue
            for method in item:
                response = client.request(method.upper(), path.replace("{chat_id}", chat_id), json=None)
                assert_no_server_error(response, (method, path, chat_id))
                assert response.status_code in (404, 422), (method, path, response.text[:200])


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_schemathesis_requests_to_every_operation(app, mode):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 11
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=examples(10 if mode is GenerationMode.POSITIVE else 8), suppress_health_check=list(HealthCheck), derandomize=True, database=None)
        def no_server_error(case):
            assert_no_server_error(case.call(), (case.method, case.path, case.body))

        try:
            no_server_error()
        except Unsatisfiable:  # nothing invalid to send: no body, and any text is a valid chat id
            assert mode is GenerationMode.NEGATIVE
    # The chats the fuzzer created hold random messages and settings: generating on them must not fail either.
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        for chat in client.get("/api/v2/chats").json()["chats"]:
            assert_no_server_error(client.post(f"/api/v2/chats/{chat['id']}/generate"), chat["id"])


def test_an_unknown_name_of_a_megabyte_is_not_echoed_back(app):
    # An unknown strategy was named whole in its error: a 1 MB name made a 1 MB answer (a model,
    # which the schema holds to 1,000 characters, was named twice). The error names its start
    # and its length.
    huge = "m" * 1_000_000
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        for model, settings, length in (("m" * 1000, {}, "1,000"), ("gpt-4o", {"contextStrategy": huge}, "1,000,000")):
            response = client.post("/api/v2/context-preview", json={"model": model, "messages": [USER],
                                                                    "settings": settings})
            assert_no_server_error(response, length)
            error = response.json()["error"]
            assert error["code"] in ("UNKNOWN_MODEL", "UNKNOWN_STRATEGY") and len(response.content) < 2_000, error["code"]
            assert f"({length} characters)" in error["message"]
        response = client.post("/api/v2/replay", json={"model": "gpt-4o", "messages": [USER], "strategies": [huge]})
        assert_no_server_error(response, "replay")
        assert len(response.content) < 2_000 and "(1,000,000 characters)" in response.json()["error"]["message"]
