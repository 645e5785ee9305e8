"""The ``openai`` provider: any OpenAI-compatible Chat Completions endpoint.

Configured by arguments or, through ``OpenAIProvider.from_env()``, by
``CONTEXTFIT_OPENAI_BASE_URL`` (or ``OPENAI_BASE_URL``; default
``https://api.openai.com/v1``), ``OPENAI_API_KEY`` and
``CONTEXTFIT_OPENAI_MODEL`` (a model name to send instead of the catalog's,
for local servers). The key is sent as a bearer token and kept nowhere else.
"""

from __future__ import annotations

from typing import Any

from .base import ProviderReply, ProviderRequest
from .http import HttpProvider, malformed, post_json

OFFICIAL_BASE_URL = "https://api.openai.com/v1"


class OpenAIProvider(HttpProvider):
    """Chat Completions over HTTP (``POST {base_url}/chat/completions``).

    >>> OpenAIProvider.from_env({"OPENAI_API_KEY": "sk-secret", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"})
    OpenAIProvider(base_url='http://127.0.0.1:8080/v1', model=None, api_key=set)
    """

    name = "openai"
    template = "openai"
    default_base_url = OFFICIAL_BASE_URL
    env_base_url = ("CONTEXTFIT_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    env_api_key = "OPENAI_API_KEY"
    env_model = "CONTEXTFIT_OPENAI_MODEL"

    @property
    def max_tokens_field(self) -> str:
        # api.openai.com wants max_completion_tokens (o-series reject max_tokens); compatible servers know max_tokens.
        return "max_completion_tokens" if self.base_url == OFFICIAL_BASE_URL else "max_tokens"

    async def complete(self, request: ProviderRequest) -> ProviderReply:
        messages = list(request.messages)
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        body: dict[str, Any] = {"model": self.model or request.model, "messages": messages}
        if request.max_tokens:
            body[self.max_tokens_field] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = request.tools
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        data = await post_json(self.name, f"{self.base_url}/chat/completions", body, headers, self.policy)
        try:
            choice = data["choices"][0]
            answer = choice["message"]
            message = {"role": "assistant", "content": answer.get("content")}
            if answer.get("tool_calls"):
                message["tool_calls"] = answer["tool_calls"]
        except (KeyError, IndexError, TypeError, AttributeError):
            raise malformed(self.name) from None
        return ProviderReply(message, data.get("model"), choice.get("finish_reason"), data.get("usage") or {})
