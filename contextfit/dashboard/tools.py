"""The ``tools`` budget view: what each tool definition costs, largest first.

The plan carries it as ``plan.tools_view`` (``to_dict()["tools"]``); this is
the table a page draws from it, with no Streamlit here.
"""

from __future__ import annotations

from typing import Any

from ..pipeline.plan import PromptPlan
from ..tokens.tool_defs import SENT


def tool_rows(plan: PromptPlan) -> list[dict[str, Any]]:
    """One row per tool definition of the request: its ``tool`` name, ``tokens``,
    ``share`` of all the definitions' tokens (the shared wrapper is in none of
    them), whether the count is ``exact`` (OpenAI models) or estimated, and its
    ``status``: ``sent`` (largest first), then the deferred tools no tool search
    has loaded, ``registered, not sent`` (no tokens, or for OpenAI the estimated
    cost of the name and description the model still sees). Empty when the
    request has no tools.

    >>> from contextfit import plan_prompt
    >>> ping = {"type": "function", "function": {"name": "ping", "parameters": {}}}
    >>> weather = {"type": "function", "function": {"name": "weather", "description": "Weather now.",
    ...            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    >>> plan = plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o", tools=[ping, weather])
    >>> [(row["tool"], row["tokens"], row["exact"], row["status"]) for row in tool_rows(plan)]
    [('weather', 16, True, 'sent'), ('ping', 7, True, 'sent')]
    >>> rates = {"name": "rates", "description": "Exchange rates.", "defer_loading": True,
    ...          "input_schema": {"type": "object", "properties": {"pair": {"type": "string"}}}}
    >>> search = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    >>> plan = plan_prompt([{"role": "user", "content": "Hi"}], model="claude-sonnet-4", tools=[rates, search])
    >>> [(row["tool"], row["status"]) for row in tool_rows(plan)]
    [('tool_search_tool_bm25', 'sent'), ('rates', 'registered, not sent')]
    """
    view = plan.tools_view or {}
    per_tool = view.get("perTool") or []
    total = view.get("tokens") or 0
    exact = bool(view.get("exact"))
    rows = [
        {"tool": cost["name"], "tokens": cost["tokens"], "share": cost["tokens"] / total if total else 0.0, "exact": exact,
         "status": SENT}
        for cost in per_tool
    ]
    rows.sort(key=lambda row: (-row["tokens"], row["tool"]))
    # a deferred tool's schema is not sent; for OpenAI its name and description are (their tokens)
    rows += [{"tool": tool["name"], "tokens": tool.get("tokens", 0), "share": tool.get("tokens", 0) / total if total else 0.0,
              "exact": False if tool.get("tokens") else exact, "status": tool["status"]}
             for tool in view.get("deferred") or ()]
    return rows
