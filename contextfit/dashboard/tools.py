"""The ``tools`` budget view: what each tool definition costs, largest first.

The plan carries it as ``plan.tools_view`` (``to_dict()["tools"]``); this is
the table a page draws from it, with no Streamlit here.
"""

from __future__ import annotations

from typing import Any

from ..pipeline.plan import PromptPlan


def tool_rows(plan: PromptPlan) -> list[dict[str, Any]]:
    """One row per tool definition of the request, largest first: its ``tool``
    name, ``tokens``, ``share`` of all the definitions' tokens (the shared
    wrapper is in none of them) and whether the count is ``exact`` (OpenAI
    models) or estimated. Empty when the request has no tools.

    >>> from contextfit import plan_prompt
    >>> ping = {"type": "function", "function": {"name": "ping", "parameters": {}}}
    >>> weather = {"type": "function", "function": {"name": "weather", "description": "Weather now.",
    ...            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    >>> plan = plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o", tools=[ping, weather])
    >>> [(row["tool"], row["tokens"], row["exact"]) for row in tool_rows(plan)]
    [('weather', 17, True), ('ping', 7, True)]
    """
    view = plan.tools_view or {}
    per_tool = view.get("perTool") or []
    total = view.get("tokens") or 0
    exact = bool(view.get("exact"))
    rows = [
        {"tool": cost["name"], "tokens": cost["tokens"], "share": cost["tokens"] / total if total else 0.0, "exact": exact}
        for cost in per_tool
    ]
    return sorted(rows, key=lambda row: (-row["tokens"], row["tool"]))
