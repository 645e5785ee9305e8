"""Text for the dashboard's Markdown widgets: the user's words and the engine's errors, shown as typed.

Streamlit reads a caption, an info box or an error as Markdown: a pasted
``**bold**`` or ``[x](javascript:...)`` would be drawn, not shown. Every text
that is not the dashboard's own goes through :func:`plain` first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ContextfitError

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


def error_words(error: ContextfitError) -> str:
    r"""An error for people: its message first (escaped), then where, then its code in brackets.

    >>> print(error_words(ContextfitError("bad *input*", code="INVALID_CONVERSATION")))
    bad \*input\* (INVALID_CONVERSATION)
    """
    where = getattr(error, "location", None)
    return plain(str(error)) + (f" (at {plain(where)})" if where else "") + f" ({error.code})"


def common_failure(plans: Mapping[str, Any], said: Callable[[ContextfitError], str] = error_text) -> str | None:
    """The error text every strategy failed with, when each did and for the same reason (a
    budget nothing fits: five equal boxes side by side said it five times), else ``None``;
    ``said``: how an error reads (:func:`error_text`, or :func:`error_words` for people).

    >>> from contextfit.errors import TokenBudgetExceeded
    >>> refused = TokenBudgetExceeded(294, 1, "The protected context alone needs 294 tokens.")
    >>> common_failure({"truncate": refused, "summarize": refused})
    'TOKEN_BUDGET_EXCEEDED: The protected context alone needs 294 tokens.'
    >>> common_failure({"truncate": refused, "manual": object()}) is None
    True
    """
    texts = {said(plan) for plan in plans.values() if isinstance(plan, ContextfitError)}
    failed = sum(isinstance(plan, ContextfitError) for plan in plans.values())
    return next(iter(texts)) if plans and failed == len(plans) and len(texts) == 1 else None
