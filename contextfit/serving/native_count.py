"""Optional provider-native counting: the provider's own count of the final request.

Claude's and Gemini's tokenizers are private, so contextfit estimates their
counts with a band (``contextfit/tokens/profiles.py``). Where the user has a
key, both providers count a request for free:

* Anthropic: ``POST {base}/v1/messages/count_tokens`` with the Messages body
  (``model``, ``messages``, ``system``, ``tools``) → ``{"input_tokens": N}``;
* Gemini: ``POST {base}/v1beta/models/{model}:countTokens`` with
  ``{"generateContentRequest": {"model", "contents", "systemInstruction", "tools"}}``
  → ``{"totalTokens": N}``.

It is never required and off unless ``CONTEXTFIT_NATIVE_COUNT`` is ``1`` /
``on`` / ``true`` / ``yes`` and the provider's key is set
(``ANTHROPIC_API_KEY``; ``GEMINI_API_KEY``). A generation then asks for the
count of the request it sends, at the same time as the reply, and records the
answer in the audit next to contextfit's count (``providerCount``). Answers
are cached in this process by the hash of the request body, so an unchanged
request is asked once. A failure never fails the generation: the audit
records ``{"tokens": null, "code": "PROVIDER_COUNT_FAILED", "message": ...}``
and contextfit's own count stands.

>>> configured({"ANTHROPIC_API_KEY": "sk-ant"})   # not enabled: nothing is asked
{}
>>> sorted(configured({"CONTEXTFIT_NATIVE_COUNT": "on", "ANTHROPIC_API_KEY": "sk-ant"}))
['anthropic']
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import environment
from ..caches import register
from ..pipeline.plan import PromptPlan
from ..errors import ProviderError
from ..inputs.messages import message_text
from ..tokens.models import get_model
from ..tokens.sent import render
from .providers.anthropic import API_VERSION, anthropic_tool
from .providers.anthropic import OFFICIAL_BASE_URL as ANTHROPIC_BASE_URL
from .providers.http import HttpPolicy, malformed, post_json

__all__ = ["COUNT_FAILED", "ENABLE_VAR", "NativeCounter", "configured", "count_plan"]

#: The variable that turns native counting on.
ENABLE_VAR = "CONTEXTFIT_NATIVE_COUNT"
#: The code recorded when the provider's count could not be had.
COUNT_FAILED = "PROVIDER_COUNT_FAILED"
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
#: A count is a small request: a short timeout and one retry, so it never holds a generation up for long.
POLICY = HttpPolicy(timeout=15.0, connect_timeout=5.0, retries=1, max_reply_bytes=65536)
_ON = frozenset({"1", "on", "true", "yes"})
_CACHE_ENTRIES = 4096

_ANSWERS: dict[str, int] = register("native_count.answers", {})
_ANSWERS_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class NativeCounter:
    """One provider's token-count endpoint (``anthropic`` or ``google``, the catalog's provider names)."""

    provider: str
    base_url: str
    api_key: str = field(repr=False)
    policy: HttpPolicy = POLICY

    def request(self, plan: PromptPlan, tools: Sequence[dict] | None = None) -> tuple[str, dict, dict]:
        """(url, body, headers) asking for the count of what ``plan`` sends."""
        if plan.template == "anthropic":
            messages, system = plan.provider_messages, plan.provider_system
        else:
            prompt = render(list(plan.fit.kept), "anthropic")
            messages, system = prompt.messages, prompt.system
        if self.provider == "anthropic":
            body: dict[str, Any] = {"model": plan.model, "messages": messages}
            if system:
                body["system"] = system
            if tools:
                body["tools"] = [anthropic_tool(tool) for tool in tools]
            headers = {"x-api-key": self.api_key, "anthropic-version": API_VERSION}
            return f"{self.base_url}/v1/messages/count_tokens", body, headers
        request: dict[str, Any] = {"model": f"models/{plan.model}", "contents": _gemini_contents(messages)}
        if system:
            request["systemInstruction"] = {"parts": [{"text": system}]}
        if tools:
            request["tools"] = [{"functionDeclarations": [_gemini_function(tool) for tool in tools]}]
        url = f"{self.base_url}/v1beta/models/{plan.model}:countTokens"
        return url, {"generateContentRequest": request}, {"x-goog-api-key": self.api_key}

    async def count(self, plan: PromptPlan, tools: Sequence[dict] | None = None) -> tuple[int, bool]:
        """(the provider's count of the request, whether it came from the cache); raises ``PROVIDER_*``."""
        url, body, headers = self.request(plan, tools)
        key = hashlib.sha256(json.dumps([url, body], sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        cached = _ANSWERS.get(key)
        if cached is not None:
            return cached, True
        data = await post_json(self.provider, url, body, headers, self.policy)
        tokens = data.get("input_tokens" if self.provider == "anthropic" else "totalTokens")
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise malformed(self.provider)
        with _ANSWERS_LOCK:
            if len(_ANSWERS) >= _CACHE_ENTRIES:
                _ANSWERS.clear()  # bounded: counts are cheap to ask again
            _ANSWERS[key] = tokens
        return tokens, False


def _gemini_contents(messages: Sequence[dict]) -> list[dict]:
    """Anthropic-shaped messages as Gemini ``contents`` (text parts; other parts as their text)."""
    contents = []
    for message in messages:
        text = message_text(message)
        if text:
            contents.append({"role": "model" if message.get("role") == "assistant" else "user", "parts": [{"text": text}]})
    return contents


def _gemini_function(tool: dict) -> dict:
    """An OpenAI function tool as a Gemini function declaration."""
    function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
    declaration = {"name": function.get("name", "tool")}
    if function.get("description"):
        declaration["description"] = function["description"]
    if function.get("parameters"):
        declaration["parameters"] = function["parameters"]
    return declaration


def configured(env: Mapping[str, str] | None = None) -> dict[str, NativeCounter]:
    """The native counters ``env`` (default: the environment) enables, by catalog provider."""
    enabled = environment.read(ENABLE_VAR, env)
    if enabled is None or enabled.strip().lower() not in _ON:
        return {}
    found = {}
    anthropic_key = environment.read("ANTHROPIC_API_KEY", env)
    if anthropic_key:
        base = environment.read("ANTHROPIC_BASE_URL", env) or ANTHROPIC_BASE_URL
        found["anthropic"] = NativeCounter("anthropic", base.rstrip("/"), anthropic_key)
    gemini_key = environment.read("GEMINI_API_KEY", env)
    if gemini_key:
        base = environment.read("CONTEXTFIT_GEMINI_BASE_URL", env) or GEMINI_BASE_URL
        found["google"] = NativeCounter("google", base.rstrip("/"), gemini_key)
    return found


async def count_plan(
    plan: PromptPlan, counters: Mapping[str, NativeCounter], tools: Sequence[dict] | None = None
) -> dict | None:
    """The provider's count of ``plan``'s request for the audit, or ``None`` when its model's
    provider has no counter configured. Never raises a ``ContextfitError``: a failure is
    recorded as ``{"provider", "tokens": None, "code": "PROVIDER_COUNT_FAILED", "message"}``.
    """
    provider = get_model(plan.model).provider
    counter = counters.get(provider)
    if counter is None:
        return None
    try:
        tokens, cached = await counter.count(plan, tools)
    except ProviderError as exc:
        return {"provider": provider, "tokens": None, "code": COUNT_FAILED, "message": f"{exc.code}: {exc.message}"}
    return {"provider": provider, "tokens": tokens, "cached": cached}
