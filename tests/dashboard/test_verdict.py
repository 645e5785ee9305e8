"""The Compare page's verdict, token breakdown, diff and HTML report, against the plans they describe."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from support.paths import shared_path

import contextfit
from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from contextfit import amounts
from contextfit.replays import answer as recommend
from contextfit.fitting.registry import ContextStrategyRegistry
from contextfit.errors import TokenBudgetExceeded
from contextfit.inputs.samples import SAMPLES, load_sample
from contextfit.dashboard import breakdown, diff, report, verdict
from contextfit.dashboard import editor
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard.setup import Setup, suggested_setup
from contextfit.tokens.models import get_model

STRATEGIES = tuple(BUILTIN_STRATEGIES)


def plans_for(key="support_chat", model=None, **settings):
    conversation = load_sample(key)
    setup = suggested_setup(conversation, model)
    if settings:
        setup = Setup.of(setup.model, settings.get("context_limit", setup.context_limit),
                         settings.get("response_reserve", setup.response_reserve))
    return dict(session_for(conversation).plans(setup.settings, strategies=setup.strategies))


# -- verdict ----------------------------------------------------------------------------


def _fates(plan):
    """(dropped, summarized, compressed), the slow way: every input block that is not sent either went
    into a summary, or into a compressed block, that stands in its place (by the inserted blocks'
    sources), or was dropped."""
    inputs = [b for b in plan.blocks if b.origin == "input"]
    into = {}
    for block in plan.blocks:
        if block.origin == "strategy" and block.included:
            into.update(dict.fromkeys(block.sources, block.reason))
    gone = [into.get(k, "dropped") for k, b in enumerate(inputs) if not b.included]
    return gone.count("dropped"), gone.count("summary"), gone.count("compressed")


def test_one_row_per_strategy_with_the_plans_numbers():
    plans = plans_for()
    rows = verdict.verdict_rows(plans)
    assert [row.strategy for row in rows] == list(STRATEGIES)
    for row in rows:
        plan = plans[row.strategy]
        assert row.prompt_tokens == plan.prompt_tokens
        assert row.used_percent == round(100 * plan.prompt_tokens / plan.budget, 1)
        assert (row.dropped, row.summarized, row.compressed) == _fates(plan)
        prices = get_model(plan.model).prices  # US dollars per million
        reply = recommend.plan_outcomes(plans)[0].reply.tokens  # the chat's own replies, their mean
        assert row.cost == pytest.approx((plan.prompt_tokens * prices.input + reply * prices.output) / 1_000_000)
    by_name = {row.strategy: row for row in rows}
    assert by_name["summarize"].summarized > 0 and by_name["truncate"].summarized == 0
    assert by_name["summarize"].description.startswith("Like truncate")


def test_best_values_are_marked_and_ties_and_sameness_handled():
    rows = verdict.verdict_rows(plans_for())
    best = verdict.best_cells(rows)
    smallest = min(row.prompt_tokens for row in rows)
    assert best["prompt_tokens"] == {row.strategy for row in rows if row.prompt_tokens == smallest}
    assert best["compressed"] == set()  # nobody compresses here: nothing stands out
    styles = verdict.styles(rows)
    for row, style in zip(rows, styles):
        marked = style["prompt tokens"] == verdict.BEST_STYLE
        assert marked == (row.strategy in best["prompt_tokens"])


def test_a_model_without_catalog_prices_says_so(monkeypatch):
    import dataclasses

    plan = contextfit.plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o")
    unpriced = dataclasses.replace(get_model("gpt-4o"), prices=None)
    monkeypatch.setattr(verdict, "get_model", lambda model: unpriced)  # the catalog is being priced model by model
    row = verdict.verdict_row("truncate", plan)
    assert row.cost is None and verdict.table([row])[0]["cost / request"] == amounts.NO_PRICE


def test_a_strategy_that_cannot_fit_gets_a_row_with_its_error_and_no_best():
    error = TokenBudgetExceeded(900, 100, "The protected context needs 900 tokens.")
    plans = {**plans_for(), "broken": error}
    rows = verdict.verdict_rows(plans)
    broken = verdict.table(rows)[-1]
    assert broken["prompt tokens"] == "—" and "TOKEN_BUDGET_EXCEEDED" in broken["what it does"]
    assert all("broken" not in names for names in verdict.best_cells(rows).values())


def test_a_plugins_description_comes_from_its_registration():
    registry = ContextStrategyRegistry()
    undo = registry.register("keep-all", lambda messages, count_tokens, budget, **options: list(messages),
                             description="Keeps everything. Never drops a block.")
    try:
        assert verdict.descriptions(registry) == {"keep-all": "Keeps everything."}
    finally:
        undo()


# -- breakdown --------------------------------------------------------------------------


@pytest.mark.parametrize("sample", [s.key for s in SAMPLES])
@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4"])
def test_the_breakdown_adds_up_to_the_prompt_tokens(sample, model):
    for name, plan in plans_for(sample, model).items():
        rows = breakdown.by_kind(plan)
        assert sum(rows.values()) == plan.prompt_tokens, name
    table = breakdown.breakdown_table(plans_for(sample, model))
    assert table[-1]["kind"] == "total"


def test_the_roleplay_breakdown_uses_sillytaverns_kinds():
    plan = plans_for("roleplay")["summarize"]
    rows = breakdown.by_kind(plan)
    assert list(rows) == ["character", "persona", "lorebook", "memory", "history", "summary", "chat overhead"][: len(rows)] \
        or {"character", "persona", "lorebook", "history"} <= set(rows)
    assert rows["chat overhead"] == plan.prompt_tokens - sum(b.tokens for b in plan.blocks if b.included)


def test_tool_definitions_are_a_labelled_row_and_per_tool_largest_first():
    plan = plans_for("coding_agent")["truncate"]
    assert plan.tools_tokens > 0
    assert breakdown.by_kind(plan)["tool definitions"] == plan.tools_tokens
    tools = breakdown.per_tool(plan)
    named = [row for row in tools if row["tool"] != breakdown.TOOL_FRAMING]
    assert len(named) >= 2 and [r["tokens"] for r in named] == sorted((r["tokens"] for r in named), reverse=True)
    assert sum(row["tokens"] for row in tools) == plan.tools_tokens
    assert breakdown.per_tool(plans_for("support_chat")["truncate"]) == []


def test_the_request_that_showed_437_tokens_in_blocks_of_86_now_adds_up():
    """Issue 14: a pydantic-ai request with tools showed 437 prompt tokens whose blocks added up to 86.

    The 351 missing were the tool definitions (then 348, now the protected block
    ``tools``) and the reply priming (3, "chat overhead"): the breakdown and the
    budget bar now name both. Counted as the API bills tools since (the API's
    count: 448; tests/tokens/test_openai_counts.py), the request is 451: definitions 344,
    history 104 (its parallel calls read through OpenAI's wrapper).
    """
    conversation = contextfit.load_conversation(
        shared_path("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json").read_bytes())
    plan = session_for(conversation).plan("truncate", suggested_setup(conversation).settings)
    rows = breakdown.by_kind(plan)
    assert plan.prompt_tokens == 451
    assert rows == {"tool definitions": plan.tools_tokens, "history": 104, "chat overhead": 451 - 104 - plan.tools_tokens}
    assert sum(row["tokens"] for row in breakdown.per_tool(plan)) == plan.tools_tokens


# -- diff -------------------------------------------------------------------------------


def test_the_diff_names_every_block_treated_differently_and_why():
    plans = plans_for()
    found = diff.differences(plans["truncate"], plans["summarize"])
    keyed = {d.block: d for d in found}
    assert keyed["summary"].fate_a == diff.ABSENT and keyed["summary"].fate_b == "summary (sent)"
    folded = [d for d in found if d.reason_b == "summarized"]
    truncate = {b.id: b for b in plans["truncate"].blocks}
    assert folded and all(d.reason_a == truncate[d.block].reason != "summarized" for d in folded)
    assert any(d.fate_a == "excluded: over budget" for d in folded)
    summarize = {b.id: b for b in plans["summarize"].blocks}
    same = [i for i in truncate if i in summarize and (truncate[i].reason, truncate[i].tokens) == (summarize[i].reason, summarize[i].tokens)]
    assert not set(same) & set(keyed)  # only differences are listed
    assert diff.differences(plans["truncate"], plans["truncate"]) == []
    row = found[0].to_row("truncate", "summarize")
    assert {"block", "truncate: fate", "summarize: fate"} <= set(row)


def test_the_edit_table_gets_each_blocks_fate_per_strategy():
    conversation = load_sample("support_chat")
    setup = suggested_setup(conversation)
    plans = dict(session_for(conversation).plans(setup.settings, strategies=setup.strategies))
    plans["broken"] = TokenBudgetExceeded(900, 100, "too big")
    rows = diff.fate_columns(editor.editor_rows(conversation, setup, plans), plans)
    manual = {b.id: b for b in plans["manual"].blocks}
    for row in rows:
        assert row["fate: manual"] == diff.fate_text(manual[row["id"]])
        assert row["fate: broken"] == "—"
    assert any(row["fate: manual"] == "excluded: manual" for row in rows)
    assert set(editor.EDITABLE.values()) <= set(rows[0])  # the editable columns are untouched


# -- report -----------------------------------------------------------------------------


def test_the_report_is_one_offline_file_with_the_verdict_settings_and_charts():
    plans = plans_for("roleplay")
    when = datetime(2026, 12, 3, 8, 0, tzinfo=timezone.utc)
    text = report.comparison_html(plans, source_name="<b>my chat</b>.json", settings={"model": "gpt-4o", "limit": "1,500"},
                                  created=when)
    assert text.startswith("<!DOCTYPE html>") and "2026-12-03 08:00 UTC" in text
    assert "&lt;b&gt;my chat&lt;/b&gt;.json" in text and "<b>my chat</b>" not in text
    assert not re.search(r"<script[^>]+src=", text) and "<link" not in text  # nothing fetched: plotly.js is inline
    assert text.count("Plotly.newPlot(") == 2 * len(plans)  # budget and blocks per strategy
    assert text.count('class="cfm-row"') == len(plans)  # the fate matrix: Compare's HTML grid
    for row in verdict.table(verdict.verdict_rows(plans)):
        assert f"<td>{row['strategy']}</td>" in text and row["prompt tokens"] in text
    assert "<td>model</td><td>gpt-4o</td>" in text
    assert '"displayModeBar": false' in text


def test_the_report_shows_a_strategy_that_failed():
    plans = {"truncate": plans_for()["truncate"], "broken": TokenBudgetExceeded(900, 100, "needs <900> tokens")}
    text = report.comparison_html(plans, source_name="x", settings={})
    assert "TOKEN_BUDGET_EXCEEDED" in text and "needs &lt;900&gt; tokens" in text


def test_the_diff_opens_on_two_strategies_that_differ():
    plans = plans_for("roleplay")  # truncate and summarize agree here; vector-recall does not
    first, second = diff.default_pair(plans)
    names = list(plans)
    assert first == 0 and diff.differences(plans[names[first]], plans[names[second]])
    assert all(not diff.differences(plans[names[0]], plans[names[i]]) for i in range(1, second))
