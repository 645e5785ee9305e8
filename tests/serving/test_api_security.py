"""Who the API answers and how much one request may take: hosts, origins, API keys,
lone surrogates, settings checked when stored, JSON 500s, offline docs, and a busy
request that never blocks the others."""

from __future__ import annotations

import json
import re
import threading

import pytest
from support.api import LOCAL
from fastapi.testclient import TestClient

import contextfit.serving.generation
import contextfit.serving.sessions
from contextfit.serving.api import create_app
from contextfit.serving.api.limits import ServerLimits
from contextfit.inputs.lorebook.matching import RegexKey, RegexLimits
from contextfit.serving.providers import EchoProvider
from contextfit.serving.sessions import ChatSessions


HELLO = {"messages": [{"role": "user", "content": "Hello"}]}
SLOW_TEXT = "a" * 40 + "b"
SLOW_PREVIEW = {
    "messages": [{"role": "user", "content": SLOW_TEXT}],
    "lorebook": {"entries": {"0": {"uid": 0, "key": ["/(a|a)+$/"], "content": "Never woken."}}},
}


def client_for(store, **options) -> TestClient:
    return TestClient(create_app(store, {"echo": EchoProvider()}, **options), base_url=LOCAL)


@pytest.fixture
def client(store):
    with client_for(store) as test_client:
        yield test_client


def error(response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and body["error"]["message"]
    return body["error"]["code"]


def raw_post(client, url: str, body: object, **headers: str):
    """POST JSON as written by ``json.dumps`` (which keeps ``\\ud800`` as an escape; httpx cannot encode it)."""
    return client.post(url, content=json.dumps(body), headers={"content-type": "application/json", **headers})


# --- hosts, origins and keys ---


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.nip.io", "localhost.evil.example"])
def test_a_rebound_host_name_is_refused_before_anything_is_read(client, host):
    assert error(client.get("/api/v2/chats", headers={"host": host}), 400) == "HOST_NOT_ALLOWED"
    assert error(raw_post(client, "/api/v2/chats", HELLO, host=host), 400) == "HOST_NOT_ALLOWED"
    assert error(client.get("/docs", headers={"host": host}), 400) == "HOST_NOT_ALLOWED"
    assert client.get("/api/v2/chats").json() == {"chats": []}


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8000", "localhost:8000", "LOCALHOST", "[::1]:8000", "[::1]"])
def test_the_loopback_names_are_answered(client, host):
    assert client.get("/api/v2/chats", headers={"host": host}).status_code == 200


MALFORMED_HOSTS = [
    # ports that are not 1-65535
    "localhost:", "localhost:abc", "localhost:99999", "localhost:0", "localhost:-1", "localhost:+80", "localhost:80:80",
    "[::1]:", "[::1]:abc", "[::1]:99999",
    # userinfo, or anything after the name or the port
    "user@localhost", "localhost@evil.example", "localhost:80@evil.example", "127.0.0.1:8000@evil.example",
    "[::1]:8000@evil.example", "[::1]junk", "localhost/evil", "localhost?x", "localhost#x", "localhost%00",
    # IPv6 written without its brackets, half-bracketed, with a zone, or mapped from another address
    "::1", "[::1", "::1]", "[fe80::1%25lo]", "[::ffff:127.0.0.1]",
    # trailing dots, other spellings of 127.0.0.1, blanks, nothing
    "localhost.", "127.0.0.1.", "127.1", "0x7f.0.0.1", "local host", "",
]


@pytest.mark.parametrize("host", MALFORMED_HOSTS)
def test_a_malformed_host_is_refused(client, host):
    response = send_raw(client.app, [(b"host", host.encode("latin-1"))])
    assert response[0] == 400 and b"HOST_NOT_ALLOWED" in response[1], host


def test_two_host_headers_are_refused(client):
    assert send_raw(client.app, [(b"host", b"127.0.0.1"), (b"host", b"evil.example")])[0] == 400
    assert send_raw(client.app, [(b"host", b"[0:0:0:0:0:0:0:1]:8000")])[0] == 200  # ::1, spelled in full


def send_raw(app, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """One GET /api/v2/chats through the ASGI app with exactly these headers (no client library rewrites them)."""
    import anyio

    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/api/v2/chats", "raw_path": b"/api/v2/chats", "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}  # fmt: skip
    anyio.run(app, scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_allowed_hosts_are_the_ones_given(store):
    with client_for(store, hosts=["127.0.0.1", "chat.example.org"]) as client:
        assert client.get("/api/v2/chats", headers={"host": "chat.example.org:443"}).status_code == 200
        assert error(client.get("/api/v2/chats", headers={"host": "localhost"}), 400) == "HOST_NOT_ALLOWED"


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},
        {"origin": "null"},
        {"origin": "http://127.0.0.1:3000"},  # another local origin is another site's page too
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"sec-fetch-site": "cross-site", "origin": "http://127.0.0.1"},
    ],
)
def test_state_changing_requests_from_another_site_are_refused_even_without_a_body(client, store, headers):
    chat_id = client.post("/api/v2/chats", json=HELLO).json()["id"]
    for method, path in [("POST", f"/api/v2/chats/{chat_id}/generate"), ("POST", f"/api/v2/chats/{chat_id}/cancel"),
                         ("DELETE", f"/api/v2/chats/{chat_id}"), ("PATCH", f"/api/v2/chats/{chat_id}"),
                         ("POST", "/api/v2/chats")]:  # fmt: skip
        assert error(client.request(method, path, headers=headers), 403) == "CROSS_SITE_REQUEST", (method, path)
    assert len(store.get_chat(chat_id).messages) == 1 and store.pending_generations() == []


