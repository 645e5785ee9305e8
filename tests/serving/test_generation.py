"""Generation end to end: the audit before the call, normalized failures, concurrency,
cancellation, and a server killed mid-generation."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest
from support.api import API_KEY, BODY_MARKER, LOCAL, snapshot
from fastapi.testclient import TestClient

import contextfit
from contextfit.serving.api import create_app
from contextfit.serving.generation import generate, send_conversation
from contextfit.serving.providers import EchoProvider, HttpPolicy, OpenAIProvider, ProviderReply
from contextfit.serving.store import Store, open_store
from contextfit.inputs.formats import load_conversation_file
from contextfit.serving.audits import list_audited_chats, load_audit, load_audit_plan


# A short timeout only for the provider whose timeout is tested ("slow"); the others keep the
# default timeouts, so a loaded machine cannot turn a success, a hold or a cancel into a timeout.
FAST = HttpPolicy(timeout=0.5, connect_timeout=0.5, retries=1, backoff=0, max_reply_bytes=2**20)
PATIENT = HttpPolicy(retries=1, backoff=0, max_reply_bytes=2**20)
FAILURES = {
    "huge": (502, "PROVIDER_ERROR"),  # a 256 MiB answer, over the 1 MiB cap
    "401": (502, "PROVIDER_AUTH"),
    "429": (429, "PROVIDER_RATE_LIMITED"),
    "context": (502, "PROVIDER_CONTEXT_OVERFLOW"),
    "500": (502, "PROVIDER_ERROR"),
    "slow": (504, "PROVIDER_TIMEOUT"),
    "drop": (503, "PROVIDER_UNAVAILABLE"),
}
HELLO = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]}


def providers_for(fake) -> dict:
    providers = {"echo": EchoProvider()}
    for behaviour in ("success", "hold", "surrogate", *FAILURES):
        name = f"openai-{behaviour}"
        policy = FAST if behaviour == "slow" else PATIENT
        providers[name] = OpenAIProvider(base_url=fake.url(behaviour), api_key=API_KEY, policy=policy, name=name)
    return providers


@pytest.fixture
def client(store, fake_provider):
    with TestClient(create_app(store, providers_for(fake_provider)), base_url=LOCAL) as test_client:
        yield test_client


def new_chat(client, body=HELLO) -> str:
    response = client.post("/api/v2/chats", json=body)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_echo_generation_stores_the_reply_and_a_completed_audit(client):
    chat_id = new_chat(client)
    response = client.post(f"/api/v2/chats/{chat_id}/generate")
    assert response.status_code == 200, response.text
    reply, audit = response.json()["message"], response.json()["audit"]
    assert reply["content"] == "Hello" and reply["meta"]["generationId"] == audit["generationId"]
    assert audit["status"] == "completed" and audit["provider"] == "echo" and audit["errorCode"] is None
    assert [b["reason"] for b in audit["blocks"]] == ["system", "current_input"]
    assert audit["providerMessages"] == HELLO["messages"] and audit["promptTokens"] <= audit["budget"]
    assert audit["tokenizer"] == {"profile": "o200k_base", "approximate": False}
    assert audit["createdAt"] <= audit["finishedAt"]
    assert client.get(f"/api/v2/chats/{chat_id}/context-audit").json() == audit
    assert client.get(f"/api/v2/chats/{chat_id}").json()["messages"][-1] == reply


@pytest.mark.parametrize("behaviour", FAILURES)
def test_provider_failures_end_failed_with_their_code_and_no_body(client, behaviour):
    status, code = FAILURES[behaviour]
    chat_id = new_chat(client)
    response = client.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": f"openai-{behaviour}"})
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    audit = client.get(f"/api/v2/chats/{chat_id}/context-audit").json()
    assert (audit["status"], audit["errorCode"]) == ("failed", code)
    assert audit["providerMessages"] == HELLO["messages"]  # the audit existed before the call
    stored = json.dumps(audit) + response.text
    assert BODY_MARKER not in stored and API_KEY not in stored
    assert len(client.get(f"/api/v2/chats/{chat_id}").json()["messages"]) == 2  # no reply stored


def test_a_reply_with_lone_surrogates_is_stored_with_replacement_characters(client):
    chat_id = new_chat(client)
    response = client.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": "openai-surrogate"})
    assert response.status_code == 200, response.text
    reply = response.json()["message"]
    assert reply["content"] == "fake reply to: Hello \ufffd" and reply["meta"]["model"] == "gpt-\ufffd"
    assert reply["tool_calls"][0]["function"]["arguments"] == '{"q": "\ufffd"}'
    assert client.get(f"/api/v2/chats/{chat_id}").json()["messages"][-1] == reply
    assert client.get(f"/api/v2/chats/{chat_id}/context-audit").json()["status"] == "completed"


def test_token_budget_exceeded_never_calls_the_provider(client, fake_provider):
    chat_id = new_chat(
        client, {"messages": [{"role": "system", "content": "rules " * 300}, {"role": "user", "content": "hi"}]}
    )
    before = fake_provider.calls["success"]
    response = client.post(
        f"/api/v2/chats/{chat_id}/generate",
        json={"provider": "openai-success", "settings": {"contextLimit": 300, "responseReserve": 100}},
    )
    assert response.status_code == 422 and response.json()["error"]["code"] == "TOKEN_BUDGET_EXCEEDED"
    assert fake_provider.calls["success"] == before
    audit = client.get(f"/api/v2/chats/{chat_id}/context-audit").json()
    assert (audit["status"], audit["errorCode"], audit["providerMessages"]) == ("failed", "TOKEN_BUDGET_EXCEEDED", [])
    assert (audit["contextLimit"], audit["responseReserve"], audit["budget"]) == (300, 100, 200)
    # Which protected blocks refused it, and what they need.
    assert [(b["role"], b["reason"], b["included"]) for b in audit["blocks"]] == [
        ("system", "system", True), ("user", "current_input", True)
    ]
    assert audit["blocks"][0]["tokens"] > 290 and audit["promptTokens"] == sum(b["tokens"] for b in audit["blocks"]) + 3
    refused = response.json()["error"]
    assert all(b["tokensEstimate"] == b["tokens"] for b in audit["blocks"])  # exact: the audit's added key agrees
    same = [{key: value for key, value in b.items() if key != "tokensEstimate"} for b in audit["blocks"]]
    assert refused["promptTokens"] == audit["promptTokens"] and refused["blocks"] == same


def test_a_real_provider_gets_the_plan_in_its_shape(client, fake_provider):
    chat_id = new_chat(client)
    response = client.post(
        f"/api/v2/chats/{chat_id}/generate", json={"provider": "openai-success", "model": "gpt-4o-mini"}
    )
    assert response.json()["message"]["content"] == "fake reply to: Hello"
    sent = fake_provider.requests[-1]["body"]
    assert sent["model"] == "gpt-4o-mini" and sent["messages"] == HELLO["messages"]
    assert sent["max_tokens"] == response.json()["audit"]["responseReserve"]


def test_interceptor_diagnostics_and_final_messages_are_audited(client):
    def add_note(messages):
        return [*messages, {"role": "system", "content": "Today is Tuesday."}]

    undo = contextfit.register_interceptor(add_note, name="date-note")
    try:
        audit = client.post(f"/api/v2/chats/{new_chat(client)}/generate").json()["audit"]
    finally:
        undo()
    assert audit["providerMessages"][-1] == {"role": "system", "content": "Today is Tuesday."}
    assert [d["code"] for d in audit["interceptorDiagnostics"]] == ["INTERCEPTOR_APPLIED"]


class BarrierProvider:
    """Holds every call until ``count`` calls are in flight, so they truly overlap."""

    name = "barrier"
    template = None

    def __init__(self, count: int) -> None:
        self.count, self.waiting, self.all_in = count, 0, None

    async def complete(self, request) -> ProviderReply:
        self.all_in = self.all_in or anyio.Event()
        self.waiting += 1
        if self.waiting == self.count:
            self.all_in.set()
        await self.all_in.wait()
        return ProviderReply({"role": "assistant", "content": "ok"}, request.model, "stop")


def test_twenty_generations_at_once_leave_one_consistent_audit(store):
    app = create_app(store, {"echo": EchoProvider(), "barrier": BarrierProvider(20)})
    chat_id = store.create_chat(messages=[{"role": "user", "content": "Hi"}]).id

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=LOCAL) as http:
            calls = [http.post(f"/api/v2/chats/{chat_id}/generate", json={"provider": "barrier"}) for _ in range(20)]
            return [response async for response in _gather(calls)]

    responses = anyio.run(run)
    assert [r.status_code for r in responses] == [200] * 20
    by_id = {r.json()["audit"]["generationId"]: r.json()["audit"] for r in responses}
    rows = snapshot(store)
    assert len(rows["context_audits"]) == 1 and rows["generations"] == []
    stored = store.get_audit(chat_id)
    assert stored.status == "completed" and stored.to_dict() == by_id[stored.generation_id]
    messages = store.get_chat(chat_id).messages
    assert len(messages) == 21
    assert sorted(m["meta"]["generationId"] for m in messages[1:]) == sorted(by_id)


async def _gather(calls):
    results = [None] * len(calls)

    async def one(index, call):
        results[index] = await call

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    for result in results:
        yield result


def test_explicit_cancel_finalizes_the_audit_cancelled(store, fake_provider):
    app = create_app(store, providers_for(fake_provider))
    chat_id = store.create_chat(messages=[{"role": "user", "content": "Hi"}]).id

    async def run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=LOCAL) as http:
            async with anyio.create_task_group() as group:
                result = {}

                async def generate():
                    result["response"] = await http.post(
                        f"/api/v2/chats/{chat_id}/generate", json={"provider": "openai-hold"}
                    )

                group.start_soon(generate)
                await anyio.to_thread.run_sync(fake_provider.arrived.acquire)
                cancelled = await http.post(f"/api/v2/chats/{chat_id}/cancel")
        return cancelled, result["response"]

    cancelled, response = anyio.run(run)
    assert cancelled.json() == {"cancelled": 1}
    assert response.status_code == 409 and response.json()["error"]["code"] == "CANCELLED"
    audit = store.get_audit(chat_id)
    assert (audit.status, audit.error_code) == ("cancelled", "CANCELLED")
    assert store.pending_generations() == [] and len(store.get_chat(chat_id).messages) == 1


def test_a_client_that_disconnects_cancels_its_generation(store, fake_provider):
    app = create_app(store, providers_for(fake_provider))
    chat_id = store.create_chat(messages=[{"role": "user", "content": "Hi"}]).id
    path = f"/api/v2/chats/{chat_id}/generate"

    async def run():
        gone = anyio.Event()
        body = [{"type": "http.request", "body": b'{"provider": "openai-hold"}', "more_body": False}]

        async def receive():
            if body:
                return body.pop()
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            pass

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
                 "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
                 "headers": [(b"content-type", b"application/json"), (b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1), "server": ("t", 80)}  # fmt: skip
        async with anyio.create_task_group() as group:
            group.start_soon(app, scope, receive, send)
            await anyio.to_thread.run_sync(fake_provider.arrived.acquire)
            gone.set()

    anyio.run(run)
    audit = store.get_audit(chat_id)
    assert (audit.status, audit.error_code) == ("cancelled", "CANCELLED")


def test_send_conversation_stores_a_card_chat_and_generates(tmp_path, test_data):
    conversation = load_conversation_file(test_data / "formats" / "card_v2.json")
    conversation = contextfit.Conversation(
        messages=[{"role": "user", "content": "Tell me about the forest."}],
        character=conversation.character,
        lorebook=conversation.lorebook,
    )
    result = send_conversation(conversation, model="gpt-4o-mini", store=str(tmp_path / "dash.db"), title="From Compare")
    assert result.audit.status == "completed" and result.message["content"] == "Tell me about the forest."
    kinds = {block.kind for block in result.audit.blocks}
    assert "character" in kinds
    chats = list_audited_chats(str(tmp_path / "dash.db"))
    assert [(c.id, c.title, c.audit_status) for c in chats] == [(result.audit.chat_id, "From Compare", "completed")]
    assert load_audit(result.audit.chat_id, str(tmp_path / "dash.db")) == result.audit
    audit, plan = load_audit_plan(result.audit.chat_id, str(tmp_path / "dash.db"))
    assert audit == result.audit and [b.reason for b in plan.blocks] == [b.reason for b in audit.blocks]
    texts = {block.id: block.content for block in plan.blocks}
    assert texts["m0"] == "Tell me about the forest." and plan.prompt_tokens == audit.prompt_tokens
    charts = pytest.importorskip("contextfit.dashboard.charts")
    charts.budget_figure(plan), charts.blocks_figure(plan)  # the Compare page's charts draw an audit too


@pytest.mark.parametrize("strategy", ["summarize", "vector-recall"])
def test_an_audit_shows_exactly_the_plan_of_the_same_conversation(tmp_path, strategy):
    path = Path(contextfit.__file__).parent / "data" / "samples" / "roleplay.json"
    if not path.exists():
        pytest.skip("the role-play sample is not there")
    conversation = load_conversation_file(path)  # card, lorebook, persona, memory, suggested limits
    plan = contextfit.plan_prompt(conversation, model="gpt-4o", context_strategy=strategy)
    result = send_conversation(
        conversation, model="gpt-4o", settings={"contextStrategy": strategy}, store=str(tmp_path / "s.db")
    )
    assert [(b.id, b.kind, b.tokens, b.reason) for b in result.audit.blocks] == [
        (b.id, b.kind, b.tokens, b.reason) for b in plan.blocks
    ]
    assert result.audit.provider_messages == plan.provider_messages
    assert (result.audit.prompt_tokens, result.audit.budget) == (plan.prompt_tokens, plan.budget)


# -- a server process killed mid-generation -------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(database: str, port: int, fake) -> subprocess.Popen:
    env = {**os.environ, "CONTEXTFIT_OPENAI_BASE_URL": fake.url("hold"), "OPENAI_API_KEY": API_KEY}
    command = [sys.executable, "-m", "contextfit", "serve", "--db", database, "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):  # up to a minute for the first start on a slow machine
        try:
            if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            if process.poll() is not None:
                raise RuntimeError("contextfit serve exited") from None
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("contextfit serve did not start")


def test_a_killed_server_leaves_the_previous_audit_and_the_next_start_marks_it_interrupted(database, fake_provider):
    setup = open_store(database)
    # An approximate tokenizer: the server need not load a vocabulary before it calls the provider.
    chat_id = setup.create_chat(model="llama-3.1-8b", messages=[{"role": "user", "content": "Hi"}]).id
    previous = anyio.run(lambda: generate(setup, {"echo": EchoProvider()}, chat_id)).audit
    setup.close()
    server = serve(database, free_port(), fake_provider)
    try:
        url = f"http://127.0.0.1:{server.args[-1]}/api/v2/chats/{chat_id}/generate"
        hanging = threading.Thread(
            target=_ignore, args=(httpx.post, url), kwargs={"json": {"provider": "openai"}, "timeout": 60}
        )
        hanging.start()
        assert fake_provider.arrived.acquire(timeout=60)  # the provider has the request: the audit is pending
        server.send_signal(signal.SIGKILL)
        server.wait()
        hanging.join()
    finally:
        server.kill()
        server.wait()
    reader = Store(database)  # reads without recovering
    assert reader.get_audit(chat_id) == previous
    [(_, _, interrupted)] = reader.pending_generations(chat_id)
    reader.close()
    restarted = open_store(database)  # what `contextfit serve` does first when it starts again
    audit = restarted.get_audit(chat_id)
    restarted.close()
    assert (audit.generation_id, audit.status, audit.error_code) == (interrupted.generation_id, "failed", "INTERRUPTED")
    assert audit.provider == "openai" and audit.provider_messages == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hi"},
    ]


def _ignore(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except httpx.HTTPError:
        pass


# -- CPU work stays off the event loop, inside the worker pool's bounds ---------------------------

SLOW_FACT = {"facts": ["/(a|a)+$/"]}  # backtracks on "aaaa...ab": each message spends the key's whole time limit
SLOW_CHAT = [{"role": "user", "content": "a" * 40 + "b"} for _ in range(8)]


def on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def test_no_cpu_step_of_a_generation_runs_on_the_event_loop(store, monkeypatch):
    from contextfit.serving import generation

    seen: list[tuple[str, bool]] = []
    for name in ("resolve_request", "audit_from_plan", "refused_audit", "reply_message"):
        original = getattr(generation, name)

        def recording(*args, _name=name, _original=original, **kwargs):
            seen.append((_name, on_event_loop()))
            return _original(*args, **kwargs)

        monkeypatch.setattr(generation, name, recording)
    with TestClient(create_app(store), base_url=LOCAL) as client:
        chat_id = new_chat(client, {"model": "llama-3.1-8b", "messages": SLOW_CHAT, "settings": SLOW_FACT})
        assert client.post(f"/api/v2/chats/{chat_id}/generate").status_code == 200
        over = new_chat(client, {"messages": [{"role": "user", "content": "word " * 300}], "settings": {"contextLimit": 200, "responseReserve": 50}})
        assert client.post(f"/api/v2/chats/{over}/generate").json()["error"]["code"] == "TOKEN_BUDGET_EXCEEDED"
    assert {name for name, _ in seen} == {"resolve_request", "audit_from_plan", "refused_audit", "reply_message"}
    assert [name for name, loop in seen if loop] == []


def test_regex_facts_are_matched_inside_the_worker_pool(store):
    from contextfit.serving.api.limits import ServerLimits

    app = create_app(store, limits=ServerLimits(workers=1, queue=0))
    with TestClient(app, base_url=LOCAL) as client:
        slow = new_chat(client, {"model": "llama-3.1-8b", "messages": SLOW_CHAT, "settings": SLOW_FACT})
        other = new_chat(client, {"model": "llama-3.1-8b", "messages": [{"role": "user", "content": "Hi"}]})
        first = threading.Thread(target=lambda: client.post(f"/api/v2/chats/{slow}/generate"))
        first.start()
        deadline = time.monotonic() + 30
        while app.state.pool.idle.is_set() and time.monotonic() < deadline:  # until a call is admitted
            time.sleep(0.005)
        busy = client.post(f"/api/v2/chats/{other}/generate")  # the single worker matches the facts
        first.join()
    assert busy.status_code == 503 and busy.json()["error"]["code"] == "SERVER_BUSY"
    assert store.get_audit(slow).facts == []  # the key ran out of time: it matched nothing, and nothing froze
