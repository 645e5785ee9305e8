"""The Retention page's words, tables and bars, without Streamlit.

Everything here is read from what ``make retention`` measured
(:mod:`contextfit.retention.results`, shipped with the package) and tabulated
by the bench's own functions (:mod:`contextfit.retention.runner`): the page
shows the bench's numbers, at once. Percentages are the bench's (one
decimal), token counts carry separators, money reads like money, and no cell
reads ``None``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .. import caches
from ..amounts import money_short, percent
from ..retention import results as measured
from ..retention.protocol import KINDS
from ..retention.runner import HEADLINE_SHARE, RetentionRow, by_length, by_position
from .palette import built_in, strategy_color
from .verdict import and_list

__all__ = ["HEADLINE_SHARE", "SOURCE", "bars_html", "budget_label", "caption", "check_text", "headline_html", "load", "position_rows",
           "protocol_text", "table_rows", "table_styles"]

#: Where the protocol, its sources and every figure are written down.
SOURCE = "docs/retention.md"
#: What a cell shows for no value.
EMPTY = "—"
#: The best retention of a budget, marked as the verdicts mark a best cell.
BEST_STYLE = "background-color: #D8F0E6; font-weight: 600"


@lru_cache(maxsize=4)
def _load(path: str, modified: float) -> measured.Results:
    return measured.load(path)


caches.register("dashboard.retention_results", _load)


def load(path: Path | None = None) -> measured.Results:
    """The shipped results, read once per process while the file stays the same (``make retention``
    writing it again is read on the next run); raises :class:`~contextfit.retention.results.ResultsUnavailable`."""
    path = measured.RESULTS if path is None else path
    try:
        modified = path.stat().st_mtime
    except OSError:
        modified = -1.0  # missing: load says so
    return _load(str(path), modified)


def budget_label(share: float) -> str:
    """>>> budget_label(0.15), budget_label(0.1)
    ('15%', '10%')
    """
    return percent(share)


def protocol_text(found: measured.Results) -> str:
    """The protocol in one paragraph, with its parameters read from the results, and its source."""
    lengths = ", ".join(f"{turns:,}" for turns in found.lengths)
    budgets = ", ".join(budget_label(share) for share in found.shares)
    return (
        "**The protocol.** It follows the Context Decay Benchmark (clawRxiv 2604.01047): seeded, synthetic agent "
        f"conversations of {lengths} turns about a code base, with facts planted along the way — half explicit "
        "(“Important: the billing service port is 5433.”), half implicit (said in passing), a quarter of them set "
        "again later so that only the new value is current — and all asked about at the last request. Each "
        f"conversation is fitted by every strategy into {budgets} of its own tokens on {found.model} (counted "
        "exactly), and each fact is scored on what is sent, never on a strategy's own bookkeeping: *retained* when "
        "its current value is in a sent message or quoted by a summary or ledger line; otherwise stale (an old value "
        "is sent), recoverable (a sent line names the message that holds it) or lost. No model is called, so the "
        f"same seeds give the same figures on every machine. Sources, every figure and how to run it: `{SOURCE}` "
        "(`make retention` measures them again)."
    )


def caption(found: measured.Results) -> str:
    """Where the figures come from: the conversations, the facts and the day they were measured.

    >>> from contextfit.retention.results import Results
    >>> print(caption(Results("gpt-4o", (50, 200), (0.15,), (1, 2), ("truncate",), (), measured_on="2026-12-04")))
    4 conversations (50 and 200 turns × seeds 1 and 2), 0 facts, gpt-4o · measured on 2026-12-04 by make retention
    """
    conversations = len(found.lengths) * len(found.seeds)
    lengths = and_list([f"{turns:,}" for turns in found.lengths])
    seeds = and_list([str(seed) for seed in found.seeds])
    when = f" · measured on {found.measured_on}" if found.measured_on else ""
    return (f"{conversations:,} conversations ({lengths} turns × seeds {seeds}), {found.facts:,} facts, "
            f"{found.model}{when} by make retention")


def headline_html(found: measured.Results) -> str:
    """The headline in the answer box (:data:`~contextfit.dashboard.answer_box.ANSWER_CSS`)."""
    return (f'<div class="contextfit-answer"><span class="cfa-label">On the retention protocol</span>'
            f"{html.escape(found.headline().text())}.</div>")


def check_text(found: measured.Results) -> str | None:
    """truncate against the published figure, as the bench prints it (``None`` when not measured)."""
    if found.first_plantings is None:
        return None
    kept, total = found.first_plantings
    return (f"Check against the published protocol: truncate at {budget_label(HEADLINE_SHARE)} sends the first value "
            f"of {kept:,} of {total:,} facts ({kept / total:.1%}; published for naive truncation: "
            f"{measured.PUBLISHED_TRUNCATE:.1%}).")


def table_rows(rows: Sequence[RetentionRow], share: float | None = None) -> list[dict[str, Any]]:
    """The table: a row per strategy variant and budget (``share``: that budget only), each fact kind's
    retention, the superseded facts, tokens sent and the cost per 1,000 conversations."""
    table: dict[tuple[str, float], dict[str, RetentionRow]] = {}
    for row in rows:
        if share is None or row.share == share:
            table.setdefault((row.strategy, row.share), {})[row.kind] = row
    out = []
    for (label, budget), kinds in table.items():
        every = kinds["all"]
        out.append({
            "strategy": label,
            "budget": budget_label(budget),
            **{kind: f"{kinds[kind].retention:.1%}" if kind in kinds else EMPTY for kind in KINDS},
            "all facts": f"{every.retention:.1%}",
            "superseded: current sent": f"{every.superseded_current:,} of {every.superseded:,}" if every.superseded
            else EMPTY,
            "stale sent": f"{every.superseded_stale:,}" if every.superseded else EMPTY,
            "tokens sent": f"{every.mean_tokens:,.0f}",
            "$ per 1,000 conversations": money_short(every.cost_per_1000, EMPTY),
        })
    return out


def table_styles(rows: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """CSS per cell of :func:`table_rows`: the best "all facts" of each budget (every one tied for it).

    >>> table_styles([{"budget": "15%", "all facts": "23.2%"}, {"budget": "15%", "all facts": "97.1%"}])
    [{'budget': '', 'all facts': ''}, {'budget': '', 'all facts': 'background-color: #D8F0E6; font-weight: 600'}]
    """
    best: dict[str, float] = {}
    for row in rows:
        best[row["budget"]] = max(best.get(row["budget"], 0.0), float(row["all facts"].rstrip("%")))
    return [{key: BEST_STYLE if key == "all facts" and float(row[key].rstrip("%")) == best[row["budget"]] else ""
             for key in row} for row in rows]


def bars_html(rows: Sequence[RetentionRow], share: float) -> str:
    """One bar per strategy variant at ``share``: the share of every fact it keeps, in the strategy's
    colour (:mod:`contextfit.dashboard.palette`, never a fate colour), its value at the end. Escaped."""
    shown = [row for row in rows if row.kind == "all" and row.share == share]
    labels = [row.strategy for row in shown]
    lines = []
    for row in shown:
        width = 100 * row.retention
        lines.append(
            f'<div class="cfr-row" data-strategy="{html.escape(row.strategy)}" data-retention="{row.retention:.4f}">'
            f'<span class="cfr-label">{html.escape(row.strategy)}</span>'
            f'<span class="cfr-track"><span class="cfr-bar" style="width:{width:.2f}%;'
            f'background:{strategy_color(row.strategy, labels)}"></span></span>'
            f'<span class="cfr-value">{row.retention:.1%}</span></div>')
    return ('<style>.contextfit-retention{font-family:Inter,system-ui,sans-serif;font-size:0.9rem;margin:0.3rem 0 0.8rem}'
            '.contextfit-retention .cfr-row{display:grid;grid-template-columns:16rem 1fr 4.5rem;align-items:center;'
            'column-gap:0.6rem;margin:3px 0}.contextfit-retention .cfr-label{text-align:right;white-space:nowrap;'
            'overflow:hidden;text-overflow:ellipsis}.contextfit-retention .cfr-track{height:16px;background:#F2F2F2;'
            'position:relative}.contextfit-retention .cfr-bar{display:block;height:100%}'
            '.contextfit-retention .cfr-value{font-variant-numeric:tabular-nums}</style>'
            f'<div class="contextfit-retention" data-budget="{budget_label(share)}">{"".join(lines)}</div>')


def position_rows(found: measured.Results, share: float = HEADLINE_SHARE) -> list[dict[str, Any]]:
    """For each built-in strategy at ``share``: the facts kept by where their current value was set
    (quarters of the conversation), and by conversation length."""
    out = []
    for label in found.variants:
        if built_in(label) != label:  # the strategies with their default options
            continue
        quarters = by_position(found.measurements, label, share)
        lengths = by_length(found.measurements, label, share)
        out.append({
            "strategy": label,
            **{f"set in the {name} quarter": EMPTY if value is None else percent(value)
               for name, value in zip(("1st", "2nd", "3rd", "4th"), quarters)},
            **{f"{turns:,} turns": percent(value) for turns, value in lengths.items()},
        })
    return out
