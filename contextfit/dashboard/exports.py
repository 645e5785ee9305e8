"""The dashboard's downloads: a plan's request, blocks and JSON, a replay's turns and JSON, and their file names.

Every file is made from a result when its button is clicked; text cells go
through :func:`spreadsheet_cell`, so a message that starts with ``=`` is never
a formula when the CSV is opened.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..amounts import csv_dollars
from ..pipeline.plan import PromptPlan
from ..replays.run import Replay


def file_stem(name: str | None, fallback: str = "conversation") -> str:
    """A part of a download's file name that names the conversation: the letters and
    digits of ``name`` (without a chat file's extension), lowercased, joined by ``-``,
    at most 40 characters; ``fallback`` when none is left.

    >>> file_stem("Seraphina's chat (2).jsonl"), file_stem(" / "), file_stem("Αθήνα 東京.json")
    ('seraphina-s-chat-2', 'conversation', 'αθήνα-東京')
    """
    text = str(name or "")
    stem, dot, suffix = text.rpartition(".")
    if dot and suffix.lower() in ("json", "jsonl", "png", "txt", "md", "csv"):
        text = stem
    words = _NOT_WORD.sub("-", text.replace("_", "-")).strip("-").lower()
    return words[:40].strip("-") or fallback


_NOT_WORD = re.compile(r"[^\w]+")


def chat_stem(chat_id: str) -> str:
    """What a stored chat's download names say: ``chat-`` and its id, once.

    >>> chat_stem("chat-49c4b56a"), chat_stem("support 7")
    ('chat-49c4b56a', 'chat-support-7')
    """
    stem = file_stem(chat_id, "stored")
    return stem if stem.startswith("chat-") else f"chat-{stem}"


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as typed: text that starts like a formula
    (``=``, ``+``, ``-``, ``@``, a tab or a carriage return: a block's text, a
    fact's name, a label) is quoted with a leading apostrophe, so it is never run.
    Numbers stay numbers.

    >>> [spreadsheet_cell(value) for value in ("=HYPERLINK(1)", "-1 day", "ORD-7731", -3)]
    ["'=HYPERLINK(1)", "'-1 day", 'ORD-7731', -3]
    """
    if isinstance(value, str) and value.startswith(("=", "+", "-", "@", "\t", "\r")):
        return "'" + value
    return value


# -- a plan (Compare) ----------------------------------------------------------------------


def block_rows(plan: PromptPlan) -> list[dict[str, Any]]:
    """One row per block, in prompt order (the blocks table and its CSV)."""
    return [
        {"#": block.index, "id": block.id, "role": block.role, "kind": block.kind, "tokens": block.tokens,
         "fate": block.fate, "reason": block.reason, "text": block.content}
        for block in plan.blocks
    ]


def blocks_csv(plan: PromptPlan) -> str:
    """The blocks table as CSV, every text cell through :func:`spreadsheet_cell`
    (a pasted message that starts with ``=`` is not a formula when the file is opened)."""
    rows = block_rows(plan)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else ["#", "id"])
    writer.writeheader()
    writer.writerows({key: spreadsheet_cell(value) for key, value in row.items()} for row in rows)
    return out.getvalue()


def provider_json(plan: PromptPlan) -> str:
    """What is sent, as JSON: the messages (and Anthropic's ``system``)."""
    body: dict[str, Any] = {"model": plan.model}
    if plan.provider_system is not None:
        body["system"] = plan.provider_system
    body["messages"] = plan.provider_messages
    return json.dumps(body, ensure_ascii=False, indent=2)


def plan_json(plan: PromptPlan) -> str:
    """The whole plan as JSON (the API's shape)."""
    return json.dumps(plan.to_dict(), ensure_ascii=False, indent=2)


@dataclass(frozen=True, slots=True)
class PlanFile:
    """One of a strategy's downloads on the Compare page: its button's label, how the file is made
    from the plan, the end of its name, its type, and the button's key (with the strategy's name)."""

    label: str
    make: Callable[[PromptPlan], str]
    suffix: str
    mime: str
    key: str


#: A strategy's downloads: the request as sent, the blocks as a table, the whole plan.
PLAN_FILES = (PlanFile("Provider messages (JSON)", provider_json, "messages.json", "application/json", "messages"),
              PlanFile("Blocks (CSV)", blocks_csv, "blocks.csv", "text/csv", "csv"),
              PlanFile("Plan (JSON)", plan_json, "plan.json", "application/json", "plan"))


# -- a replay (Replay) ---------------------------------------------------------------------

#: The columns of :func:`turns_csv`, one row per turn and strategy.
TURN_COLUMNS = ("strategy", "turn", "message index", "prompt tokens", "sent blocks", "dropped", "summarized",
                "compressed", "shared tokens", "cache read", "cache write", "output tokens", "input $",
                "cached input $", "cache write $", "output $", "total $", "retention", "lost facts", "error")



def turns_csv(result: Replay) -> str:
    """Every turn of every strategy as CSV (:data:`TURN_COLUMNS`): the replay's lines as numbers,
    costs in dollars (empty without prices), the lost facts joined by ``; ``."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(TURN_COLUMNS)
    for label, rows in result.turns.items():
        for row in rows:
            cost = row.cost
            money = ["", "", "", "", ""] if cost is None else list(map(csv_dollars, [
                cost.input, cost.cached_input, cost.cache_write, cost.output, cost.total]))
            writer.writerow(map(spreadsheet_cell, [
                label, row.turn, row.message_index, "" if row.prompt_tokens is None else row.prompt_tokens,
                row.sent_blocks, row.dropped, row.summarized, row.compressed, row.shared_tokens, row.cache_read,
                row.cache_write, row.output_tokens, *money, "" if row.retention is None else row.retention,
                "; ".join(row.lost), row.error or "",
            ]))
    return out.getvalue()


def replay_json(result: Replay) -> str:
    """The whole replay as JSON: what ``POST /api/v2/replay`` answers."""
    return json.dumps(result.to_dict(), ensure_ascii=False, indent=2)
