"""ShareGPT-style datasets: ``{"conversations": [{"from", "value"}], "tools": ...}``.

Also read here, because they are the same kind of training record:
LLaMA-Factory's typed messages (``{"role", "content": [{"type", "value"}]}``
with ``reasoning`` and ``tool_call`` parts) and DialogStudio's unified
dialogs (``{"log": [{"user utterance", "system response"}]}``).

``function_call`` turns become an assistant message with ``tool_calls``
(ids ``call_1``, ``call_2`` ... in order); ``observation`` turns become
``tool`` messages answering the oldest call still waiting for a result.
"""

from __future__ import annotations

import json
from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.inputs.messages import HISTORY, SYSTEM

from .conversation import Conversation
from .fields import as_model, child, describe, expect_dict, expect_list, plural, wrong_type
from .openai import request_warnings
from .source import Parsed

CALL = "call"
RESULT = "result"
ROLES = {
    "human": "user", "user": "user",
    "gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant", "bard": "assistant",
    "bing": "assistant", "model": "assistant",
    "system": "system",
    "function_call": CALL, "tool_call": CALL,
    "observation": RESULT, "tool": RESULT, "function": RESULT, "function_response": RESULT,
}


def is_typed_messages(messages: Any) -> bool:
    """Whether a ``messages`` list uses LLaMA-Factory's ``{"type", "value"}`` content parts."""
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and "value" in part and "text" not in part:
                    return True
    return False


def is_dialogstudio(value: Any) -> bool:
    """A DialogStudio dialog (``log`` list) or a dict of them keyed by dialog name."""
    if not isinstance(value, dict) or not value:
        return False
    if isinstance(value.get("log"), list):
        return True
    first = next(iter(value.values()))
    return isinstance(first, dict) and isinstance(first.get("log"), list)


class _Builder:
    """Collects messages, numbering tool calls and matching results to them."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.warnings: list[str] = []
        self.pending: list[str] = []
        self.calls = 0

    def add(self, role: str, content: Any, message_id: str, **fields: Any) -> dict:
        kind = SYSTEM if role == "system" else HISTORY
        message = {"role": role, "content": content, **fields, "meta": {"id": message_id, "kind": kind}}
        self.messages.append(message)
        return message

    def new_call(self, name: str, arguments: Any) -> dict:
        self.calls += 1
        call_id = f"call_{self.calls}"
        self.pending.append(call_id)
        if not isinstance(arguments, str):
            arguments = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}

    def answer(self, path: str) -> str:
        if self.pending:
            return self.pending.pop(0)
        self.calls += 1
        self.warnings.append(f"The tool result at {path} answers no earlier function call; it stays unlinked.")
        return f"call_{self.calls}"


def import_sharegpt(parsed: Parsed) -> Conversation:
    """Read one ShareGPT-style record (or LLaMA-Factory typed messages, or a DialogStudio dialog)."""
    value, root = parsed.value, parsed.root
    if isinstance(value, list):
        return _conversation(_from_turns(value, root, _Builder()), {}, root)
    if isinstance(value, dict):
        for key in ("conversations", "conversation"):
            if key in value:
                builder = _Builder()
                _system(value, root, builder)
                turns = expect_list(value[key], child(root, key))
                _from_turns(turns, child(root, key), builder)
                _chosen(value, root, builder)
                return _conversation(builder, value, root)
        if "messages" in value:
            builder = _Builder()
            _system(value, root, builder)
            _from_typed(expect_list(value["messages"], child(root, "messages")), child(root, "messages"), builder)
            return _conversation(builder, value, root)
        if is_dialogstudio(value):
            return _from_dialogstudio(value, root)
    raise InvalidConversation(
        'This is not a ShareGPT conversation: expected {"conversations": [{"from": ..., "value": ...}]} '
        f"(got {describe(value)}).",
        location=root,
    )


def _conversation(builder: _Builder, record: dict, root: str) -> Conversation:
    warnings = builder.warnings + request_warnings(record, root)
    return Conversation(
        messages=builder.messages,
        tools=_tools(record.get("tools"), child(root, "tools"), warnings),
        format="sharegpt",
        model=as_model(record.get("model")),
        warnings=warnings,
    )


def _system(record: dict, root: str, builder: _Builder) -> None:
    system = record.get("system")
    if isinstance(system, str) and system.strip():
        builder.add("system", system, "system")
    elif system is not None and not isinstance(system, str):
        raise wrong_type(child(root, "system"), "a string", system)


def _from_turns(turns: list, path: str, builder: _Builder) -> _Builder:
    for index, turn in enumerate(turns):
        turn_path = child(path, index)
        expect_dict(turn, turn_path)
        speaker_key = "from" if "from" in turn else "role"
        text_key = "value" if "value" in turn else "content"
        _turn(turn.get(speaker_key), turn.get(text_key), turn_path, speaker_key, text_key, f"m{index}", builder)
    return builder


def _turn(
    speaker: Any, text: Any, path: str, speaker_key: str, text_key: str, message_id: str, builder: _Builder, **fields: Any
) -> None:
    if not isinstance(speaker, str):
        raise wrong_type(child(path, speaker_key), 'a string such as "human" or "gpt"', speaker)
    role = ROLES.get(speaker.lower())
    if role is None:
        raise InvalidConversation(
            f"{child(path, speaker_key)} is {speaker!r}; expected human, gpt, system, function_call or observation.",
            location=child(path, speaker_key),
        )
    if role == CALL:
        calls = _parse_calls(text)
        if calls is None:
            builder.warnings.append(f"The function call at {path} is not JSON with a name; it was kept as text.")
            builder.add("assistant", text if isinstance(text, str) else json.dumps(text, ensure_ascii=False), message_id)
        else:
            builder.add("assistant", None, message_id, tool_calls=[builder.new_call(*call) for call in calls])
        return
    if not isinstance(text, str):
        if role == RESULT and text is not None:
            text = json.dumps(text, ensure_ascii=False)
        else:
            raise wrong_type(child(path, text_key), "a string", text)
    if role == RESULT:
        builder.add("tool", text, message_id, tool_call_id=builder.answer(path), **fields)
    else:
        builder.add(role, text, message_id, **fields)


def _parse_calls(value: Any) -> list[tuple[str, Any]] | None:
    """``(name, arguments)`` pairs from a function-call turn, or ``None`` when unreadable."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return None
        calls.append((item["name"], item.get("arguments", item.get("parameters"))))
    return calls or None


