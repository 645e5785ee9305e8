"""The Compare page through AppTest: the answer on top agrees with ``contextfit fit --recommend``, the
sidebar's priority and volume move it, the must-survive list edits it, an agent run shows its requests,
presentation mode lives in the URL, and no table shows ``None``."""

from __future__ import annotations

import io
import re

import pandas as pd
import pyarrow as pa
import pytest
from support.charts import window_bars
from support.paths import REPO, shared_path
from streamlit.testing.v1 import AppTest

from contextfit import cli
from contextfit.dashboard import state
from contextfit.inputs.samples import sample_text
from contextfit.pipeline.plan import BUILTIN_STRATEGIES

AGENT_RUN = ("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json")


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=180)


def clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def unescaped(text: str) -> str:
    """Markdown text as it reads (the page escapes every Markdown character of the engine's words)."""
    return text.replace("\\", "")


def sentence(at) -> str:
    """The recommendation on top of the page."""
    return unescaped(at.markdown[0].value)


def answer_lines(at) -> list[str]:
    """The lines under the sentence: its costs, the protocol's figure, the priority, the facts."""
    said = next(c.value for c in at.caption if "Priority: " in c.value)
    return unescaped(said).split("  \n")


def cli_lines(path, limit: int, reserve: int, *extra: str) -> list[str]:
    out = io.StringIO()
    assert cli.main(["fit", str(path), "--strategy", "all", "--recommend", "--limit", str(limit), "--reserve",
                     str(reserve), *extra], out=out) == 0
    return out.getvalue().splitlines()


def test_the_answer_on_top_is_the_cli_s_and_follows_the_priority_and_the_volume(tmp_path):
    path = tmp_path / "roleplay.json"
    path.write_text(sample_text("roleplay"))
    at = app().run()
    clean(at)
    assert sentence(at) == cli_lines(path, 2200, 400)[0]
    assert sentence(at).startswith("Ship fact-ledger: it keeps your question and all 4 must-survive facts")
    lines = answer_lines(at)
    assert lines[0].startswith("A request costs $") and lines[0].endswith("a month at 1,000 conversations a day")
    assert lines[1].startswith("On the standard retention protocol") and "fact-ledger keeps 97% of the facts" in lines[1]
    assert lines[2].startswith("Priority: keep the most of what matters · replies: the mean of the conversation")
    assert lines[3].startswith("Must-survive facts: 4, found in the conversation — Mara Quill, Tomas Venn")
    at.sidebar.radio(key="priority").set_value("cost").run()
    clean(at)
    assert sentence(at) == cli_lines(path, 2200, 400, "--priority", "cost")[0]
    at.sidebar.number_input(key="conversations_per_day").set_value(25_000).run()
    assert answer_lines(at)[0].endswith("a month at 25,000 conversations a day")
    costs = [unescaped(m.value) for m in at.markdown[1:] if unescaped(m.value).startswith("**$")]
    assert len(costs) == len(BUILTIN_STRATEGIES) and all(" a request · $" in c and "K a month**" in c for c in costs)


def test_an_uploaded_agent_run_shows_the_cli_s_answer_its_requests_and_each_block_s_request():
    path = shared_path(*AGENT_RUN)
    at = app().run()
    at.sidebar.radio[0].set_value("Upload").run()
    at.get("file_uploader")[0].set_value([(path.name, path.read_bytes(), "application/json")]).run()
    at.sidebar.number_input(key="limit").set_value(700).run()
    at.sidebar.number_input(key="reserve").set_value(100).run()
    clean(at)
    assert sentence(at) == cli_lines(path, 700, 100)[0]
    requests = next(frame.value for frame in at.dataframe if "prompt before fitting" in frame.value.columns)
    assert list(requests["call"]) == ["turn 1", "turn 1 · round 1", "turn 1 · round 2"]
    edits = at.dataframe[-1].value
    assert list(edits["request"][:3]) == ["turn 1", "turn 1 · round 1", "turn 1 · round 1"]
    assert "What changed since the previous turn" in [s.value for s in at.subheader]
    assert at.code and at.code[0].language == "diff"


def test_the_must_survive_list_is_edited_and_the_answer_follows_it():
    at = app().run()
    before = sentence(at)
    at.session_state[state.MUST_SURVIVE] = {"off": ["Mara Quill", "Tomas Venn"], "added": ["Hesk"]}
    at.run()
    clean(at)
    assert sentence(at) != before and "must-survive facts" in sentence(at)
    assert answer_lines(at)[-1].startswith("Must-survive facts: 3, edited by hand — lore “Greywater Isle”, Saltwitch, Hesk")
    assert at.query_params["unfollow"] in ("Mara Quill\nTomas Venn", ["Mara Quill\nTomas Venn"])
    at.button(key="must-survive-reset").click().run()
    assert sentence(at) == before and not at.session_state[state.MUST_SURVIVE]["off"]

    # an edit too long for the address is said under the list, and left out of the address
    at.session_state[state.MUST_SURVIVE] = {"off": [], "added": ["x" * 1200]}
    at.run()
    assert any(c.value.startswith("These facts (1,200 characters) are too long") for c in at.caption)
    assert "follow" not in at.query_params


