"""The Compare page's block charts in HTML: the same bars, shades, scale and hover text as the plotly block chart."""

from __future__ import annotations

import json

import pytest
from support.charts import BlockChart, FateGrid
from hypothesis import given
from hypothesis import strategies as st

import contextfit
from contextfit.dashboard import block_chart, charts, fate_grid

CHAT = [{"role": "system", "content": "Be brief."}] + [
    {"role": "user" if i % 2 else "assistant",
     "content": f"Turn {i} discusses the harbour ledger, shipment {i * 13} and captain Mara's route. " * (1 + i % 5)}
    for i in range(1, 40)
]


def plan_for(strategy: str = "summarize", limit: int = 1400, chat=CHAT):
    return contextfit.plan_prompt(chat, model="gpt-4o", context_limit=limit, response_reserve=200, context_strategy=strategy)


def figure_bars(figure) -> dict[float, list[tuple[str, int]]]:
    """The plotly figure's bars by x: (shade, tokens), in trace (stacking) order."""
    shade = {style.label: name for name, style in charts.SHADES.items()}
    found: dict[float, list[tuple[str, int]]] = {}
    for trace in json.loads(figure.to_json())["data"]:
        for x, y in zip(trace["x"], trace["y"]):
            found.setdefault(x, []).append((shade[trace["name"]], y))
    return found


@pytest.mark.parametrize("strategy", ["truncate", "summarize", "vector-recall", "clear-tool-results"])
@pytest.mark.parametrize("dense", [block_chart.DENSE_THRESHOLD, 7])
def test_the_chart_has_the_bars_of_the_plotly_block_chart(strategy, dense):
    plan = plan_for(strategy)
    scale = charts.block_scale([plan, plan_for("truncate", 4000)], dense)
    chart = BlockChart(block_chart.blocks_html(plan, token_scale=scale, dense_threshold=dense))
    figure = charts.blocks_figure(plan, dense_threshold=dense, token_scale=scale)
    expected = figure_bars(figure)
    view = charts.blocks_view(plan, dense, scale)
    assert chart.top == view.top == scale and chart.strategy == strategy
    assert json.loads(figure.to_json())["layout"]["yaxis"]["range"][1] == pytest.approx(chart.top * 1.05)
    assert len(chart.columns) == len(expected) <= dense
    axis = chart.top * 1.05
    for (left, width, fills, tip), (x, bars) in zip(chart.columns, sorted(expected.items())):
        assert [(shade, tokens) for shade, tokens, _, _ in fills] == bars  # the same shades and tokens, stacked alike
        bottoms = [sum(tokens for _, tokens in bars[:k]) for k in range(len(bars))]
        assert [bottom for *_, bottom, _ in fills] == pytest.approx([100 * b / axis for b in bottoms], abs=0.001)
        assert [height for *_, height in fills] == pytest.approx([100 * t / axis for _, t in bars], abs=0.001)
        span = max(len(plan.blocks), 1)
        assert left + width / 2 == pytest.approx(100 * (x + 0.5) / span, abs=0.001)  # centred on the figure's bar
        assert tip  # every column has its hover label
    lefts = [left for left, *_ in chart.columns]
    assert lefts == sorted(lefts) and lefts[0] >= 0 and chart.columns[-1][0] + chart.columns[-1][1] <= 100.001
    hovers = [bar.hover for bar in view.bars]
    assert sorted(hovers) == sorted(text for trace in figure.data for text in trace.hovertext)
    assert chart.x_title == json.loads(figure.to_json())["layout"]["xaxis"]["title"]["text"]


