"""What a provider is: an object with ``name``, ``template`` and ``async complete(request)``.

A provider turns a :class:`ProviderRequest` (the plan's final messages) into
a :class:`ProviderReply`, or raises a :class:`~contextfit.errors.ProviderError`
whose ``code`` is one of the normalized ``PROVIDER_*`` codes. ``template``
names the message shape it takes (``openai``, ``anthropic``), or is ``None``
when any shape will do. :func:`reported_prompt_tokens` reads the prompt tokens
a reply's ``usage`` says were read: a completed generation records them in its
audit (``providerPromptTokens``) beside contextfit's own count, which is what
``contextfit calibrate`` compares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ...errors import UnknownProvider

DEFAULT_PROVIDER = "echo"


@dataclass(frozen=True, slots=True)
class ProviderRequest:
    """The request for one reply: the plan's final messages and the limits.

    ``system`` is the separate system text of the ``anthropic`` shape
    (``None`` otherwise); ``max_tokens`` is the response reserve.
    """

    model: str
    messages: list[dict]
    max_tokens: int
    system: str | None = None
    temperature: float | None = None
    tools: list[dict] | None = None


@dataclass(frozen=True, slots=True)
class ProviderReply:
    """One reply: an assistant ``message`` in the OpenAI shape, plus what the provider reported."""

    message: dict
    model: str | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Provider(Protocol):
    """A model provider (see the module docstring)."""

    name: str
    template: str | None

    async def complete(self, request: ProviderRequest) -> ProviderReply: ...


def get_provider(providers: Mapping[str, Provider], name: str | None) -> Provider:
    """``providers[name]`` (``echo`` when ``name`` is ``None``), or ``UNKNOWN_PROVIDER``.

    >>> from contextfit.serving.providers import EchoProvider
    >>> get_provider({"echo": EchoProvider()}, None).name
    'echo'
    >>> get_provider({"echo": EchoProvider()}, "openai")
    Traceback (most recent call last):
    ...
    contextfit.errors.UnknownProvider: No provider named 'openai'. Configured providers: echo.
    """
    wanted = DEFAULT_PROVIDER if name is None else name
    if wanted not in providers:
        raise UnknownProvider(wanted, sorted(providers))
    return providers[wanted]


# Anthropic bills cached prompt reads and writes apart from input_tokens: all three were read.
_ANTHROPIC = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reported_prompt_tokens(usage: Any) -> int | None:
    """The prompt tokens in a reply's ``usage``, or ``None`` when it has none.

    OpenAI (and compatible servers): ``prompt_tokens``; Anthropic:
    ``input_tokens`` plus the cache's ``cache_creation_input_tokens`` and
    ``cache_read_input_tokens``; Gemini: ``promptTokenCount``.

    >>> reported_prompt_tokens({"prompt_tokens": 129, "completion_tokens": 12})
    129
    >>> reported_prompt_tokens({"input_tokens": 10, "cache_read_input_tokens": 2000, "output_tokens": 5})
    2010
    >>> reported_prompt_tokens({"messages": 3}) is None   # the echo provider reports no tokens
    True
    """
    if not isinstance(usage, Mapping):
        return None
    openai = _whole(usage.get("prompt_tokens"))
    if openai is not None:
        return openai
    if _whole(usage.get("input_tokens")) is not None:
        return sum(_whole(usage.get(key)) or 0 for key in _ANTHROPIC)
    return _whole(usage.get("promptTokenCount"))
