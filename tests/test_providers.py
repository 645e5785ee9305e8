"""Providers against a fake server on loopback: replies, retries, and normalized error codes."""

from __future__ import annotations

import asyncio

import pytest
from api_support import API_KEY, BODY_MARKER

from contextfit.errors import ProviderError
from contextfit.providers import (
    AnthropicProvider,
    EchoProvider,
    HttpPolicy,
    OpenAIProvider,
    ProviderRequest,
    default_providers,
    error_for_status,
)

pytest_plugins = ["api_fixtures"]  # the database, store and fake_provider fixtures

FAST = HttpPolicy(timeout=0.5, connect_timeout=0.5, retries=2, backoff=0)
REQUEST = ProviderRequest("gpt-4o", [{"role": "user", "content": "Hello"}], max_tokens=64, system="Be brief.")
KINDS = {"openai": OpenAIProvider, "anthropic": AnthropicProvider}
EXPECTED = {
    "401": ("PROVIDER_AUTH", 1),
    "429": ("PROVIDER_RATE_LIMITED", 3),
    "context": ("PROVIDER_CONTEXT_OVERFLOW", 1),
    "500": ("PROVIDER_ERROR", 3),
    "slow": ("PROVIDER_TIMEOUT", 1),
    "drop": ("PROVIDER_UNAVAILABLE", 3),
}


def provider(kind: str, fake, behaviour: str):
    return KINDS[kind](base_url=fake.url(behaviour, kind == "anthropic"), api_key=API_KEY, policy=FAST)


@pytest.mark.parametrize("kind", KINDS)
def test_success_sends_the_plan_and_returns_the_reply(kind, fake_provider):
    reply = asyncio.run(provider(kind, fake_provider, "success").complete(REQUEST))
    assert reply.message == {"role": "assistant", "content": "fake reply to: Hello"}
    sent = fake_provider.requests[-1]
    if kind == "openai":
        assert sent["headers"]["Authorization"] == f"Bearer {API_KEY}"
        assert sent["body"]["messages"][0] == {"role": "system", "content": "Be brief."}
        assert sent["body"]["max_tokens"] == 64  # a compatible server, not api.openai.com
        assert reply.finish_reason == "stop" and reply.usage["prompt_tokens"] == 10
    else:
        assert sent["headers"]["x-api-key"] == API_KEY and sent["headers"]["anthropic-version"]
        assert sent["body"]["system"] == "Be brief." and sent["body"]["max_tokens"] == 64
        assert reply.finish_reason == "end_turn"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("behaviour", EXPECTED)
def test_every_failure_maps_to_its_code_without_the_body(kind, behaviour, fake_provider):
    code, attempts = EXPECTED[behaviour]
    before = fake_provider.calls[behaviour]
    with pytest.raises(ProviderError) as caught:
        asyncio.run(provider(kind, fake_provider, behaviour).complete(REQUEST))
    assert caught.value.code == code
    assert fake_provider.calls[behaviour] - before == attempts  # 429, 5xx and dropped connections are retried
    text = str(caught.value) + repr(caught.value.to_dict())
    assert BODY_MARKER not in text and API_KEY not in text
    assert caught.value.__cause__ is None and (caught.value.__context__ is None or caught.value.__suppress_context__)


def test_a_refused_connection_is_unavailable():
    closed = OpenAIProvider(base_url="http://127.0.0.1:9/v1", policy=HttpPolicy(retries=0, timeout=2))
    with pytest.raises(ProviderError) as caught:
        asyncio.run(closed.complete(REQUEST))
    assert caught.value.code == "PROVIDER_UNAVAILABLE"


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (403, "", "PROVIDER_AUTH"),
        (404, "model not found", "PROVIDER_BAD_REQUEST"),
        (400, "temperature out of range", "PROVIDER_BAD_REQUEST"),
        (400, "This model's maximum context length is 8192 tokens", "PROVIDER_CONTEXT_OVERFLOW"),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", "PROVIDER_CONTEXT_OVERFLOW"),
        (413, "", "PROVIDER_CONTEXT_OVERFLOW"),
        (408, "", "PROVIDER_TIMEOUT"),
        (502, "", "PROVIDER_UNAVAILABLE"),
        (529, "overloaded", "PROVIDER_UNAVAILABLE"),
        (501, "", "PROVIDER_ERROR"),
    ],
)
def test_status_table(status, body, code):
    assert error_for_status("p", status, body).code == code


def test_echo_is_deterministic_and_offline():
    request = ProviderRequest("gpt-4o", [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}], max_tokens=1)
    replies = {asyncio.run(EchoProvider().complete(request)).message["content"] for _ in range(3)}
    assert replies == {"Hi"}


def test_providers_come_from_the_environment_and_hide_their_keys():
    env = {"OPENAI_API_KEY": API_KEY, "CONTEXTFIT_OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "ANTHROPIC_API_KEY": API_KEY,
           "CONTEXTFIT_ANTHROPIC_MODEL": "claude-x"}  # fmt: skip
    providers = default_providers(env)
    assert providers["openai"].base_url == "http://127.0.0.1:1/v1" and providers["anthropic"].model == "claude-x"
    assert all(API_KEY not in repr(p) for p in providers.values())
    official = default_providers({})["openai"]
    assert official.base_url == "https://api.openai.com/v1" and official.max_tokens_field == "max_completion_tokens"
