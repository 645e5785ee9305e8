"""Model providers: ``echo`` (offline, the default), ``openai`` and ``anthropic``.

>>> sorted(default_providers({}))
['anthropic', 'echo', 'openai']
"""

from __future__ import annotations

from collections.abc import Mapping

from ... import environment
from .anthropic import AnthropicProvider
from .base import DEFAULT_PROVIDER, Provider, ProviderReply, ProviderRequest, get_provider, reported_prompt_tokens
from .echo import EchoProvider
from .http import HttpPolicy, error_for_status
from .openai import OpenAIProvider

__all__ = [
    "DEFAULT_PROVIDER",
    "AnthropicProvider",
    "EchoProvider",
    "HttpPolicy",
    "OpenAIProvider",
    "Provider",
    "ProviderReply",
    "ProviderRequest",
    "default_providers",
    "error_for_status",
    "get_provider",
    "reported_prompt_tokens",
]


def default_providers(env: Mapping[str, str] | None = None) -> dict[str, Provider]:
    """``echo``, plus ``openai`` and ``anthropic`` configured from ``env`` (default: the environment).

    The real providers are only contacted when a generation names them.
    """
    env = environment.snapshot() if env is None else env
    return {
        "echo": EchoProvider(),
        "openai": OpenAIProvider.from_env(env),
        "anthropic": AnthropicProvider.from_env(env),
    }
