"""Where a prompt's tokens go: by kind of block (SillyTavern's prompt
itemization) and, for a request with tools, by tool.

The rows of :func:`by_kind` add up to the plan's ``prompt_tokens`` exactly:
what no block holds — the reply priming and the chat template's framing
that belongs to no message — is its own row, "chat overhead".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..pipeline.plan import PromptPlan
from .charts import KIND_LABELS
from ..tokens.tool_defs import SENT
from .tools import tool_rows

#: Kinds in itemization order; a kind not listed (a plugin's) comes after them, by name.
KIND_ORDER = ("system", "character", "persona", "lorebook", "memory", "example", "tools", "reasoning",
              "history", "summary")
OVERHEAD = "chat overhead"
TOOL_FRAMING = "tool framing (shared by all tools)"


def by_kind(plan: PromptPlan) -> dict[str, int]:
    """Tokens sent by kind of block, in itemization order, plus "chat overhead";
    the values add up to ``plan.prompt_tokens``.

    >>> from contextfit import plan_prompt
    >>> plan = plan_prompt([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], model="gpt-4o")
    >>> rows = by_kind(plan)
    >>> list(rows), sum(rows.values()) == plan.prompt_tokens
    (['system prompt', 'history', 'chat overhead'], True)
    """
    totals: dict[str, int] = {}
    for block in plan.blocks:
        if block.included and block.tokens:
            totals[block.kind] = totals.get(block.kind, 0) + block.tokens
    order = [kind for kind in KIND_ORDER if kind in totals] + sorted(k for k in totals if k not in KIND_ORDER)
    rows = {KIND_LABELS.get(kind, kind): totals[kind] for kind in order}
    overhead = plan.prompt_tokens - sum(totals.values())
    if overhead:
        rows[OVERHEAD] = overhead
    return rows


def breakdown_table(plans: Mapping[str, PromptPlan]) -> list[dict[str, Any]]:
    """One row per kind, one column per strategy (tokens; 0 where a strategy
    sends none), then a "total" row equal to each plan's ``prompt_tokens``."""
    columns = {name: by_kind(plan) for name, plan in plans.items()}
    kinds: list[str] = []
    for rows in columns.values():
        kinds += [kind for kind in rows if kind not in kinds and kind != OVERHEAD]
    if any(OVERHEAD in rows for rows in columns.values()):
        kinds.append(OVERHEAD)
    table = [{"kind": kind, **{name: rows.get(kind, 0) for name, rows in columns.items()}} for kind in kinds]
    table.append({"kind": "total", **{name: plan.prompt_tokens for name, plan in plans.items()}})
    return table


def per_tool(plan: PromptPlan) -> list[dict[str, Any]]:
    """Tokens per tool definition, largest first (:func:`contextfit.dashboard.tools.tool_rows`),
    with its ``status`` (``sent``, or ``registered, not sent`` for a deferred tool), then the
    framing every tool shares; the rows add up to the plan's ``tools_tokens``. Empty without tools.
    """
    rows = [{"tool": row["tool"], "tokens": row["tokens"], "status": row["status"]} for row in tool_rows(plan)]
    framing = plan.tools_tokens - sum(row["tokens"] for row in rows)
    if rows and framing:
        rows.append({"tool": TOOL_FRAMING, "tokens": framing, "status": SENT})
    return rows
