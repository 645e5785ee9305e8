"""bench/replay.py's smoke path: it replays, times both sides (in one process and in fresh processes) and reports the ratios (no timing asserted)."""

from __future__ import annotations

from bench import replay as bench_replay


def test_the_replay_bench_reports_cold_and_warm_ratios():
    messages = bench_replay.conversation(12)
    assert sum(1 for m in messages if m["role"] == "user") >= 12 and messages[-1]["role"] == "user"
    result = bench_replay.measure(turns=12, runs=1, limit=6_000, strategies=("truncate", "summarize"))
    assert result["user_turns"] == 12 and len(result["runs"]) == 1
    run = result["runs"][0]
    assert run["ratio_cold"] == run["replay_cold"] / run["cold_fit"] > 0
    text = bench_replay.report(result)
    assert result["user_turns"] == 12 and result["turns"] >= 12  # each tool round the model answers is a request
    assert "cold ratio" in text and "target <= 3x" in text and f"{2 * result['turns']} fits" in text
    assert f"12 turns, {result['turns']} requests" in text
    # what the tokenizers counted: the cold fit counts every message once; the replay too, and its summaries
    cold, replayed = run["tokenized_cold_fit"], run["tokenized_replay"]
    assert cold["texts"] > 0 and cold["chars"] > 0
    assert replayed["texts"] > cold["texts"] and replayed["chars"] >= cold["chars"]
    assert f"the cold replay {replayed['chars']:,} characters in {replayed['texts']:,} texts" in text


def test_the_replay_bench_replays_the_strategies_asked_for(capsys):
    assert bench_replay.main(["--turns", "3", "--runs", "1", "--fresh-runs", "0", "--strategies", "truncate,manual",
                              "--json"]) == 0
    text = capsys.readouterr().out
    assert "2 strategies = 6 fits" in text
    assert '"strategies": [\n    "truncate",\n    "manual"\n  ]' in text


def test_the_replay_bench_prints_both_readings_of_cold_and_each_strategy():
    result = bench_replay.measure(turns=3, runs=1)
    result["fresh"] = bench_replay.measure_fresh(bench_replay.conversation(3), bench_replay._settings(32_000), 1)
    text = bench_replay.report(result)
    run = result["fresh"]["runs"][0]
    assert run["cold_cpu"] > 0 and run["replay_cpu"] > 0 and run["cold_wall"] > 0 and run["replay_wall"] > 0
    assert run["ratio_cpu"] == run["replay_cpu"] / run["cold_cpu"]
    assert "fresh replay / fresh cold fit (wall)" in text and "fresh replay / fresh cold fit (CPU)" in text
    assert str(run["load_before"]) in text
    # the start-up both sides pay, and what the target leaves the replay's work per turn
    assert 0 < run["startup_cpu"] and f"| {run['startup_cpu']:.3f} |" in text
    allowed = 3 * run["cold_cpu"] - run["startup_cpu"]
    assert f"3x the fresh cold fit leaves the replay's work {allowed:.3f} s after its start-up: " \
           f"{allowed / 3 * 1000:.2f} ms per turn" in text
    line = next(line for line in text.splitlines() if line.startswith("CPU per fit in the cold replay"))
    assert all(f"{name} " in line for name in bench_replay.STRATEGIES)
    assert set(result["runs"][0]["cpu_per_strategy"]) == set(bench_replay.STRATEGIES)


def test_the_replay_bench_compares_two_trees_run_by_run(capsys):
    # this tree against itself: both columns are made and printed, with the load of each run
    assert bench_replay.main(["--turns", "3", "--runs", "1", "--fresh-runs", "0", "--tree", str(bench_replay.ROOT)]) == 0
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("| 1 |")]
    assert [row.split(" | ")[1] for row in rows] == ["this tree", "before"]
    assert "median, this tree: in-process ratio" in text and "median, before: in-process ratio" in text
    assert "first in-process runs (the fast counting engine loaded on the way), before: CPU ratio" in text


def test_the_stitched_fixture_chat_is_real_text_with_tool_ids_of_its_own(capsys):
    from conftest import shared_path

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