def test_each_strategy_has_its_window_by_category_its_costs_and_its_lost_line():
    at = app().run()
    bars = window_bars(at)
    assert [bar.strategy for bar in bars] == list(BUILTIN_STRATEGIES)
    assert all(bar.headline.endswith("%") and " of 2.2K tokens, " in bar.headline for bar in bars)
    assert all(sum(tokens for _, tokens, _ in bar.parts) == 2200 for bar in bars)
    heads = [unescaped(m.value) for m in at.markdown if unescaped(m.value).startswith("**$")]
    assert len(heads) == len(BUILTIN_STRATEGIES)  # under each window: its costs, then its Lost line
    assert all(re.fullmatch(r"\*\*\$0\.\d{6} a request · \$\d+ a month\*\*  \nLost: .+", head) for head in heads), heads
    assert any(c.value.startswith("Where the must-survive facts sit: ") for c in at.caption)
    assert "drops the oldest messages first" in [c.value for c in at.caption]  # truncate's one line


def test_presentation_mode_is_in_the_url_and_survives_a_page_round_trip_and_a_reload():
    at = app().run()
    at.toggle(key=state.PRESENTATION).set_value(True).run()
    clean(at)
    assert at.query_params["present"] in ("1", ["1"])
    # every table in HTML, which the page CSS enlarges and wraps; the grids left are the two editors
    assert [frame.key.split("-")[0] for frame in at.dataframe] == ["must", "editor"]
    assert len(at.table) >= 3  # the verdict, the tokens by kind, the agent run's requests…
    at.switch_page("pages/replay.py").run()
    at.switch_page("pages/compare.py").run()
    clean(at)
    assert at.toggle(key=state.PRESENTATION).value is True and at.query_params["present"] in ("1", ["1"])
    reloaded = app()
    reloaded.query_params["present"] = "1"
    reloaded.run()
    clean(reloaded)
    assert reloaded.toggle(key=state.PRESENTATION).value is True and reloaded.table



@pytest.mark.parametrize("other", ["pages/retention.py", "pages/audit.py"])
def test_presentation_mode_stays_in_the_address_of_every_page_and_a_reload_there_keeps_it(other):
    at = app().run()
    at.toggle(key=state.PRESENTATION).set_value(True).run()
    at.switch_page(other).run()  # the sidebar's navigation: a plain address, presentation mode in the session
    assert not at.exception and at.query_params["present"] in ("1", ["1"])
    reloaded = app()  # a reload of that page: a new session, its address
    reloaded.query_params["present"] = "1"
    reloaded.switch_page(other).run()
    assert not reloaded.exception and reloaded.session_state[state.PRESENTATION] is True
    assert any(".contextfit" in e.proto.body and "!important" in e.proto.body for e in reloaded.get("html"))
    reloaded.switch_page("pages/compare.py").run()
    assert reloaded.toggle(key=state.PRESENTATION).value is True
    reloaded.toggle(key=state.PRESENTATION).set_value(False).run()  # turned off on Compare: out of every address
    reloaded.switch_page(other).run()
    assert "present" not in reloaded.query_params

@pytest.mark.parametrize("presenting", [False, True])
def test_no_table_shows_none_and_numbers_have_thousands_separators(presenting):
    at = app()
    if presenting:
        at.query_params["present"] = "1"
    at.run()
    at.sidebar.number_input(key="limit").set_value(128_000).run()  # everything fits: thousands in every column
    at.sidebar.number_input(key="reserve").set_value(16_384).run()
    clean(at)
    # the editors show an empty cell as "—" (their placeholder); every other table has a value in each cell
    tables = [*at.table, *(frame for frame in at.dataframe if not (frame.key or "").startswith(("editor-", "must-surv")))]
    assert len(tables) >= 3
    for element in tables:
        frame = element.value
        assert not frame.isna().any().any(), element
        assert "None" not in frame.astype(str).to_numpy()
    shown = " ".join(displayed(element).to_string() for element in tables)
    assert re.search(r"\b\d,\d{3}\b", shown)  # the history's tokens by kind, say
    assert not re.search(r"(?<![\d.,$])\d{4,}(?![\d.])", shown), shown  # never 1477 (a price's digits aside)


def displayed(element) -> pd.DataFrame:
    """A table's cells as the page shows them (the Styler's display values)."""
    data = element.proto.arrow_data if hasattr(element.proto, "arrow_data") else element.proto
    assert data.HasField("styler"), element
    return pa.ipc.open_stream(data.styler.display_values).read_all().to_pandas()


