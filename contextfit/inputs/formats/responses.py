"""OpenAI Responses API: a ``POST /v1/responses`` body read as Chat Completions messages.

The body's ``instructions`` become the system message, ``input`` (a string,
or a list of items) the conversation, ``tools`` (the flat Responses form)
the request's tool definitions in the Chat Completions form. Items map to
the message shape every other importer produces, so tool groups, images and
rendering work as for Chat Completions:

* ``message`` items (and the short ``{"role", "content"}`` form): one
  message; ``input_text`` / ``output_text`` parts become ``text`` parts,
  ``input_image`` with an ``image_url`` an ``image_url`` part (counted from
  its header), ``input_file`` a ``file`` part;
* ``function_call`` (and ``custom_tool_call``): a call in the
  ``tool_calls`` of an assistant message — consecutive calls share one;
* ``function_call_output`` (and ``custom_tool_call_output``): a ``tool`` message;
* ``reasoning``: a ``reasoning`` part at the start of the content of the
  assistant message that follows it (kept whole: ``summary``, ``encrypted_content``);
* ``tool_search_call`` / ``tool_search_output``: a call of ``tool_search`` and
  its result, whose content is the JSON of the definitions it loaded (they
  also join the request's tools, sent);
* anything else (hosted tool calls, ``item_reference``, ...): skipped, and a
  warning names each skipped item.

A Responses *response* body (``"object": "response"`` with ``output``) is
read the same way, from its ``output`` items.
"""

from __future__ import annotations

import json
from typing import Any

from contextfit.errors import InvalidConversation

from .conversation import Conversation, with_meta
from .fields import as_model, child, describe, expect_dict, plural, wrong_type
from .openai import RESPONSE_WARNING, request_warnings
from .source import Parsed

FORMAT = "openai-responses"
ROLES = ("user", "assistant", "system", "developer")
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
#: Item types only the Responses API has; one of them in a list marks it as Responses input.
ITEM_TYPES = frozenset({"reasoning", "item_reference", "tool_search_call", "tool_search_output", *_CALLS, *_OUTPUTS})
_PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
#: Tool definition types sent as a function schema; the others are OpenAI's hosted tools.
_FUNCTION_TOOLS = frozenset({"function"})
#: Items that carry tool definitions into the prompt (a tool search's result, tools added mid-run).
_TOOL_ITEMS = frozenset({"tool_search_output", "additional_tools"})
#: OpenAI's tool search (hosted, or run by the client with a schema of its own): counted with the tools.
_SEARCH_TOOLS = frozenset({"tool_search"})
#: How many items of a list detection looks at.
_SCAN = 64


def is_responses_body(value: dict) -> bool:
    """Whether a JSON object is a Responses request (``input``) or response (``output``) body.

    An ``input`` string counts only beside a Responses key (``model``,
    ``instructions``, ...), so an Alpaca record (``instruction``/``input``/``output``) is not one.

    >>> is_responses_body({"model": "gpt-5", "input": "Hi"}), is_responses_body({"instruction": "x", "input": "y"})
    (True, False)
    """
    if "messages" in value:
        return False
    if value.get("object") == "response" and isinstance(value.get("output"), list):
        return True
    found = value.get("input")
    if isinstance(found, list):
        return not found or is_item_list(found) or "instructions" in value or "model" in value
    if isinstance(found, str):
        return any(key in value for key in ("model", "instructions", "previous_response_id", "tools"))
    return False


def is_item_list(items: list) -> bool:
    """Whether a list holds Responses input items (a Responses-only item type or content part).

    >>> is_item_list([{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}])
    True
    >>> is_item_list([{"role": "user", "content": "Hi"}])
    False
    """
    for item in items[:_SCAN]:
        if not isinstance(item, dict):
            continue
        if type_of(item) in ITEM_TYPES or (item.get("type") == "message" and "role" in item):
            return True
        content = item.get("content")
        if isinstance(content, list) and any(type_of(part) in _PART_TYPES for part in content):
            return True
    return False


