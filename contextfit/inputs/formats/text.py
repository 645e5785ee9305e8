"""Plain-text transcripts: ``User:`` / ``Assistant:`` / ``System:`` lines.

A turn starts at a line with a speaker label and runs until the next one,
so turns can span many lines. Recognised labels (any case, optionally in
``**bold**``): user, human, you, assistant, ai, bot, model, gpt, system,
developer, ``{{user}}``, ``{{char}}``; this covers Anthropic's
``\\n\\nHuman: ... \\n\\nAssistant: ...`` form too. Without those labels,
``Name: text`` lines are read as speakers only when at least two names each
start two or more lines and the text opens with one of them. Text without
any speaker labels becomes one user message, with a warning.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.inputs.messages import HISTORY, SYSTEM

from .conversation import Conversation
from .fields import child, describe, plural
from .source import Parsed

ROLES = {
    "user": "user", "human": "user", "you": "user", "{{user}}": "user",
    "assistant": "assistant", "ai": "assistant", "bot": "assistant", "model": "assistant",
    "gpt": "assistant", "{{char}}": "assistant",
    "system": "system", "developer": "system",
}
# Every quantifier is bounded or separated by a required literal, so matching is linear.
_ROLE_LINE = re.compile(
    r"[ \t]{0,8}\*{0,2}(user|human|you|assistant|ai|bot|model|gpt|system|developer|\{\{user\}\}|\{\{char\}\})"
    r"\*{0,2}[ \t]{0,4}:\*{0,2}(?:[ \t]|\Z)(.*)",
    re.IGNORECASE | re.DOTALL,
)
_NAME_LINE = re.compile(r"([^\W\d_][\w'.\-]{0,30}(?: [^\W\d_][\w'.\-]{0,30}){0,2}):[ \t]+(.*)", re.DOTALL)
_USER_NAMES = frozenset({"you", "user", "me", "human", "anon", "anonymous", "{{user}}"})


def import_text(text: str) -> Conversation:
    """Read a plain-text transcript."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    labels = [_role_label(line) for line in lines]
    if any(label is not None for label in labels):
        return _build(lines, labels, names={})
    names = _speaker_names(lines)
    if names:
        labels = [_name_label(line, names) for line in lines]
        conversation = _build(lines, labels, names=names)
        roles = ", ".join(f"{name!r} as the {role}" for name, role in names.items())
        conversation.warnings.insert(0, f"Speaker names were read as: {roles}.")
        return conversation
    message = {"role": "user", "content": text.strip("\n"), "meta": {"id": "m0", "kind": HISTORY}}
    return Conversation(
        messages=[message],
        format="text",
        warnings=["No speaker labels (User: / Assistant:) were found; the whole text is one user message."],
    )


def import_text_record(parsed: Parsed) -> Conversation:
    """A JSON record holding transcripts, such as HH-RLHF's ``{"chosen", "rejected"}``."""
    value, root = parsed.value, parsed.root
    if isinstance(value, str):
        return import_text(value)
    if not isinstance(value, dict) or "chosen" not in value:
        raise InvalidConversation(
            f"Expected transcript text, or an object with a 'chosen' transcript (got {describe(value)}).",
            location=root,
        )
    chosen, path = value["chosen"], child(root, "chosen")
    warnings = []
    if isinstance(chosen, list):
        if not chosen:
            raise InvalidConversation(f"{path} is an empty list: there is no transcript to read.", location=path)
        if len(chosen) > 1:
            warnings.append(f"{path} holds {len(chosen)} transcripts; only the first was loaded.")
        chosen, path = chosen[0], child(path, 0)
    if not isinstance(chosen, str):
        raise InvalidConversation(f"{path} must be transcript text (got {describe(chosen)}).", location=path)
    if value.get("rejected") is not None:
        warnings.append("The 'rejected' transcripts are not included.")
    conversation = import_text(chosen)
    conversation.warnings[:0] = warnings
    return conversation


def _role_label(line: str) -> tuple[str, str, str] | None:
    match = _ROLE_LINE.match(line)
    if match is None:
        return None
    label = match.group(1)
    return ROLES[label.lower()], label, match.group(2)


def _speaker_names(lines: list[str]) -> dict[str, str]:
    """Names that start lines often enough to be speakers, with their roles."""
    counts: Counter[str] = Counter()
    first_name = None
    for line in lines:
        match = _NAME_LINE.match(line)
        if match and match.group(1)[0].isupper():
            counts[match.group(1)] += 1
            first_name = first_name or match.group(1)
        elif first_name is None and line.strip():
            return {}  # the text does not open with a speaker
    frequent = [name for name, count in counts.items() if count >= 2]
    if len(frequent) < 2 or len(counts) > 8:
        return {}
    users = [name for name in counts if name.lower() in _USER_NAMES]
    user = users[0] if users else first_name
    return {name: ("user" if name == user else "assistant") for name in counts}


def _name_label(line: str, names: dict[str, str]) -> tuple[str, str, str] | None:
    match = _NAME_LINE.match(line)
    if match and match.group(1) in names:
        return names[match.group(1)], match.group(1), match.group(2)
    return None


def _build(lines: list[str], labels: list[Any], names: dict[str, str]) -> Conversation:
    turns: list[tuple[str, str, list[str], int]] = []  # role, label, lines, first line number
    preamble: list[str] = []
    for number, (line, label) in enumerate(zip(lines, labels), start=1):
        if label is not None:
            role, speaker, rest = label
            turns.append((role, speaker, [rest], number))
        elif turns:
            turns[-1][2].append(line)
        else:
            preamble.append(line)
    warnings: list[str] = []
    messages: list[dict] = []
    intro = "\n".join(preamble).strip()
    if intro:
        messages.append({"role": "system", "content": intro, "meta": {"id": "preamble", "kind": SYSTEM}})
        warnings.append("The text before the first speaker label was kept as a system message.")
    empty = 0
    for index, (role, speaker, body, number) in enumerate(turns):
        content = "\n".join(body).strip()
        if not content:
            empty += 1
            continue
        message: dict[str, Any] = {"role": role, "content": content}
        meta: dict[str, Any] = {"id": f"m{index}", "kind": SYSTEM if role == "system" else HISTORY, "line": number}
        if speaker in names:
            meta["speaker"] = speaker
            if role == "assistant" and sum(1 for r in names.values() if r == "assistant") > 1:
                message["name"] = speaker
        message["meta"] = meta
        messages.append(message)
    if empty:
        warnings.append(f"{plural(empty, 'empty turn was', 'empty turns were')} dropped (a label with no text, "
                        "such as a closing 'Assistant:').")
    return Conversation(messages=messages, format="text", warnings=warnings)
