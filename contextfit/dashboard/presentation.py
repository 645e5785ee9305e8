"""Presentation mode: the Compare page (and Replay, Retention and Audit, while it is on) for a projector at 1920×1080.

Larger text and charts (page CSS: Compare's charts are HTML), the answer box
larger still, table text wrapped rather than cut; the page folds the sidebar
away and shows tables as HTML (a data grid is drawn on a canvas that page CSS
cannot enlarge). Static CSS only: no user text goes into it.
"""

from __future__ import annotations

#: Page CSS for a projector: larger body text, headings, metrics and tables.
CSS = """<style>
[data-testid="stMainBlockContainer"] { max-width: 100%; padding-left: 2.5rem; padding-right: 2.5rem; }
[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stCaptionContainer"],
[data-testid="stExpander"] summary, [data-testid="stWidgetLabel"] p { font-size: 1.25rem !important; }
[data-testid="stMain"] h1 { font-size: 3rem !important; }
[data-testid="stMain"] h2, [data-testid="stMain"] h3 { font-size: 2rem !important; }
[data-testid="stMain"] [data-testid="stMetricValue"], [data-testid="stMain"] [data-testid="stMetricValue"] * { font-size: 3rem !important; }
.contextfit-legend, .contextfit-lines-legend { font-size: 1.2rem !important; }
.contextfit-budget, .contextfit-budget .cfb-note, .contextfit-budget .cfb-axis { font-size: 1.1rem !important; }
.contextfit-budget .cfb-track { height: 26px !important; }
.contextfit-blocks, .contextfit-blocks .cfk-tip { font-size: 1.05rem !important; }
.contextfit-blocks .cfk-yaxis, .contextfit-blocks .cfk-xaxis { font-size: 1rem !important; }
.contextfit-blocks .cfk-plot, .contextfit-blocks .cfk-yaxis { height: 275px !important; }
.contextfit-blocks .cfk-xaxis { height: 1.4rem !important; }
.contextfit-blocks .cfk-tip { max-width: 420px !important; }
.contextfit-matrix, .contextfit-matrix .cfk-tip { font-size: 1.05rem !important; }
.contextfit-matrix .cfk-xaxis { font-size: 1rem !important; height: 1.4rem !important; }
.contextfit-matrix .cfm-row { height: 34px !important; }
[data-testid="stTable"] td, [data-testid="stTable"] th { font-size: 1.2rem !important; white-space: normal !important;
  overflow-wrap: anywhere; }
[data-testid="stTable"] td > [data-testid="stMarkdownContainer"] { max-width: none !important; }
.contextfit-answer { font-size: 1.7rem !important; line-height: 1.45 !important; }
.contextfit-answer .cfa-label { font-size: 1rem !important; }
.contextfit-retention { font-size: 1.2rem !important; }
.contextfit-retention .cfr-row { grid-template-columns: 20rem 1fr 6rem !important; }
.contextfit-retention .cfr-track { height: 24px !important; }
[data-testid="stDataFrame"], [data-testid="stTable"] { font-size: 1.15rem; }
</style>"""
