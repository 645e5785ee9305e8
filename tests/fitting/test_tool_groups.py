"""Tool groups by answering, not by spelling (SPEC 3.2): an id used again every turn
(``call_1``, ``toolu_1``) makes a group per call, and every strategy treats each
turn's call and result as their own unit."""

from __future__ import annotations

import json

import pytest
from support.conversations import groups

import contextfit
from contextfit.fitting.analysis import build_view
from contextfit.fitting.counting import counting_for
from contextfit.inputs.messages import link_states

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger"]
#: The strategies that keep the newest run of whole units and add nothing (clear-tool-results keeps
#: the newest three results, which is every result here).
DROPPING = ["truncate", "vector-recall", "manual", "clear-tool-results"]
COUNT = contextfit.token_counter("gpt-4o")


def _call(shape: str, link: str, turn: int) -> dict:
    if shape == "anthropic":
        return {"role": "assistant", "content": [{"type": "text", "text": "Looking it up."},
                                                 {"type": "tool_use", "id": link, "name": "weather", "input": {"city": turn}}]}
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": link, "type": "function", "function": {"name": "weather", "arguments": json.dumps({"city": turn})}}]}


def _result(shape: str, link: str, turn: int) -> dict:
    text = f"Sunny in city {turn}. " + "reading " * 30
    if shape == "anthropic":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": link, "content": text}]}
    key = {"openai": "tool_call_id", "toolCallId": "toolCallId", "callId": "callId"}[shape]
    return {"role": "tool", key: link, "content": text}


def agent_chat(shape: str = "openai", turns: int = 3, answered=None) -> tuple[list[dict], list[tuple[int, int | None]]]:
    """A system prompt, then per turn: a question, a call with the same id every turn, its
    result (unless ``answered`` says not) and chatter; then the current question. Returns
    the chat and each turn's (call, result) positions."""
    link = "toolu_1" if shape == "anthropic" else "call_1"
    chat = [{"role": "system", "content": "You are a helpful agent that looks things up."}]
    pairs = []
    for turn in range(turns):
        chat.append({"role": "user", "content": f"Question {turn}: what is the weather in city number {turn}? " + "please " * 10})
        chat.append(_call(shape, link, turn))
        call = len(chat) - 1
        result = None
        if answered is None or answered[turn]:
            chat.append(_result(shape, link, turn))
            result = len(chat) - 1
        pairs.append((call, result))
        chat.append({"role": "assistant", "content": f"It is sunny in city {turn}. " + "chat " * 20})
    chat.append({"role": "user", "content": "Thanks, and tomorrow?"})
    return chat, pairs


SHAPES = ["openai", "toolCallId", "callId", "anthropic"]


@pytest.mark.parametrize("shape", SHAPES)
def test_each_call_with_a_reused_id_is_a_group_of_its_own(shape):
    chat, pairs = agent_chat(shape)
    view = build_view(chat, counting_for(COUNT))
    for call, result in pairs:
        assert view.group_members(call) == [call, result]
    # the independent oracle agrees
    oracle = sorted(sorted(g) for g in groups(chat) if len(g) > 1)
    assert oracle == [list(pair) for pair in pairs]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_drops_the_oldest_pair_first(shape, strategy):
    """With one group for all of them, every strategy dropped every tool exchange, the
    newest included, and kept older chatter (67 of 250 tokens left unused here)."""
    chat, pairs = agent_chat(shape)
    budget = 250
    assert COUNT(chat) > budget
    result = contextfit.shift_context(chat, COUNT, budget, strategy=strategy, interceptors=())
    sent = {d.index for d in result.decisions if d.included and d.index is not None}
    whole = [call in sent and result_ in sent for call, result_ in pairs]
    for call, result_ in pairs:
        assert (call in sent) == (result_ in sent), "a tool group was split"
    assert whole[-1], "the newest call and its result are sent"
    assert whole == sorted(whole), "an older pair is sent while a newer one is not"
    assert not all(whole)
    # what is sent after the first kept message is everything after it: the newest run
    first = min(i for i in sent if result.decisions[i].reason == "within_budget")
    assert all(i in sent for i in range(first, len(chat)))
    codes = [d["code"] for d in result.diagnostics]
    assert codes.count("REPEATED_TOOL_CALL_ID") == 1
    if strategy in DROPPING:
        # the unit just before the kept run did not fit in what is left
        unit = view_unit(chat, first - 1)
        left = budget - result.tokens
        assert left < sum(result.decisions[i].tokens for i in unit)


def view_unit(chat: list[dict], index: int) -> list[int]:
    view = build_view(chat, counting_for(COUNT))
    return view.group_members(index)


