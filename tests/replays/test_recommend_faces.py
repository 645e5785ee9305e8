"""One answer on every face: the CLI, the API, the HTML report and the Replay page's setup say what the
package decides, with one count, Compare's hand edits, and no option silently ignored."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re

import pytest
from support.api import LOCAL
from support.paths import REPO, shared_path
from fastapi.testclient import TestClient

import contextfit
from contextfit import FitSession
from contextfit.cli import main
from contextfit.errors import InvalidSettings
from contextfit.inputs.samples import SAMPLES, load_sample
from contextfit.replays.answer import recommendation_for
from contextfit.replays.run import replay, variants
from contextfit.dashboard import charts, report, verdict
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard.setup import ReplaySetup, Setup, suggested_setup
from contextfit.dashboard import replay as views
from contextfit.serving.api import create_app
from contextfit.serving.providers import EchoProvider


SAMPLE_FILES = REPO / "contextfit" / "data" / "samples"


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(args), out)
    return status, out.getvalue()


def _compare(key: str):
    """Compare's conversation, setup and plans for a sample, as the page makes them."""
    conversation = load_sample(key)
    setup = suggested_setup(conversation)
    return conversation, setup, dict(session_for(conversation).plans(setup.settings, strategies=setup.strategies))


# -- the CLI


@pytest.mark.parametrize("key", [sample.key for sample in SAMPLES])
def test_fit_recommend_prints_the_sentence_compare_makes(key):
    conversation, setup, _ = _compare(key)
    compare = recommendation_for(conversation, setup.settings, strategies=setup.strategies)
    status, out = run("fit", str(SAMPLE_FILES / f"{key}.json"), "--recommend", "--model", setup.model,
                      "--limit", str(setup.context_limit), "--reserve", str(setup.response_reserve))
    assert status == 0 and out.splitlines()[0] == compare.sentence
    for name in setup.strategies:  # each strategy's costs at volume and its Lost line
        assert f"  {name}" in out and "per 1,000 conversations" in out and "Lost:" in out


def test_fit_recommend_json_is_the_recommendation_alone_under_the_priority():
    path = str(SAMPLE_FILES / "roleplay.json")
    status, out = run("fit", path, "--recommend", "--json", "--priority", "cost", "--conversations-per-day", "250")
    answer = json.loads(out)
    assert status == 0 and list(answer)[:5] == ["strategy", "priority", "sentence", "loses", "costPer1000Conversations"]
    assert answer["priority"] == "cost" and answer["basis"] == "request"
    chosen = answer["strategies"][answer["strategy"]]
    assert answer["sentence"].startswith(f"Ship {answer['strategy']}: ")
    assert chosen["costPerRequest"] == min(s["costPerRequest"] for s in answer["strategies"].values())  # the cheapest
    assert chosen["costPerMonth"] == pytest.approx(chosen["costPerRequest"] * 250 * 30)
    assert answer["costPer1000Conversations"] == pytest.approx(chosen["costPerRequest"] * 1000)


def test_fit_and_replay_text_say_the_recommendation():
    path = str(SAMPLE_FILES / "roleplay.json")
    status, out = run("fit", path)
    assert status == 0 and re.search(r"\nShip \S+: it keeps your question and all 4 must-survive facts", out)
    status, replayed = run("replay", path)
    sentence = next(line for line in out.splitlines() if line.startswith("Ship "))
    assert status == 0 and f"\n{sentence}\n" in replayed  # the replay says what fit says


def test_fit_help_lists_the_registrys_built_ins():
    out = io.StringIO()
    with pytest.raises(SystemExit):
        with contextlib.redirect_stdout(out):
            main(["fit", "--help"])
    text = " ".join(out.getvalue().split())
    builtins = [entry.name for entry in contextfit.registry.entries() if entry.origin == "built-in"]
    assert "four" not in text and "for the built-ins: " + ", ".join(builtins) in text.replace("clear- tool", "clear-tool")


@pytest.mark.parametrize("key", [sample.key for sample in SAMPLES])
def test_replay_json_carries_the_recommendation_fit_prints(key):
    path = str(SAMPLE_FILES / f"{key}.json")
    status, out = run("replay", path, "--json", "--priority", "cost")
    data = json.loads(out)
    answer = data["recommendation"]
    assert status == 0 and answer["basis"] == "request" and answer["priority"] == "cost"
    status, fitted = run("fit", path, "--recommend", "--json", "--priority", "cost")
    assert status == 0 and json.loads(fitted)["sentence"] == answer["sentence"]  # one answer on both faces
    for label, evidence in answer["strategies"].items():  # the latest request, as the replay's last row priced it
        last = data["turns"][label][-1]
        if last["error"] is None:
            assert evidence["promptTokens"] == last["promptTokens"]


