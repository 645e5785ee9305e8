"""The ``anthropic`` provider: the Messages API (``POST {base_url}/v1/messages``).

Configured by arguments or, through ``AnthropicProvider.from_env()``, by
``ANTHROPIC_BASE_URL`` (default ``https://api.anthropic.com``),
``ANTHROPIC_API_KEY`` and ``CONTEXTFIT_ANTHROPIC_MODEL``. The key goes in the
``x-api-key`` header and is kept nowhere else.
"""

from __future__ import annotations

from typing import Any

from .base import ProviderReply, ProviderRequest
from .http import HttpProvider, malformed, post_json

OFFICIAL_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


def anthropic_tool(tool: dict) -> dict:
    """An OpenAI function tool definition in the Messages API's shape (others pass through).

    >>> anthropic_tool({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}})
    {'name': 'f', 'input_schema': {'type': 'object'}}
    """
    function = tool.get("function") if tool.get("type") == "function" else None
    if not isinstance(function, dict):
        return tool
    out = {"name": function.get("name"), "input_schema": function.get("parameters") or {"type": "object"}}
    if function.get("description"):
        out["description"] = function["description"]
    return out


class AnthropicProvider(HttpProvider):
    """Claude models through the Messages API."""

    name = "anthropic"
    template = "anthropic"
    default_base_url = OFFICIAL_BASE_URL
    env_base_url = ("ANTHROPIC_BASE_URL",)
    env_api_key = "ANTHROPIC_API_KEY"
    env_model = "CONTEXTFIT_ANTHROPIC_MODEL"

    async def complete(self, request: ProviderRequest) -> ProviderReply:
        body: dict[str, Any] = {
            "model": self.model or request.model,
            "max_tokens": max(request.max_tokens, 1),
            "messages": request.messages,
        }
        if request.system:
            body["system"] = request.system
        if request.temperature is not None:
            body["temperature"] = min(request.temperature, 1.0)
        if request.tools:
            body["tools"] = [anthropic_tool(tool) for tool in request.tools]
        headers = {"anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        data = await post_json(self.name, f"{self.base_url}/v1/messages", body, headers, self.policy)
        parts = data.get("content")
        if not isinstance(parts, list) or not all(isinstance(part, dict) for part in parts):
            raise malformed(self.name)
        if all(part.get("type") == "text" for part in parts):
            content: Any = "".join(str(part.get("text", "")) for part in parts)
        else:
            content = parts  # tool_use parts: the engine reads Anthropic content as it is
        return ProviderReply(
            {"role": "assistant", "content": content},
            data.get("model"),
            data.get("stop_reason"),
            data.get("usage") or {},
        )
