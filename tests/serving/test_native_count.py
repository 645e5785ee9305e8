"""Provider-native counting against a fake provider on loopback, the provider-reported prompt
tokens in the audit, and `contextfit calibrate` over a store holding audits."""

from __future__ import annotations

import asyncio
import io
import json

import anyio
import pytest
from support.api import API_KEY, BODY_MARKER, fake_count

import contextfit
from contextfit.serving import native_count
from contextfit.serving.generation import generate
from contextfit.serving.providers import AnthropicProvider, EchoProvider, HttpPolicy, OpenAIProvider
from contextfit.serving.providers import reported_prompt_tokens
from contextfit.dashboard import bands
from contextfit import cli
from contextfit.dashboard.calibration import calibration


PATIENT = HttpPolicy(retries=1, backoff=0)
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How many tokens is this, really?"}]


def counter(fake, behaviour: str = "success", provider: str = "anthropic") -> native_count.NativeCounter:
    return native_count.NativeCounter(provider, fake.url(behaviour, anthropic=True), API_KEY, PATIENT)


def requests_to(fake, suffix: str) -> list[dict]:
    return [request for request in fake.requests if request["path"].endswith(suffix)]


def run_generation(store, providers, chat_id, **keywords):
    return anyio.run(lambda: generate(store, providers, chat_id, **keywords))


# --- configuration: never on by default ---


