"""The retention protocol: a deterministic generator, an independent scorer, a bench that runs."""

from __future__ import annotations

import contextfit
from contextfit.retention import generate, runner, score_plan
from contextfit.retention.scoring import LEDGER, LOST, RECOVERABLE, STALE, VERBATIM, score_sent


def test_the_generator_is_deterministic_and_seeded():
    assert generate(60, seed=4) == generate(60, seed=4)
    assert generate(60, seed=4).messages != generate(60, seed=5).messages
    chat = generate(200, seed=2)
    assert len(chat.facts) == 20 and {f.kind for f in chat.facts} == {"explicit", "implicit"}
    assert chat.messages[-1]["role"] == "user" and all(f.asked_at == len(chat.messages) - 1 for f in chat.facts)
    texts = [m.get("content") or "" for m in chat.messages]
    for fact in chat.facts:  # each value stands only where it was planted
        for value, at in fact.values:
            holders = [i for i, text in enumerate(texts) if value in text]
            assert holders == [at]


def _plan(messages, strategy):
    return contextfit.plan_prompt(messages, model="gpt-4o", context_strategy=strategy,
                                  context_limit=contextfit.token_counter("gpt-4o")(messages) // 6, response_reserve=0)


def test_each_status_is_read_from_what_is_sent():
    chat = generate(50, seed=1)
    messages = list(chat.messages)
    fact = chat.facts[0]
    value, at = fact.values[-1]
    original = messages[at]["content"]
    assert [s.status for s in score_sent([original], messages, [fact])] == [VERBATIM]
    assert [s.status for s in score_sent([f"ledger: {value}"], messages, [fact])] == [LEDGER]
    assert [s.status for s in score_sent([f"see m{at}"], messages, [fact])] == [RECOVERABLE]
    assert [s.status for s in score_sent(["nothing"], messages, [fact])] == [LOST]
    superseded = next(f for f in generate(200, seed=2).facts if f.superseded)
    assert [s.status for s in score_sent([f"x {superseded.stale[0]} y"], messages, [superseded])] == [STALE]


def test_a_strategy_that_claims_a_fact_but_does_not_send_it_scores_lost():
    chat = generate(50, seed=1)
    messages = list(chat.messages)

    def liar(messages, count_tokens, budget, **options):  # claims every message as a source, sends no value
        block = {"role": "system", "content": "Summary: all is well.",
                 "meta": {"kind": "summary", "sources": [{"index": i} for i in range(len(messages))]}}
        return [messages[0], block, messages[-1]]

    cleanup = contextfit.registry.register("liar-for-retention", liar)
    try:
        plan = _plan(messages, "liar-for-retention")
    finally:
        cleanup()
    assert {s.status for s in score_plan(plan, messages, chat.facts)} == {LOST}
    honest = score_plan(_plan(messages, "fact-ledger"), messages, chat.facts)
    assert any(s.status == LEDGER for s in honest)


def test_rows_pool_every_length_per_kind():
    rows = runner.retention_rows(lengths=(30,), shares=(0.15,), seeds=(1,), variants=runner.VARIANTS[:1])
    every = next(row for row in rows if row.kind == "all")
    assert every.facts == sum(row.facts for row in rows if row.kind != "all")
    assert every.retained == every.verbatim + every.ledger and every.cost_per_1000 > 0
