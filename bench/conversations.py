"""The inputs: seeded synthetic conversations and the real shared fixtures.

The synthetic conversations live in ``tests/support/synthetic.py``, which the
tests share (a seeded generator: the same ``n`` and ``seed`` give the same chat
on every machine); this module re-exports them.

The real fixtures (``../shared/fixtures`` beside the checkout, or
``$CONTEXTFIT_SHARED_FIXTURES``) are read with
:func:`contextfit.inputs.formats.load_conversation_file`; files it cannot read as a chat
(cards, lorebooks, token tables) are skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from contextfit.inputs.formats import load_conversation_file
from tests.support.synthetic import Conversation, synthetic, synthetic_turns, user_requests

__all__ = ["FIXTURES", "Conversation", "fixture", "fixture_paths", "fixtures", "from_source", "stitched", "synthetic",
           "synthetic_turns", "user_requests"]

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("CONTEXTFIT_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures"))


def fixture_paths(root: Path = FIXTURES) -> list[Path]:
    """Candidate conversation files under the shared fixtures (none when absent)."""
    if not root.is_dir():
        return []
    suffixes = {".json", ".jsonl"}
    skip = ("SOURCES", ".response.", "worldinfo", "Eldoria", "encodings", "chara_", "ccv3")
    return sorted(
        path for path in root.rglob("*") if path.suffix in suffixes and not any(part in path.name for part in skip)
    )


def fixture(path: str | Path) -> Conversation | None:
    """One fixture as a conversation, or ``None`` when it is not a chat."""
    import contextfit

    path = Path(path)
    try:
        conversation = load_conversation_file(path)
    except contextfit.ContextfitError:
        return None
    messages = list(conversation.messages)
    if len(messages) < 2:
        return None
    name = f"{path.parent.name}/{path.name}"
    return Conversation(name, messages, {"kind": "fixture", "path": str(path)})


def fixtures(root: Path = FIXTURES) -> list[Conversation]:
    """Every shared fixture that reads as a chat of two messages or more."""
    return [chat for chat in map(fixture, fixture_paths(root)) if chat is not None]


def _records(path: Path) -> list[list[dict]]:
    """The chats of one fixture file: each record of a dataset (a JSON list, or JSON lines, of
    ShareGPT / LLaMA-Factory / DialogStudio records), else the file as one chat."""
    import contextfit

    try:
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        else:
            rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        rows = None
    if isinstance(rows, list) and len(rows) > 1 and all(
        isinstance(row, dict) and ("conversations" in row or "messages" in row or "log" in row) for row in rows
    ):
        chats = []
        for row in rows:
            try:
                chats.append(list(contextfit.load_conversation(json.dumps(row)).messages))
            except contextfit.ContextfitError:
                continue
        return [chat for chat in chats if len(chat) >= 2]
    chat = fixture(path)
    return [] if chat is None else [chat.messages]


_LINK_KEYS = ("tool_call_id", "toolCallId", "callId", "tool_use_id")


def _own_links(value: Any, prefix: str) -> Any:
    """``value`` with every tool link id (call ids, result ids, Anthropic ``tool_use`` /
    ``tool_result`` ids) prefixed: chats joined end to end keep ids of their own, as one
    real conversation has (two datasets both number their calls ``call_1``)."""
    if isinstance(value, list):
        return [_own_links(item, prefix) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: _own_links(item, prefix) for key, item in value.items()}
    for key in _LINK_KEYS:
        if isinstance(out.get(key), str):
            out[key] = prefix + out[key]
    if isinstance(out.get("id"), str) and (out.get("type") in ("function", "tool_use") or "function" in out):
        out["id"] = prefix + out["id"]
    return out


def stitched(turns: int, root: Path = FIXTURES) -> Conversation | None:
    """The shared fixtures' real chats joined end to end, in file order and again from the
    first, until ``turns`` user requests: one long chat of real text (English, tool calls,
    reasoning, role-play), its first system prompt kept and the others left out, each
    joined chat's tool ids made its own. ``None`` without the fixtures."""
    chats = [chat for path in fixture_paths(root) for chat in _records(path)]
    if not chats:
        return None
    messages: list[dict] = [{"role": "system", "content": "You are a helpful assistant. Use the tools when they help."}]
    for number in range(100_000):
        joined = [m for m in chats[number % len(chats)] if m.get("role") not in ("system", "developer")]
        messages += _own_links(joined, f"j{number}-")
        if len(user_requests(messages)) >= turns:
            break
    cut = user_requests(messages)[turns - 1]
    return Conversation(f"fixtures-stitched-{turns}", messages[: cut + 1], {"kind": "stitched", "turns": turns})


def from_source(source: dict) -> Conversation:
    """Rebuild a conversation from its ``source`` (in a worker process)."""
    if source["kind"] == "synthetic":
        return synthetic(source["size"], source["seed"])
    if source["kind"] == "stitched":
        chat = stitched(source["turns"])
        if chat is None:
            raise ValueError("the shared fixtures are not there")
        return chat
    chat = fixture(source["path"])
    if chat is None:
        raise ValueError(f"{source['path']} is not a readable conversation")
    return chat
