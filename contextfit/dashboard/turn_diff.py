"""What changed since the previous turn: the raw prompt of the last two requests, diffed.

SillyTavern users read the raw prompt a turn sent and compare it with the
next one to see what a strategy moved. :func:`turn_diff` plans the last two
requests of a conversation under one strategy — the conversation as Compare
plans it, and the request before it (the one that ended at the previous user
message, as a replay counts requests; a chat that goes on past its last user
message, a reply or an agent's tool round, has that user message's request
before it) — writes each as the provider receives it (:func:`raw_prompt`),
and diffs the two line by line.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..inputs import messages as msg
from ..pipeline.plan import PromptPlan, plan_prompt
from ..pipeline.settings import PlanSettings, settings_for
from ..replays.run import request_positions

#: Lines of context around each change.
CONTEXT_LINES = 2
#: The most diff lines shown (a first turn against a long chat can differ everywhere).
MOST_LINES = 400


def raw_prompt(plan: PromptPlan) -> str:
    """The prompt as the provider receives it, as text: the system text (an Anthropic request's
    ``system``), then each provider message under a ``[role]`` line, tool calls as ``→ name(args)``.

    >>> print(raw_prompt(plan_prompt([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    ...                              model="gpt-4o")))
    [system]
    Be brief.
    [user]
    Hi
    """
    lines: list[str] = []
    if plan.provider_system:
        lines += ["[system]", *plan.provider_system.splitlines()]
    for message in plan.provider_messages:
        role = message.get("role", "?")
        extra = message.get("tool_call_id") or message.get("name")
        lines.append(f"[{role}{' ' + str(extra) if extra else ''}]")
        lines += _content_lines(message.get("content"))
        for call in msg.tool_calls_of(message):
            lines.append(f"→ {call['name']}({call['arguments']})")
    return "\n".join(lines)


def _content_lines(content: Any) -> list[str]:
    if isinstance(content, str):
        return content.splitlines()
    if not isinstance(content, list):
        return [] if content is None else [json.dumps(content, ensure_ascii=False)]
    lines: list[str] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
            lines += part["text"].splitlines()
        elif isinstance(part, dict) and part.get("type") in ("tool_use", "tool_result"):
            lines.append(msg.part_text(part) or json.dumps(part, ensure_ascii=False))
        else:
            lines.append(json.dumps(part, ensure_ascii=False)[:500])
    return lines


def request_ends(messages: Sequence[dict]) -> list[int]:
    """Where each request of ``messages`` ends (a message count): each user request, and the whole
    chat when it goes on past its last request (a reply, an agent's tool round).

    >>> chat = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    >>> request_ends(chat), request_ends(chat[:2]), request_ends([])
    ([1, 3], [1, 2], [])
    """
    ends = [position + 1 for position in request_positions(messages)]
    if messages and (not ends or ends[-1] < len(messages)):
        ends.append(len(messages))
    return ends


@dataclass(frozen=True, slots=True)
class TurnDiff:
    """The last two requests under one strategy, and their raw prompts' unified diff."""

    strategy: str
    previous: PromptPlan
    latest: PromptPlan
    #: the unified diff's lines (at most :data:`MOST_LINES`, then one line saying how many more)
    lines: tuple[str, ...]
    added: int
    removed: int

    def summary(self) -> str:
        """One line: the two prompts' sizes and how many lines each side has that the other has not.

        Said per request: "turn 11 of 12" would need the chat's own turn numbering; the sizes say enough.
        """
        before, after = self.previous.prompt_tokens, self.latest.prompt_tokens
        if not self.added and not self.removed:
            return (f"Under {self.strategy}, the latest request sends the same prompt as the one before it "
                    f"({after:,} tokens).")
        change = after - before
        grew = f"grew by {change:,}" if change > 0 else f"shrank by {-change:,}" if change < 0 else "kept its size,"
        return (f"Under {self.strategy}, the prompt {grew} tokens ({before:,} → {after:,}): "
                f"{_lines(self.added)} added, {_lines(self.removed)} gone since the previous request.")

    def text(self) -> str:
        """The diff, for a ``diff`` code block."""
        return "\n".join(self.lines)


def _lines(count: int) -> str:
    return f"{count:,} line{'' if count == 1 else 's'}"


def turn_diff(conversation: Any, settings: PlanSettings, strategy: str) -> TurnDiff | None:
    """The last two requests of ``conversation`` (a :class:`~contextfit.Conversation` or message dicts)
    under ``strategy`` and ``settings``, diffed; ``None`` when it has only one request. A request
    that cannot be planned raises its :class:`~contextfit.errors.ContextfitError` (the page says it).

    >>> chat = [{"role": "user", "content": "My order is ORD-7."}, {"role": "assistant", "content": "Noted."},
    ...         {"role": "user", "content": "Where is it?"}]
    >>> found = turn_diff(chat, PlanSettings(model="gpt-4o"), "truncate")
    >>> found.summary()
    'Under truncate, the prompt grew by 15 tokens (14 → 29): 4 lines added, 0 lines gone since the previous request.'
    >>> [line for line in found.lines if line.startswith("+") and not line.startswith("+++")]
    ['+[assistant]', '+Noted.', '+[user]', '+Where is it?']
    """
    messages, plan_settings = settings_for(conversation, settings)
    messages = list(messages)
    ends = request_ends(messages)
    if len(ends) < 2:
        return None
    previous, latest = (plan_prompt(messages[:end], plan_settings, context_strategy=strategy) for end in ends[-2:])
    before, after = raw_prompt(previous).splitlines(), raw_prompt(latest).splitlines()
    diff = list(difflib.unified_diff(before, after, "previous request", "latest request", n=CONTEXT_LINES, lineterm=""))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    if len(diff) > MOST_LINES:
        diff = diff[:MOST_LINES] + [f"… and {len(diff) - MOST_LINES:,} more lines"]
    return TurnDiff(strategy, previous, latest, tuple(diff), added, removed)