def type_of(value: Any) -> str | None:
    """``value["type"]`` when ``value`` is an object whose type is a string, else ``None``.

    >>> type_of({"type": "reasoning"}), type_of({"type": ["x"]}), type_of("text")
    ('reasoning', None, None)
    """
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def import_responses(parsed: Parsed) -> Conversation:
    """Read a Responses API request body (or a bare list of its input items).

    >>> from contextfit.inputs.formats.source import Parsed
    >>> conv = import_responses(Parsed({"model": "gpt-5", "instructions": "Be brief.", "input": "Hi"}))
    >>> [(m["role"], m["content"]) for m in conv.messages], conv.format
    ([('system', 'Be brief.'), ('user', 'Hi')], 'openai-responses')
    """
    value = parsed.value
    warnings: list[str] = []
    body: dict = {}
    if isinstance(value, list):
        items, where = value, parsed.item_path
    elif isinstance(value, dict) and "input" not in value and isinstance(value.get("output"), list):
        body, items = value, value["output"]
        base = child(parsed.root, "output")
        where = lambda index: child(base, index)  # noqa: E731 - a path builder, as in openai.py
        warnings.append(RESPONSE_WARNING.replace("its reply message was", "its output items were"))
    elif isinstance(value, dict):
        body = value
        items, where = _input_items(value, parsed.root)
    else:
        raise InvalidConversation(
            f"This is not an OpenAI Responses request: expected an object with \"input\" (got {describe(value)}).",
            location=parsed.root,
        )
    reader = _Reader(warnings)
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        if instructions:
            reader.messages.append(with_meta({"role": "system", "content": instructions}, "instructions"))
    elif instructions is not None:
        raise wrong_type(child(parsed.root, "instructions"), "a string", instructions)
    for index, item in enumerate(items):
        reader.add(item, where(index), index)
    reader.finish()
    if not reader.messages:
        raise InvalidConversation(
            f"{child(parsed.root, 'input')} is empty and there are no instructions: there is nothing to read.",
            location=parsed.root,
        )
    warnings.extend(request_warnings(body, parsed.root))
    warnings.extend(_body_warnings(body, parsed.root))
    return Conversation(
        messages=reader.messages,
        tools=read_tools(body, parsed.root, warnings, reader.loaded_tools),
        format=FORMAT,
        model=as_model(body.get("model")),
        warnings=warnings,
    )


def _input_items(body: dict, root: str):
    path = child(root, "input")
    found = body.get("input")
    if found is None:
        raise InvalidConversation(f"{root} has no \"input\": a Responses request needs one.", location=root)
    if isinstance(found, str):
        return [{"role": "user", "content": found}], lambda index: path
    if not isinstance(found, list):
        raise wrong_type(path, "a string or a list of input items", found)
    return found, lambda index: child(path, index)


