"""``tool_result_cap``: an oversized tool result is sent as its head and tail, with a
marker naming what was cut, under every strategy (SPEC 3.4)."""

from __future__ import annotations

import io
import json
import re

import pytest

import contextfit
from contextfit.cli import main
from contextfit.fitting import results as r
from contextfit.fitting.result_cap import MARKER, SUGGESTED_CAP, head_and_tail

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger"]
COUNT = contextfit.token_counter("gpt-4o")
LOG = "\n".join(f"line {i}: the quick brown fox jumps over the lazy dog {i * 7}" for i in range(2000))
MARK = re.compile(r"\n\[… ([\d,]+) tokens cut from the middle of this (\S+) result \(characters ([\d,]+) to ([\d,]+) "
                  r"of ([\d,]+)\); its head and tail are shown …\]\n")


def agent(result_content=LOG, shape="openai") -> list[dict]:
    chat = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Read the log."}]
    if shape == "anthropic":
        chat += [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "short"},
                                              {"type": "tool_result", "tool_use_id": "t1", "content": result_content}]}]
    else:
        chat += [{"role": "assistant", "content": None,
                  "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": result_content}]
    chat += [{"role": "assistant", "content": "It is long."}, {"role": "user", "content": "Summarize it."}]
    return chat


def result_tokens(message: dict) -> int:
    """The tokens of an OpenAI tool message's content (as the cap measures them)."""
    return COUNT.count_message(message) - COUNT.count_message({**message, "content": ""})


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_an_oversized_result_is_sent_as_its_head_and_tail(strategy):
    chat = agent()
    original = result_tokens(chat[3])
    result = contextfit.shift_context(chat, COUNT, 5000, strategy=strategy, tool_result_cap=500, interceptors=())
    assert COUNT(result.kept) <= 5000
    stand_in = [d for d in result.decisions if d.index is None]
    assert [(d.reason, d.sources) for d in stand_in] == [(r.COMPRESSED, (3,))]
    sent = stand_in[0].message
    assert sent["tool_call_id"] == "c1" and sent["meta"] == {"compressed": True, "capped": True}
    assert result_tokens(sent) <= 500
    head, tail = MARK.split(sent["content"])[0], MARK.split(sent["content"])[-1]
    cut, tool, start, end, length = MARK.search(sent["content"]).groups()
    assert tool == "read_file" and int(length.replace(",", "")) == len(LOG)
    assert LOG.startswith(head) and LOG.endswith(tail) and head and tail
    assert int(start.replace(",", "")) == len(head) and int(end.replace(",", "")) == len(LOG) - len(tail)
    assert LOG[len(head) - 1] == "\n" and LOG[len(LOG) - len(tail) - 1] == "\n"  # cut at line breaks
    assert int(cut.replace(",", "")) == original - result_tokens({"role": "tool", "content": head}) - result_tokens(
        {"role": "tool", "content": tail})
    # the original is excluded as summarized, its content whole; the call is sent with its capped result
    original_decision = next(d for d in result.decisions if d.index == 3)
    assert original_decision.reason == r.SUMMARIZED and original_decision.included is False
    assert any(m is chat[2] for m in result.kept) and chat[3] in result.excluded
    assert sent in result.truncated


def test_off_by_default_and_under_the_cap_nothing_changes():
    chat = agent()
    plain = contextfit.shift_context(chat, COUNT, 100_000, interceptors=())
    assert plain.truncated == [] and plain.kept == chat
    roomy = contextfit.shift_context(chat, COUNT, 100_000, tool_result_cap=result_tokens(chat[3]), interceptors=())
    assert roomy.truncated == [] and roomy.kept == chat


def test_the_plan_keeps_the_original_for_the_audit_and_the_dashboard():
    chat = agent()
    plan = contextfit.plan_prompt(chat, model="gpt-4o", tool_result_cap=SUGGESTED_CAP)
    capped = [b for b in plan.blocks if b.reason == r.COMPRESSED]
    original = [b for b in plan.blocks if b.reason == r.SUMMARIZED]
    assert len(capped) == 1 and len(original) == 1 and capped[0].id == original[0].id
    assert original[0].content == LOG and original[0].included is False
    assert MARK.search(capped[0].content) and capped[0].included
    assert [m for m in plan.provider_messages if m["role"] == "tool"][0]["content"] == capped[0].content
    assert plan.prompt_tokens == COUNT(plan.provider_messages)
    as_json = plan.to_dict()["blocks"]
    assert [b["fate"] for b in as_json if b["id"] == capped[0].id] == ["compressed", "summarized"]


def test_a_group_is_never_split_by_it():
    """The capped result goes with its call: dropped together when the group does not fit."""
    chat = agent()
    chat.insert(-1, {"role": "user", "content": "More: " + "words " * 200})
    budget = COUNT([chat[0], *chat[-3:]]) + 5  # room for the newest messages, not for the capped group
    result = contextfit.shift_context(chat, COUNT, budget, tool_result_cap=300, interceptors=())
    reasons = {d.index: d.reason for d in result.decisions}
    assert reasons[2] == r.OVER_BUDGET and reasons[3] == r.OVER_BUDGET
    assert result.truncated == []


