"""How OpenAI models read tool definitions and tool calls, in tokens.

OpenAI publishes no formula; every rule here was measured against the
``usage.prompt_tokens`` the API reported for recorded requests
(docs/tokenizers.md, "Tool definitions and tool calls", lists each case).
Two renderings, chosen by the profile's :attr:`ChatFormat.openai`:

* ``cl100k`` (GPT-4, GPT-4 Turbo, GPT-3.5 Turbo): hmarr/openai-chat-tokens'
  reverse engineering, whose test counts the API confirmed — definitions as a
  TypeScript ``namespace functions`` block plus 9 tokens, 4 fewer when the
  request has a system message (the definitions join it; that message is
  read with a trailing newline), a legacy ``function_call`` as its name and
  arguments plus 3, a ``function`` result 2 tokens under an ordinary message.
* ``o200k`` (GPT-4o, GPT-4o mini, GPT-4.1 and every ``o200k_base`` model): the
  same block, except that a function with parameters opens ``(_:{`` — one
  token less than hmarr's ``(_: {`` (what the recorded counts show); one tool
  call costs ``functions.<name>``, the name and the arguments plus 4; two
  or more parallel calls are read as one call of the ``multi_tool_use.parallel``
  wrapper, ``{"tool_uses":[{"recipient_name":"functions.<name>","parameters":{...}}]}``
  in compact JSON, plus 6 and 3 per call.

* ``harmony`` (the GPT-5 family; ``harmony-o`` the o-series, unmeasured, counted
  alike): as ``o200k`` but with hmarr's ``(_: {``, 81 tokens more whenever
  function tools are sent (measured on GPT-5 mini and GPT-5.4 mini through
  Chat Completions; the Responses API measured without them — contextfit
  cannot tell the endpoint, so it counts the higher), and 6 more per call
  message (its channel and format header).

Shapes no recorded count covers are counted on the high side and reported
(:func:`definition_margins`, :func:`message_margins`): the plan says so with
``TOOL_SHAPES_UNVERIFIED`` and its count is approximate.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "CL100K", "HARMONY", "HARMONY_O", "O200K", "calls_tokens", "choice_tokens", "definition_margins",
    "function_call_tokens", "message_margins", "rule_for", "system_padding", "typescript_namespace",
]

O200K = "o200k"
CL100K = "cl100k"
HARMONY = "harmony"
HARMONY_O = "harmony-o"
_HARMONY = frozenset({HARMONY, HARMONY_O})
#: Model ids (and their dated snapshots) read with each harmony rule in Chat Completions.
HARMONY_MODELS = {HARMONY: ("gpt-5",), HARMONY_O: ("o1", "o3", "o4")}
#: GPT-5 in Chat Completions: what sending function tools adds besides their definitions
#: (GPT-5 mini and GPT-5.4 mini: 80 or 81 on eight tool sets; the higher).
HARMONY_TOOLS_TOKENS = 81
#: ... and what a call message costs more than GPT-4o's reading (two recorded rounds: 6 each).
HARMONY_CALL_TOKENS = 6

#: What the definitions' wrapper costs beyond the namespace text: a system message of their own.
WRAPPER_TOKENS = 9
#: What it costs less when the request has a system message (the definitions join it).
SYSTEM_SHARE = 4
#: One tool call (o200k): ``functions.<name>``, the name and the arguments, plus this.
ONE_CALL_TOKENS = 4
#: Parallel calls (o200k): the ``multi_tool_use.parallel`` JSON plus this, plus :data:`PER_PARALLEL_CALL` each.
PARALLEL_TOKENS = 6
PER_PARALLEL_CALL = 3
#: A legacy ``function_call`` (cl100k, hmarr): its name and arguments plus this.
FUNCTION_CALL_TOKENS = 3
#: A ``function``-role message (cl100k, hmarr) costs this much less than an ordinary one.
FUNCTION_RESULT_DISCOUNT = 2
#: A ``tool_choice`` of ``"none"`` (hmarr), and one naming a function (plus the name).
NONE_CHOICE_TOKENS = 1
NAMED_CHOICE_TOKENS = 4
#: An assistant message with both text and tool calls: counted as two messages, the second's
#: overhead (3 tokens around it, 1 for its role) on top — the higher reading, unmeasured.
TEXT_WITH_CALLS_TOKENS = 4

#: OpenAI's hosted ``{"type": "tool_search"}`` (Responses, GPT-5.4 and later), whose text is not
#: published: the largest cost measured on eight recorded requests (GPT-5.4, GPT-5.6 and
#: GPT-5.6-sol: 504 to 567 tokens besides the deferred tools), rounded up — an estimate.
TOOL_SEARCH_TOKENS = 560
#: A deferred function the hosted search can load: the model sees its name and description
#: (OpenAI's tool-search guide), measured at about 28 tokens more each; counted as this much more.
DEFERRED_TOOL_TOKENS = 30
#: Schema keywords whose rendering no recorded count covers, per rendering (one token each, on top).
_O200K_KEYS = ("default", "enum", "anyOf", "oneOf", "allOf", "$ref", "const", "nullable", "examples")
_UNVERIFIED_KEYS = {
    O200K: _O200K_KEYS,
    HARMONY: _O200K_KEYS,
    HARMONY_O: _O200K_KEYS,
    CL100K: ("default", "oneOf", "allOf", "$ref", "nullable", "examples"),
}
_MAX_DEPTH = 32


def is_hosted_search(tool: Any) -> bool:
    """Whether a definition is OpenAI's hosted tool search (``{"type": "tool_search"}``, no schema of
    its own; a client-executed one with ``parameters`` is read as a function named ``tool_search``).

    >>> is_hosted_search({"type": "tool_search"}), is_hosted_search({"type": "tool_search", "execution": "client", "parameters": {}})
    (True, False)
    """
    return isinstance(tool, Mapping) and tool.get("type") == "tool_search" and "parameters" not in tool and "function" not in tool


def deferred_stub_tokens(function: Mapping, count: Callable[[str], int]) -> int:
    """What one deferred function costs before a search loads it (name, description, overhead)."""
    return count(_text(function.get("name"))) + count(_text(function.get("description"))) + DEFERRED_TOOL_TOKENS


def typescript_namespace(tools: Any, rule: str = CL100K) -> str:
    """OpenAI tool definitions as the model reads them: TypeScript types
    (hmarr/openai-chat-tokens' ``formatFunctionDefinitions``; ``rule`` ``o200k``
    opens a function with parameters ``(_:{``).

    >>> print(typescript_namespace([{"type": "function", "function": {"name": "ping", "parameters": {}}}]))
    namespace functions {
    <BLANKLINE>
    type ping = () => any;
    <BLANKLINE>
    } // namespace functions
    """
    opening = "(_:{" if rule == O200K else "(_: {"
    lines = ["namespace functions {", ""]
    for tool in tools:
        function = _function(tool)
        if function.get("description"):
            lines.append(f"// {function['description']}")
        parameters = function.get("parameters")
        parameters = parameters if isinstance(parameters, Mapping) else {}
        properties = parameters.get("properties")
        if isinstance(properties, Mapping) and properties:
            lines.append(f"type {function.get('name', 'tool')} = {opening}")
            lines.append(_properties(parameters, 0))
            lines.append("}) => any;")
        else:
            lines.append(f"type {function.get('name', 'tool')} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def _function(tool: Any) -> Mapping:
    if not isinstance(tool, Mapping):
        return {}
    function = tool.get("function", tool)
    if not isinstance(function, Mapping):
        return {}
    if tool.get("type") == "tool_search" and "name" not in function:
        return {**function, "name": "tool_search"}
    return function


def _properties(schema: Mapping, indent: int) -> str:
    """One line per property (hmarr's ``formatObjectProperties``): descriptions only at the top two levels."""
    required = schema.get("required") or ()
    properties = schema.get("properties")
    lines = []
    for name, prop in (properties.items() if isinstance(properties, Mapping) else ()):
        prop = prop if isinstance(prop, Mapping) else {}
        if prop.get("description") and indent < 2:
            lines.append(f"// {prop['description']}")
        mark = "" if isinstance(required, (list, tuple)) and name in required else "?"
        lines.append(f"{name}{mark}: {_type(prop, indent, 0)},")
    return "\n".join(" " * indent + line for line in lines)


def _type(prop: Mapping, indent: int, depth: int) -> str:
    if depth > _MAX_DEPTH:
        return "any"
    variants = prop.get("anyOf")
    if isinstance(variants, list) and variants:
        return " | ".join(_type(v if isinstance(v, Mapping) else {}, indent, depth + 1) for v in variants)
    enum = prop.get("enum")
    if isinstance(enum, list) and enum:
        return " | ".join(f'"{v}"' if isinstance(v, str) else json.dumps(v) for v in enum)
    kind = prop.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the union, as OpenAI's harmony renderer writes it
        return " | ".join("number" if k == "integer" else str(k) for k in kind) or "any"
    if kind in ("number", "integer"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return kind
    if kind == "object":
        return "\n".join(["{", _properties(prop, indent + 2), "}"])
    if kind == "array":
        items = prop.get("items")
        return f"{_type(items, indent, depth + 1)}[]" if isinstance(items, Mapping) else "any[]"
    return "any"


def rule_for(profile_rule: str, model_id: str) -> str:
    """The rendering for a model: a harmony rule for the GPT-5 family and the o-series, else
    its profile's.

    >>> rule_for("o200k", "gpt-5.4-mini"), rule_for("o200k", "o3"), rule_for("o200k", "gpt-4o")
    ('harmony', 'harmony-o', 'o200k')
    """
    if profile_rule == O200K:
        for rule, prefixes in HARMONY_MODELS.items():
            if any(model_id == prefix or model_id.startswith((prefix + "-", prefix + ".")) for prefix in prefixes):
                return rule
    return profile_rule


def definition_margins(tools: Iterable[Any], rule: str) -> Counter:
    """The schema constructs of ``tools`` no recorded count covers, with how often each
    occurs; each adds one token to the count.

    >>> definition_margins([{"name": "f", "parameters": {"type": "object", "properties": {
    ...     "unit": {"type": "string", "enum": ["c", "f"]}, "n": {"type": "integer", "default": 3}}}}], "o200k")
    Counter({'enum': 1, 'default': 1})
    """
    found: Counter = Counter()
    keys = _UNVERIFIED_KEYS.get(rule, ())
    for tool in tools:
        parameters = _function(tool).get("parameters")
        if isinstance(parameters, Mapping):
            _walk(parameters, keys, rule, found, top=True, depth=0)
    return found


def _walk(schema: Mapping, keys: Sequence[str], rule: str, found: Counter, top: bool, depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    for key in keys:
        if key in schema:
            found[key] += 1
    if isinstance(schema.get("type"), list):
        found["type list"] += 1
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        if properties and not top and rule != CL100K:
            found["nested object"] += 1
        for prop in properties.values():
            if isinstance(prop, Mapping):
                _walk(prop, keys, rule, found, top=False, depth=depth + 1)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            _walk(schema[key], keys, rule, found, top=False, depth=depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for variant in schema[key]:
                if isinstance(variant, Mapping):
                    _walk(variant, keys, rule, found, top=False, depth=depth + 1)


def system_padding(content: Any, count: Callable[[str], int]) -> int:
    """What reading the first system message with a trailing newline adds (0 or 1; 1 when its
    content is not text, the higher reading).

    >>> from contextfit import get_tokenizer
    >>> count = get_tokenizer("cl100k_base").count
    >>> system_padding("Hello", count), system_padding("Hello.", count)
    (1, 0)
    """
    if not isinstance(content, str):
        return 1
    return max(count(content + "\n") - count(content), 0)


def choice_tokens(choice: Any, count: Callable[[str], int]) -> int:
    """What a request's ``tool_choice`` (or legacy ``function_call``) adds (hmarr): ``"none"`` 1,
    a named function 4 and its name, ``"auto"`` and ``"required"`` nothing.

    >>> from contextfit import get_tokenizer
    >>> count = get_tokenizer("cl100k_base").count
    >>> choice_tokens("none", count), choice_tokens({"type": "function", "function": {"name": "foo"}}, count)
    (1, 5)
    """
    if choice == "none":
        return NONE_CHOICE_TOKENS
    if isinstance(choice, Mapping):
        function = choice.get("function") if isinstance(choice.get("function"), Mapping) else choice
        name = function.get("name")
        if isinstance(name, str):
            return NAMED_CHOICE_TOKENS + count(name)
    return 0


def calls_tokens(calls: Sequence[Mapping], count: Callable[[str], int], rule: str) -> int:
    """What the function calls of one assistant message add to it (ids are not sent).

    >>> from contextfit import get_tokenizer
    >>> count = get_tokenizer("o200k_base").count
    >>> call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    >>> calls_tokens([call], count, "o200k")  # 4 + functions.get_weather (3) + get_weather (2) + arguments (5)
    14
    """
    functions = [_function(call) for call in calls]
    header = HARMONY_CALL_TOKENS if rule in _HARMONY else 0
    if len(functions) == 1:
        name, arguments = _text(functions[0].get("name")), _text(functions[0].get("arguments"))
        return header + ONE_CALL_TOKENS + count("functions." + name) + count(name) + count(arguments)
    uses = ",".join(
        '{"recipient_name":' + json.dumps("functions." + _text(function.get("name")), ensure_ascii=False)
        + ',"parameters":' + _compact(function.get("arguments")) + "}"
        for function in functions
    )
    return header + PARALLEL_TOKENS + PER_PARALLEL_CALL * len(functions) + count('{"tool_uses":[' + uses + "]}")


def function_call_tokens(function: Mapping, count: Callable[[str], int], rule: str) -> int:
    """A legacy ``function_call``: hmarr's name + arguments + 3 for ``cl100k``; for ``o200k``,
    read as one tool call (unmeasured there, the higher of the two)."""
    if rule != CL100K:
        return calls_tokens([{"function": function}], count, rule)
    return FUNCTION_CALL_TOKENS + count(_text(function.get("name"))) + count(_text(function.get("arguments")))


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _compact(arguments: Any) -> str:
    """Arguments as the wrapper's JSON holds them: parsed and written compactly
    (``{"city": "Paris"}`` is read as ``{"city":"Paris"}``); text that is not JSON, as it is."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
        return json.dumps({} if value is None else value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return _text(arguments)


def text_margin(message: Mapping) -> int:
    """The tokens a call message's count holds on top for text beside its calls (the margin of
    :func:`message_margins`, without naming the shapes)."""
    return TEXT_WITH_CALLS_TOKENS if _has_text(message.get("content")) else 0


def message_margins(message: Mapping, rule: str) -> tuple[list[str], int]:
    """The shapes of one message no recorded count covers, and the tokens its count
    holds on top for them (already in :meth:`TokenCounter.count_message`).

    >>> message_margins({"role": "assistant", "content": "Let me look.", "tool_calls": [{"function": {"name": "f"}}]}, "o200k")
    (['text beside tool calls'], 4)
    """
    shapes: list[str] = []
    margin = 0
    calls = message.get("tool_calls")
    calls = [call for call in calls if isinstance(call, Mapping)] if isinstance(calls, list) else []
    if calls:
        margin = text_margin(message)
        if margin:
            shapes.append("text beside tool calls")
        if len(calls) > 2:
            shapes.append("more than two parallel tool calls")
        if rule == CL100K:
            shapes.append("tool calls on a cl100k model")
        elif rule == HARMONY_O:
            shapes.append("tool calls on an o-series model")
        elif rule == HARMONY and len(calls) > 1:
            shapes.append("parallel tool calls on GPT-5")
        for call in calls if len(calls) > 1 else ():
            arguments = _function(call).get("arguments")
            if isinstance(arguments, str) and not _is_json(arguments):
                shapes.append("parallel call arguments that are not JSON")
                break
    if rule != CL100K and isinstance(message.get("function_call"), Mapping):
        shapes.append("legacy function_call")
    if rule != CL100K and message.get("role") == "function":
        shapes.append("legacy function result")
    return shapes, margin


_TEXT_PARTS = frozenset(("text", "input_text", "output_text", "refusal"))


def _has_text(content: Any) -> bool:
    """Whether a message's content holds text (reasoning and thinking parts are not text)."""
    if isinstance(content, str):
        return bool(content)
    if not isinstance(content, list):
        return False
    return any(
        bool(part) if isinstance(part, str)
        else isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS and bool(part.get("text") or part.get("refusal"))
        for part in content
    )


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
