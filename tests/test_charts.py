"""Every chart builder, against the plan it draws."""

from __future__ import annotations

import json

import pytest

import contextfit
from contextfit.views import charts
from contextfit.inputs.samples import load_sample
from contextfit.engine.plan_settings import conversation_model

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results"]


def plans_for(key="support_chat", **settings):
    conversation = load_sample(key)
    return contextfit.compare_strategies(conversation, model=conversation_model(conversation), **settings)


def bars(figure):
    return [trace for trace in json.loads(figure.to_json())["data"] if trace["type"] == "bar"]


def test_budget_bar_adds_up_to_the_context_limit_with_the_reserve_as_its_own_band():
    plan = plans_for()["summarize"]
    traces = bars(charts.budget_figure(plan))
    sent = sum(t["x"][0] for t in traces if t["y"] == ["sent"])
    assert sent == plan.context_limit
    reserve = [t for t in traces if t["name"] == "response reserve"]
    assert reserve[0]["x"] == [plan.response_reserve] and reserve[0]["marker"]["pattern"]["shape"] == "/"
    spent = sum(t["x"][0] for t in traces if t["y"] == ["sent"] and t["name"] in charts.FATES)
    assert spent == plan.prompt_tokens
    dropped = sum(t["x"][0] for t in traces if t["y"] == ["not sent"])
    assert dropped == sum(b.tokens for b in plan.blocks if not b.included)
    for trace in traces:
        if trace["name"] in charts.FATES:
            assert trace["marker"]["color"] == charts.FATE_COLORS[trace["name"]]


def test_budget_line_marks_the_budget():
    plan = plans_for()["truncate"]
    layout = json.loads(charts.budget_figure(plan).to_json())["layout"]
    assert layout["shapes"][0]["x0"] == plan.budget
    assert f"budget {plan.budget:,}" in layout["annotations"][0]["text"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_block_chart_has_one_bar_per_block_coloured_by_fate(strategy):
    plan = plans_for()[strategy]
    traces = bars(charts.blocks_figure(plan))
    assert sum(len(t["x"]) for t in traces) == len(plan.blocks)
    for trace in traces:
        assert trace["marker"]["color"] == charts.FATE_COLORS[trace["name"]]
        for x, y in zip(trace["x"], trace["y"]):
            block = plan.blocks[x]
            assert block.fate == trace["name"] and (block.tokens or 0) == y


def test_hover_shows_role_kind_reason_and_escaped_text():
    chat = [{"role": "user", "content": "<script>alert(1)</script> **hi**"}]
    plan = contextfit.plan_prompt(chat, model="gpt-4o")
    hover = bars(charts.blocks_figure(plan))[0]["hovertext"][0]
    assert "user" in hover and "history" in hover and "current_input" in hover
    assert "<script>" not in hover and "&lt;script&gt;" in hover


def test_thousands_of_blocks_are_binned_into_a_readable_chart():
    chat = [{"role": "user" if i % 2 else "assistant", "content": f"message {i} " * 5} for i in range(3000)]
    plan = contextfit.plan_prompt(chat, model="gpt-4o", context_limit=20_000, response_reserve=2_000)
    traces = bars(charts.blocks_figure(plan, dense_threshold=300))
    positions = {x for t in traces for x in t["x"]}
    assert len(positions) <= 300
    assert sum(sum(t["y"]) for t in traces) == sum(b.tokens for b in plan.blocks)
    kept = sum(sum(t["y"]) for t in traces if t["name"] in ("kept", "protected"))
    assert kept == sum(b.tokens for b in plan.blocks if b.included)
    layout = json.loads(charts.blocks_figure(plan, dense_threshold=300).to_json())["layout"]
    assert layout["xaxis"]["title"]["text"] == "prompt order · 10 blocks per bar"
    first_bin = plan.blocks[:10]
    excluded = next(t for t in traces if t["name"] == "excluded")
    assert excluded["hovertext"][0] == (
        f"blocks #0–#9<br>{sum(not b.included for b in first_bin)} excluded: "
        f"{sum(b.tokens for b in first_bin if not b.included):,} tokens"
    )


def test_fate_matrix_rows_follow_each_plan():
    plans = plans_for()
    names, columns, rows = charts.fate_matrix(plans)
    assert names == STRATEGIES
    for name, row in zip(names, rows):
        fates = {b.id: b.fate for b in plans[name].blocks}
        assert [fate for fate in row if fate is not None] == [fates[c] for c in columns if c in fates]
    # The summary column exists only for summarize.
    summary = columns.index("summary")
    assert [row[summary] for row in rows] == [None, "summarized", None, None, None]


def test_fate_matrix_figure_uses_the_fate_colours():
    figure = json.loads(charts.fate_matrix_figure(plans_for()).to_json())
    heatmap = figure["data"][0]
    assert heatmap["type"] == "heatmap" and heatmap["y"] == STRATEGIES
    colours = [stop[1] for stop in heatmap["colorscale"]][::2]
    assert colours[: len(charts.FATES)] == [charts.FATE_COLORS[f] for f in charts.FATES]
    assert [t["name"] for t in figure["data"][1:]] == list(charts.FATES)


def test_dense_fate_matrix_bins_columns():
    chat = [{"role": "user" if i % 2 else "assistant", "content": f"m {i}"} for i in range(1200)]
    plans = {s: contextfit.plan_prompt(chat, model="gpt-4o", context_strategy=s, context_limit=4000, response_reserve=500) for s in STRATEGIES}
    heatmap = json.loads(charts.fate_matrix_figure(plans, dense_threshold=300).to_json())["data"][0]
    assert len(heatmap["z"][0]) <= 300 and "blocks #0" in heatmap["text"][0][0]


def test_legend_lists_every_fate():
    html = charts.legend_html()
    for fate in charts.FATES:
        assert fate in html and charts.FATE_COLORS[fate] in html
