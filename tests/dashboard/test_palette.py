"""Strategy colours are never fate colours: measured in CIE L*a*b*, not eyeballed."""

from __future__ import annotations

import itertools
import math

from contextfit.dashboard import palette, replay_charts
from contextfit.dashboard.charts import FATE_COLORS, FREE_COLOR, RESERVE_COLOR, SHADES
from contextfit.pipeline.plan import BUILTIN_STRATEGIES


def lab(color: str) -> tuple[float, float, float]:
    """sRGB hex to CIE L*a*b* (D65)."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(color[i:i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def distance(a: str, b: str) -> float:
    return math.dist(lab(a), lab(b))


FATE_CHART_COLORS = {*FATE_COLORS.values(), *(shade.color for shade in SHADES.values()), RESERVE_COLOR, FREE_COLOR,
                     "#4D4D4D"}  # the window gauge's prompt


def test_every_strategy_colour_is_far_from_every_fate_colour():
    for color in [*palette.STRATEGY_COLORS.values(), *palette.SPARE_COLORS]:
        nearest = min(FATE_CHART_COLORS, key=lambda fate: distance(color, fate))
        assert distance(color, nearest) >= 25, (color, nearest)
    assert not set(palette.STRATEGY_COLORS.values()) & FATE_CHART_COLORS


def test_the_built_ins_are_far_from_each_other_and_each_has_its_own_marker():
    assert set(palette.STRATEGY_COLORS) == set(BUILTIN_STRATEGIES)
    for a, b in itertools.combinations([*palette.STRATEGY_COLORS.values(), *palette.SPARE_COLORS], 2):
        assert distance(a, b) >= 20, (a, b)
    for a, b in itertools.combinations(palette.STRATEGY_COLORS.values(), 2):
        assert distance(a, b) >= 30, (a, b)
    assert len({palette.strategy_symbol(name) for name in BUILTIN_STRATEGIES}) == len(BUILTIN_STRATEGIES)


def test_replays_lines_take_the_strategy_palette():
    from types import SimpleNamespace

    labels = ["summarize", "truncate+stable_prefix", "mine", "fact-ledger"]
    result = SimpleNamespace(turns={label: [] for label in labels})
    styles = {label: replay_charts.line_style(result, label) for label in labels}
    assert styles["summarize"]["color"] == palette.STRATEGY_COLORS["summarize"]
    assert styles["truncate+stable_prefix"] == {**styles["truncate+stable_prefix"], "color": "#111111", "dash": "dot"}
    assert styles["mine"]["color"] == palette.SPARE_COLORS[0]
    assert not {style["color"] for style in styles.values()} & FATE_CHART_COLORS