@pytest.mark.parametrize("shape", SHAPES)
def test_excluding_the_oldest_result_by_hand_excludes_its_turn_alone(shape):
    chat, pairs = agent_chat(shape)
    oldest = pairs[0][1]
    chat[oldest] = {**chat[oldest], "meta": {"manualExcluded": True}}
    result = contextfit.shift_context(chat, COUNT, 100_000, strategy="manual", interceptors=())
    excluded = [d.index for d in result.decisions if not d.included]
    assert excluded == list(pairs[0])
    assert {result.decisions[i].reason for i in excluded} == {"manual"}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_call_with_no_result_is_its_own_group_and_is_reported(shape, strategy):
    chat, pairs = agent_chat(shape, answered=[True, False, True])
    (c1, r1), (c2, missing), (c3, r3) = pairs
    assert missing is None
    view = build_view(chat, counting_for(COUNT))
    assert view.group_members(c1) == [c1, r1] and view.group_members(c2) == [c2] and view.group_members(c3) == [c3, r3]
    result = contextfit.shift_context(chat, COUNT, 220, strategy=strategy, interceptors=())
    notes = {d["code"]: d for d in result.diagnostics}
    link = "toolu_1" if shape == "anthropic" else "call_1"
    assert notes["TOOL_CALL_WITHOUT_RESULT"]["ids"] == [link]
    assert notes["TOOL_CALL_WITHOUT_RESULT"]["indices"] == [[c2]]
    assert notes["REPEATED_TOOL_CALL_ID"]["ids"] == [link]
    assert notes["REPEATED_TOOL_CALL_ID"]["groups"] == [[[c1, r1], [c2], [c3, r3]]]
    assert notes["REPEATED_TOOL_CALL_ID"]["calls"] == [3]
    sent = {d.index for d in result.decisions if d.included and d.index is not None}
    assert (c3 in sent) == (r3 in sent) and (c1 in sent) == (r1 in sent)
    assert c3 in sent and r3 in sent, "the newest answered call is kept with its result"


def test_a_result_answers_the_nearest_unanswered_call():
    call = lambda link: {"role": "assistant", "content": None,  # noqa: E731
                         "tool_calls": [{"id": link, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    result = lambda link: {"role": "tool", "tool_call_id": link, "content": "ok"}  # noqa: E731
    chat = [{"role": "user", "content": "go"}, call("c"), call("c"), result("c"), result("c"), result("c")]
    view = build_view(chat, counting_for(COUNT))
    # 3 answers the call at 2 (the nearest), 4 the call at 1 (the one still unanswered), 5 joins the latest call
    assert view.group_members(1) == [1, 4] and view.group_members(2) == [2, 3, 5]
    assert sorted(sorted(g) for g in groups(chat) if len(g) > 1) == [[1, 4], [2, 3, 5]]
    assert link_states(chat) == {"c": (True, True)}
    assert link_states(chat[:4]) == {"c": (True, False)}  # the call at 1 has no result yet


def test_results_sent_before_their_call_still_join_it():
    chat = [{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "a", "content": "early"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "user", "content": "and?"}]
    view = build_view(chat, counting_for(COUNT))
    assert view.group_members(1) == [1, 2]
    result = contextfit.shift_context(chat, COUNT, 1000, interceptors=())
    assert [d["code"] for d in result.diagnostics] == []
    assert link_states(chat) == {"a": (True, True)}


def test_one_message_answering_calls_of_two_messages_folds_their_groups():
    chat = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1"},
                                         {"type": "tool_result", "tool_use_id": "t2", "content": "2"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3"}]}]
    view = build_view(chat, counting_for(COUNT))
    assert view.group_members(1) == [1, 2, 3] and view.group_members(4) == [4, 5]
    assert view.repeated_ids() == [("t1", 2, [[1, 2, 3], [4, 5]])]
    assert view.unanswered_calls() == []


def test_a_growing_chat_links_as_a_fresh_one():
    """The analysis of a prefix is extended, not rebuilt: its link records are shared until written."""
    chat, _ = agent_chat("openai", turns=4, answered=[True, False, True, True])
    counting = counting_for(COUNT)
    for cut in range(1, len(chat) + 1):
        warm = build_view(chat[:cut], counting)
        cold = build_view(chat[:cut], counting_for(lambda ms: COUNT(ms)))
        assert [warm.group_members(i) for i in range(cut)] == [cold.group_members(i) for i in range(cut)]
        assert warm.repeated_ids() == cold.repeated_ids() and warm.unanswered_calls() == cold.unanswered_calls()


def test_an_id_reused_every_round_keeps_its_newest_groups_for_the_diagnostic():
    chat = [{"role": "user", "content": "go"}]
    for _ in range(30):
        chat += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
    result = contextfit.shift_context(chat, COUNT, 100_000, interceptors=())
    [note] = [d for d in result.diagnostics if d["code"] == "REPEATED_TOOL_CALL_ID"]
    assert note["calls"] == [30] and note["groups"] == [[[i, i + 1] for i in range(41, 61, 2)]]
    assert "'call_1' (30 calls)" in note["message"]


def test_one_id_twice_in_a_call_message_after_its_early_result():
    """Found by the analysis' short-path property: a result sent first answers one of the two calls."""
    call = {"id": "0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    chat = [{"role": "tool", "tool_call_id": "0", "content": "early"},
            {"role": "assistant", "content": None, "tool_calls": [call, dict(call)]},
            {"role": "user", "content": "go on"}]
    view = build_view(chat, counting_for(COUNT))
    assert view.group_members(0) == [0, 1] and view.unanswered_calls() == [("0", [0, 1])]
    assert link_states(chat) == {"0": (True, False)}
