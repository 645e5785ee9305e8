"""The Compare page's budget bars in HTML: the same numbers, colours and labels as the plotly budget chart."""

from __future__ import annotations

import dataclasses
import json

import pytest

import contextfit
from support.charts import BudgetBar

from contextfit import FitSession
from contextfit.dashboard import budget_bar, charts
from contextfit.dashboard.bands import band_text
from contextfit.inputs.samples import load_sample
from contextfit.pipeline.settings import conversation_model


def plans_for(key="support_chat", **settings):
    conversation = load_sample(key)
    return dict(FitSession(conversation).plans(model=conversation_model(conversation), **settings))


def test_the_bar_shows_the_window_gauge_and_the_prompt_zoomed_in_by_shade():
    plan = plans_for()["summarize"]
    bar = BudgetBar(budget_bar.budget_html(plan))
    window = bar.rows["window"]
    assert sum(width for _, _, width, *_ in window) == pytest.approx(100, abs=0.01)
    assert [(part, tokens) for part, tokens, *_ in window] == [
        ("prompt", plan.prompt_tokens), ("free budget", plan.budget - plan.prompt_tokens),
        ("response reserve", plan.response_reserve)]
    assert "repeating-linear-gradient" in window[2][4]  # the reserve is hatched, as in every chart
    assert sum(tokens for _, tokens, *_ in bar.rows["sent"]) == plan.prompt_tokens  # overhead and tools included
    assert sum(tokens for _, tokens, *_ in bar.rows["not sent"]) == sum(b.tokens for b in plan.blocks if not b.included)
    for shade, tokens, width, title, style in bar.rows["sent"] + bar.rows["not sent"]:
        assert charts.SHADES[shade].color in style and title.startswith(f"{charts.SHADES[shade].label} · ")
        assert f"{tokens:,} tokens" in title and width == pytest.approx(100 * tokens / (bar.top * 1.03), abs=1e-3)
    folded = [style for shade, *_, style in bar.rows["not sent"] if shade == "summarized"]
    assert folded and "repeating-linear-gradient" in folded[0]  # folded into the summary: pale and striped
    assert bar.strategy == "summarize"


def test_the_bar_has_the_numbers_of_the_plotly_budget_chart():
    for plan in plans_for("roleplay").values():
        figure = json.loads(charts.budget_figure(plan, token_scale=900).to_json())
        bar = BudgetBar(budget_bar.budget_html(plan, token_scale=900))
        drawn = [(t["y"][0], t["x"][0]) for t in figure["data"] if t["y"] != ["window"]]
        assert drawn == [(row, tokens) for row in ("sent", "not sent") for _, tokens, *_ in bar.rows[row]]
        assert bar.note == figure["layout"]["annotations"][0]["text"]
        assert figure["layout"]["xaxis"]["range"][1] == pytest.approx(bar.top * 1.03)


@pytest.mark.parametrize("limit", [128_000, 1_000_000])
def test_the_bar_zooms_to_the_prompt_at_real_windows_and_cuts_no_stretch(limit):
    plan = plans_for(context_limit=limit, response_reserve=4096)["truncate"]
    bar = BudgetBar(budget_bar.budget_html(plan))
    assert bar.note.endswith("% of the budget · zoomed in") and bar.line is None
    longest = max(plan.prompt_tokens, sum(b.tokens or 0 for b in plan.blocks if not b.included))
    assert longest <= bar.top < plan.budget / 10
    small = BudgetBar(budget_bar.budget_html(plan, token_scale=1))  # a shared scale never cuts a row off
    assert sum(width for _, _, width, *_ in small.rows["sent"]) <= 100


def test_the_budget_line_marks_the_budget_when_it_is_in_view():
    plan = plans_for()["truncate"]
    bar = BudgetBar(budget_bar.budget_html(plan))
    assert bar.line == pytest.approx(100 * plan.budget / (bar.top * 1.03), abs=1e-3)
    assert bar.note == f"{100 * plan.prompt_tokens / plan.budget:.1f}% of the budget"


def test_an_approximate_prompt_shows_its_band_and_user_text_is_escaped():
    chat = [{"role": "user", "content": "Hello " * 40}, {"role": "assistant", "content": "Hi " * 40}]
    plan = contextfit.plan_prompt(chat, model="claude-sonnet-4", context_limit=2_000, response_reserve=300)
    assert "approximate" in band_text(plan)
    plan = dataclasses.replace(plan, strategy='<img src=x onerror="alert(1)">')
    text = budget_bar.budget_html(plan)
    assert "<img" not in text and "&lt;img" in text
    bar = BudgetBar(text)
    assert all("approximate" in title for *_, title, _ in bar.rows["sent"])
    prompt = bar.rows["window"][0]  # the window's prompt part too reads as the band, not as one exact number
    assert prompt[0] == "prompt" and prompt[3].startswith(f"prompt: {band_text(plan)} (")
    exact = BudgetBar(budget_bar.budget_html(contextfit.plan_prompt(chat, model="gpt-4o", context_limit=2_000,
                                                                    response_reserve=300)))
    assert exact.rows["window"][0][3].startswith(f"prompt: {exact.rows['window'][0][1]:,} tokens (")


def test_block_charts_fit_their_labels_without_plotly_measuring_them():
    plan = plans_for(context_limit=128_000, response_reserve=4096)["truncate"]
    top = 123_456
    layout = json.loads(charts.blocks_figure(plan, token_scale=top).to_json())["layout"]
    assert layout["yaxis"]["automargin"] is False and layout["xaxis"]["automargin"] is False
    assert layout["margin"]["l"] >= 8 * len(f"{top:,}") + 30  # the widest tick label and the axis title fit
    assert json.loads(charts.blocks_figure(plan, legend=True).to_json())["layout"]["yaxis"]["automargin"] is True
