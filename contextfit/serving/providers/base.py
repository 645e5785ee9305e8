"""What a provider is: an object with ``name``, ``template`` and ``async complete(request)``.

A provider turns a :class:`ProviderRequest` (the plan's final messages) into
a :class:`ProviderReply`, or raises a :class:`~contextfit.errors.ProviderError`
whose ``code`` is one of the normalized ``PROVIDER_*`` codes. ``template``
names the message shape it takes (``openai``, ``anthropic``), or is ``None``
when any shape will do.
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
