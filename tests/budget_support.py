"""Reads the Compare page's HTML budget bars (contextfit.views.budget_bar) back into numbers, for tests."""

from __future__ import annotations

from html.parser import HTMLParser


class BudgetBar(HTMLParser):
    """``rows``: row name → [(shade or gauge part, tokens, width %, title, style)]; ``note``, ``line`` (left %) and ``top``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: dict[str, list[tuple[str, int, float, str, str]]] = {}
        self.row: str | None = None
        self.note = ""
        self.line: float | None = None
        self.top = 0
        self.strategy = ""
        self._in_note = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if "contextfit-budget" in classes:
            self.top, self.strategy = int(found["data-top"]), found["data-strategy"]
        if "cfb-note" in classes:
            self._in_note = True
        if "data-row" in found:
            self.row = found["data-row"]
            self.rows[self.row] = []
        if "cfb-part" in classes:
            style = found.get("style") or ""
            width = float(style.split("width:")[1].split("%")[0])
            self.rows[self.row].append((found.get("data-shade") or found.get("data-part"), int(found["data-tokens"]), width,
                                        found.get("title") or "", style))
        if "cfb-line" in classes:
            self.line = float(found["style"].split("left:")[1].split("%")[0])

    def handle_data(self, data):
        if self._in_note:
            self.note += data

    def handle_endtag(self, tag):
        self._in_note = False


def budget_bars(at) -> list[BudgetBar]:
    """The budget bars an AppTest run drew (one per fitted strategy, in column order)."""
    return [BudgetBar(element.proto.body) for element in at.get("html") if 'class="contextfit-budget"' in element.proto.body]


def chart_count(at) -> tuple[int, int]:
    """(plotly charts, HTML budget bars) of an AppTest run: Compare draws (6, 5) for five strategies."""
    return len(at.get("plotly_chart")), len(budget_bars(at))
