"""The comparison as one standalone HTML file: what people paste into a slide
deck or send after a demo.

One file, no network: plotly's JavaScript is embedded once, inline, and every
chart is drawn from data in the page. It holds the settings, the
conversation's source name, the verdict table (best values marked), the
token breakdown by kind, each strategy's budget bar and block chart, the
fate matrix, and the legend. Every piece of user text (source name, strategy
names, settings) is HTML-escaped; the charts escape their own hover text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import plotly.io as pio
from plotly.offline import get_plotlyjs

from ..pipeline.plan import PromptPlan
from ..errors import ContextfitError
from . import breakdown, charts, verdict

_STYLE = """
body{font-family:Inter,system-ui,sans-serif;margin:2rem auto;max-width:1400px;padding:0 1.5rem;color:#1f1f1f}
h1{font-size:1.7rem;margin-bottom:.2rem} h2{font-size:1.25rem;margin-top:2rem} h3{font-size:1.05rem;margin:.5rem 0}
table{border-collapse:collapse;font-size:.9rem;margin:.5rem 0} th,td{border:1px solid #ddd;padding:.35rem .6rem;text-align:left}
th{background:#f5f5f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
.strategies{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:1rem}
.strategy{border:1px solid #e3e3e3;border-radius:8px;padding:.6rem} .muted{color:#666;font-size:.85rem}
"""


def _table(rows: Sequence[Mapping[str, Any]], styles: Sequence[Mapping[str, str]] | None = None,
           numeric: Sequence[str] = ()) -> str:
    if not rows:
        return "<p class='muted'>Nothing to show.</p>"
    headers = list(rows[0])
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = []
    for number, row in enumerate(rows):
        cells = []
        for header in headers:
            style = (styles[number].get(header, "") if styles else "")
            css = f' style="{html.escape(style)}"' if style else ""
            klass = ' class="num"' if header in numeric or isinstance(row[header], (int, float)) else ""
            value = row[header]
            text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
            cells.append(f"<td{klass}{css}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _chart(figure: Any, div_id: str) -> str:
    return pio.to_html(figure, full_html=False, include_plotlyjs=False, config=charts.PLOTLY_CONFIG,
                       div_id=div_id, default_width="100%")


def comparison_html(
    plans: Mapping[str, PromptPlan | ContextfitError],
    *,
    source_name: str,
    settings: Mapping[str, Any],
    registry: Any = None,
    created: datetime | None = None,
) -> str:
    """The whole comparison as one self-contained HTML document.

    ``settings`` are shown as given (label → value), e.g. model, context
    limit, response reserve; ``source_name`` names the conversation (a
    sample's title, an uploaded file's name).
    """
    created = created or datetime.now(timezone.utc)
    rows = verdict.verdict_rows(plans, registry)
    fitted = {name: plan for name, plan in plans.items() if isinstance(plan, PromptPlan)}
    token_scale = charts.prompt_scale(list(fitted.values()))
    block_scale = charts.block_scale(list(fitted.values()))
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>contextfit comparison — {html.escape(source_name)}</title>",
        f"<style>{_STYLE}</style>",
        # Inline, so the file opens with no network (a slide deck, a mail attachment).
        f"<script type='text/javascript'>{get_plotlyjs()}</script>",
        "</head><body>",
        "<h1>Which blocks does the model see?</h1>",
        f"<p class='muted'>contextfit comparison of <b>{html.escape(source_name)}</b> · "
        f"{created.strftime('%Y-%m-%d %H:%M UTC')}</p>",
        "<h2>Settings</h2>",
        _table([{"setting": key, "value": str(value)} for key, value in settings.items()]),
        "<h2>Verdict</h2>",
        "<p class='muted'>Best value of each column marked: fewest tokens, least of the budget, fewest blocks "
        "dropped, summarized or compressed, cheapest prompt (the catalog's input price; the reply is billed on top).</p>",
        _table(verdict.table(rows), verdict.styles(rows)),
    ]
    if fitted:
        parts += ["<h2>Tokens by kind</h2>", _table(breakdown.breakdown_table(fitted))]
        tools = {name: breakdown.per_tool(plan) for name, plan in fitted.items()}
        first = next((rows for rows in tools.values() if rows), None)
        if first:
            parts += ["<h3>Tool definitions, per tool</h3>", _table(first)]
        parts += ["<h2>Each strategy</h2>", charts.legend_html(), "<div class='strategies'>"]
        for number, (name, plan) in enumerate(fitted.items()):
            parts += [
                "<div class='strategy'>",
                f"<h3>{html.escape(name)}</h3>",
                _chart(charts.budget_figure(plan, token_scale=token_scale), f"budget-{number}"),
                _chart(charts.blocks_figure(plan, token_scale=block_scale), f"blocks-{number}"),
                "</div>",
            ]
        parts.append("</div>")
        if len(fitted) > 1:
            parts += ["<h2>Fate of every block, strategy by strategy</h2>",
                      _chart(charts.fate_matrix_figure(fitted), "matrix")]
    for name, plan in plans.items():
        if isinstance(plan, ContextfitError):
            parts.append(f"<p class='muted'>{html.escape(name)}: {html.escape(plan.code)}: {html.escape(str(plan))}</p>")
    # Each chart is drawn as the page is read, before the grid holds all its cells: fit them once it is whole.
    parts.append("<script>window.addEventListener('load', () => document.querySelectorAll('.js-plotly-plot')"
                 ".forEach(plot => Plotly.Plots.resize(plot)));</script>")
    parts.append("</body></html>")
    return "\n".join(parts)
