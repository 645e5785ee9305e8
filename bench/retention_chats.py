"""Retention on real long chats: the shared fixtures, with the default must-survive facts.

The fixtures' chats are short (1 to 10 messages each), so the bench joins
them end to end into long chats (``bench/conversations.py``'s ``stitched``:
real text, tool ids made unique) and hands them in. Each chat of at least
``min_messages`` messages is replayed
(:func:`contextfit.replay`, turn by turn) with every built-in strategy at a
budget of 10%, 15% and 25% of the whole chat's tokens; a fact is the default
entity rule's (``contextfit/replays/facts.py``: the entities of each user message that
an earlier message also holds must still be sent). Retention is the replay's:
facts present (verbatim or quoted by a summary or ledger) over facts in force,
all turns together. Chats that a replay cannot read are skipped; when the
folder is absent there are no rows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contextfit.errors import ContextfitError
from contextfit.inputs.formats import load_conversation_file
from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from contextfit.replays.run import replay, request_positions
from contextfit.retention.runner import MODEL, SHARES
from contextfit.tokens.chat_counter import token_counter

#: The chats read (relative to the fixtures folder): SillyTavern and TavernAI chats, ShareGPT.
CHATS = (
    "sillytavern/chats_2023/Aqua_1673181146000.jsonl",
    "sillytavern/chats_2023/Darkness_1673225255706.jsonl",
    "sillytavern/chats_2023/Megumin_1673323621108.jsonl",
    "tavernai/City_Explorer_Story_1687599323821.jsonl",
    "dialogstudio/sharegpt_original_example.json",
)


def fixtures_folder() -> Path:
    """``$CONTEXTFIT_SHARED_FIXTURES``, else ``../shared/fixtures`` beside the checkout."""
    here = Path(__file__).resolve().parents[1]
    return Path(os.environ.get("CONTEXTFIT_SHARED_FIXTURES", here.parent / "shared" / "fixtures"))


@dataclass(frozen=True, slots=True)
class ChatRow:
    """One chat, one strategy, one budget share: the replay's retention and tokens."""

    chat: str
    messages: int
    strategy: str
    share: float
    budget: int
    retention: float | None
    tokens_sent: int

    def to_dict(self) -> dict:
        return {"chat": self.chat, "messages": self.messages, "strategy": self.strategy, "budgetShare": self.share,
                "budget": self.budget, "retention": self.retention, "tokensSent": self.tokens_sent}


def fixture_chats(folder: Path | None = None) -> list[tuple[str, list[dict]]]:
    """``(name, messages)`` of each chat of :data:`CHATS` that reads (none when the folder is absent)."""
    root = fixtures_folder() if folder is None else folder
    found = []
    for name in CHATS:
        path = root / name
        if not path.is_file():
            continue
        try:
            found.append((name, list(load_conversation_file(path).messages)))
        except ContextfitError:
            continue
    return found


def chat_rows(chats: Sequence[tuple[str, Sequence[dict]]], shares: Sequence[float] = SHARES,
              strategies: Sequence[str] = BUILTIN_STRATEGIES, model: str = MODEL,
              min_messages: int = 20) -> list[ChatRow]:
    """The rows for each ``(name, messages)`` chat of at least ``min_messages`` messages (module docstring)."""
    counter = token_counter(model)
    rows = []
    for name, chat in chats:
        messages = list(chat)
        if len(messages) < min_messages or not request_positions(messages):
            continue
        conversation = messages
        total = counter(messages)
        for share in shares:
            budget = int(share * total)
            try:
                result = replay(conversation, model=model, strategies=list(strategies), context_limit=budget,
                                response_reserve=0)
            except ContextfitError:
                continue
            for label, totals in result.totals.items():
                sent = sum(row.prompt_tokens or 0 for row in result.turns[label])
                rows.append(ChatRow(name, len(messages), label, share, budget, totals.retention, sent))
    return rows


def markdown_table(rows: Sequence[ChatRow]) -> str:
    """Retention per strategy and budget share (one column per chat, and all chats' mean)."""
    chats = list(dict.fromkeys(row.chat for row in rows))
    keys = list(dict.fromkeys((row.strategy, row.share) for row in rows))
    found = {(row.chat, row.strategy, row.share): row for row in rows}
    head = ["strategy", "budget", *[f"{chat} ({found[(chat, *keys[0])].messages} messages)" for chat in chats], "mean"]
    lines = ["| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (len(chats) + 1)]
    for strategy, share in keys:
        values = [found.get((chat, strategy, share)) for chat in chats]
        cells = ["–" if row is None or row.retention is None else f"{row.retention:.1%}" for row in values]
        known = [row.retention for row in values if row is not None and row.retention is not None]
        mean = f"{sum(known) / len(known):.1%}" if known else "–"
        lines.append(f"| {strategy} | {share:.0%} | {' | '.join(cells)} | {mean} |")
    return "\n".join(lines)


__all__ = ["CHATS", "ChatRow", "chat_rows", "fixture_chats", "fixtures_folder", "markdown_table"]
