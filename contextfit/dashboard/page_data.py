"""What the dashboard pages do, without Streamlit: the pages only draw.

Reading the input, running the comparison with the user's edits, and the
tables and downloads the Compare page shows are here, with tests; charts
are in :mod:`contextfit.dashboard.charts`.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import math
import re
import threading
from contextlib import contextmanager
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ContextfitError
from ..inputs.formats import Conversation
from ..inputs.messages import kind_of, message_id, message_text, role_of
from ..tokens.models import get_model
from ..caches import register
from ..pipeline.plan import BUILTIN_STRATEGIES, PromptPlan, assembled
from ..pipeline.session import FitSession
from ..pipeline.settings import PlanSettings, conversation_model, settings_for
from ..pipeline.settings import plan_options
from .bands import band_text
from .charts import block_keys

#: Editable per-block fields and the table column that shows each.
EDITABLE = {"pinned": "pinned", "manualExcluded": "exclude", "relevance": "relevance"}


@dataclass(frozen=True, slots=True)
class Setup:
    """The user's choices on the Compare page."""

    model: str
    context_limit: int
    response_reserve: int
    strategies: tuple[str, ...] = BUILTIN_STRATEGIES
    summary_tokens: int | None = None
    relevance_window: int | None = None
    user_name: str = "User"
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


_gc_lock = threading.Lock()
_gc_users = 0
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Generator[None, None, None]:
    """Pause Python's cyclic garbage collector while a page is drawn.

    Drawing a 10,000-message comparison makes some 100,000 short-lived
    objects (blocks, rows, figure data); in the dashboard's process, where
    about 250,000 objects live, the collections they trigger cost 0.3–0.5 s
    of a 1–1.5 s run. Those objects are freed by reference counting when
    the run ends, so pausing the collector only skips wasted scans. The
    pause is process-wide, so overlapping sessions share it: the collector
    comes back when the last one leaves, as it was before the first came.

    >>> import gc
    >>> before = gc.isenabled()
    >>> with gc_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled() == before
    True
    """
    global _gc_users, _gc_was_enabled
    with _gc_lock:
        if _gc_users == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and _gc_was_enabled:
                gc.enable()


def suggested_setup(conversation: Conversation, model: str | None = None) -> Setup:
    """Defaults for a conversation: its model (else gpt-4o), its suggested
    limit and reserve (a bundle's settings), else the model's."""
    try:
        info = get_model(conversation_model(conversation, model))
    except ContextfitError:
        info = get_model(conversation_model(conversation))
    return setup_for(info.id, conversation.settings)


