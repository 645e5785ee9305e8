"""``clear-tool-results`` against ``truncate`` on tool-heavy chats.

Not a timing: for each chat and budget, what each strategy keeps — prompt
tokens, messages sent, how many of them are cleared results, tool calls sent
with their result, and the oldest message still sent. Inputs: the seeded
synthetic chat (about 10% of assistant turns call tools) and the
llama-factory glaive tool-call demo records one after another as one long
agent chat (from ``../shared/fixtures`` when present). The pydantic-ai
recorded requests are left out: their tool results are a few tokens, no
longer than a placeholder, so both strategies keep the same there (the test
suite fits them, tests/fitting/test_clear_tool_results.py).

    .venv/bin/python -m bench.clearing
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import contextfit
from contextfit.inputs.formats import load_conversation
from contextfit.inputs.messages import link_states

from .conversations import FIXTURES, Conversation, synthetic

SHARES = (0.25, 0.5, 0.75)
STRATEGIES = ("truncate", "clear-tool-results")


def glaive_agent(root: Path = FIXTURES, records: int = 60) -> Conversation | None:
    """The first ``records`` glaive tool-call demos as one chat (ids made unique per record)."""
    path = root / "llama-factory" / "glaive_toolcall_en_demo.json"
    if not path.is_file():
        return None
    chat: list[dict] = []
    for number, record in enumerate(json.loads(path.read_text())[:records]):
        for message in load_conversation(record).messages:
            message = {key: value for key, value in message.items() if key != "meta"}
            if "tool_call_id" in message:
                message["tool_call_id"] = f"r{number}_{message['tool_call_id']}"
            if message.get("tool_calls"):
                message["tool_calls"] = [{**call, "id": f"r{number}_{call['id']}"} for call in message["tool_calls"]]
            chat.append(message)
    return Conversation(f"glaive x{records}", chat, {"kind": "fixture", "path": str(path)})


def inputs(use_fixtures: bool = True) -> list[Conversation]:
    chats = [synthetic(2_000)]
    if use_fixtures:
        glaive = glaive_agent()
        chats += [glaive] if glaive is not None else []
    return chats


def measure(chat: Conversation, counter=None) -> list[dict]:
    """One row per budget share and strategy."""
    counter = counter or contextfit.token_counter("gpt-4o")
    messages = chat.messages
    total = counter(messages)
    rows = []
    for share in SHARES:
        budget = int(total * share)
        for strategy in STRATEGIES:
            try:
                result = contextfit.shift_context(messages, counter, budget, strategy=strategy, interceptors=())
            except contextfit.TokenBudgetExceeded:
                rows.append({"chat": chat.name, "share": share, "budget": budget, "strategy": strategy, "error": True})
                continue
            sent = {id(m) for m in result.kept}
            cleared = sum(1 for d in result.decisions if d.index is None and d.reason == "compressed")
            states = link_states(result.kept)
            rows.append({
                "chat": chat.name,
                "share": share,
                "budget": budget,
                "strategy": strategy,
                "error": False,
                "tokens": result.tokens,
                "messages": len(result.kept),
                "intact": sum(1 for m in messages if id(m) in sent),
                "cleared": cleared,
                "calls": sum(1 for state in states.values() if state == (True, True)),
                "oldest": _oldest_sent(result),
                "total_messages": len(messages),
            })
    return rows


def _oldest_sent(result) -> int | None:
    """The input position of the oldest chat message sent (as is, or cleared in its place)."""
    positions = [d.index if d.index is not None else d.sources[0] for d in result.decisions
                 if d.included and d.kind == "history" and (d.index is not None or d.sources)]
    return min(positions) if positions else None


def markdown(use_fixtures: bool = True) -> str:
    """The section the bench report carries."""
    lines = [
        "## clear-tool-results against truncate (tool-heavy chats)",
        "",
        "Same counter (gpt-4o, exact), budgets as a share of the chat's tokens; `keep` = 3. "
        "Messages sent count cleared results; intact: input messages sent unchanged; calls: tool "
        "calls sent with their result; oldest: position of the oldest chat message still sent.",
        "",
        "| chat | budget | strategy | prompt tokens | messages sent | intact | cleared | calls | oldest |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for chat in inputs(use_fixtures):
        for row in measure(chat):
            budget = f"{row['share']:.0%} = {row['budget']:,}"
            if row["error"]:
                lines.append(f"| {chat.name} | {budget} | {row['strategy']} | protected blocks do not fit | | | | | |")
                continue
            lines.append(
                f"| {chat.name} ({row['total_messages']} msgs) | {budget} | {row['strategy']} | {row['tokens']:,} | "
                f"{row['messages']} | {row['intact']} | {row['cleared']} | {row['calls']} | {row['oldest']} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown("--no-fixtures" not in sys.argv[1:]))
