"""Every chart builder, against the plan it draws."""

from __future__ import annotations

import json

import pytest

import contextfit
from contextfit import FitSession
from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from contextfit.dashboard import charts
from contextfit.inputs.samples import load_sample
from contextfit.pipeline.settings import conversation_model

STRATEGIES = list(BUILTIN_STRATEGIES)


def plans_for(key="support_chat", **settings):
    conversation = load_sample(key)
    return dict(FitSession(conversation).plans(model=conversation_model(conversation), **settings))


def bars(figure):
    return [trace for trace in json.loads(figure.to_json())["data"] if trace["type"] == "bar"]


def shade_of_name(name):
    return next(key for key, style in charts.SHADES.items() if style.label == name)


def test_budget_bar_shows_the_window_gauge_and_the_prompt_zoomed_in():
    plan = plans_for()["summarize"]
    traces = bars(charts.budget_figure(plan))
    window = [t for t in traces if t["y"] == ["window"]]
    assert sum(t["x"][0] for t in window) == pytest.approx(100)  # the whole window, in percent, always in view
    assert [t["customdata"][0] for t in window] == [plan.prompt_tokens, plan.budget - plan.prompt_tokens, plan.response_reserve]
    reserve = [t for t in window if t["name"] == "response reserve"]
    assert reserve[0]["marker"]["pattern"]["shape"] == "/"
    spent = sum(t["x"][0] for t in traces if t["y"] == ["sent"])
    assert spent == plan.prompt_tokens  # blocks, tool definitions and chat overhead add up
    dropped = sum(t["x"][0] for t in traces if t["y"] == ["not sent"])
    assert dropped == sum(b.tokens for b in plan.blocks if not b.included)
    for trace in traces:
        if trace["y"] != ["window"]:
            assert trace["marker"]["color"] == charts.SHADES[shade_of_name(trace["name"])].color


@pytest.mark.parametrize("limit", [128_000, 1_000_000])
def test_budget_bar_zooms_to_the_prompt_at_real_windows_and_cuts_no_bar(limit):
    plan = plans_for(context_limit=limit, response_reserve=4096)["truncate"]
    layout = json.loads(charts.budget_figure(plan).to_json())["layout"]
    top = layout["xaxis"]["range"][1]
    longest = max(plan.prompt_tokens, sum(b.tokens or 0 for b in plan.blocks if not b.included))
    assert longest <= top < plan.budget / 10  # zoomed: the prompt fills the axis, not 1 % of it
    assert layout["xaxis2"]["range"] == [0, 100] and layout["xaxis2"]["ticktext"][-1] == "100%"
    assert layout["annotations"][0]["text"].endswith("% of the budget · zoomed in") and not layout.get("shapes")
    # A shared scale smaller than this plan's prompt never cuts it off.
    small = json.loads(charts.budget_figure(plan, token_scale=1).to_json())["layout"]["xaxis"]["range"][1]
    assert small >= plan.prompt_tokens


def test_budget_line_marks_the_budget_when_it_is_in_view():
    plan = plans_for()["truncate"]
    layout = json.loads(charts.budget_figure(plan).to_json())["layout"]
    assert layout["shapes"][0]["x0"] == plan.budget
    assert layout["annotations"][0]["text"] == f"{100 * plan.prompt_tokens / plan.budget:.1f}% of the budget"


def test_a_tools_request_adds_up_with_its_tool_definitions_and_overhead():
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    plan = contextfit.plan_prompt([{"role": "user", "content": "Paris?"}], model="gpt-4o", tools=tools)
    traces = bars(charts.budget_figure(plan))
    sent = {t["hovertemplate"].split(":")[0]: t["x"][0] for t in traces if t["y"] == ["sent"]}
    assert sent["protected · tool definitions"] == plan.tools_tokens > 0
    assert sent["protected · chat overhead"] > 0
    assert sum(sent.values()) == plan.prompt_tokens


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_block_chart_has_one_bar_per_block_coloured_by_shade(strategy):
    plan = plans_for()[strategy]
    traces = bars(charts.blocks_figure(plan))
    assert sum(len(t["x"]) for t in traces) == len(plan.blocks)
    for trace in traces:
        shade = shade_of_name(trace["name"])
        assert trace["marker"]["color"] == charts.SHADES[shade].color
        for x, y, hover in zip(trace["x"], trace["y"], trace["hovertext"]):
            block = plan.blocks[x]
            assert charts.shade_of(block.reason) == shade and (block.tokens or 0) == y
            assert hover.startswith(f"<b>{block.id}</b>")  # the block's one name, as in every table


