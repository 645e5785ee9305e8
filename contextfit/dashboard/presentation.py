"""Presentation mode: the Compare page (and Replay, Retention and Audit, while it is on) for a projector at 1920×1080.

Larger text and charts (page CSS: Compare's charts are HTML), the answer box
larger still, table text wrapped rather than cut; the page folds the sidebar
away and shows tables as HTML (a data grid is drawn on a canvas that page CSS
cannot enlarge). Static CSS only: no user text goes into it.
"""

from __future__ import annotations

#: Page CSS for a projector: larger body text, headings, metrics and tables, text that wraps instead of being
#: cut, and little room above the page's title, so the answer, the windows with each strategy's costs and Lost
#: line (a size smaller than the body, as its one-line description), and the fate matrix fit 1080 pixels.
CSS = """<style>
[data-testid="stMainBlockContainer"] { max-width: 100%; padding: 3.25rem 2.5rem 4rem; }
.st-key-answer [data-testid="stMarkdownContainer"]:not([data-testid="stCaptionContainer"] *) > p {
  font-size: 1.55rem !important; line-height: 1.35; }
.st-key-intro { display: none; }
[data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.5rem; }
[data-testid="stMain"] h3 { padding: 0.4rem 0 0.2rem !important; }
.contextfit-window .cfw-head { font-size: 1.45rem !important; }
.contextfit-window .cfw-track { height: 30px !important; }
.contextfit-category-legend { font-size: 1.15rem !important; }
[data-testid="stTable"] td, [data-testid="stTable"] th { white-space: normal !important; overflow-wrap: anywhere; }
[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stCaptionContainer"],
[data-testid="stExpander"] summary, [data-testid="stWidgetLabel"] p { font-size: 1.25rem !important; }
[data-testid="stMain"] h1 { font-size: 2.9rem !important; padding-top: 0 !important; }
.st-key-answer [data-testid="stCaptionContainer"] p { font-size: 1.1rem !important; }
[data-testid="stMain"] h2, [data-testid="stMain"] h3 { font-size: 1.8rem !important; }
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
.contextfit-matrix .cfm-row { height: 24px !important; }
[class*="st-key-head-"] h3 { font-size: 1.6rem !important; }
[class*="st-key-column-answer-"] p, [class*="st-key-head-"] [data-testid="stCaptionContainer"] {
  font-size: 1.05rem !important; line-height: 1.3 !important; }
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


def sidebar_script(folded: bool) -> str:
    """HTML with a script that folds the sidebar away (``folded``) or opens it, by its own button.

    The page config's ``initial_sidebar_state`` only counts in a browser that never moved the sidebar
    by hand: Streamlit remembers a hand's choice and prefers it (a presenter who opened the sidebar to
    go to Replay had it open again after a reload in presentation mode). The button is the supported
    door, and Streamlit remembers what it did. Static: no user text goes into it.

    >>> "stSidebarCollapseButton" in sidebar_script(True), "stExpandSidebarButton" in sidebar_script(False)
    (True, True)
    """
    button = ('[data-testid="stSidebarCollapseButton"] button' if folded else '[data-testid="stExpandSidebarButton"]')
    wanted = "true" if folded else "false"
    return (
        # The element takes no room: its container is hidden (a script runs all the same).
        '<style>[data-testid="stElementContainer"]:has(.contextfit-fold) { display: none; }</style>'
        '<div class="contextfit-fold"></div>'
        "<script>(() => {"
        "let tries = 0;"
        "const fold = () => {"
        "const bar = document.querySelector('[data-testid=\"stSidebar\"]');"
        f"if (bar && bar.getAttribute('data-collapsed') === '{wanted}') return;"
        f"const button = document.querySelector('{button}');"
        "if (button) button.click();"
        "if (++tries < 20) setTimeout(fold, 150);"  # the sidebar may be drawn after this element
        "};"
        "fold();"
        "})();</script>"
    )
