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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .chat_counter import TokenCounter, typescript_namespace

TOOLS = "tools"
#: The id of the tools block in plans, audits and CSV exports.
TOOLS_ID = "tools"


@dataclass(frozen=True, slots=True)
class ToolCost:
    """What one tool definition adds to every request."""

    name: str
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tokens": self.tokens}


def tool_name(tool: Any) -> str:
    """A tool definition's name: OpenAI ``function.name``, else a top-level ``name``
    (Anthropic, MCP), else ``"tool"``.

    >>> tool_name({"type": "function", "function": {"name": "get_weather"}}), tool_name({"name": "search"})
    ('get_weather', 'search')
    """
    if isinstance(tool, Mapping):
        function = tool.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return function["name"]
        if isinstance(tool.get("name"), str):
            return tool["name"]
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
    [('weather', 17), ('ping', 7)]
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


def summary(tools: Sequence[Any]) -> str:
    """The tools block's text: how many definitions, and their names.

    >>> summary([{"name": "a"}, {"name": "b"}])
    '2 tool definitions: a, b'
    """
    names = ", ".join(tool_name(tool) for tool in tools)
    return f"{len(tools)} tool definition{'s' if len(tools) != 1 else ''}: {names}"