def test_the_summary_sent_and_the_blocks_folded_into_it_look_different():
    plan = plans_for()["summarize"]
    traces = {t["name"]: t for t in bars(charts.blocks_figure(plan))}
    sent, folded = traces["summary (sent)"], traces["folded into the summary"]
    assert sent["marker"]["color"] != folded["marker"]["color"] and "pattern" in folded["marker"]
    assert len(sent["x"]) == 1 and len(folded["x"]) >= 1


def test_exclusions_differ_by_shade_and_pattern_but_stay_excluded():
    excluded = [charts.SHADES[r] for r in ("over_budget", "low_relevance", "manual", "late_overflow")]
    assert {s.fate for s in excluded} == {"excluded"}
    assert len({(s.color, s.pattern) for s in excluded}) == len(excluded)
    assert all(s.label.startswith("excluded") for s in excluded)
    plan = plans_for()["manual"]
    names = {t["name"] for t in bars(charts.blocks_figure(plan))}
    assert "excluded: manual" in names


def test_side_by_side_block_charts_share_their_scale_and_ticks_are_whole():
    plans = plans_for()
    top = charts.block_scale(list(plans.values()))
    assert top == max(b.tokens or 0 for p in plans.values() for b in p.blocks)
    ranges = {json.loads(charts.blocks_figure(p, token_scale=top).to_json())["layout"]["yaxis"]["range"][1]
              for p in plans.values()}
    assert len(ranges) == 1
    tiny = contextfit.plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o")
    layout = json.loads(charts.blocks_figure(tiny).to_json())["layout"]
    assert layout["xaxis"]["dtick"] == 1 and layout["yaxis"]["dtick"] == 1  # no half-step ticks on a tiny chat


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
    excluded = next(t for t in traces if t["name"] == "excluded: over budget")
    assert excluded["hovertext"][0] == (
        f"blocks {first_bin[0].id} – {first_bin[-1].id}<br>{sum(not b.included for b in first_bin)} excluded: over budget: "
        f"{sum(b.tokens for b in first_bin if not b.included):,} tokens"
    )


def test_fate_matrix_rows_follow_each_plan():
    plans = plans_for()
    names, columns, blocks = charts._matrix(plans)  # the matrix every fate chart draws
    rows = [[None if block is None else block.fate for block in row] for row in blocks]
    assert names == STRATEGIES
    for name, row in zip(names, rows):
        fates = {b.id: b.fate for b in plans[name].blocks}
        assert [fate for fate in row if fate is not None] == [fates[c] for c in columns if c in fates]
    # The summary column exists only for summarize.
    summary = columns.index("summary")
    assert [row[summary] for row in rows] == [None, "summarized", None, None, None, None]  # the ledger is its own block


def test_fate_matrix_view_uses_the_shades_and_names_blocks_by_id():
    view = charts.fate_matrix_view(plans_for())
    assert list(view.names) == STRATEGIES and view.per_cell == 1
    used = {shade for row in view.shades for shade in row if shade is not None}
    assert used <= set(charts.SHADES) and {"summary", "summarized", "manual"} <= used
    summarize = view.hovers[STRATEGIES.index("summarize")]
    assert any("<b>summary</b>: summary (sent) (summary)" in cell for cell in summarize)


def test_dense_fate_matrix_bins_columns():
    chat = [{"role": "user" if i % 2 else "assistant", "content": f"m {i}"} for i in range(1200)]
    plans = {s: contextfit.plan_prompt(chat, model="gpt-4o", context_strategy=s, context_limit=4000, response_reserve=500) for s in STRATEGIES}
    view = charts.fate_matrix_view(plans, dense_threshold=300)
    assert len(view.shades[0]) <= 300 and view.hovers[0][0].startswith("truncate · blocks m0 – m3")


def test_legend_lists_every_shade():
    html = charts.legend_html()
    for shade in charts.SHADES.values():
        assert shade.label in html and shade.color in html


def test_legend_items_never_break_inside_a_label():
    # at 1280 pixels the Audit page's legend broke "excluded: low | relevance", and the second line
    # began with "relevance" a swatch-margin left of the page's text
    import re

    html = charts.legend_html()
    items = re.findall(r'<span style="white-space:nowrap">(.*?</span>[^<]*)</span>', html)
    assert len(items) == len(charts.SHADES) + 2  # every shade, the free budget and the reserve
    assert all(any(shade.label in item for item in items) for shade in charts.SHADES.values())
