"""The recommendation as a page shows it: the sentence, what it was decided on, and each
strategy's costs at the user's volume with its **Lost:** line.

The decision is the package's (:mod:`contextfit.replays.recommend`); this module
only words and lays it out, once for every face that shows it (the Replay page,
the HTML report; Compare can draw the same). Money reads like money
(:func:`contextfit.amounts.money_short`: "$0.41", "$1.2K"; a month at one rule,
:func:`contextfit.amounts.money_month`: "$93", "$101"), a request's cost exactly
(:func:`contextfit.amounts.money`, as Compare says it); a cell with no value reads "—".
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from ..amounts import money, money_month, money_short
from ..replays.recommend import PRIORITY_WORDS, REQUEST, Recommendation
from ..replays.volume import DAYS_PER_MONTH, DEFAULT_CONVERSATIONS_PER_DAY, a_day

__all__ = ["ANSWER_CSS", "EMPTY", "answer_html", "a_day", "evidence_text", "priority_text", "volume_rows",
           "volume_styles"]

#: What a table cell shows for no value.
EMPTY = "—"
#: The answer box: a neutral frame (blue, green, orange and pink are the fates' colours); and the tables'
#: cells as wide as their column (Streamlit stops a cell's text at 400 pixels: the Lost lines wrapped early).
ANSWER_CSS = """<style>
.contextfit-answer { font-size: 1.15rem; line-height: 1.5; border-left: 6px solid #333; background: #F4F4F4;
  padding: 0.7rem 1rem; margin: 0.2rem 0 0.5rem; border-radius: 0 6px 6px 0; }
.contextfit-answer .cfa-label { display: block; font-size: 0.8rem; color: #555; text-transform: uppercase;
  letter-spacing: 0.04em; margin-bottom: 0.15rem; }
[data-testid="stTable"] td > [data-testid="stMarkdownContainer"] { max-width: none; }
</style>"""


def answer_html(answer: Recommendation) -> str:
    """The sentence in its box (with :data:`ANSWER_CSS` on the page), escaped, under a small label.

    >>> from contextfit.replays.recommend import Outcome, decide
    >>> print(answer_html(decide([Outcome("a<b>", prompt_tokens=5, has_question=True)])))
    <div class="contextfit-answer" data-strategy="a&lt;b&gt;"><span class="cfa-label">Recommendation</span>Ship a&lt;b&gt;: it keeps your question, sends 5 tokens; it sends everything.</div>
    """
    return (f'<div class="contextfit-answer" data-strategy="{html.escape(answer.strategy or "")}">'
            f'<span class="cfa-label">Recommendation</span>{html.escape(answer.sentence)}</div>')


def evidence_text(answer: Recommendation, conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY) -> str:
    """The line under the answer: the priority, what it was decided on, where the reply's size comes from,
    and what a month is.

    >>> from contextfit.replays.recommend import Outcome, decide
    >>> print(evidence_text(decide([Outcome("a", prompt_tokens=5, has_question=True)]), 250))
    Priority: keep the most of what matters; evidence: the latest request, priced with what it shares with the one before; replies: estimated at 0 tokens (the conversation holds no reply); a month is 30 days at 250 conversations a day.
    """
    basis = ("the latest request, priced with what it shares with the one before" if answer.basis == REQUEST
             else "every request of the conversation")
    reply = answer.reply_text
    return (f"{priority_text(answer.priority)}; evidence: {basis}" + (f"; {reply}" if reply else "")
            + f"; a month is {DAYS_PER_MONTH} days at {a_day(conversations_per_day)}.")


def priority_text(priority: str) -> str:
    """The priority as Compare and Replay both say it, in words (its id is the sidebar's choice).

    >>> priority_text("retention")
    'Priority: keep the most of what matters'
    """
    return f"Priority: {PRIORITY_WORDS[priority]}"


def volume_rows(answer: Recommendation, conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY) -> list[dict[str, Any]]:
    """Each strategy's costs at volume and its Lost line (one row each, in the answer's order).
    A strategy that could not be planned has dashes and says why;
    one that is never recommended says so after what it loses."""
    rows = []
    for label, volume in answer.volumes(conversations_per_day).items():
        outcome = answer.outcome(label)
        planned = outcome.error is None
        rows.append({
            "strategy": label,
            "cost / request (reply included)": money(volume.per_request, EMPTY) if planned else EMPTY,
            "per 1,000 conversations": money_short(volume.per_1000) if planned else EMPTY,
            f"per month at {conversations_per_day:,} a day": money_month(volume.per_month) if planned else EMPTY,
            "lost": outcome.lost_line() + (f" Not recommended: it {outcome.refusal}." if outcome.refusal else ""),
        })
    return rows


#: How the recommended strategy's row is marked (the verdict's highlight, bold).
CHOSEN_STYLE = "background-color: #D8F0E6; font-weight: 600"


def volume_styles(answer: Recommendation, rows: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """CSS per cell of :func:`volume_rows`: the recommended strategy's name marked (every tied one
    for a tie), nothing else.

    >>> from contextfit.replays.recommend import Outcome, decide
    >>> answer = decide([Outcome("a", prompt_tokens=5, has_question=True), Outcome("b", prompt_tokens=9, has_question=True)])
    >>> [style["strategy"] for style in volume_styles(answer, volume_rows(answer))]
    ['background-color: #D8F0E6; font-weight: 600', '']
    """
    chosen = {answer.strategy} if answer.strategy is not None else set(answer.tied)
    return [{key: CHOSEN_STYLE if key == "strategy" and row["strategy"] in chosen else "" for key in row}
            for row in rows]
