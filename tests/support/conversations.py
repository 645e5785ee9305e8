"""Random conversations for property tests, and an independent oracle.

The oracle re-derives groups and protection from SPEC §3.2–3.3 without
using the engine's code, so the properties check the engine against the
specification rather than against itself.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

WORDS = "alpha beta gamma delta forest wolf river castle sword magic router error config deploy".split()


def word_count_counter(messages) -> int:
    """A simple additive counter: 3 per message + words of everything sent, +3."""
    total = 3
    for m in messages:
        total += 3 + len(json.dumps(m.get("content"), ensure_ascii=False).split())
        if m.get("tool_calls"):
            total += len(json.dumps(m["tool_calls"]).split())
        if m.get("name"):
            total += 1
    return total


def lumpy_counter(messages) -> int:
    """A counter that is not the sum of its parts (adds 1 per 10 messages)."""
    return word_count_counter(messages) + len(messages) // 10


def _text(draw, lo=1, hi=40) -> str:
    n = draw(st.integers(lo, hi))
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n))) + "."


@st.composite
def conversations(draw, max_turns: int = 24):
    """A chat with system prompt, blocks of every kind, tools, pins and marks."""
    messages: list[dict] = []
    if draw(st.booleans()):
        messages.append({"role": draw(st.sampled_from(["system", "developer"])), "content": _text(draw, 1, 15)})
    for kind in ("character", "persona"):
        if draw(st.integers(0, 3)) == 0:
            messages.append({"role": "system", "content": _text(draw, 1, 10), "meta": {"kind": kind}})
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["lorebook", "memory", "example"]))
        meta: dict = {"kind": kind, "id": f"{kind}-{len(messages)}"}
        if draw(st.integers(0, 4)) == 0:
            meta["required"] = True
        if draw(st.booleans()):
            meta["relevance"] = draw(st.floats(0, 1))
        messages.append({"role": "system", "content": _text(draw, 1, 20), "meta": meta})
    pending: list[tuple[str, str]] = []  # (call id, style) waiting for a result
    call_number = 0
    for _ in range(draw(st.integers(0, max_turns))):
        action = draw(st.sampled_from(["user", "assistant", "assistant", "calls", "anthropic", "result", "orphan"]))
        message: dict
        if action in ("user", "assistant"):
            message = {"role": action, "content": _text(draw)}
        elif action == "calls":
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_number += 1
                call_id = f"call_{call_number}"
                calls.append({"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": _text(draw, 1, 5)})}})
                pending.append((call_id, draw(st.sampled_from(["tool_call_id", "toolCallId", "callId"]))))
            message = {"role": "assistant", "content": None, "tool_calls": calls}
        elif action == "anthropic":
            call_number += 1
            call_id = f"toolu_{call_number}"
            message = {"role": "assistant", "content": [{"type": "text", "text": _text(draw, 1, 8)}, {"type": "tool_use", "id": call_id, "name": "lookup", "input": {"q": "x"}}]}
            pending.append((call_id, "anthropic"))
        elif action == "result" and pending:
            call_id, style = pending.pop(draw(st.integers(0, len(pending) - 1)))
            if style == "anthropic":
                message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": _text(draw, 1, 10)}]}
            else:
                message = {"role": "tool", style: call_id, "content": _text(draw, 1, 30)}
        elif action == "orphan":
            message = {"role": "tool", "tool_call_id": f"ghost_{len(messages)}", "content": _text(draw, 1, 10)}
        else:
            message = {"role": "user", "content": _text(draw)}
        flag = draw(st.integers(0, 19))
        if flag == 0:
            message["pinned"] = True
        elif flag == 1:
            message["meta"] = {"pinned": True}
        elif flag in (2, 3):
            message["meta"] = {"manualExcluded": True}
        messages.append(message)
    if draw(st.booleans()):
        messages.append({"role": "user", "content": _text(draw, 1, 20)})
    if draw(st.integers(0, 4)) == 0:  # post-history instructions after the chat
        messages.append({"role": "system", "content": _text(draw, 1, 8), "meta": {"kind": draw(st.sampled_from(["system", "lorebook"]))}})
    return messages


# -- oracle ---------------------------------------------------------------------


def link_ids(message: dict) -> set[str]:
    ids = set()
    for key in ("tool_call_id", "toolCallId", "callId"):
        if isinstance(message.get(key), str):
            ids.add(message[key])
    for call in message.get("tool_calls") or []:
        ids.add(call["id"])
    if isinstance(message.get("content"), list):
        for part in message["content"]:
            kind = str(part.get("type", ""))
            if kind.endswith("tool_use"):  # tool_use, server_tool_use, ...
                ids.add(part["id"])
            if kind.endswith("tool_result"):  # tool_result, tool_search_tool_result, ...
                ids.add(part["tool_use_id"])
    return ids


def groups(messages: list[dict]) -> list[set[int]]:
    """Connected components of messages sharing a link id."""
    parent = list(range(len(messages)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, m in enumerate(messages):
        for link in link_ids(m):
            if link in owner:
                parent[find(i)] = find(owner[link])
            else:
                owner[link] = i
    out: dict[int, set[int]] = {}
    for i in range(len(messages)):
        out.setdefault(find(i), set()).add(i)
    return list(out.values())


def _kind(message: dict) -> str:
    meta = message.get("meta") if isinstance(message.get("meta"), dict) else {}
    return meta.get("kind") or ("system" if message.get("role") in ("system", "developer") else "history")


def protected_indices(messages: list[dict]) -> set[int]:
    """SPEC §3.3, written out independently."""
    marked = set()
    for i, m in enumerate(messages):
        meta = m.get("meta") if isinstance(m.get("meta"), dict) else {}
        kind = meta.get("kind") or ("system" if m.get("role") in ("system", "developer") else "history")
        if kind in ("system", "character", "persona") or meta.get("required") is True:
            marked.add(i)
        if m.get("pinned") is True or meta.get("pinned") is True:
            marked.add(i)
    chat = [i for i, m in enumerate(messages) if _kind(m) == "history"]
    if chat and messages[chat[-1]].get("role") == "user":
        marked.add(chat[-1])  # the current input: the last chat message, from the user
    for group in groups(messages):
        if group & marked:
            marked |= group
    return marked


@st.composite
def responses_conversations(draw, max_turns: int = 10):
    """A chat imported from an OpenAI Responses request: turns of user text, reasoning
    items, parallel ``function_call`` / ``function_call_output`` items (outputs in any
    order, a few calls left unanswered, a few outputs with no call) and answers."""
    from contextfit import load_conversation

    items: list[dict] = []
    number = 0
    for _ in range(draw(st.integers(1, max_turns))):
        text = _text(draw)
        items.append({"role": "user", "content": text} if draw(st.booleans())
                     else {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                items.append({"type": "reasoning", "id": f"rs_{len(items)}", "summary": [{"type": "summary_text", "text": _text(draw, 1, 8)}]})
            ids = []
            for _ in range(draw(st.integers(1, 3))):
                number += 1
                ids.append(f"call_{number}")
                items.append({"type": "function_call", "call_id": ids[-1], "name": "lookup", "arguments": json.dumps({"q": _text(draw, 1, 4)})})
            answered = draw(st.permutations(ids))
            if draw(st.integers(0, 5)) == 0:
                answered = answered[1:]  # a call with no output
            for call_id in answered:
                items.append({"type": "function_call_output", "call_id": call_id, "output": _text(draw, 1, 25)})
            if draw(st.integers(0, 9)) == 0:
                items.append({"type": "function_call_output", "call_id": f"ghost_{len(items)}", "output": "lost"})
        if draw(st.booleans()):
            if draw(st.booleans()):
                items.append({"type": "reasoning", "id": f"rs_{len(items)}", "summary": []})
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": _text(draw)}]})
    instructions = _text(draw, 1, 12) if draw(st.booleans()) else None
    body = {"model": "gpt-5", "input": items, **({"instructions": instructions} if instructions else {})}
    return load_conversation(body).messages
