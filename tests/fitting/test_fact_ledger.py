"""fact-ledger, worked by hand: supersession, units, identifiers, CJK text, the budget and the reasons."""

from __future__ import annotations

import copy

import pytest

import contextfit
from contextfit.fitting import results as r

COUNT = contextfit.token_counter("gpt-4o")
FILLER = "We walked through the logs together and nothing else stood out in that part of the run today."


def chat(*facts: str, filler: int = 6, tail: int = 4) -> list[dict]:
    """A system prompt, each fact in a user message followed by filler turns, then the question."""
    messages = [{"role": "system", "content": "You are a helpful agent."}]
    for fact in facts:
        messages.append({"role": "user", "content": fact})
        messages.append({"role": "assistant", "content": "Noted."})
        for _ in range(filler):
            messages += [{"role": "user", "content": FILLER}, {"role": "assistant", "content": FILLER}]
    for _ in range(tail):
        messages += [{"role": "user", "content": FILLER}, {"role": "assistant", "content": FILLER}]
    messages.append({"role": "user", "content": "What did we settle on?"})
    return messages


def fit(messages, budget, **options):
    return contextfit.shift_context(messages, COUNT, budget, strategy="fact-ledger", **options)


def ledger(result) -> dict:
    blocks = [b for b in result.kept if b.get("meta", {}).get("method") == "fact-ledger"]
    assert len(blocks) == 1, "one ledger block"
    return blocks[0]


def test_units_identifiers_and_dates_are_quoted_verbatim_with_their_source():
    messages = chat("Important: the billing timeout is 250 ms.", "The incident is tracked in INC-4821, link the fix.",
                    "Product wants the launch on 2025-03-14, so the freeze starts before.")
    before = copy.deepcopy(messages)
    result = fit(messages, 330)
    assert messages == before  # the caller's input is unchanged
    text = ledger(result)["content"]
    ident = next(d.id for d in result.decisions if d.index == 1)  # the message's id as the fit names it
    assert f"- [{ident}] Important: the billing timeout is 250 ms." in text
    assert "INC-4821" in text and "2025-03-14" in text
    assert result.tokens <= 330 and COUNT(result.kept) == result.tokens
    reasons = {d.index: d.reason for d in result.decisions if d.index is not None}
    assert reasons[1] == r.SUMMARIZED and reasons[2] == r.OVER_BUDGET  # "Noted." said no fact
    assert [d.reason for d in result.decisions if d.index is None] == [r.SUMMARY]
    # the ledger stands just before the current input
    assert result.kept[-2] is ledger(result) and result.kept[-1] is messages[-1]


def test_a_value_set_again_supersedes_the_old_one():
    messages = chat("Important: the billing service port is 5433.", "Change of plan: the billing service port is now 6001.")
    result = fit(messages, 200)
    text = ledger(result)["content"]
    assert "6001" in text and "5433" not in text
    assert f"(replaces {next(d.id for d in result.decisions if d.index == 1)})" in text


def test_a_fact_set_again_in_a_sent_message_stays_out_of_the_ledger():
    messages = chat("Important: the billing service port is 5433.", "Change of plan: the billing service port is now 6001.",
                    filler=6, tail=0)
    budget = COUNT(messages[:1] + messages[-16:]) + 60
    result = fit(messages, budget)
    sent = "\n".join(m["content"] for m in result.kept if isinstance(m.get("content"), str))
    assert "6001" in sent
    assert "5433" not in sent  # the old value never follows the newer one


def test_different_things_are_not_taken_for_one():
    messages = chat("Important: the billing service port is 5433.", "Important: the search service port is 7021.")
    text = ledger(fit(messages, 200))["content"]
    assert "5433" in text and "7021" in text


def test_cjk_text():
    messages = chat("部署区域改为 eu-west-3。", "重要：数据库端口是 5433。", "会议定在 3月14日。")
    text = ledger(fit(messages, 300))["content"]
    assert "部署区域改为 eu-west-3。" in text
    assert "5433" in text and "3月14日" in text


def test_what_does_not_fit_is_named():
    facts = [f"Important: the service {name} port is {5000 + i}." for i, name in enumerate(
        ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"])]
    result = fit(chat(*facts, filler=2), 320, ledger_tokens=110)
    codes = [d for d in result.diagnostics if d["code"] == r.LEDGER_INCOMPLETE]
    assert codes and codes[0]["notShown"]
    text = ledger(result)["content"]
    assert "Not shown:" in text and codes[0]["notShown"][0] in text
    assert result.tokens <= 320


def test_the_ledger_never_exceeds_its_share_and_protected_blocks_stay():
    messages = chat(*[f"Remember: the {w} quota is {i * 7} GiB." for i, w in enumerate(
        ["red", "green", "blue", "cyan", "magenta", "yellow"], start=2)], filler=2)
    messages[3]["pinned"] = True
    for budget in (120, 180, 260, 400):
        result = fit(messages, budget, ledger_tokens=60)
        assert result.tokens <= budget
        assert any(m is messages[3] for m in result.kept)
        blocks = [b for b in result.kept if b.get("meta", {}).get("method") == "fact-ledger"]
        assert all(COUNT([b]) <= 60 + 8 for b in blocks)  # its count as a block, chat overhead aside


def test_everything_fits_no_ledger():
    messages = chat("Important: the port is 5433.", filler=0, tail=0)
    result = fit(messages, 10_000)
    assert result.kept == messages and not result.truncated


def test_no_room_for_a_ledger_is_said():
    messages = chat("Important: the port is 5433.")
    protected = COUNT([messages[0], messages[-1]])
    result = fit(messages, protected + 10)
    assert any(d["code"] == r.LEDGER_INCOMPLETE for d in result.diagnostics)
    assert not result.truncated


@pytest.mark.parametrize("budget", [150, 300])
def test_deterministic(budget):
    messages = chat("Important: the billing timeout is 250 ms.", "Use pnpm for the build from now on.")
    first, second = fit(messages, budget), fit(copy.deepcopy(messages), budget)
    assert first.kept == second.kept and first.diagnostics == second.diagnostics
