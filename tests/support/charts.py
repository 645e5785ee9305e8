"""Reads the dashboard's HTML charts and tables (contextfit.dashboard.budget_bar, block_chart, category_bar; Replay's turns table) back into numbers, for tests."""

from __future__ import annotations

from html.parser import HTMLParser

from contextfit.pipeline.plan import BUILTIN_STRATEGIES


class BudgetBar(HTMLParser):
    """``rows``: row name → [(shade or gauge part, tokens, width %, hover label, style)]; ``note``, ``line`` (left %)
    and ``top``. A hover label is its text with line breaks for ``<br>``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: dict[str, list[tuple[str, int, float, str, str]]] = {}
        self.row: str | None = None
        self.note = ""
        self.line: float | None = None
        self.top = 0
        self.strategy = ""
        self._in_note = False
        self._in_tip = False
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
                                        "", style))
        if "cfk-tip" in classes:
            self._in_tip = True
        if tag == "br" and self._in_tip:
            self._add_tip("\n")
        if "cfb-line" in classes:
            self.line = float(found["style"].split("left:")[1].split("%")[0])

    def _add_tip(self, data: str) -> None:
        part = self.rows[self.row][-1]
        self.rows[self.row][-1] = (*part[:3], part[3] + data, part[4])

    def handle_data(self, data):
        if self._in_note:
            self.note += data
        elif self._in_tip:
            self._add_tip(data)

    def handle_endtag(self, tag):
        if tag == "div":
            self._in_note = False
        if tag == "span":
            self._in_tip = False


def budget_bars(at) -> list[BudgetBar]:
    """The budget bars an AppTest run drew (one per fitted strategy, in column order)."""
    return [BudgetBar(element.proto.body) for element in at.get("html") if 'class="contextfit-budget"' in element.proto.body]


class BlockChart(HTMLParser):
    """``columns``: one per bar, in prompt order: (left %, width %, [(shade, tokens, bottom %, height %)], hover
    text); ``top``, ``strategy``, the y axis's tick labels ``y_ticks`` and the x axis's title ``x_title``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.columns: list[tuple[float, float, list[tuple[str, int, float, float]], str]] = []
        self.top, self.strategy, self.y_ticks, self.x_title = 0, "", [], ""
        self._in: str | None = None
        self.feed(text)

    @staticmethod
    def _percent(style: str, name: str) -> float:
        return float(style.split(f"{name}:")[1].split("%")[0])

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        style = found.get("style") or ""
        if "contextfit-blocks" in classes:
            self.top, self.strategy = int(found["data-top"]), found["data-strategy"]
        elif "cfk-col" in classes:
            self.columns.append((self._percent(style, "left"), self._percent(style, "width"), [], ""))
        elif "cfk-fill" in classes:
            self.columns[-1][2].append((found["data-shade"], int(found["data-tokens"]), self._percent(style, "bottom"),
                                        self._percent(style, "height")))
        elif "cfk-tip" in classes:
            self._in = "tip"
        elif "cfk-yaxis" in classes:
            self._in = "y"
        elif "cfk-xtitle" in classes:
            self._in = "x title"
        elif tag == "br" and self._in == "tip":
            self._add("\n")

    def _add(self, data: str) -> None:
        left, width, fills, tip = self.columns[-1]
        self.columns[-1] = (left, width, fills, tip + data)

    def handle_data(self, data):
        if self._in == "tip":
            self._add(data)
        elif self._in == "y" and data.strip():
            self.y_ticks.append(data)
        elif self._in == "x title":
            self.x_title += data

    def handle_endtag(self, tag):
        if tag == "span" and self._in == "tip" or tag == "div" and self._in in ("y", "x title"):
            self._in = None


def block_charts(at) -> list[BlockChart]:
    """The block charts an AppTest run drew (one per fitted strategy, in column order)."""
    return [BlockChart(element.proto.body) for element in at.get("html") if 'class="contextfit-blocks"' in element.proto.body]


class FateGrid(HTMLParser):
    """``rows``: strategy → [(shade or "absent", hover text)] per cell, in prompt order; ``x_title``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: dict[str, list[tuple[str, str]]] = {}
        self.x_title = ""
        self._row: str | None = None
        self._in: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if "cfm-row" in classes:
            self._row = found["data-strategy"]
            self.rows[self._row] = []
        elif "cfk-col" in classes:
            self.rows[self._row].append((found["data-shade"], ""))
        elif "cfk-tip" in classes:
            self._in = "tip"
        elif "cfk-xtitle" in classes:
            self._in = "x title"

    def handle_data(self, data):
        if self._in == "tip":
            shade, tip = self.rows[self._row][-1]
            self.rows[self._row][-1] = (shade, tip + data)
        elif self._in == "x title":
            self.x_title += data

    def handle_endtag(self, tag):
        if tag == "span" and self._in == "tip" or tag == "div" and self._in == "x title":
            self._in = None


def fate_grids(at) -> list[FateGrid]:
    """The HTML fate matrices an AppTest run drew (Compare: one, with two or more strategies fitted)."""
    return [FateGrid(element.proto.body) for element in at.get("html") if 'class="contextfit-matrix"' in element.proto.body]


def chart_count(at) -> tuple[int, int, int, int]:
    """(plotly charts, HTML budget bars, HTML block charts, HTML fate matrices) of an AppTest run: Compare
    draws (0, n, n, 1) for n strategies (:data:`EVERY_STRATEGY` for the built-ins), all its charts in HTML; (0, 0, 0, 0) when it has nothing to compare."""
    return len(at.get("plotly_chart")), len(budget_bars(at)), len(block_charts(at)), len(fate_grids(at))


#: What Compare draws with every built-in strategy: no plotly chart, a budget bar and a block chart each, the fate matrix.
EVERY_STRATEGY = (0, len(BUILTIN_STRATEGIES), len(BUILTIN_STRATEGIES), 1)


class WindowBar(HTMLParser):
    """A window bar (contextfit.dashboard.category_bar): ``strategy``, ``headline`` and ``parts``
    [(category, tokens, width %)]."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.strategy, self.headline, self.parts = "", "", []
        self._in_head = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if "contextfit-window" in classes:
            self.strategy = found["data-strategy"]
        self._in_head = "cfw-head" in classes
        if "data-category" in found:
            width = float(found["style"].split("width:")[1].split("%")[0])
            self.parts.append((found["data-category"], int(found["data-tokens"]), width))

    def handle_data(self, data):
        if self._in_head:
            self.headline += data

    def handle_endtag(self, tag):
        self._in_head = False


def window_bars(at) -> list[WindowBar]:
    """The window bars an AppTest run drew (one per fitted strategy, in column order)."""
    return [WindowBar(element.proto.body) for element in at.get("html") if 'class="contextfit-window"' in element.proto.body]


def prompt_tokens(at) -> list[str]:
    """Each fitted strategy's prompt tokens as its column says them exactly ("1,781"), in column order."""
    return [caption.value.split(" tokens of a ")[0] for caption in at.caption if " tokens of a " in caption.value]


def replay_table(at):
    """The Replay page's table of every turn under every strategy (in an AppTest run): the one with
    ``tokens sent`` (the answer's costs table comes first)."""
    return next(frame for frame in at.dataframe if "tokens sent" in frame.value.columns)
