"""OpenAI Chat Completions: a list of messages, or a request body ``{"messages": [...]}``.

Messages are kept exactly as given (tool calls, tool results, ``name``,
content parts, reasoning fields); only a ``meta`` dict is added.
"""

from __future__ import annotations

import json
from typing import Any

from contextfit.errors import InvalidConversation

from ..messages import ROLES  # one list of the roles SPEC 3.2 allows
from .conversation import Conversation, with_meta
from .fields import as_model, child, describe, expect_dict, expect_role, plural, wrong_type
from .source import Parsed

_FAST_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
# Request parameters worth a word: they decide the response reserve, which the user sets.
_RESERVE_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
RESPONSE_WARNING = "This is a response body: only its reply message was read (usage and other fields are not used)."
# Dataset columns (LLaMA-Factory multimodal records) that name files we cannot load.
_MEDIA_KEYS = ("images", "videos", "audios")


def import_openai(parsed: Parsed) -> Conversation:
    """Read an OpenAI chat: a message list or a request body, kept faithful."""
    value = parsed.value
    if isinstance(value, list):
        body: dict = {}
        items, where = value, parsed.item_path
    elif isinstance(value, dict) and isinstance(value.get("messages"), list):
        body = value
        base = child(parsed.root, "messages")
        items, where = value["messages"], lambda index: child(base, index)
    elif isinstance(value, dict) and isinstance(value.get("choices"), list):
        return _import_response(value, parsed.root)
    elif isinstance(value, dict) and "role" in value:
        body = {}
        items, where = [value], lambda index: parsed.root
    else:
        raise InvalidConversation(
            f"This is not an OpenAI chat: expected a list of messages or an object with a "
            f'"messages" list (got {describe(value)}).',
            location=parsed.root,
        )
    warnings: list[str] = []
    # Paths are built only for messages that need one: a 10 MB chat has ~100k messages.
    messages = [
        with_meta(item if _plain(item) else check_message(item, where(index), warnings), f"m{index}")
        for index, item in enumerate(items)
    ]
    warnings.extend(request_warnings(body, parsed.root))
    return Conversation(
        messages=messages,
        tools=read_tools(body, parsed.root, warnings),
        format="openai",
        model=as_model(body.get("model")),
        warnings=warnings,
    )


def _import_response(body: dict, root: str) -> Conversation:
    """A Chat Completions response body: its first choice's message is the conversation."""
    choices_path = child(root, "choices")
    if not body["choices"]:
        raise InvalidConversation(f"{choices_path} is empty: this response holds no reply.", location=choices_path)
    choice = expect_dict(body["choices"][0], child(choices_path, 0))
    path = child(child(choices_path, 0), "message")
    warnings = [RESPONSE_WARNING]
    message = with_meta(check_message(choice.get("message"), path, warnings), "m0")
    if len(body["choices"]) > 1:
        warnings.append(f"Only the first of {len(body['choices'])} choices was read.")
    return Conversation(messages=[message], format="openai", model=as_model(body.get("model")), warnings=warnings)


def _plain(message: Any) -> bool:
    """Whether ``message`` obviously passes :func:`check_message` (a fast path; ``False`` means "check it")."""
    if type(message) is not dict:
        return False
    role = message.get("role")
    if type(role) is not str or role not in _FAST_ROLES:
        return False
    content = message.get("content")
    if type(content) is not str and not (content is None and role == "assistant" and "content" in message):
        return False
    calls = message.get("tool_calls")
    if calls is not None:
        if type(calls) is not list:
            return False
        for call in calls:
            if type(call) is not dict:
                return False
    if role == "tool":
        call_id = message.get("tool_call_id")
        if type(call_id) is not str or not call_id:
            return False
    name = message.get("name")
    return name is None or type(name) is str


def check_message(message: Any, path: str, warnings: list[str]) -> dict:
    """``message`` when it is a usable OpenAI message, else a clear error."""
    role = expect_role(expect_dict(message, path), path, ROLES)
    content = message.get("content")
    has_call = "tool_calls" in message or "function_call" in message
    if "content" not in message and role != "assistant" and not has_call:
        raise InvalidConversation(f"{path} ({role}) has no content.", location=path)
    if content is not None and not isinstance(content, (str, list)):
        raise wrong_type(child(path, "content"), "a string, a list of parts, or null", content)
    if isinstance(content, list):
        for index, part in enumerate(content):
            if not isinstance(part, (dict, str)):
                raise wrong_type(child(child(path, "content"), index), "an object (a content part)", part)
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise wrong_type(child(path, "name"), "a string", name)
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise wrong_type(child(path, "tool_calls"), "a list", calls)
        for index, call in enumerate(calls):
            expect_dict(call, child(child(path, "tool_calls"), index))
    if role == "tool" and not any(message.get(key) for key in ("tool_call_id", "toolCallId", "callId")):
        warnings.append(f"The tool result at {path} has no tool_call_id, so it is not linked to a call.")
    return message


def read_tools(body: dict, root: str, warnings: list[str]) -> list[dict]:
    """The request's tool definitions (``tools``, plus legacy ``functions`` wrapped)."""
    tools: list[dict] = []
    declared = body.get("tools")
    if isinstance(declared, list):
        tools.extend(tool for tool in declared if isinstance(tool, dict))
    elif declared is not None:
        warnings.append(f"{child(root, 'tools')} is {describe(declared)}, not a list; no tools were read.")
    functions = body.get("functions")
    if isinstance(functions, list):
        tools.extend({"type": "function", "function": item} for item in functions if isinstance(item, dict))
    return tools


def request_warnings(body: dict, root: str) -> list[str]:
    """Warnings for request fields that matter to fitting but are not read."""
    warnings = []
    for key in _RESERVE_KEYS:
        if isinstance(body.get(key), int) and not isinstance(body.get(key), bool):
            warnings.append(
                f"The request asks for {key}={body[key]}; it is not used. Set the response reserve "
                "to match if you want the same room for the reply."
            )
    choice = body.get("tool_choice", body.get("function_call"))
    if choice == "none" or isinstance(choice, dict):
        warnings.append(
            f"The request sets tool_choice={json.dumps(choice)}; plans do not take it. On GPT-3.5 and GPT-4 "
            'a named function costs 4 tokens and its name more than the plan counts, "none" 1 more '
            "(contextfit.token_counter(model).count_tools(tools, messages, tool_choice) counts it)."
        )
    for key in _MEDIA_KEYS:
        files = body.get(key)
        if isinstance(files, list) and files:
            warnings.append(
                f"{child(root, key)} lists {plural(len(files), 'file')}; they are not loaded, and "
                "placeholders such as <image> stay in the text."
            )
    return warnings
