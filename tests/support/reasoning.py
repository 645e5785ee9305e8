"""Chats that carry reasoning: a hand-made Anthropic agent chat, and random ones."""

from __future__ import annotations

import copy

from hypothesis import strategies as st

from support.conversations import conversations


THOUGHT = "Let me think about which file holds the handler and why it fails. " * 30


def claude_chat(turns: int = 5) -> list[dict]:
    """An Anthropic chat of ``turns`` answered turns with thinking, then a tool-use turn."""
    chat = [{"role": "system", "content": "You are an agent."}]
    for i in range(turns):
        chat += [
            {"role": "user", "content": f"Question {i}: where is the bug?"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": THOUGHT, "signature": "sig"},
                                              {"type": "text", "text": f"Answer {i}: in handler {i}."}]},
        ]
    # the current tool-use turn: its thinking must be sent back with the tool result
    chat += [
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": THOUGHT, "signature": "sig"},
                                          {"type": "tool_use", "id": "t1", "name": "edit", "input": {"file": "h.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]},
    ]
    return chat


@st.composite
def chats_with_reasoning(draw):
    """Random conversations whose assistant turns carry reasoning, as a field or as thinking parts."""
    messages = copy.deepcopy(draw(conversations()))
    for message in messages:
        if message.get("role") == "assistant" and draw(st.booleans()):
            if draw(st.booleans()):
                message["reasoning_content"] = "thinking " * draw(st.integers(1, 30))
            else:
                text = message.get("content")
                parts = text if isinstance(text, list) else ([{"type": "text", "text": text}] if text else [])
                message["content"] = [{"type": "thinking", "thinking": "hmm " * draw(st.integers(1, 30))}, *parts]
    return messages
