"""The ``echo`` provider: offline and deterministic, so generation works out of the box."""

from __future__ import annotations

from ...inputs.messages import message_text
from .base import ProviderReply, ProviderRequest


class EchoProvider:
    """Replies with the text of the last user message it was sent.

    >>> import asyncio
    >>> request = ProviderRequest("gpt-4o", [{"role": "user", "content": "Hello?"}], max_tokens=100)
    >>> asyncio.run(EchoProvider().complete(request)).message
    {'role': 'assistant', 'content': 'Hello?'}
    """

    name = "echo"
    template = None

    async def complete(self, request: ProviderRequest) -> ProviderReply:
        text = next(
            (message_text(message) for message in reversed(request.messages) if message.get("role") == "user"), ""
        )
        return ProviderReply(
            {"role": "assistant", "content": text},
            model=request.model,
            finish_reason="stop",
            usage={"messages": len(request.messages)},
        )