def test_same_origin_pages_and_scripts_without_an_origin_are_answered(client):
    chat_id = client.post("/api/v2/chats", json=HELLO).json()["id"]
    same = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
    assert client.post(f"/api/v2/chats/{chat_id}/generate", headers=same).status_code == 200
    assert client.post(f"/api/v2/chats/{chat_id}/cancel").status_code == 200  # curl, scripts: no Origin
    assert client.get("/api/v2/chats", headers={"sec-fetch-site": "cross-site"}).status_code == 200  # reading: CORS


def test_no_cors_and_no_text_plain_bodies(client):
    preflight = client.options(
        "/api/v2/chats",
        headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
    )
    assert not any(name.lower().startswith("access-control-") for name in preflight.headers)
    form = client.post("/api/v2/chats", content=json.dumps(HELLO), headers={"content-type": "text/plain"})
    assert error(form, 422) == "INVALID_REQUEST" and client.get("/api/v2/chats").json() == {"chats": []}


def test_an_api_key_is_needed_on_every_request_but_the_docs(store):
    with client_for(store, api_key="s3cret-key") as client:
        refused = client.get("/api/v2/chats")
        assert error(refused, 401) == "UNAUTHORIZED" and refused.headers["www-authenticate"] == "Bearer"
        assert error(client.get("/api/v2/chats", headers={"authorization": "Bearer wrong"}), 401) == "UNAUTHORIZED"
        assert error(client.get("/api/v2/chats", headers={"x-api-key": "s3cret-key "}), 401) == "UNAUTHORIZED"
        assert error(raw_post(client, "/api/v2/chats", HELLO), 401) == "UNAUTHORIZED"
        assert client.get("/api/v2/chats", headers={"authorization": "Bearer s3cret-key"}).status_code == 200
        assert client.get("/api/v2/chats", headers={"x-api-key": "s3cret-key"}).status_code == 200
        assert client.get("/openapi.json").status_code == 200 and client.get("/docs").status_code == 200
        assert error(client.get("/api/v2/chats", headers={"host": "evil.example", "x-api-key": "s3cret-key"}), 400)


