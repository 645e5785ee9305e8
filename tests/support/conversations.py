"""Random conversations for property tests, and an independent oracle.

The oracle re-derives groups and protection from SPEC §3.2–3.3 without
using the engine's code, so the properties check the engine against the
specification rather than against itself.
"""

from __future__ import annotations

import copy
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
def conversations(draw, max_turns: int = 24, reuse_ids: bool | None = None):
    """A chat with system prompt, blocks of every kind, tools, pins and marks.

    With ``reuse_ids`` (drawn when ``None``: a quarter of the chats) tool call ids are
    spelled the same every turn (``call_1``, ``call_2`` by position in the message;
    ``toolu_1``), as some servers and hand-written agents send them."""
    reuse = draw(st.integers(0, 3)) == 0 if reuse_ids is None else reuse_ids
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
            for position in range(draw(st.integers(1, 3))):
                call_number += 1
                call_id = f"call_{position + 1 if reuse else call_number}"
                calls.append({"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": _text(draw, 1, 5)})}})
                pending.append((call_id, draw(st.sampled_from(["tool_call_id", "toolCallId", "callId"]))))
            message = {"role": "assistant", "content": None, "tool_calls": calls}
        elif action == "anthropic":
            call_number += 1
            call_id = f"toolu_{1 if reuse else call_number}"
            message = {"role": "assistant", "content": [{"type": "text", "text": _text(draw, 1, 8)}, {"type": "tool_use", "id": call_id, "name": "lookup", "input": {"q": "x"}}]}
            pending.append((call_id, "anthropic"))
        elif action == "result" and pending:
            call_id, style = pending.pop(draw(st.integers(0, len(pending) - 1)))
            if style == "anthropic":
                message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": _text(draw, 1, 10)}]}
            else:
                message = {"role": "tool", style: call_id, "content": _text(draw, 1, 30)}
        elif action == "orphan":
            ghost = "call_1" if reuse and draw(st.booleans()) else f"ghost_{len(messages)}"
            message = {"role": "tool", "tool_call_id": ghost, "content": _text(draw, 1, 10)}
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


@st.composite
def chats_with_long_results(draw, max_turns: int = 24):
    """Conversations where some tool results are long (lines of words), so a cap has something to cut."""
    messages = copy.deepcopy(draw(conversations(max_turns=max_turns)))
    for message in messages:
        if not draw(st.booleans()):
            continue
        lines = draw(st.integers(5, 60))
        if message.get("role") == "tool":
            message["content"] = "\n".join([str(message["content"])] * lines)
        elif isinstance(message.get("content"), list):
            for part in message["content"]:
                if part.get("type") == "tool_result":
                    part["content"] = "\n".join([str(part["content"])] * lines)
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


def _is_result(message: dict) -> bool:
    content = message.get("content")
    return message.get("role") in ("tool", "function") or (isinstance(content, list) and any(
        isinstance(part, dict) and str(part.get("type", "")).endswith("tool_result") for part in content))


def answers(messages: list[dict]) -> tuple[list[tuple[int, int, str]], list[list]]:
    """SPEC 3.2's answering, written out plainly: the (result, call, id) message pairs
    that link, and every call as ``[message, id, answered]``. A result answers the
    nearest earlier call with its id that is still unanswered, else the latest call
    with its id; results before any call with their id are answered by the first.
    Results whose call never comes are linked to the first of them (id ``""``)."""
    pairs: list[tuple[int, int, str]] = []
    calls: list[list] = []
    early: dict[str, list[int]] = {}  # results waiting for a first call with their id
    for i, m in enumerate(messages):
        result = _is_result(m)
        for link in sorted(link_ids(m)):
            same = [call for call in calls if call[1] == link]
            if result:
                open_ = [call for call in same if not call[2]]
                if open_:
                    open_[-1][2] = True
                    pairs.append((i, open_[-1][0], link))
                elif same:
                    pairs.append((i, same[-1][0], link))
                else:
                    early.setdefault(link, []).append(i)
            elif not same and link in early:
                pairs.extend((j, i, link) for j in early.pop(link))
                calls.append([i, link, True])
            else:
                calls.append([i, link, False])
    for results in early.values():  # results of one absent call: one (orphan) group
        pairs.extend((j, results[0], "") for j in results[1:])
    return pairs, calls


def groups(messages: list[dict]) -> list[set[int]]:
    """The tool groups (and every other message alone): messages joined by answering."""
    parent = list(range(len(messages)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for result, call, _ in answers(messages)[0]:
        parent[find(result)] = find(call)
    out: dict[int, set[int]] = {}
    for i in range(len(messages)):
        out.setdefault(find(i), set()).add(i)
    return list(out.values())


def link_state(messages: list[dict]) -> dict[str, tuple[bool, bool]]:
    """Per link id: (every result answers a call, every call has a result)."""
    pairs, calls = answers(messages)
    answered_results = {(result, link) for result, _, link in pairs}
    state: dict[str, tuple[bool, bool]] = {}
    for i, m in enumerate(messages):
        for link in link_ids(m) - {None}:
            ok_results, ok_calls = state.get(link, (True, True))
            if _is_result(m) and (i, link) not in answered_results:
                ok_results = False
            state[link] = (ok_results, ok_calls)
    for _, link, answered in calls:
        if not answered:
            state[link] = (state[link][0], False)
    return state


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