def test_a_binned_chart_says_so_and_names_each_bins_blocks():
    plan = plan_for("truncate", 900)
    chart = BlockChart(block_chart.blocks_html(plan, dense_threshold=7))
    size = -(-len(plan.blocks) // 7)
    assert chart.x_title == f"prompt order · {size} blocks per bar"
    keys = charts.block_keys(plan)
    assert chart.columns[0][3].startswith(f"blocks {keys[0]} – {keys[size - 1]}")
    assert sum(tokens for _, _, fills, _ in chart.columns for _, tokens, _, _ in fills) == sum(b.tokens or 0 for b in plan.blocks)


def test_user_text_is_escaped_and_labels_open_towards_the_middle():
    chat = [{"role": "user", "content": '<img src=x onerror="alert(1)"> & "quoted" ' * 3},
            {"role": "assistant", "content": "ok"}, {"role": "user", "content": "</span></div><script>x()</script>"}]
    text = block_chart.blocks_html(plan_for("truncate", 4000, chat))
    assert "<img" not in text and "<script" not in text and "</span></div><script>" not in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp;" in text
    chart = BlockChart(text)
    assert len(chart.columns) == 3 and '<img src=x onerror="alert(1)">' in chart.columns[0][3]  # shown as text
    sides = [part.split('"')[0] for part in text.split('class="cfk-col ')[1:]]
    assert [side.split()[0] for side in sides] == ["cfk-from-left", "cfk-from-left", "cfk-from-right"]


def test_the_axis_has_whole_number_ticks_within_the_scale():
    plan = plan_for("truncate", 4000, CHAT[:3])
    chart = BlockChart(block_chart.blocks_html(plan))
    ticks = [int(label.replace(",", "")) for label in chart.y_ticks[1:]]  # the first label only sizes the axis
    assert ticks[0] == 0 and ticks == sorted(ticks) and ticks[-1] <= chart.top * 1.05
    assert len(ticks) >= 3


@given(st.floats(min_value=0, max_value=5e7, allow_nan=False), st.integers(min_value=2, max_value=8))
def test_ticks_are_whole_steps_of_one_two_or_five(top, most):
    found = block_chart.ticks(top, most)
    assert found[0] == 0 and len(found) <= most and found[-1] <= top + 1e-9 or found == [0]
    if len(found) > 1:
        step = found[1] - found[0]
        assert all(b - a == step for a, b in zip(found, found[1:]))
        assert str(step).rstrip("0") in ("1", "2", "5")  # 1, 2 or 5 times a power of ten
        assert top - found[-1] < step  # the last tick is the last step that fits


@pytest.mark.parametrize("dense", [block_chart.DENSE_THRESHOLD, 6])
def test_the_fate_grid_has_the_cells_of_the_fate_matrix_view(dense):
    plans = {name: plan_for(name) for name in ("truncate", "summarize", "vector-recall")}
    grid = FateGrid(fate_grid.fate_html(plans, dense))
    view = charts.fate_matrix_view(plans, dense)
    assert list(grid.rows) == list(view.names) == list(plans)
    assert [[shade for shade, _ in cells] for cells in grid.rows.values()] == [
        ["absent" if shade is None else shade for shade in row] for row in view.shades]
    assert [[tip for _, tip in cells] for cells in grid.rows.values()] == [
        [text.replace("<b>", "").replace("</b>", "").replace("<br>", "") for text in row] for row in view.hovers]
    if dense > 41:  # unbinned: truncate's row has an empty cell where summarize sends its summary
        assert [shade for shade, _ in grid.rows["truncate"]].count("absent") == 1
    assert grid.x_title == view.x_title


def test_the_fate_grid_escapes_strategy_names_and_block_ids():
    plan = plan_for("truncate", 4000, [{"role": "user", "content": "hi", "meta": {"id": "<b>x</b>"}}])
    text = fate_grid.fate_html({'<i onclick="x()">mine</i>': plan})
    assert "<i onclick" not in text and "<b>x</b>" not in text.replace("<b>&lt;b&gt;x&lt;/b&gt;</b>", "")
    assert list(FateGrid(text).rows) == ['<i onclick="x()">mine</i>']


def test_a_binned_fate_grid_has_round_block_numbers_on_its_axis():
    chat = [{"role": "user" if i % 2 else "assistant", "content": f"Message {i} about shipment {i * 7}."} for i in range(1, 1001)]
    plans = {name: plan_for(name, 3000, chat) for name in ("truncate", "summarize")}
    text = fate_grid.fate_html(plans)
    grid = FateGrid(text)
    assert len(grid.rows["truncate"]) <= block_chart.DENSE_THRESHOLD and "blocks per cell" in grid.x_title
    axis = text.split('class="cfk-xaxis">')[1].split("</div>")[0]
    labels = [int(part.split(">")[1].replace(",", "")) for part in axis.split("</span>") if ">" in part]
    blocks = charts.fate_matrix_view(plans).blocks  # 1,001: the summary is a column too
    assert blocks == 1001 and labels == [0, 200, 400, 600, 800, 1000]  # round numbers, not multiples of the cell size
    lefts = [float(part.split("left:")[1].split("%")[0]) for part in axis.split("</span>") if "left:" in part]
    assert lefts == sorted(lefts) and all(0 < left < 100 for left in lefts)
    per_cell = -(-blocks // block_chart.DENSE_THRESHOLD)
    assert lefts[-1] == pytest.approx(100 * 1000.5 / (len(grid.rows["truncate"]) * per_cell), abs=0.01)