# --- bodies that are valid JSON but not text ---


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/v2/chats", {"messages": [{"role": "user", "content": "hi \ud800"}]}, "$.messages[0].content"),
        ("/api/v2/chats", {"messages": [{"role": "user", "content": "hi", "meta": {"\udc00": 1}}]}, "$.messages[0].meta"),
        ("/api/v2/chats", {"title": "\ud83d", "messages": []}, "$.title"),
        ("/api/v2/chats", {"settings": {"persona": "x\udfff"}}, "$.settings.persona"),
        ("/api/v2/context-preview", {"messages": [{"role": "user", "content": [{"type": "text", "text": "\ud800"}]}]},
         "$.messages[0].content[0].text"),
        ("/api/v2/context-preview", {"messages": [], "lorebook": {"entries": {"0": {"key": ["\ud800"]}}}},
         '$.lorebook.entries["0"].key[0]'),
        ("/api/v2/context-preview", {"messages": [{"role": "user", "content": "x"}], "memory": ["\ud800"]}, "$.memory[0]"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_is_a_422_naming_its_field(client, store, url, body, field):
    response = raw_post(client, url, body)
    assert error(response, 422) == "INVALID_REQUEST"
    assert response.json()["error"]["message"].startswith(field)
    assert client.get("/api/v2/chats").json() == {"chats": []}


def test_a_lone_surrogate_in_appended_messages_and_generate_settings(client):
    chat_id = client.post("/api/v2/chats", json=HELLO).json()["id"]
    bad = {"messages": [{"role": "user", "content": "\ud800"}]}
    assert error(raw_post(client, f"/api/v2/chats/{chat_id}/messages", bad), 422) == "INVALID_REQUEST"
    bad = {"settings": {"userName": "\ud800"}}
    assert error(raw_post(client, f"/api/v2/chats/{chat_id}/generate", bad), 422) == "INVALID_REQUEST"
    assert error(client.patch(f"/api/v2/chats/{chat_id}", content=json.dumps({"title": "\udc00"})), 422)
    assert [m["content"] for m in client.get(f"/api/v2/chats/{chat_id}").json()["messages"]] == ["Hello"]


# --- settings are checked when stored, with generation's own rules ---


@pytest.mark.parametrize(
    "settings",
    [
        {"overrides": {"m0": 5}},
        {"overrides": {"m0": {"pinned": "yes"}}},
        {"overrides": {"m0": {"relevance": 7}}},
        {"overrides": {"m0": {"colour": "red"}}},
        {"contextStrategy": "no-such-strategy"},
        {"contextLimit": 100, "responseReserve": 100},
        {"template": "xml"},
        {"lorebook": {"entries": 5}},
        {"character": {"spec": "chara_card_v2", "data": 3}},
        {"memory": [5]},
    ],
)
def test_settings_that_would_break_every_generation_are_refused_when_stored(client, store, settings):
    created = client.post("/api/v2/chats", json={**HELLO, "settings": settings})
    assert created.status_code == 422, created.text
    assert client.get("/api/v2/chats").json() == {"chats": []}
    chat_id = client.post("/api/v2/chats", json=HELLO).json()["id"]
    assert client.patch(f"/api/v2/chats/{chat_id}", json={"settings": settings}).status_code == 422
    assert store.get_chat(chat_id).settings == {}


def test_a_model_change_is_checked_against_the_stored_settings(client):
    chat_id = client.post("/api/v2/chats", json={**HELLO, "settings": {"contextLimit": 9000, "responseReserve": 500}}).json()["id"]
    assert error(client.patch(f"/api/v2/chats/{chat_id}", json={"model": "gpt-0"}), 422) == "UNKNOWN_MODEL"
    assert error(client.post("/api/v2/chats", json={**HELLO, "model": "gpt-0"}), 422) == "UNKNOWN_MODEL"
    assert client.patch(f"/api/v2/chats/{chat_id}", json={"model": "gpt-4o-mini"}).json()["model"] == "gpt-4o-mini"


def test_a_chat_stored_before_the_check_gets_a_422_not_a_500(client, store):
    chat_id = store.create_chat(settings={"overrides": {"m0": 5}}, messages=[{"role": "user", "content": "Hi"}]).id
    assert error(client.post(f"/api/v2/chats/{chat_id}/generate"), 422) == "INVALID_SETTINGS"
    fixed = {"settings": {"overrides": {}}}  # a request's own settings replace the broken one
    assert client.post(f"/api/v2/chats/{chat_id}/generate", json=fixed).status_code == 200


# --- every 500 is JSON ---


class FakePanic(BaseException):
    """Like ``pyo3_runtime.PanicException``: not an ``Exception``."""


def test_a_failure_that_is_not_an_exception_is_still_a_json_500(store, monkeypatch):
    def panic(*args, **kwargs):
        raise FakePanic("called `Result::unwrap()` on an `Err` value: StackOverflow")

    monkeypatch.setattr(contextfit.serving.generation, "plan_prompt", panic)
    monkeypatch.setattr(ChatSessions, "plan", panic)  # a stored chat's planning
    app = create_app(store, {"echo": EchoProvider()})
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        assert error(client.post("/api/v2/context-preview", json=HELLO), 500) == "INTERNAL_ERROR"
        chat_id = store.create_chat(messages=[{"role": "user", "content": "Hi"}]).id
        assert error(client.post(f"/api/v2/chats/{chat_id}/generate"), 500) == "INTERNAL_ERROR"
        monkeypatch.setattr(store, "get_chat", panic)
        assert error(client.get(f"/api/v2/chats/{chat_id}"), 500) == "INTERNAL_ERROR"  # a plain (sync) endpoint
        message = client.post("/api/v2/context-preview", json=HELLO).json()["error"]["message"]
        assert "StackOverflow" not in message and "Traceback" not in message
        assert error(client.post("/api/v2/chats", json={"title": "t"}), 500) == "INTERNAL_ERROR"  # its settings check


# --- the docs load nothing from elsewhere ---


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_reference_only_this_server(client, page):
    html = client.get(page)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html.text) + re.findall(
        r"""(?:url|openapi_url|spec-url)\s*[:=]\s*["']([^"']+)["']""", html.text
    )
    assert urls and all(url.startswith("/") and not url.startswith("//") for url in urls), urls
    assert not re.search(r"https?://|//cdn|fonts\.googleapis", html.text), "an absolute URL in " + page
    for url in urls:
        assert client.get(url).status_code == 200, url
    if page == "/docs":
        assert '"validatorUrl": null' in html.text  # Swagger UI would otherwise send the document to a validator