class _Reader:
    """Turns items into messages, one at a time, remembering what links them."""

    def __init__(self, warnings: list[str]) -> None:
        self.warnings = warnings
        self.messages: list[dict] = []
        self.reasoning: list[dict] = []  # reasoning parts waiting for the assistant message they lead to
        self.reasoning_path = ""
        self.open_call: dict | None = None  # the assistant message later calls join
        self.calls: dict[str, str] = {}  # call_id -> path of its call
        self.answered: set[str] = set()
        self.skipped: list[str] = []
        #: tool definitions items carry: loaded by a tool search (``tool_search_output``), or
        #: sent mid-conversation (``additional_tools``); the request's tools take them in
        self.loaded_tools: list[Any] = []
        self.searches: list[str] = []  # the ids of the tool searches' calls, in order

    def add(self, item: Any, path: str, index: int) -> None:
        item = expect_dict(item, path)
        kind = type_of(item)
        if item.get("type") is None and "role" in item or kind == "message":
            self._message(item, path, index)
        elif kind in _CALLS:
            self._call(item, path, index, _CALLS[kind])
        elif kind in _OUTPUTS:
            self._output(item, path, index)
        elif kind == "reasoning":
            self._reasoning(item, path)
        elif kind == "tool_search_call":
            self._search_call(item, path, index)
        elif kind == "tool_search_output":
            self._search_output(item, path, index)
        elif kind:
            if kind in _TOOL_ITEMS and isinstance(item.get("tools"), list):
                self.loaded_tools.extend(tool for tool in item["tools"] if isinstance(tool, dict))
            what = f"{kind} {item['id']!r}" if kind == "item_reference" and isinstance(item.get("id"), str) else kind
            self.skipped.append(f"{what} ({path})")
        else:
            raise InvalidConversation(
                f"{path} is neither a message (no role) nor a typed item (type is {describe(item.get('type'))}).",
                location=path,
            )

    def finish(self) -> None:
        self._flush_reasoning(None)
        for call_id, path in self.calls.items():
            if call_id not in self.answered:
                self.warnings.append(
                    f"The function_call {call_id!r} at {path} has no function_call_output; OpenAI refuses a "
                    "request whose call has no output."
                )
        if self.skipped:
            self.warnings.append(
                f"Skipped {plural(len(self.skipped), 'input item')} contextfit cannot count (hosted tool calls, "
                f"references to stored items, ...): {'; '.join(self.skipped[:8])}"
                + (f"; and {len(self.skipped) - 8} more" if len(self.skipped) > 8 else "")
                + ". They are not in the plan or its count."
            )

    # -- items

    def _message(self, item: dict, path: str, index: int) -> None:
        role = item.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise InvalidConversation(
                f"{child(path, 'role')} is {describe(role) if not isinstance(role, str) else repr(role)}; "
                f"expected one of {', '.join(ROLES)}.",
                location=child(path, "role"),
            )
        content = _content(item.get("content"), child(path, "content"), self.warnings)
        message: dict = {"role": role, "content": content}
        if role == "assistant":
            self._take_reasoning(message)
            self.open_call = message
        else:
            self._flush_reasoning(path)
            self.open_call = None
        self._append(message, item, index)

    def _call(self, item: dict, path: str, index: int, arguments_key: str) -> None:
        call_id = _required_str(item, "call_id", path)
        name = _required_str(item, "name", path)
        arguments = item.get(arguments_key, "")
        if not isinstance(arguments, str):
            if not isinstance(arguments, (dict, list)):
                raise wrong_type(child(path, arguments_key), "a JSON string", arguments)
            arguments = json.dumps(arguments, ensure_ascii=False)
            self.warnings.append(
                f"{child(path, arguments_key)} is {describe(item[arguments_key])}, not a JSON string as OpenAI "
                "expects; it was read as its JSON text."
            )
        if call_id in self.calls:
            self.warnings.append(
                f"The call_id {call_id!r} at {path} was already used at {self.calls[call_id]}; both calls and "
                "their outputs are kept in one tool group, but OpenAI expects each call_id once."
            )
        else:
            self.calls[call_id] = path
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        if self.open_call is not None:
            self._take_reasoning(self.open_call)
            self.open_call.setdefault("tool_calls", []).append(call)
            return
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        self._take_reasoning(message)
        self.open_call = message
        self._append(message, item, index)

    def _output(self, item: dict, path: str, index: int) -> None:
        call_id = _required_str(item, "call_id", path)
        output = item.get("output", "")
        if isinstance(output, list):
            output = _content(output, child(path, "output"), self.warnings)
        elif not isinstance(output, str):
            raise wrong_type(child(path, "output"), "a string or a list of content parts", output)
        if call_id not in self.calls:
            self.warnings.append(
                f"The {item['type']} at {path} answers call_id {call_id!r}, but no earlier function_call has "
                "it; it is kept as an unlinked tool result (OpenAI refuses such a request)."
            )
        self.answered.add(call_id)
        self._flush_reasoning(path)
        self.open_call = None
        self._append({"role": "tool", "tool_call_id": call_id, "content": output}, item, index)

    def _search_call(self, item: dict, path: str, index: int) -> None:
        """A tool search's call: a call of ``tool_search`` with its arguments (a server search without
        a ``call_id`` is linked by its own ``id``)."""
        call_id = next((value for value in (item.get("call_id"), item.get("id")) if isinstance(value, str) and value),
                       f"tool_search_{index}")
        arguments = item.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        self.searches.append(call_id)
        self._call({"call_id": call_id, "name": "tool_search", "arguments": arguments}, path, index, "arguments")

    def _search_output(self, item: dict, path: str, index: int) -> None:
        """A tool search's result: a tool message holding the definitions it loaded (as JSON; they are
        counted with the request's tools too, the higher reading, as OpenAI does not say where it puts them)."""
        tools = item.get("tools")
        tools = [tool for tool in tools if isinstance(tool, dict)] if isinstance(tools, list) else []
        self.loaded_tools.extend(tools)
        call_id = item.get("call_id")
        if not (isinstance(call_id, str) and call_id):
            call_id = self.searches[-1] if self.searches else f"tool_search_{index}"
        output = json.dumps(tools, ensure_ascii=False) if tools else ""
        self._output({"type": "tool_search_output", "call_id": call_id, "output": output}, path, index)

    def _reasoning(self, item: dict, path: str) -> None:
        summary = item.get("summary", [])
        if not isinstance(summary, list):
            raise wrong_type(child(path, "summary"), "a list of summary_text parts", summary)
        for position, part in enumerate(summary):
            part = expect_dict(part, child(child(path, "summary"), position))
            if not isinstance(part.get("text"), str):
                raise wrong_type(child(child(child(path, "summary"), position), "text"), "a string", part.get("text"))
        encrypted = item.get("encrypted_content")
        if encrypted is not None and not isinstance(encrypted, str):
            raise wrong_type(child(path, "encrypted_content"), "a string", encrypted)
        if not self.reasoning:
            self.reasoning_path = path
        self.reasoning.append({key: value for key, value in item.items() if key != "status"})

    # -- helpers

    def _take_reasoning(self, message: dict) -> None:
        if not self.reasoning:
            return
        content = message.get("content")
        if content is None:
            rest: list = []
        elif isinstance(content, str):
            rest = [{"type": "text", "text": content}] if content else []
        else:
            rest = list(content)
        lead = [part for part in rest if isinstance(part, dict) and part.get("type") == "reasoning"]
        message["content"] = [*lead, *self.reasoning, *rest[len(lead):]]
        self.reasoning = []

    def _flush_reasoning(self, before: str | None) -> None:
        """Reasoning that no message or call follows: kept as an assistant message of its own."""
        if not self.reasoning:
            return
        where = f"before {before}" if before else "at the end of the input"
        self.warnings.append(
            f"The reasoning item at {self.reasoning_path} is followed by no message or function call ({where}); "
            "OpenAI refuses a reasoning item without its following item. It is kept as an assistant turn of its own."
        )
        message = {"role": "assistant", "content": None}
        own_id = self.reasoning[0].get("id")
        self._take_reasoning(message)
        default_id = own_id if isinstance(own_id, str) and own_id else f"reasoning{len(self.messages)}"
        self.messages.append(with_meta(message, default_id))
        self.open_call = None

    def _append(self, message: dict, item: dict, index: int) -> None:
        own_id = item.get("id")
        if isinstance(own_id, str) and own_id:
            message["id"] = own_id
        self.messages.append(with_meta(message, f"m{index}"))
        if self.open_call is message:  # with_meta copied it: later calls and reasoning join the copy
            self.open_call = self.messages[-1]


