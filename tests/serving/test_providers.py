"""Providers against a fake server on loopback: replies, retries, and normalized error codes."""

from __future__ import annotations

import asyncio

import pytest
from support.api import API_KEY, BODY_MARKER, HUGE_BYTES

from contextfit.errors import ProviderError
from contextfit.serving.providers import (
    AnthropicProvider,
    EchoProvider,
    HttpPolicy,
    OpenAIProvider,
    ProviderRequest,
    default_providers,
    error_for_status,
)


# A short timeout only where the timeout is what is tested (the "slow" fake); every other call
# gets the default timeouts, so a loaded machine cannot turn a success into PROVIDER_TIMEOUT.
FAST = HttpPolicy(timeout=0.5, connect_timeout=0.5, retries=2, backoff=0)
PATIENT = HttpPolicy(retries=2, backoff=0)
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
    policy = FAST if behaviour == "slow" else PATIENT
    return KINDS[kind](base_url=fake.url(behaviour, kind == "anthropic"), api_key=API_KEY, policy=policy)


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


CAPPED = HttpPolicy(retries=2, backoff=0, max_reply_bytes=2**20)


def huge_call(fake, behaviour: str, policy: HttpPolicy = CAPPED) -> tuple[ProviderError, int]:
    """Ask the fake for a 256 MiB answer; returns the error and the bytes the server got to send."""
    before = fake.calls[behaviour]
    with pytest.raises(ProviderError) as caught:
        asyncio.run(OpenAIProvider(base_url=fake.url(behaviour), policy=policy).complete(REQUEST))
    assert fake.huge_done.acquire(timeout=60)  # the server's writes failed: the client hung up
    assert fake.calls[behaviour] - before == 1  # an answer too large is not asked for again
    return caught.value, fake.sent.pop(behaviour)


@pytest.mark.parametrize("behaviour", ["huge", "huge-length"])
def test_a_reply_over_the_size_cap_is_refused_without_reading_it(behaviour, fake_provider):
    error, sent = huge_call(fake_provider, behaviour)
    assert error.code == "PROVIDER_ERROR" and "larger than the 1,048,576-byte limit" in str(error)
    # The reader stopped at the cap (or at the Content-Length header): what the server wrote
    # beyond it is only what loopback's socket buffers took before the client closed.
    assert sent < HUGE_BYTES // 8


def test_an_error_answer_is_read_only_as_far_as_it_is_scanned(fake_provider):
    error, sent = huge_call(fake_provider, "huge-error")
    assert error.code == "PROVIDER_BAD_REQUEST"  # the overflow phrase at its end is past the scanned 64 KiB
    assert sent < HUGE_BYTES // 8


def test_a_reply_under_the_cap_is_read_whole(fake_provider):
    small = HttpPolicy(retries=0, max_reply_bytes=4096)
    reply = asyncio.run(OpenAIProvider(base_url=fake_provider.url("success"), policy=small).complete(REQUEST))
    assert reply.message["content"] == "fake reply to: Hello"


def test_a_refused_connection_is_unavailable():
    closed = OpenAIProvider(base_url="http://127.0.0.1:9/v1", policy=HttpPolicy(retries=0))
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
    assert providers["openai"].policy.max_reply_bytes == 8 * 2**20  # the documented default
    capped = default_providers({"CONTEXTFIT_PROVIDER_MAX_REPLY_BYTES": "65536"})
    assert capped["openai"].policy.max_reply_bytes == capped["anthropic"].policy.max_reply_bytes == 65536
    official = default_providers({})["openai"]
    assert official.base_url == "https://api.openai.com/v1" and official.max_tokens_field == "max_completion_tokens"