def _chosen(record: dict, root: str, builder: _Builder) -> None:
    """LLaMA-Factory preference records: the chosen reply ends the chat; the rejected one is dropped."""
    chosen = record.get("chosen")
    if isinstance(chosen, dict):
        _from_turns([chosen], child(root, "chosen"), builder)
        builder.messages[-1]["meta"]["id"] = "chosen"
        if record.get("rejected") is not None:
            builder.warnings.append("The rejected reply of this preference record is not included.")


def _from_typed(messages: list, path: str, builder: _Builder) -> None:
    """LLaMA-Factory typed messages: text, reasoning and tool_call parts."""
    for index, message in enumerate(messages):
        message_path = child(path, index)
        expect_dict(message, message_path)
        content = message.get("content")
        if not isinstance(content, list):
            _turn(message.get("role"), content, message_path, "role", "content", f"m{index}", builder)
            continue
        texts, reasoning, calls = [], [], []
        for part_index, part in enumerate(content):
            part_path = child(child(message_path, "content"), part_index)
            expect_dict(part, part_path)
            kind, text = part.get("type"), part.get("value", part.get("text"))
            if kind == "tool_call":
                parsed_calls = _parse_calls(text)
                if parsed_calls is None:
                    raise InvalidConversation(f"{part_path} is not a tool call with a name.", location=part_path)
                calls.extend(parsed_calls)
            elif not isinstance(text, str):
                raise wrong_type(child(part_path, "value"), "a string", text)
            elif kind == "reasoning":
                reasoning.append(text)
            elif kind == "text":
                texts.append(text)
            else:
                texts.append(text)
                builder.warnings.append(f"The {kind!r} part at {part_path} was kept as text.")
        if calls:
            fields: dict[str, Any] = {"tool_calls": [builder.new_call(*call) for call in calls]}
            if reasoning:
                fields["reasoning_content"] = "\n".join(reasoning)
            builder.add("assistant", "\n".join(texts) if texts else None, f"m{index}", **fields)
            continue
        extra = {"reasoning_content": "\n".join(reasoning)} if reasoning else {}
        _turn(message.get("role"), "\n".join(texts), message_path, "role", "content", f"m{index}", builder, **extra)


def _from_dialogstudio(value: dict, root: str) -> Conversation:
    warnings = []
    if isinstance(value.get("log"), list):
        dialog, path = value, root
    else:
        key = next(iter(value))
        dialog, path = value[key], child(root, key)
        if len(value) > 1:
            warnings.append(f"This file holds {len(value)} dialogs; only the first ({key!r}) was loaded.")
    builder = _Builder()
    log = expect_list(dialog.get("log"), child(path, "log"))
    for index, turn in enumerate(log):
        turn_path = child(child(path, "log"), index)
        expect_dict(turn, turn_path)
        for key, role, suffix in (("user utterance", "user", "u"), ("system response", "assistant", "a")):
            text = turn.get(key)
            if text is None or text == "":
                continue
            if not isinstance(text, str):
                raise wrong_type(child(turn_path, key), "a string", text)
            builder.add(role, text, f"t{index}{suffix}")
    info = dialog.get("original dialog info")
    model = as_model(info.get("model")) if isinstance(info, dict) else None
    return Conversation(messages=builder.messages, format="sharegpt", model=model, warnings=warnings + builder.warnings)


def _tools(value: Any, path: str, warnings: list[str]) -> list[dict]:
    """Tool definitions in the OpenAI shape (bare function specs are wrapped)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            warnings.append(f"{path} is not valid JSON; no tools were read.")
            return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        warnings.append(f"{path} is {describe(value)}, not a list of tools; no tools were read.")
        return []
    tools = []
    for tool in value:
        if isinstance(tool, dict) and tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            tools.append(tool)
        elif isinstance(tool, dict) and isinstance(tool.get("name"), str):
            tools.append({"type": "function", "function": tool})
    skipped = len(value) - len(tools)
    if skipped:
        warnings.append(f"{plural(skipped, 'tool definition')} in {path} could not be read and were skipped.")
    return tools