def _required_str(item: dict, key: str, path: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidConversation(
            f"{child(path, key)} must be a non-empty string (got {describe(value)}): a {item.get('type')} needs it.",
            location=child(path, key),
        )
    return value


def _content(content: Any, path: str, warnings: list[str]) -> str | list:
    """Message content in the Chat Completions shape."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise wrong_type(path, "a string or a list of content parts", content)
    parts = []
    for index, part in enumerate(content):
        part_path = child(path, index)
        part = expect_dict(part, part_path)
        kind = type_of(part)
        if kind in _TEXT_PARTS:
            if not isinstance(part.get("text"), str):
                raise wrong_type(child(part_path, "text"), "a string", part.get("text"))
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "input_image":
            parts.append(_image(part, part_path, warnings))
        elif kind == "input_file":
            file = {key: part[key] for key in ("file_id", "file_data", "file_url", "filename") if key in part}
            parts.append({"type": "file", "file": file})
            warnings.append(
                f"The file at {part_path} is counted from its JSON (its base64 data as text, an over-count): "
                "OpenAI does not publish how a file's extracted text and pages are counted."
            )
        elif kind == "refusal":
            parts.append({"type": "refusal", "refusal": part.get("refusal", "")})
        else:
            parts.append(dict(part))
            warnings.append(f"The content part at {part_path} (type {part.get('type')!r}) is unknown; it is counted from its JSON.")
    return parts


def _image(part: dict, path: str, warnings: list[str]) -> dict:
    url = part.get("image_url")
    detail = part.get("detail") or "auto"
    if isinstance(url, str) and url:
        return {"type": "image_url", "image_url": {"url": url, "detail": detail}}
    if url is not None:
        raise wrong_type(child(path, "image_url"), "a string (a URL or a data URL)", url)
    warnings.append(
        f"The image at {path} is a file_id, which Chat Completions cannot send; it is kept as an input_image "
        "part and counted at the model's default image cost."
    )
    return {key: value for key, value in part.items() if key in ("type", "file_id", "detail")}


def read_tools(body: dict, root: str, warnings: list[str], loaded: list[Any] = ()) -> list[dict]:
    """The request's function tools in the Chat Completions form (``{"type": "function", "function": {...}}``).

    A function marked ``defer_loading`` keeps the mark (``{"type": "function", "function": {...},
    "defer_loading": true}``): it is registered, not sent, until a tool search loads it — a
    definition in ``loaded`` (the ``tool_search_output`` and ``additional_tools`` items of the
    input) is sent. A ``namespace`` gives its functions, and is itself a deferred entry (the model
    sees its name and description). The ``tool_search`` tool is kept (it is counted). Other hosted
    tools (``web_search``, ``file_search``, ...) have no published cost and are left out with a warning.

    >>> read_tools({"tools": [{"type": "function", "name": "ping", "parameters": {}}]}, "$", [])
    [{'type': 'function', 'function': {'name': 'ping', 'parameters': {}}}]
    >>> [tool.get("defer_loading", False) for tool in read_tools({"tools": [{"type": "tool_search"},
    ...     {"type": "function", "name": "rates", "defer_loading": True}]}, "$", [])]
    [False, True]
    """
    declared = body.get("tools")
    if declared is None and not loaded:
        return []
    path = child(root, "tools")
    if declared is not None and not isinstance(declared, list):
        warnings.append(f"{path} is {describe(declared)}, not a list; no tools were read.")
        declared = []
    tools: list[dict] = []
    hosted: list[str] = []
    for index, tool in enumerate(declared or ()):
        if not isinstance(tool, dict):
            warnings.append(f"{child(path, index)} is {describe(tool)}, not a tool definition; it was skipped.")
            continue
        kind = type_of(tool)
        if kind in _SEARCH_TOOLS:
            tools.append(tool)
        elif kind == "namespace" and isinstance(tool.get("tools"), list):
            tools.append({"type": "namespace", "name": tool.get("name", "namespace"),
                          "description": tool.get("description", ""), "defer_loading": True})
            tools.extend(_function_form(inner) for inner in tool["tools"]
                         if isinstance(inner, dict) and type_of(inner) in _FUNCTION_TOOLS)
        elif kind in _FUNCTION_TOOLS:
            tools.append(_function_form(tool))
        else:
            hosted.append(str(kind))
    names = {_tool_name(tool): index for index, tool in enumerate(tools)}
    sent_later = []
    for tool in loaded:
        if type_of(tool) not in _FUNCTION_TOOLS:
            continue
        found = names.get(_tool_name(_function_form(tool)))
        if found is None:
            sent_later.append({key: value for key, value in _function_form(tool).items() if key != "defer_loading"})
        else:
            tools[found] = {key: value for key, value in tools[found].items() if key != "defer_loading"}
    tools.extend(sent_later)
    if hosted:
        warnings.append(
            f"{path} lists hosted tools ({', '.join(hosted)}); OpenAI does not publish what their definitions "
            "add to the prompt, so they are not counted."
        )
    deferred = [_tool_name(tool) for tool in tools if tool.get("defer_loading")]
    if deferred:
        warnings.append(
            f"Deferred tools ({', '.join(deferred)}) are registered, not sent: OpenAI adds a definition to the "
            "prompt only once a tool search loads it; the name and description the model searches are counted."
        )
    if loaded:
        warnings.append(
            f"{plural(len(loaded), 'tool definition')} loaded by a tool search or sent as additional_tools "
            "are counted with the request's tools."
        )
    return tools


def _function_form(tool: dict) -> dict:
    """A function definition in the Chat Completions form, ``defer_loading`` kept beside it."""
    if isinstance(tool.get("function"), dict):  # already the Chat Completions form
        return tool
    function = {key: value for key, value in tool.items() if key not in ("type", "defer_loading")}
    form: dict = {"type": "function", "function": function}
    if tool.get("defer_loading"):
        form["defer_loading"] = True
    return form


def _tool_name(tool: dict) -> str:
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else ""


def _body_warnings(body: dict, root: str) -> list[str]:
    warnings = []
    previous = body.get("previous_response_id")
    if isinstance(previous, str) and previous:
        warnings.append(
            f"previous_response_id {previous!r}: the earlier turns are stored at OpenAI, not in this file, "
            "so they are not in the plan or its count."
        )
    if body.get("conversation") not in (None, ""):
        warnings.append(f"{child(root, 'conversation')}: the stored conversation's items are not in this file and are not counted.")
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("context") == "all_turns":
        warnings.append(
            "reasoning.context is all_turns: the model keeps earlier turns' reasoning, but contextfit counts "
            "reasoning by the model's default rule (only the current turn's is sent and counted)."
        )
    return warnings