def test_an_uploaded_fixture_gets_the_same_answer_from_fit_and_from_the_package():
    path = shared_path("sillytavern", "chats_2023", "Megumin_1673323621108.jsonl")
    conversation = contextfit.load_conversation(path.read_bytes())
    expected = recommendation_for(conversation, model="gpt-4o", context_limit=300, response_reserve=60)
    status, out = run("fit", str(path), "--recommend", "--json", "--limit", "300", "--reserve", "60")
    assert status == 0 and json.loads(out)["sentence"] == expected.sentence
    status, out = run("replay", str(path), "--json", "--limit", "300", "--reserve", "60")
    assert status == 0 and json.loads(out)["recommendation"]["sentence"] == expected.sentence


@pytest.mark.parametrize("limit", [430, 600])
def test_an_agent_run_that_ends_on_tool_results_gets_one_answer_from_compare_and_replay(limit):
    # the conversation goes on past its last user message: both faces judge it as it stands
    path = shared_path("pydantic-ai", "openai_chat", "test_complex_agent_run.request.json")
    conversation = contextfit.load_conversation(path.read_bytes())
    compare = recommendation_for(conversation, model="gpt-4o", context_limit=limit, response_reserve=50)
    replayed = replay(conversation, model="gpt-4o", context_limit=limit, response_reserve=50)
    assert compare.sentence == replayed.recommendation.sentence
    plans = dict(FitSession(conversation).plans(model="gpt-4o", context_limit=limit, response_reserve=50))
    for name, plan in plans.items():  # the evidence is Compare's plan of the whole conversation
        assert replayed.recommendation.outcome(name).prompt_tokens == plan.prompt_tokens


def test_stable_prefix_for_a_strategy_that_ignores_it_is_refused_on_every_face(tmp_path):
    with pytest.raises(InvalidSettings, match="vector-recall does not take stable_prefix"):
        contextfit.plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o", context_strategy="vector-recall",
                               stable_prefix=True)
    with pytest.raises(InvalidSettings, match=r"strategies\[1\]\.options\.stable_prefix: manual does not take"):
        variants(["truncate", {"strategy": "manual", "options": {"stable_prefix": True}}])
    assert variants([{"strategy": "summarize", "options": {"stable_prefix": True}}])[0].label == "summarize+stable_prefix"
    plans = dict(FitSession([{"role": "user", "content": "Hi"}]).plans(model="gpt-4o", stable_prefix=True))
    refused = {name for name, plan in plans.items() if isinstance(plan, InvalidSettings)}
    assert {"vector-recall", "manual"} <= refused and not refused & {"truncate", "summarize", "clear-tool-results"}
    assert refused == {name for name in plans if not getattr(contextfit.registry.get(name), "takes_stable_prefix", 0)}
    bundle = tmp_path / "chat.json"
    bundle.write_text(json.dumps({"contextfit": "conversation", "settings": {"stablePrefix": True},
                                  "messages": [{"role": "user", "content": "Hi"}]}))
    status, _ = run("replay", str(bundle), "--strategy", "manual")
    assert status == 2


# -- the API


@pytest.fixture
def client(store):
    with TestClient(create_app(store, {"echo": EchoProvider()}), base_url=LOCAL) as test_client:
        yield test_client


