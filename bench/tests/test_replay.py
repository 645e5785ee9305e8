"""bench/replay.py's and bench/agent_replay.py's functions: the stitched chat of the shared fixtures, setups with a card
and a lorebook, and an agent run of many requests.

Run as one process from tests/e2e/test_bench.py (``python -m pytest bench/tests``), or by hand.
"""

from __future__ import annotations

from bench import replay as bench_replay


def test_the_stitched_fixture_chat_is_real_text_with_tool_ids_of_its_own(capsys):
    from support.paths import shared_path

    from bench.conversations import stitched
    from contextfit.replays.run import request_positions
    from contextfit.inputs.messages import link_ids
    from contextfit.tokens import reasoning

    shared_path("llama-factory")  # skips without the shared fixtures
    chat = stitched(40).messages
    assert len(bench_replay.user_requests(chat)) == 40 and chat[-1]["role"] == "user"
    assert len(request_positions(chat)) > 40  # and the tool rounds the model answers
    assert [m["role"] for m in chat].count("system") == 1  # the joined chats' own system prompts are left out
    # two joined datasets both number their calls call_1: each call id is one call and its results
    calls = [i for m in chat if m["role"] == "assistant" for i in link_ids(m)[0]]
    assert calls and len(calls) == len(set(calls))
    results = [i for m in chat if m["role"] == "tool" for i in link_ids(m)[0]]
    assert set(results) <= set(calls)
    longer = stitched(1000).messages  # the bench's: every fixture in it, the reasoning demo's turns too
    assert sum(map(reasoning.has_reasoning, longer)) > 50
    assert bench_replay.main(["--turns", "6", "--runs", "1", "--fresh-runs", "0", "--chat", "fixtures"]) == 0
    assert "replay of the shared fixtures' chats joined: 6 turns" in capsys.readouterr().out


def test_the_replay_bench_replays_with_a_card_and_a_lorebook(capsys):
    assert bench_replay.main(["--turns", "4", "--runs", "1", "--fresh-runs", "0", "--setup", "card"]) == 0
    assert "replay of the synthetic chat, with a character card: 4 turns" in capsys.readouterr().out
    result = bench_replay.measure(turns=4, runs=1, strategies=("truncate",), setup="lorebook")
    assert result["setup"] == "lorebook"
    import contextfit

    for setup, entries in (("card", 0), ("lorebook", 2)):  # the world's entries the first turns activate
        plan = contextfit.plan_prompt(bench_replay.conversation(4), **bench_replay._settings(32_000, setup))
        assert plan.blocks[-1].id == "character:post_history_instructions"
        assert sum(block.id.startswith("lorebook:") for block in plan.blocks) == entries


def test_the_agent_replay_bench_reports_ms_per_request(capsys):
    from bench import agent_replay
    from contextfit.replays.run import model_calls

    chat = agent_replay.agent_run(60)
    calls = model_calls(chat)
    assert len(calls) == 60 and [c.trigger for c in calls].count("user") == 2  # 50 requests per user turn
    assert agent_replay.main(["--requests", "10,20", "--runs", "1", "--strategies", "truncate", "--cap", "500"]) == 0
    text = capsys.readouterr().out
    assert "| 10 |" in text and "| 20 |" in text and "tool_result_cap 500" in text
    assert "per request, 20 against 10 requests: wall" in text
