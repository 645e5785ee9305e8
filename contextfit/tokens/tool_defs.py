"""The request's tool definitions as a block of the plan, and what each tool costs.

Tool schemas are sent with every request and can eat a large part of the
window without showing up anywhere. The pipeline counts them once
(:meth:`~contextfit.tokens.chat_counter.TokenCounter.count_tools`) and takes them off the budget
before fitting; this module makes them visible: one protected plan block of
kind ``tools`` (they cannot be dropped without changing the request), and a
per-tool view, largest first.

For OpenAI models the count is the one the API bills (the definitions
rendered as the model reads them); for every other family it is the
definitions' JSON counted with the profile's estimate, and the view says so
(``exact: false``).

Deferred tools — Anthropic's and OpenAI's ``defer_loading: true``, which a
tool search loads only when the model looks for them — are registered, not
sent: the request carries them, the prompt does not, so their schemas are
not counted (:func:`split_deferred`). A deferred tool a tool search in the
conversation has already loaded (an Anthropic ``tool_reference``) is sent
and counted like any other; the tool-search tool itself is always counted.
For OpenAI, whose guide says the model still sees the name and description
of each searchable tool, those are counted (:func:`deferred_tokens`), and
OpenAI's hosted ``{"type": "tool_search"}`` costs a measured estimate
(``openai_tools.TOOL_SEARCH_TOKENS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import openai_tools
from .chat_counter import TokenCounter
from .openai_tools import typescript_namespace

TOOLS = "tools"
#: The id of the tools block in plans, audits and CSV exports.
TOOLS_ID = "tools"
#: How the plan's tool rows name a deferred tool that no tool search has loaded.
NOT_SENT = "registered, not sent"
#: ... and every other tool.
SENT = "sent"


@dataclass(frozen=True, slots=True)
class ToolCost:
    """What one tool definition adds to every request."""

    name: str
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tokens": self.tokens}


def is_deferred(tool: Any) -> bool:
    """Whether a definition is marked ``defer_loading: true`` (at its top, or in its OpenAI ``function``).

    >>> is_deferred({"name": "rates", "defer_loading": True}), is_deferred({"type": "tool_search"})
    (True, False)
    """
    if not isinstance(tool, Mapping):
        return False
    function = tool.get("function")
    return tool.get("defer_loading") is True or (isinstance(function, Mapping) and function.get("defer_loading") is True)


def loaded_by_search(messages: Iterable[Any]) -> set[str]:
    """Names of the tools a tool search in ``messages`` has loaded: Anthropic ``tool_reference``
    blocks, in a server ``tool_search_tool_result`` or a client ``tool_result``.

    >>> loaded_by_search([{"role": "assistant", "content": [{"type": "tool_search_tool_result", "content": {
    ...     "type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "rates"}]}}]}])
    {'rates'}
    """
    names: set[str] = set()
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            for part in content:
                _references(part, names, 0)
    return names


def _references(value: Any, names: set[str], depth: int) -> None:
    if depth > 4:
        return
    if isinstance(value, Mapping):
        if value.get("type") == "tool_reference" and isinstance(value.get("tool_name"), str):
            names.add(value["tool_name"])
            return
        if value.get("type") in ("tool_search_tool_result", "tool_result", "tool_search_tool_search_result"):
            for key in ("content", "tool_references"):
                _references(value.get(key), names, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _references(item, names, depth + 1)


def split_deferred(tools: Sequence[Any] | None, messages: Iterable[Any] = ()) -> tuple[list[Any], list[Any]]:
    """(sent, deferred): the definitions the prompt carries, and the deferred ones no tool
    search in ``messages`` has loaded, each in the request's order.

    >>> rates = {"name": "rates", "defer_loading": True}
    >>> search = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    >>> [[tool_name(t) for t in part] for part in split_deferred([rates, search])]
    [['tool_search_tool_bm25'], ['rates']]
    """
    if not tools:
        return [], []
    loaded = loaded_by_search(messages) if any(map(is_deferred, tools)) else set()
    sent, deferred = [], []
    for tool in tools:
        (deferred if is_deferred(tool) and tool_name(tool) not in loaded else sent).append(tool)
    return sent, deferred


def deferred_tokens(deferred: Sequence[Any], counter: TokenCounter) -> int:
    """What deferred tools still cost: for OpenAI, each one's name and description (the model
    sees them to search) plus a measured overhead (``openai_tools.DEFERRED_TOOL_TOKENS``);
    elsewhere nothing."""
    if not deferred or not counter.chat.openai:
        return 0
    return sum(openai_tools.deferred_stub_tokens(_function(tool), counter.tokenizer.count) for tool in deferred)


def request_tokens(counter: TokenCounter, sent: Sequence[Any], deferred: Sequence[Any] = (),
                   systems: Sequence[Mapping] = ()) -> int:
    """What a request's tools cost: the ``sent`` definitions, plus what ``deferred`` ones still cost.

    ``systems`` are the system messages the prompt can open with, the last of them certain to
    be sent (a fit never drops it): OpenAI definitions join the first system message, 4 tokens
    less, so the count is the highest over those candidates; empty, no system message is certain.

    >>> from contextfit import token_counter
    >>> ping = {"type": "function", "function": {"name": "ping", "parameters": {}}}
    >>> counter = token_counter("gpt-4o")
    >>> request_tokens(counter, [ping]), request_tokens(counter, [ping], systems=[{"role": "system", "content": "Hi."}])
    (23, 19)
    """
    tokens = deferred_tokens(deferred, counter)
    if not sent:
        return tokens
    if not systems:
        return tokens + counter.count_tools(list(sent))
    return tokens + max(counter.count_tools(list(sent), [system]) for system in systems)


def _function(tool: Any) -> Mapping:
    function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
    return function if isinstance(function, Mapping) else {}


def tool_name(tool: Any) -> str:
    """A tool definition's name: OpenAI ``function.name``, else a top-level ``name``
    (Anthropic, MCP), else its ``type`` (a hosted tool: ``tool_search``), else ``"tool"``.

    >>> tool_name({"type": "function", "function": {"name": "get_weather"}}), tool_name({"name": "search"})
    ('get_weather', 'search')
    >>> tool_name({"type": "tool_search"})
    'tool_search'
    """
    if isinstance(tool, Mapping):
        function = tool.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return function["name"]
        if isinstance(tool.get("name"), str):
            return tool["name"]
        if isinstance(tool.get("type"), str) and tool["type"] not in ("", "function"):
            return tool["type"]
    return "tool"


def is_exact(counter: TokenCounter) -> bool:
    """Whether ``counter`` counts tool definitions as the provider bills them (OpenAI's exact profiles)."""
    return counter.chat.tools_format == "typescript" and not counter.approximate


def tool_costs(tools: Sequence[Any] | None, counter: TokenCounter) -> list[ToolCost]:
    """Tokens per tool, largest first (ties by name). Each is what the request
    costs with that tool alone less what it costs with none, so the shared
    wrapper (OpenAI's ``namespace functions`` block) is not in any of them.

    >>> from contextfit import token_counter
    >>> ping = {"type": "function", "function": {"name": "ping", "parameters": {}}}
    >>> weather = {"type": "function", "function": {"name": "weather", "description": "Weather now.",
    ...            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    >>> [(cost.name, cost.tokens) for cost in tool_costs([ping, weather], token_counter("gpt-4o"))]
    [('weather', 16), ('ping', 7)]
    """
    if not tools:
        return []
    wrapper = _wrapper(counter)
    costs = [ToolCost(tool_name(tool), max(counter.count_tools([tool]) - wrapper, 0)) for tool in tools]
    return sorted(costs, key=lambda cost: (-cost.tokens, cost.name))


def _wrapper(counter: TokenCounter) -> int:
    """What the definitions' wrapper costs with no tool in it."""
    if counter.chat.tools_format == "typescript":
        return counter.tokenizer.count(typescript_namespace([])) + 9
    return counter.tokenizer.count("[]")


def summary(tools: Sequence[Any], deferred: Sequence[Any] = ()) -> str:
    """The tools block's text: how many definitions, their names, and the deferred ones.

    >>> summary([{"name": "a"}, {"name": "b"}])
    '2 tool definitions: a, b'
    >>> summary([{"name": "search"}], [{"name": "rates"}])
    '1 tool definition: search; 1 more registered, not sent: rates'
    >>> summary([], [{"name": "rates"}])
    'no tool definition sent; 1 registered, not sent: rates'
    """
    later = ", ".join(tool_name(tool) for tool in deferred)
    if not tools:
        return f"no tool definition sent; {len(deferred)} {NOT_SENT}: {later}"
    names = ", ".join(tool_name(tool) for tool in tools)
    text = f"{len(tools)} tool definition{'s' if len(tools) != 1 else ''}: {names}"
    if deferred:
        text += f"; {len(deferred)} more {NOT_SENT}: {later}"
    return text