def test_a_limit_past_the_model_s_window_is_said_as_replay_says_it():
    at = app().run()
    at.sidebar.selectbox(key="model").select("gpt-4o").run()
    at.sidebar.number_input(key="limit").set_value(100_000_000).run()
    clean(at)
    assert [w.value for w in at.warning if "is more than" in w.value] == [
        "The context limit, 100,000,000 tokens, is more than gpt-4o takes (128,000): every strategy plans to it all "
        "the same, as a what-if."]
    at.sidebar.number_input(key="limit").set_value(128_000).run()
    assert not [w for w in at.warning if "is more than" in w.value]


def test_a_diagnostic_every_plan_carries_is_said_once_above_the_columns_in_words():
    at = app().run()  # the roleplay sample: every plan counts its text beside tool calls with a margin
    clean(at)
    said = [unescaped(c.value) for c in at.caption if "No recorded API count" in unescaped(c.value)]
    assert len(said) == 1 and said[0].startswith("Every strategy's plan: No recorded API count covers"), said
    assert not [c for c in at.caption if "TOOL_SHAPES_UNVERIFIED" in c.value]  # the code is on hover only
    assert "TOOL_SHAPES_UNVERIFIED" in next(c for c in at.caption if "No recorded API count" in c.value).proto.help


def test_a_strategy_that_cannot_fit_leads_with_the_sentence_not_the_code():
    at = app().run()
    at.sidebar.number_input(key="limit").set_value(1).run()
    clean(at)
    errors = [unescaped(e.value) for e in at.error]
    assert errors and all(not e.split(":")[0].isupper() for e in errors), errors
    assert any(e.startswith("No strategy can fit this conversation: ") and e.endswith("(TOKEN_BUDGET_EXCEEDED)")
               for e in errors), errors


def test_one_conversation_a_day_is_singular_and_a_month_reads_in_whole_dollars():
    at = app().run()
    at.sidebar.number_input(key="conversations_per_day").set_value(1).run()
    clean(at)
    assert re.fullmatch(r"A request costs \$0\.\d{6} with its reply · \$\d+\.\d\d per 1,000 conversations · \$0\.\d\d? "
                        r"a month at 1 conversation a day", answer_lines(at)[0]), answer_lines(at)
    at.sidebar.number_input(key="conversations_per_day").set_value(1_000).run()
    heads = [unescaped(m.value) for m in at.markdown if unescaped(m.value).startswith("**$")]
    assert all(re.match(r"\*\*\$0\.\d{6} a request · \$\d{3} a month\*\*", head) for head in heads), heads


def test_an_upload_with_no_facts_says_where_to_edit_them_without_double_brackets():
    at = app().run()
    at.sidebar.radio[0].set_value("Paste").run()
    at.sidebar.text_area[0].input('[{"role": "user", "content": "hello there"}]').run()
    at.sidebar.number_input(key="conversations_per_day").set_value(1).run()
    clean(at)
    lines = answer_lines(at)
    assert lines[-1].endswith("(retention follows the entity rule meanwhile). Edit the list under Edit the "
                              "conversation."), lines
    assert ")." + " (" not in " ".join(lines)


def right_aligned_columns(element) -> list[str]:
    """The columns of an HTML table whose cells the page right-aligns (its Styler's CSS)."""
    data = element.proto.arrow_data if hasattr(element.proto, "arrow_data") else element.proto
    frame = element.value
    return [name for position, name in enumerate(frame.columns)
            if re.search(rf"_col{position}\b[^{{]*\{{\s*text-align: right !important", data.styler.styles)]


def test_the_numbers_of_the_html_tables_are_right_aligned():
    at = app()
    at.query_params["present"] = "1"  # every table in HTML
    at.run()
    clean(at)
    verdict = next(t for t in at.table if "what it does" in t.value.columns)
    assert right_aligned_columns(verdict) == ["prompt tokens", "% of budget", "dropped", "summarized", "compressed",
                                              "cost / request"]
    assert "…" not in " ".join(verdict.value["what it does"])  # wrapped, never cut
    requests = [t for t in at.table if "tokens added" in t.value.columns]
    assert not requests or {"tokens added"} <= set(right_aligned_columns(requests[0]))
    at.switch_page("pages/retention.py").run()
    clean(at)
    assert all(right_aligned_columns(t) for t in at.table)
    at.switch_page("pages/replay.py").run()
    clean(at)
    costs = next(t for t in at.table if "cost / request (reply included)" in t.value.columns)
    assert "cost / request (reply included)" in right_aligned_columns(costs)
    assert "strategy" not in right_aligned_columns(costs) and "lost" not in right_aligned_columns(costs)