def setup_for(model: str, settings: Mapping[str, Any] | None) -> Setup:
    """A known model's setup under JSON settings (a bundle's, a stored chat's): their limit
    and reserve, else the model's window and a quarter of it at most for the reply."""
    info = get_model(model)
    options = plan_options(settings)
    limit = options.get("context_limit", info.context_limit)
    reserve = options.get("response_reserve", min(info.max_output, limit // 4))
    return Setup(model=info.id, context_limit=int(limit), response_reserve=int(reserve))


def plan_settings(setup: Setup) -> PlanSettings:
    """The user's choices as the settings every face plans with."""
    return PlanSettings.from_keywords(
        model=setup.model,
        context_limit=setup.context_limit,
        response_reserve=setup.response_reserve,
        summary_tokens=setup.summary_tokens or None,
        relevance_window=setup.relevance_window or None,
        user_name=setup.user_name,
        overrides=setup.overrides or None,
    )


#: Conversations whose sessions the dashboard keeps (one per browser tab's
#: upload is typical; the least recently used goes first).
SESSIONS_KEPT = 4
_sessions: list[FitSession] = []
_sessions_lock = threading.Lock()
register("dashboard.sessions", _sessions, clear=lambda: _forget_sessions())


def _forget_sessions() -> None:
    with _sessions_lock:
        _sessions.clear()


def session_for(conversation: Conversation) -> FitSession:
    """The :class:`~contextfit.pipeline.session.FitSession` of an uploaded
    conversation (the same object), kept for the page's reruns: each of them
    re-plans the same messages, and the session keeps their analysis and
    assembled blocks. A conversation whose message list grew since (the same
    object, appended to) has the new messages added; any other change needs
    a new conversation object, as an upload or an edit of the input makes.
    """
    with _sessions_lock:
        found = next((s for s in _sessions if s.conversation is conversation), None)
        if found is not None and len(found) > len(conversation.messages):
            found = None
        if found is None:
            found = FitSession(conversation)
        _sessions[:] = [found, *(s for s in _sessions if s is not found)][:SESSIONS_KEPT]
    if len(found) < len(conversation.messages):
        found.extend(conversation.messages[len(found):])
    return found


def iter_plans(conversation: Conversation, setup: Setup) -> Iterator[tuple[str, PromptPlan | ContextfitError]]:
    """``(strategy, plan)`` for each chosen strategy, one at a time (the
    generator :meth:`~contextfit.FitSession.plans` yields), planned through
    the conversation's session (:func:`session_for`)."""
    return session_for(conversation).plans(plan_settings(setup), strategies=setup.strategies)


def plan_all(
    conversation: Conversation, setup: Setup, progress: Callable[[int, str], None] | None = None
) -> dict[str, PromptPlan | ContextfitError]:
    """One plan per chosen strategy (see :func:`iter_plans`); ``progress(done, name)`` follows the work."""
    plans: dict[str, PromptPlan | ContextfitError] = {}
    for done, (name, plan) in enumerate(iter_plans(conversation, setup), start=1):
        plans[name] = plan
        if progress is not None:
            progress(done, name)
    return plans


def plan_one(conversation: Conversation, setup: Setup, strategy: str) -> PromptPlan:
    """The plan of one strategy for the conversation and the user's choices."""
    return session_for(conversation).plan(strategy, plan_settings(setup))


def headline(plan: PromptPlan) -> dict[str, Any]:
    """The numbers shown above a strategy's charts.

    >>> from contextfit import plan_prompt
    >>> headline(plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o"))["prompt_tokens"]
    8
    """
    dropped = [block for block in plan.blocks if not block.included]
    return {
        "prompt_tokens": plan.prompt_tokens,
        "budget": plan.budget,
        "context_limit": plan.context_limit,
        "response_reserve": plan.response_reserve,
        "used_percent": round(100 * plan.prompt_tokens / plan.budget, 1) if plan.budget else 100.0,
        "sent": sum(1 for block in plan.blocks if block.included),
        "dropped": len(dropped),
        "dropped_tokens": sum(block.tokens or 0 for block in dropped),
        "tokenizer": plan.tokenizer.profile,
        "approximate": plan.tokenizer.approximate,
        "band": band_text(plan),  # "about N tokens (approximate, up to M)" or "N tokens, exact"
    }


def block_rows(plan: PromptPlan) -> list[dict[str, Any]]:
    """One row per block, in prompt order (the blocks table and its CSV)."""
    return [
        {
            "#": block.index,
            "id": block.id,
            "role": block.role,
            "kind": block.kind,
            "tokens": block.tokens,
            "fate": block.fate,
            "reason": block.reason,
            "text": block.content,
        }
        for block in plan.blocks
    ]


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


def dropped_lines(plan: PromptPlan, limit: int = 200) -> list[str]:
    """What was excluded or summarized, one short line each (at most ``limit``)."""
    lines, more = [], 0
    for key, block in zip(block_keys(plan), plan.blocks):  # blocks are named by id, as on every chart
        if block.included:
            continue
        if len(lines) == limit:
            more += 1
            continue
        text = " ".join(block.content[:240].split())
        lines.append(f"{key} {block.role or block.kind} ({block.tokens or 0} tokens, {block.reason}): {text[:120]}")
    if more:
        lines.append(f"… and {more} more")
    return lines


def editor_rows(
    conversation: Conversation, setup: Setup, plans: Mapping[str, PromptPlan | ContextfitError]
) -> list[dict[str, Any]]:
    """Rows of the edit table: every block of the prompt, with its current marks.

    ``pinned``, ``exclude`` (``meta.manualExcluded``) and ``relevance`` are
    editable. The blocks come from the first plan that could be made, else
    straight from the assembly (so a user can unpin their way out of
    ``TOKEN_BUDGET_EXCEEDED``).
    """
    plan = next((p for p in plans.values() if isinstance(p, PromptPlan)), None)
    if plan is not None:
        entries = [(b.id, b.role, b.kind, b.content, b.tokens, b.message) for b in plan.blocks
                   if b.origin == "input" and b.reason != "summary"]
    else:
        assembly = assembled(*settings_for(conversation, plan_settings(setup)))
        entries = [(message_id(m, i), role_of(m), kind_of(m), message_text(m), None, m) for i, m in enumerate(assembly.blocks)]
    rows = []
    for ident, role, kind, content, tokens, message in entries:
        meta = message.get("meta") if isinstance(message.get("meta"), dict) else {}
        edit = setup.overrides.get(ident, {})
        pinned = edit.get("pinned", message.get("pinned") is True or meta.get("pinned") is True)
        relevance = edit.get("relevance", meta.get("relevance"))
        rows.append(
            {
                "id": ident,
                "role": role,
                "kind": kind,
                "text": " ".join(content[:320].split())[:160],
                "tokens": tokens,
                "pinned": bool(pinned),
                "exclude": bool(edit.get("manualExcluded", meta.get("manualExcluded") is True)),
                "relevance": None if relevance is None or _nan(relevance) else float(relevance),
            }
        )
    return rows


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def overrides_from_rows(rows: Sequence[Mapping[str, Any]], original: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The edits the user made in the table: only values that differ from ``original``.

    >>> before = [{"id": "m1", "pinned": False, "exclude": False, "relevance": None}]
    >>> after = [{"id": "m1", "pinned": True, "exclude": False, "relevance": 0.7}]
    >>> overrides_from_rows(after, before)
    {'m1': {'pinned': True, 'relevance': 0.7}}
    """
    by_id = {row["id"]: row for row in original}
    edits: dict[str, dict[str, Any]] = {}
    for row in rows:
        old = by_id.get(row["id"])
        if old is None:
            continue
        edit: dict[str, Any] = {}
        for key, column in EDITABLE.items():
            value = row.get(column)
            if key == "relevance":
                value = None if value is None or _nan(value) else min(max(float(value), 0.0), 1.0)
            else:
                value = bool(value)
            before = old.get(column)
            if key == "relevance" and (before is None or _nan(before)):
                before = None
            if value != before and value is not None:
                edit[key] = value
        if edit:
            edits[row["id"]] = edit
    return edits


def merge_overrides(current: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Earlier edits with later ones on top.

    >>> merge_overrides({"a": {"pinned": True}}, {"a": {"relevance": 0.2}, "b": {"pinned": False}})
    {'a': {'pinned': True, 'relevance': 0.2}, 'b': {'pinned': False}}
    """
    merged = {key: dict(value) for key, value in current.items()}
    for key, value in new.items():
        merged.setdefault(key, {}).update(value)
    return merged


# Characters that start Markdown formatting, links, HTML, tables or maths.
_MARKDOWN = str.maketrans({ch: "\\" + ch for ch in "\\`*_{}[]<>#|~$"})


def plain(text: str) -> str:
    r"""Text made safe for a Markdown widget: every Markdown character escaped.

    >>> plain("**not bold** <b>")
    '\\*\\*not bold\\*\\* \\<b\\>'
    """
    return str(text).translate(_MARKDOWN)


def error_text(error: ContextfitError, message: str | None = None) -> str:
    r"""An error for a Markdown widget: its code, its message (escaped; ``message``: said
    otherwise for the page) and where.

    >>> print(error_text(ContextfitError("bad *input*", code="INVALID_CONVERSATION")))
    INVALID_CONVERSATION: bad \*input\*
    """
    where = getattr(error, "location", None)
    return f"{error.code}: {plain(str(error) if message is None else message)}" + (
        f" (at {plain(where)})" if where else "")


def common_failure(plans: Mapping[str, Any]) -> str | None:
    """The error text every strategy failed with, when each did and for the same reason (a
    budget nothing fits: five equal boxes side by side said it five times), else ``None``.

    >>> from contextfit.errors import TokenBudgetExceeded
    >>> refused = TokenBudgetExceeded(294, 1, "The protected context alone needs 294 tokens.")
    >>> common_failure({"truncate": refused, "summarize": refused})
    'TOKEN_BUDGET_EXCEEDED: The protected context alone needs 294 tokens.'
    >>> common_failure({"truncate": refused, "manual": object()}) is None
    True
    """
    texts = {error_text(plan) for plan in plans.values() if isinstance(plan, ContextfitError)}
    failed = sum(isinstance(plan, ContextfitError) for plan in plans.values())
    return next(iter(texts)) if plans and failed == len(plans) and len(texts) == 1 else None


def send_with_echo(conversation: Conversation, setup: Setup, strategy: str, store: Any = None,
                   name: str | None = None) -> str:
    """Store the conversation as a chat, generate once with the offline ``echo``
    provider under ``strategy`` and the user's choices, and return the chat id
    (its audit is then on the Audit page). The chat's title is ``name`` (what the
    conversation is called: a sample's key, a file's name), the strategy and the model;
    the selectors add its message count and time (:func:`~contextfit.serving.audits.chat_label`)."""
    from ..serving.generation import send_conversation

    settings = plan_settings(setup).replace(context_strategy=strategy).to_json()
    title = " · ".join(part for part in (name, strategy, setup.model) if part)
    result = send_conversation(conversation, model=setup.model, settings=settings, title=title, provider="echo", store=store)
    return result.audit.chat_id


def audit_rows(audit: Any) -> list[dict[str, Any]]:
    """The audit's blocks as table rows, with each block's fate."""
    from ..pipeline.plan import fate_of

    return [
        {"#": block.index, "id": block.id, "role": block.role, "kind": block.kind, "tokens": block.tokens,
         **({"estimate": block.tokens_estimate} if audit.tokenizer.approximate else {}),
         "fate": fate_of(block.reason), "reason": block.reason}
        for block in audit.blocks
    ]
