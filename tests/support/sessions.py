"""What a fit answers, compared between a session's refit and a fresh fit, and chats that grow."""

from __future__ import annotations

from hypothesis import strategies as st

import contextfit
from support.conversations import conversations


def outcome(result, counted=True):
    """What a fit answers; ``counted=False``: an excluded block's tokens may be
    known or not (a lean fit counts what it needs; an earlier fit may have counted more)."""
    if isinstance(result, contextfit.TokenBudgetExceeded):
        return ("refused", result.protected_tokens, result.budget)
    return (result.kept, result.tokens,
            [(d.index, d.reason, d.tokens if counted or d.included else None) for d in result.decisions],
            result.truncated,
            [d["code"] for d in result.diagnostics], result.strategy)


def fit_or_refusal(fit, *args, **options):
    """``fit(*args)`` without interceptors, or the ``TokenBudgetExceeded`` it raised."""
    try:
        return fit(*args, interceptors=(), **options)
    except contextfit.TokenBudgetExceeded as exc:
        return exc


def walk_outcome(result, counted=True):
    """:func:`outcome`, with the excluded messages."""
    return (outcome(result, counted), None if isinstance(result, Exception) else result.excluded)


@st.composite
def growth(draw):
    """A chat (tools, pins, system blocks, orphans) cut in chunks: a session
    starts with the first and gets the others appended, so a tool result often
    arrives after its call was fitted, a pinned message joins a fitted group,
    a system message leaves the current input as it was. Sometimes the last
    message is regenerated in between."""
    messages = draw(conversations(max_turns=20))
    cuts = sorted(draw(st.lists(st.integers(0, len(messages)), min_size=1, max_size=8)))
    edits = draw(st.lists(st.booleans(), min_size=len(cuts), max_size=len(cuts)))
    return messages, cuts, edits