def test_protected_results_are_never_capped():
    pinned = agent()
    pinned[3] = {**pinned[3], "pinned": True}
    result = contextfit.shift_context(pinned, COUNT, 100_000, tool_result_cap=100, interceptors=())
    assert result.truncated == [] and result.decisions[3].reason == r.PINNED
    # an Anthropic tool_result message that is the current input (with its call) stays whole
    current = agent(shape="anthropic")[:4]
    result = contextfit.shift_context(current, COUNT, 100_000, tool_result_cap=100, interceptors=())
    assert result.truncated == [] and result.decisions[3].reason == r.CURRENT_INPUT


def test_each_result_of_a_message_is_capped_on_its_own():
    chat = agent(shape="anthropic")
    result = contextfit.shift_context(chat, COUNT, 100_000, tool_result_cap=200, interceptors=())
    [sent] = result.truncated
    parts = sent["content"]
    assert parts[0] == {"type": "tool_result", "tool_use_id": "t1", "content": "short"}
    assert MARK.search(parts[1]["content"]) and parts[1]["tool_use_id"] == "t1"


def test_text_parts_are_capped_and_other_content_is_left_as_it_is():
    parts = [{"type": "text", "text": LOG[:60_000]}, {"type": "text", "text": LOG[60_000:]}]
    result = contextfit.shift_context(agent(parts), COUNT, 100_000, tool_result_cap=300, interceptors=())
    assert MARK.search(result.truncated[0]["content"])
    image = [{"type": "text", "text": LOG}, {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    result = contextfit.shift_context(agent(image), COUNT, 100_000, tool_result_cap=300, interceptors=())
    assert result.truncated == []


def test_a_tiny_cap_sends_the_marker_alone():
    result = contextfit.shift_context(agent(), COUNT, 100_000, tool_result_cap=1, interceptors=())
    [sent] = result.truncated
    assert MARK.fullmatch("\n" + sent["content"] + "\n") and result_tokens(sent) < result_tokens(agent()[3])


@pytest.mark.parametrize("value", [0, -5, "2500", True, 2.5])
def test_a_bad_cap_is_refused(value):
    with pytest.raises(contextfit.ContextfitError) as caught:
        contextfit.shift_context(agent(), COUNT, 100_000, tool_result_cap=value)
    assert caught.value.code == "INVALID_SETTINGS" and "tool_result_cap" in str(caught.value)


def test_the_setting_is_in_the_table_and_reaches_every_strategy():
    from contextfit.pipeline.settings import PlanSettings

    settings = PlanSettings.from_json({"toolResultCap": 400, "contextStrategy": "summarize"}, model="gpt-4o")
    plan = contextfit.plan_prompt(agent(), settings)
    assert [b.reason for b in plan.blocks].count(r.COMPRESSED) == 1
    with pytest.raises(contextfit.ContextfitError):
        PlanSettings.from_json({"toolResultCap": 0}, model="gpt-4o")


def test_a_plugin_strategy_fits_the_capped_results_and_never_sees_the_option():
    seen = {}

    def plugin(messages, count_tokens, budget, **options):
        seen["options"] = dict(options)
        seen["content"] = messages[3]["content"]
        return messages

    result = contextfit.shift_context(agent(), COUNT, 100_000, strategy=plugin, tool_result_cap=300, interceptors=())
    assert seen["options"] == {} and MARK.search(seen["content"])
    assert [d.reason for d in result.decisions if d.index is None] == [r.COMPRESSED]


def test_head_and_tail_within_the_cap_by_the_callers_measure():
    words = lambda value: len(value.split())  # noqa: E731
    text = " ".join(f"w{i}" for i in range(1000))
    out = head_and_tail(text, 1000, 60, "grep", words)
    assert words(out) <= 60 and out.startswith("w0 w1") and out.endswith("w998 w999")
    assert "[… " in out and "grep result" in out
    assert MARKER.startswith("[… {cut} tokens cut")


def test_the_cli_takes_a_cap(tmp_path):
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(agent()))
    out = io.StringIO()
    assert main(["fit", str(path), "--strategy", "truncate", "--tool-result-cap", "400", "--json"], out) == 0
    blocks = json.loads(out.getvalue())["truncate"]["blocks"]
    assert [b["reason"] for b in blocks].count("compressed") == 1
    out = io.StringIO()
    assert main(["replay", str(path), "--strategy", "truncate", "--tool-result-cap", "400", "--json"], out) == 0
    rows = json.loads(out.getvalue())["turns"]["truncate"]
    assert rows[-1]["compressed"] == 1


def test_a_capped_result_that_clear_tool_results_clears_in_turn_reads_cleared():
    """The cap's mark (meta.capped) does not survive a clearing: the dashboard would read
    "capped (head and tail sent)" for a result sent as a placeholder."""
    chat = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Read the logs."}]
    for turn in range(5):
        chat += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": f"c{turn}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": f"c{turn}", "content": LOG}]
    chat += [{"role": "assistant", "content": "They are long."}, {"role": "user", "content": "Summarize them."}]
    result = contextfit.shift_context(chat, COUNT, 1800, strategy="clear-tool-results", tool_result_cap=500,
                                      interceptors=())
    sent = {d.sources[0]: d.message for d in result.decisions if d.index is None and d.sources}
    oldest = sent[3]  # the first result: cleared (older than the newest three it keeps whole)
    assert oldest["meta"] == {"compressed": True} and MARK.search(oldest["content"]) is None
    newest = sent[len(chat) - 3]
    assert newest["meta"] == {"compressed": True, "capped": True} and MARK.search(newest["content"])