# --- one busy request does not block the others ---


def test_one_busy_request_does_not_block_the_others(store, monkeypatch):
    limits = ServerLimits(workers=2, queue=0, regex=RegexLimits(key_seconds=3, request_seconds=3))
    slow_started, others_done = threading.Event(), threading.Event()
    seen_when_slow_ended: list[bool] = []
    search = RegexKey.search

    def watched(self, haystack, timeout=None):
        if SLOW_TEXT not in haystack:
            return search(self, haystack, timeout)
        slow_started.set()
        try:
            return search(self, haystack, timeout)
        finally:
            seen_when_slow_ended.append(others_done.is_set())

    monkeypatch.setattr(RegexKey, "search", watched)
    with client_for(store, limits=limits) as client:
        assert client.post("/api/v2/context-preview", json=HELLO).status_code == 200  # the tokenizer is loaded
        busy: dict = {}
        thread = threading.Thread(target=lambda: busy.update(response=client.post("/api/v2/context-preview", json=SLOW_PREVIEW)))
        thread.start()
        assert slow_started.wait(60)
        # While one worker runs the key, the loop, the other worker and the database threads all answer.
        assert client.get("/api/v2/chats").status_code == 200
        assert client.post("/api/v2/context-preview", json=HELLO).json()["promptTokens"] > 0
        chat_id = client.post("/api/v2/chats", json=HELLO).json()["id"]
        assert client.post(f"/api/v2/chats/{chat_id}/generate").status_code == 200
        others_done.set()
        thread.join(60)
    assert seen_when_slow_ended == [True]  # the slow key was still running when the others had answered
    assert busy["response"].status_code == 200
    assert "LOREBOOK_KEY_TIMEOUT" in [d["code"] for d in busy["response"].json()["diagnostics"]]


def test_a_full_pool_answers_503_with_retry_after_and_a_slow_request_times_out(store):
    limits = ServerLimits(workers=1, queue=0, request_seconds=0.5, regex=RegexLimits(key_seconds=2, request_seconds=2))
    with client_for(store, limits=limits) as client:
        pool = client.app.state.pool
        timed_out = client.post("/api/v2/context-preview", json=SLOW_PREVIEW)
        assert error(timed_out, 503) == "REQUEST_TIMEOUT" and timed_out.headers["retry-after"] == "2"
        assert not pool.idle.is_set()  # its thread still runs the key: it keeps its place in the pool
        busy = client.post("/api/v2/context-preview", json=HELLO)
        assert error(busy, 503) == "SERVER_BUSY" and busy.headers["retry-after"] == "2"
        assert client.get("/api/v2/chats").status_code == 200  # reading needs no worker
        assert pool.idle.wait(60)
        assert client.post("/api/v2/context-preview", json=HELLO).status_code == 200