def test_the_api_replay_answers_with_the_recommendation_under_the_priority(client):
    sample = json.loads((SAMPLE_FILES / "support_chat.json").read_text())
    body = {"messages": sample["messages"], "model": "gpt-4o-mini", "settings": sample["settings"], "priority": "cost"}
    response = client.post("/api/v2/replay", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()["recommendation"]
    expected = replay(load_sample("support_chat"), model="gpt-4o-mini", priority="cost").recommendation
    assert answer["sentence"] == expected.sentence and answer["strategy"] == expected.strategy
    assert answer["tied"] == list(expected.tied) and len(answer["tied"]) != 1
    assert client.post("/api/v2/replay", json={**body, "priority": "fast"}).status_code == 422
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert set(schema["Recommendation"]["properties"]) >= {"strategy", "priority", "sentence", "loses",
                                                          "costPer1000Conversations"}


def test_the_api_refuses_stable_prefix_where_it_would_be_ignored(client):
    body = {"messages": [{"role": "user", "content": "Hi"}], "model": "gpt-4o",
            "strategies": [{"strategy": "vector-recall", "options": {"stablePrefix": True}}]}
    response = client.post("/api/v2/replay", json=body)
    assert response.status_code == 422 and response.json()["error"]["code"] == "INVALID_SETTINGS"
    assert "vector-recall does not take stable_prefix" in response.json()["error"]["message"]
    chat = client.post("/api/v2/chats", json={"settings": {"contextStrategy": "manual", "stablePrefix": True}})
    assert chat.status_code == 422 and chat.json()["error"]["code"] == "INVALID_SETTINGS"


# -- one count, Compare's hand edits


def test_the_verdict_and_the_replay_count_a_cleared_tool_result_alike():
    conversation, setup, plans = _compare("roleplay")
    rows = {row.strategy: row for row in verdict.verdict_rows(plans)}
    assert (rows["clear-tool-results"].summarized, rows["clear-tool-results"].compressed) == (0, 1)
    result = views.run(*views.conversation_input(conversation, ReplaySetup.of(
        setup.model, setup.context_limit, setup.response_reserve, stable_prefix=False)),
        ReplaySetup.of(setup.model, setup.context_limit, setup.response_reserve, stable_prefix=False))
    for name, row in rows.items():
        last = result.turns[name][-1]
        assert (last.dropped, last.summarized, last.compressed) == (row.dropped, row.summarized, row.compressed), name


def test_replay_with_compares_pins_and_exclusions_gives_compares_numbers():
    conversation = load_sample("roleplay")
    edits = {"m18": {"manualExcluded": False}, "lorebook:3": {"pinned": True}, "m3": {"manualExcluded": True},
             "memory:1": {"relevance": 0.95}}
    suggested = suggested_setup(conversation)
    setup = Setup.of(suggested.model, suggested.context_limit, suggested.response_reserve, overrides=edits)
    plans = dict(session_for(conversation).plans(setup.settings, strategies=setup.strategies))
    chosen = ReplaySetup.of(setup.model, setup.context_limit, setup.response_reserve, stable_prefix=False,
                               overrides=edits)
    result = views.run(*views.conversation_input(conversation, chosen), chosen)
    plain = ReplaySetup.of(setup.model, setup.context_limit, setup.response_reserve, stable_prefix=False)
    without = views.run(*views.conversation_input(conversation, plain), plain)
    differs = False
    for name, plan in plans.items():
        assert result.turns[name][-1].prompt_tokens == plan.prompt_tokens, name
        differs |= without.turns[name][-1].prompt_tokens != plan.prompt_tokens
    assert differs  # the edits change the plans: without them the replay would not match
    assert result.recommendation.outcome("truncate").prompt_tokens == plans["truncate"].prompt_tokens


# -- the HTML report


def test_the_report_opens_on_the_recommendation_and_can_be_reproduced():
    conversation, setup, plans = _compare("roleplay")
    edits = {"m3": {"pinned": True}, "m18": {"manualExcluded": False}}
    answer = recommendation_for(conversation, setup.settings, strategies=setup.strategies)
    text = report.comparison_html(plans, source_name="roleplay", recommendation=answer, overrides=edits,
                                  settings={"model": setup.model, "context limit": setup.context_limit,
                                            "response reserve": setup.response_reserve, "summary tokens": None})
    body = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.S)
    headings = re.findall(r"<h2>(.*?)</h2>", body)
    assert headings[0] == "Recommendation" and headings[1] == "Settings"
    assert f"<p class='answer'>{html.escape(answer.sentence)}</p>" in body
    cells = re.findall(r"<td[^>]*>(.*?)</td>", body)
    assert "None" not in cells and "—" in cells  # the empty setting reads as a dash
    assert "2,200" in cells and "128000" not in body  # thousands separators
    assert "<td>m3</td><td>pinned</td>" in body and "<td>m18</td><td>not excluded</td>" in body
    assert "Mara Quill, Tomas Venn" in body  # the must-survive facts, as the recommendation followed them
    for name in plans:
        assert html.escape(answer.outcome(name).lost_line()) in body


def test_the_reports_matrix_is_compares_with_one_legend_of_the_shades_that_occur():
    _, _, plans = _compare("roleplay")
    text = report.comparison_html(plans, source_name="roleplay", settings={})
    legend = re.findall(r'<div class="contextfit-legend".*?</div>', text, flags=re.S)
    assert len(legend) == 1
    assert "cleared (placeholder sent)" in legend[0] and "excluded: late overflow" not in legend[0]
    assert "excluded: not sent" not in legend[0] and "folded into the summary" in legend[0]
    # clear-tool-results' original of the cleared lookup reads as cleared, not as folded into a summary
    row = re.search(r'data-strategy="clear-tool-results">(.*?)</div><span', text, flags=re.S).group(1)
    assert "m5#2</b>: cleared (placeholder sent) (summarized)" in row and "folded into the summary" not in row
    assert text.count('class="cfm-row"') == len(plans) and text.count("Plotly.newPlot(") == 2 * len(plans)


def test_a_cleared_original_reads_cleared_on_every_chart():
    _, _, plans = _compare("roleplay")
    plan = plans["clear-tool-results"]
    shades = dict(zip((block.id + block.origin for block in plan.blocks), charts.plan_shades(plan)))
    assert shades["m5input"] == "cleared" and shades["m5strategy"] == "compressed"
    hover = [bar.hover for bar in charts.blocks_view(plan).bars if bar.shade == "cleared"]
    assert len(hover) == 1 and "cleared (placeholder sent)" in hover[0]