def test_native_counting_is_off_unless_enabled_and_keyed():
    assert native_count.configured({}) == {}
    assert native_count.configured({"ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "g"}) == {}  # keys alone: off
    assert native_count.configured({"CONTEXTFIT_NATIVE_COUNT": "0", "ANTHROPIC_API_KEY": "k"}) == {}
    assert native_count.configured({"CONTEXTFIT_NATIVE_COUNT": "on"}) == {}  # enabled, but no key
    found = native_count.configured({"CONTEXTFIT_NATIVE_COUNT": "yes", "ANTHROPIC_API_KEY": "sk-secret",
                                     "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "GEMINI_API_KEY": "g"})
    assert sorted(found) == ["anthropic", "google"]
    assert found["anthropic"].base_url == "http://127.0.0.1:9" and "sk-secret" not in repr(found["anthropic"])
    assert found["google"].base_url == native_count.GEMINI_BASE_URL


def test_the_test_environment_does_not_enable_it():
    assert native_count.configured() == {}


# --- the count endpoints ---


def test_anthropic_counts_the_request_that_is_sent_and_the_answer_is_cached(fake_provider):
    plan = contextfit.plan_prompt(CHAT + [{"role": "user", "content": "A text only this test sends."}],
                                  model="claude-sonnet-4")
    before = len(requests_to(fake_provider, "/v1/messages/count_tokens"))
    first = asyncio.run(native_count.count_plan(plan, {"anthropic": counter(fake_provider)}))
    sent = requests_to(fake_provider, "/v1/messages/count_tokens")[-1]
    assert sent["body"] == {"model": plan.model, "messages": plan.provider_messages, "system": plan.provider_system}
    assert sent["headers"]["x-api-key"] == API_KEY and sent["headers"]["anthropic-version"]
    assert first == {"provider": "anthropic", "tokens": fake_count(sent["body"]), "cached": False}
    again = asyncio.run(native_count.count_plan(plan, {"anthropic": counter(fake_provider)}))
    assert again == {**first, "cached": True}
    assert len(requests_to(fake_provider, "/v1/messages/count_tokens")) == before + 1  # asked once


def test_gemini_counts_a_generate_content_request(fake_provider):
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}
    plan = contextfit.plan_prompt(CHAT + [{"role": "assistant", "content": "Some."}, {"role": "user", "content": "More?"}],
                                  model="gemini-2.5-pro", tools=[tool])
    found = asyncio.run(native_count.count_plan(plan, {"google": counter(fake_provider, provider="google")}, [tool]))
    sent = requests_to(fake_provider, ":countTokens")[-1]
    assert sent["path"].endswith("/v1beta/models/gemini-2.5-pro:countTokens")
    assert sent["headers"]["x-goog-api-key"] == API_KEY
    request = sent["body"]["generateContentRequest"]
    assert request["model"] == "models/gemini-2.5-pro"
    assert request["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [content["role"] for content in request["contents"]] == ["user", "model", "user"]
    assert request["tools"] == [{"functionDeclarations": [{"name": "f", "description": "d", "parameters": {"type": "object"}}]}]
    assert found == {"provider": "google", "tokens": fake_count(sent["body"]), "cached": False}


def test_a_model_without_a_configured_counter_is_not_counted(fake_provider):
    plan = contextfit.plan_prompt(CHAT, model="gpt-4o")
    assert asyncio.run(native_count.count_plan(plan, {"anthropic": counter(fake_provider)})) is None


@pytest.mark.parametrize("behaviour, cause", [("401", "PROVIDER_AUTH"), ("500", "PROVIDER_ERROR"),
                                              ("drop", "PROVIDER_UNAVAILABLE"), ("surrogate", "PROVIDER_ERROR")])
def test_a_failed_count_is_recorded_not_raised(fake_provider, behaviour, cause):
    plan = contextfit.plan_prompt(CHAT + [{"role": "user", "content": f"fails with {behaviour}"}], model="claude-sonnet-4")
    # "surrogate" answers with a chat reply instead of a count: an answer of the wrong shape
    found = asyncio.run(native_count.count_plan(plan, {"anthropic": counter(fake_provider, behaviour)}))
    assert found["tokens"] is None and found["code"] == native_count.COUNT_FAILED
    assert found["message"].startswith(cause) and BODY_MARKER not in found["message"] and API_KEY not in found["message"]


# --- generation records both numbers ---


def test_a_generation_records_the_native_count_and_the_reported_usage(store, fake_provider):
    contextfit.caches.clear_caches(vocabularies=False)  # the same request was counted for the other database
    chat = store.create_chat(model="claude-sonnet-4", messages=CHAT)
    providers = {"anthropic": AnthropicProvider(base_url=fake_provider.url("success", True), api_key=API_KEY, policy=PATIENT)}
    result = run_generation(store, providers, chat.id, provider="anthropic", native={"anthropic": counter(fake_provider)})
    audit = store.get_audit(chat.id)
    sent = requests_to(fake_provider, "/v1/messages/count_tokens")[-1]["body"]
    assert audit.provider_count == {"provider": "anthropic", "tokens": fake_count(sent), "cached": False}
    assert audit.provider_prompt_tokens == 10  # the fake's usage.input_tokens
    data = result.audit.to_dict()
    assert data["providerCount"]["tokens"] == fake_count(sent) and data["providerPromptTokens"] == 10
    assert data["promptTokens"] == audit.prompt_tokens and data["promptTokensEstimate"] < data["promptTokens"]
    assert "anthropic counted" in bands.provider_count_text(audit)


def test_a_failed_count_never_fails_the_generation(store, fake_provider):
    chat = store.create_chat(model="claude-sonnet-4", messages=CHAT)
    run_generation(store, {"echo": EchoProvider()}, chat.id, native={"anthropic": counter(fake_provider, "500")})
    audit = store.get_audit(chat.id)
    assert audit.status == "completed"
    assert audit.provider_count["code"] == "PROVIDER_COUNT_FAILED" and audit.provider_count["tokens"] is None
    assert BODY_MARKER not in json.dumps(audit.to_dict()) and API_KEY not in json.dumps(audit.to_dict())
    assert audit.provider_prompt_tokens is None  # echo reports no tokens


def test_a_failed_generation_keeps_the_count(store, fake_provider):
    chat = store.create_chat(model="claude-sonnet-4", messages=CHAT + [{"role": "user", "content": "then 401"}])
    providers = {"anthropic": AnthropicProvider(base_url=fake_provider.url("401", True), api_key=API_KEY, policy=PATIENT)}
    with pytest.raises(contextfit.ContextfitError):
        run_generation(store, providers, chat.id, provider="anthropic", native={"anthropic": counter(fake_provider)})
    audit = store.get_audit(chat.id)
    assert audit.status == "failed" and audit.provider_count["tokens"] > 0


def test_without_native_counting_nothing_is_asked(store, fake_provider):
    chat = store.create_chat(model="claude-sonnet-4", messages=CHAT)
    before = len(fake_provider.requests)
    run_generation(store, {"echo": EchoProvider()}, chat.id)  # native from the (test) environment: none
    assert store.get_audit(chat.id).provider_count is None and len(fake_provider.requests) == before


@pytest.mark.parametrize("usage, expected", [
    ({"prompt_tokens": 129, "completion_tokens": 3}, 129),
    ({"input_tokens": 7, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 900, "output_tokens": 1}, 1007),
    ({"promptTokenCount": 42}, 42),
    ({"messages": 2}, None), ({}, None), (None, None), ({"prompt_tokens": True}, None), ({"prompt_tokens": -1}, None),
    ({"prompt_tokens": "12"}, None),
])
def test_reported_prompt_tokens(usage, expected):
    assert reported_prompt_tokens(usage) == expected


# --- calibrate ---


def test_calibrate_shows_the_ratio_per_model_over_the_stored_audits(store, fake_provider, database):
    openai = OpenAIProvider(base_url=fake_provider.url("success"), api_key=API_KEY, policy=PATIENT)
    anthropic = AnthropicProvider(base_url=fake_provider.url("success", True), api_key=API_KEY, policy=PATIENT)
    providers = {"echo": EchoProvider(), "openai": openai, "anthropic": anthropic}
    ours = {}
    for index, (model, provider) in enumerate([("gpt-4o", "openai"), ("gpt-4o", "openai"), ("claude-sonnet-4", "anthropic"),
                                               ("gpt-4o-mini", "echo")]):
        chat = store.create_chat(model=model, messages=[{"role": "user", "content": f"Question number {index}? " * (index + 1)}])
        audit = run_generation(store, providers, chat.id, provider=provider).audit
        ours.setdefault(model, []).append(audit)
    rows = {(row.model, row.source): row for row in calibration(store)}
    # echo reports no prompt tokens: gpt-4o-mini has no row
    assert set(rows) == {("gpt-4o", "usage"), (ours["claude-sonnet-4"][0].model, "usage")}
    gpt = rows[("gpt-4o", "usage")]
    assert gpt.audits == 2 and gpt.provider == 20  # the fake reports 10 prompt tokens each time
    assert gpt.ours == sum(audit.prompt_tokens for audit in ours["gpt-4o"])
    assert gpt.ratio == pytest.approx(20 / gpt.ours) and not gpt.approximate
    claude = rows[(ours["claude-sonnet-4"][0].model, "usage")]
    assert claude.approximate and claude.ours_estimate < claude.ours and claude.ratio_to_estimate > claude.ratio
    out = io.StringIO()
    assert cli.main(["calibrate", "--db", database, "--json"], out) == 0
    assert {(row["model"], row["source"]) for row in json.loads(out.getvalue())} == set(rows)
    out = io.StringIO()
    assert cli.main(["calibrate", "--db", database], out) == 0
    assert "gpt-4o" in out.getvalue() and f"{gpt.ratio:.3f}" in out.getvalue()


def test_calibrate_on_a_store_without_reported_counts_says_so(tmp_path):
    out = io.StringIO()
    assert cli.main(["calibrate", "--db", str(tmp_path / "empty.db")], out) == 0
    assert out.getvalue().startswith("No stored audit has a provider-reported count yet")
