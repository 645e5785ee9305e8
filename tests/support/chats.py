"""Small hand-made chats that several test modules work on."""

from __future__ import annotations


def fact_chat() -> list[dict]:
    """A support chat with an order number and a courier (the courier message has an id)."""
    return [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "My order number is ORD-7731. " + "It is late. " * 60},
        {"role": "assistant", "content": "I see order ORD-7731. " + "Checking. " * 60},
        {"role": "user", "content": "The courier was Zenith Express. " + "Still waiting. " * 60, "id": "courier"},
        {"role": "assistant", "content": "Zenith Express is slow this week. " + "Sorry. " * 60},
        {"role": "user", "content": "Any news?"},
        {"role": "assistant", "content": "Not yet."},
    ]
