"""Where must-survive facts land in what is sent (contextfit/replays/placement.py), worked by hand.

The conversations are built so their counts add up on paper (gpt-4o, o200k_base):
``FILLER`` is "word" 100 times = 100 tokens, a message of it 104 (3 per message,
1 for the role); a plan sends its blocks in order and primes the reply with 3.
"""

from __future__ import annotations

import copy
import json

import pytest

from contextfit.errors import InvalidSettings
from contextfit.inputs.samples import load_sample
from contextfit.pipeline.plan import plan_prompt
from contextfit.replays.must_survive import must_survive
from contextfit.replays.placement import END, MIDDLE, START, fact_placement, third, with_fact_placement
from contextfit.tokens.chat_counter import token_counter

FILLER = " ".join(["word"] * 100)
COUNT = token_counter("gpt-4o")
SYSTEM = {"role": "system", "content": "The vault code is 7731."}  # 8 tokens of text, 12 as a message
QUESTION = {"role": "user", "content": "What was order ORD-7731 again?"}  # 9 tokens of text, 13 as a message


def history(middle: str | None = None) -> list[dict]:
    """Nine filler messages (m1..m9), the fifth (m5) opening with ``middle`` when given."""
    chat = [{"role": "user" if i % 2 else "assistant", "content": FILLER} for i in range(1, 10)]
    if middle is not None:
        chat[4] = {"role": "user", "content": f"{middle} {FILLER}"}
    return chat


def placed(placement, name):
    return next(fact for fact in placement.facts if fact.name == name)


def test_the_counts_the_hand_worked_cases_rest_on():
    assert COUNT.tokenizer.count(FILLER) == 100 and COUNT.count_message({"role": "user", "content": FILLER}) == 104
    assert COUNT.count_message(SYSTEM) == 12 and COUNT.count_message(QUESTION) == 13
    assert COUNT.tokenizer.count("The vault code is ") == 5
    assert COUNT.tokenizer.count("What was order ORD-7731 ") == 8
    assert COUNT.count_message({"role": "user", "content": f"ORD-7731 {FILLER}"}) == 108


def test_system_prompt_middle_of_history_and_current_input_worked_by_hand():
    plan = plan_prompt([SYSTEM, *history("ORD-7731"), QUESTION], model="gpt-4o")
    # 3 (reply priming) + 12 (system) + 8 × 104 + 108 (m5) + 13 (question)
    assert plan.prompt_tokens == 968
    placement = fact_placement(plan, ["7731", "ORD-7731", "again"])
    # the system prompt opens the prompt: the fact stands after "The vault code is " (5 tokens)
    assert placed(placement, "7731").to_dict() == {"name": "7731", "status": "verbatim", "where": START,
                                                    "offset": 5, "block": "m0"}
    # its first occurrence opens m5: 12 + 4 × 104 = 428 tokens in; 968 / 3 ≤ 428 < 2 × 968 / 3
    assert placed(placement, "ORD-7731").to_dict() == {"name": "ORD-7731", "status": "verbatim", "where": MIDDLE,
                                                        "offset": 428, "block": "m5"}
    # only the question says it: 12 + 8 × 104 + 108 = 952, then "What was order ORD-7731 " (8 tokens)
    assert placed(placement, "again").to_dict() == {"name": "again", "status": "verbatim", "where": END,
                                                     "offset": 960, "block": "m10"}
    assert placement.counts() == {"start": 1, "middle": 1, "end": 1, "notSent": 0}
    assert placement.line() == "facts: 1 at the start, 1 in the middle, 1 at the end"
    assert placement.rule == "declared" and placement.middle == ("ORD-7731",)


def test_a_fact_the_question_refers_back_to_is_placed_where_the_history_says_it():
    plan = plan_prompt([SYSTEM, *history("ORD-7731"), QUESTION], model="gpt-4o")
    besides = fact_placement(plan, [{"text": "ORD-7731", "besides": True}])
    assert (besides.facts[0].where, besides.facts[0].block) == (MIDDLE, "m5")
    # the history holding it is dropped: the question alone does not keep it, so it is not placed at the end
    small = plan_prompt([SYSTEM, *history("ORD-7731"), QUESTION], model="gpt-4o", context_limit=500,
                        response_reserve=100)
    lost = fact_placement(small, [{"text": "ORD-7731", "besides": True}]).facts[0]
    assert (lost.status, lost.where, lost.offset, lost.block) == ("lost", None, None, None)
    assert fact_placement(small, ["ORD-7731"]).facts[0].where == END  # as plain text, the question holds it


def test_a_fact_not_sent_has_no_place():
    chat = [SYSTEM, *history("The billing port is now 5433."), QUESTION]
    plan = plan_prompt(chat, model="gpt-4o", context_strategy="truncate", context_limit=500, response_reserve=100)
    assert not next(block for block in plan.blocks if block.id == "m5").included
    placement = fact_placement(plan, ["5433", "7731"])
    assert placed(placement, "5433").to_dict() == {"name": "5433", "status": "lost", "where": None, "offset": None,
                                                    "block": None}
    assert placement.line() == "facts: 1 at the start, 1 not sent"


@pytest.mark.parametrize("strategy, block_id", [("fact-ledger", "fact-ledger"), ("summarize", "summary")])
def test_a_fact_quoted_in_a_ledger_or_summary_line_is_where_that_line_is(strategy, block_id):
    chat = [SYSTEM, {"role": "user", "content": f"Remember: the billing port is now 5433. {FILLER}"},
            *history()[1:], QUESTION]
    plan = plan_prompt(chat, model="gpt-4o", context_strategy=strategy, context_limit=700, response_reserve=100)
    fact = fact_placement(plan, ["5433"]).facts[0]
    assert (fact.status, fact.where, fact.block) == ("summary", END, block_id)
    # the sent blocks before the summary (it stands just before the question), then its text before "5433"
    sent = [block for block in plan.blocks if block.included]
    summary = next(position for position, block in enumerate(sent) if block.id == block_id)
    start = sum(block.tokens for block in sent[:summary])
    text = sent[summary].content
    assert fact.offset == start + COUNT.tokenizer.count(text[: text.index("5433")])
    assert start <= fact.offset < start + sent[summary].tokens


def test_anthropic_sends_system_blocks_first_wherever_they_stood():
    # a system-role memory block in the middle of the history: OpenAI sends it there, Anthropic in ``system``
    note = {"role": "system", "content": "Memory: the courier is Ilse Brandt.", "meta": {"kind": "memory"}}
    chat = [{"role": "system", "content": "Be brief."}, *history()[:5], note, *history()[5:], QUESTION]
    openai = fact_placement(plan_prompt(chat, model="gpt-4o"), ["Ilse Brandt"]).facts[0]
    claude = fact_placement(plan_prompt(chat, model="claude-sonnet-4"), ["Ilse Brandt"]).facts[0]
    assert openai.where == MIDDLE and claude.where == START
    # Anthropic: "Be brief." (the system text's first block) goes before it, nothing else
    be_brief = plan_prompt(chat, model="claude-sonnet-4").blocks[0].tokens
    assert be_brief < claude.offset < be_brief + 20


def test_tool_definitions_count_as_the_first_tokens():
    tools = [{"type": "function", "function": {"name": "lookup_order", "description": "Look an order up. " * 20,
                                               "parameters": {"type": "object", "properties": {}}}}]
    plain = plan_prompt([SYSTEM, QUESTION], model="gpt-4o")
    with_tools = plan_prompt([SYSTEM, QUESTION], model="gpt-4o", tools=tools)
    assert with_tools.tools_tokens > 0
    before, after = (fact_placement(plan, ["7731"]).facts[0].offset for plan in (plain, with_tools))
    assert after == before + with_tools.tools_tokens


def test_pinned_messages_and_regex_facts_are_placed_too():
    plan = plan_prompt([SYSTEM, *history("ORD-7731"), QUESTION], model="gpt-4o")
    placement = fact_placement(plan, [{"message": "m5", "name": "order message"}, "/ORD-[0-9]{4}/",
                                      {"message": 0, "name": "first"}])
    assert (placed(placement, "order message").offset, placed(placement, "order message").where) == (428, MIDDLE)
    assert placed(placement, "/ORD-[0-9]{4}/").to_dict()["offset"] == 428  # the first match, in m5
    assert (placed(placement, "first").block, placed(placement, "first").offset) == ("m0", 0)


def test_default_facts_are_the_recommendations_list():
    conversation = load_sample("roleplay")
    plan = plan_prompt(conversation, model="gpt-4o")
    marked = must_survive(conversation)
    by_default = fact_placement(plan)
    assert by_default.rule == "default-facts"
    assert [fact.name for fact in by_default.facts] == [item.name for item in marked]
    assert fact_placement(plan, marked) == by_default  # the MustSurvive items: the same list and rule
    assert by_default.line() == "facts: 3 at the start, 1 at the end"


def test_the_plan_json_carries_it_only_when_asked_and_nothing_given_is_changed():
    chat = [SYSTEM, *history("ORD-7731"), QUESTION]
    before = copy.deepcopy(chat)
    facts = ["ORD-7731", {"text": "7731", "name": "vault"}]
    facts_before = copy.deepcopy(facts)
    plan = plan_prompt(chat, model="gpt-4o")
    assert "factPlacement" not in plan.to_dict()
    placed_plan = with_fact_placement(plan, facts)
    assert plan.fact_placement is None and "factPlacement" not in plan.to_dict()
    data = json.loads(json.dumps(placed_plan.to_dict()))
    assert data["factPlacement"]["counts"] == {"start": 1, "middle": 1, "end": 0, "notSent": 0}
    assert data["factPlacement"]["promptTokens"] == plan.prompt_tokens == 968
    assert {key: data[key] for key in ("blocks", "promptTokens")} == {key: plan.to_dict()[key]
                                                                      for key in ("blocks", "promptTokens")}
    assert chat == before and facts == facts_before


def test_no_fact_in_force_and_bad_facts():
    plan = plan_prompt([{"role": "user", "content": "hello there"}], model="gpt-4o")
    assert fact_placement(plan, ["absent"]).line() == "facts: none in force"
    assert fact_placement(plan).facts == ()
    with pytest.raises(InvalidSettings, match=r"facts\[0\]"):
        fact_placement(plan, [{"txt": "typo"}])


def test_the_thirds_are_exact_at_their_edges():
    assert [third(offset, 300) for offset in (99, 100, 199, 200)] == [START, MIDDLE, MIDDLE, END]
    assert [third(offset, 10) for offset in (3, 4, 6, 7)] == [START, MIDDLE, MIDDLE, END]  # 10/3 = 3.3, 20/3 = 6.7


def test_the_rule_a_face_names_and_a_wrong_one():
    plan = plan_prompt([SYSTEM, QUESTION], model="gpt-4o")
    found_once = fact_placement(plan, [], rule="default-facts")  # a default list found empty, for several plans
    assert (found_once.rule, found_once.line()) == ("default-facts", "facts: none in force")
    with pytest.raises(InvalidSettings, match="rule"):
        fact_placement(plan, ["7731"], rule="guessed")


def test_in_an_agent_round_a_referred_back_fact_is_placed_past_the_question():
    # the history that first said it is dropped; the question asks, a tool result after it answers
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"My order is ORD-7731. {FILLER}"},
            *({"role": "assistant" if i % 2 == 0 else "user", "content": FILLER} for i in range(6)),
            {"role": "user", "content": "Where is ORD-7731 now?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "track", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Parcel ORD-7731 left the depot."}]
    plan = plan_prompt(chat, model="gpt-4o", context_limit=600, response_reserve=100)
    # 3 + 7 (system) + 4 × 104 (m4..m7) + 12 (question m8) + 12 (call m9) + 13 (result m10)
    assert plan.prompt_tokens == 463
    besides = fact_placement(plan, [{"text": "ORD-7731", "besides": True}]).facts[0]
    plain = fact_placement(plan, ["ORD-7731"]).facts[0]
    assert (plain.block, plain.offset) == ("m8", 7 + 416 + 3)  # "Where is " is 3 tokens
    assert (besides.block, besides.offset) == ("m10", 7 + 416 + 12 + 12 + 2)  # "Parcel " is 2


# -- the recommendation may say the risk, in its one sentence, and chooses as before


def long_agentless_chat() -> list[dict]:
    """About 12,600 gpt-4o tokens: a port set early (dropped by truncate), a courier named two thirds in."""
    chat = [{"role": "system", "content": "Be brief."},
            *({"role": "user" if i % 2 == 0 else "assistant", "content": FILLER} for i in range(120))]
    chat[2] = {"role": "assistant", "content": f"The deploy port is now 5433. {FILLER}"}
    chat[80] = {"role": "assistant", "content": f"The courier is Ilse Brandt. {FILLER}"}
    return [*chat, {"role": "user", "content": "Who is the courier and which port?"}]


def test_the_recommendation_says_facts_in_the_middle_of_a_long_prompt_in_one_sentence():
    import dataclasses

    from contextfit.pipeline.session import FitSession
    from contextfit.replays.answer import recommend, recommendation_for
    from contextfit.replays.recommend import decide

    facts = ["Ilse Brandt", "5433"]
    limits = {"context_limit": 11000, "response_reserve": 500}  # a budget past gpt-4o's 8,000
    risk = ("1 must-survive fact sits in the middle of a prompt past gpt-4o's published effective context "
            "(8,000 tokens, NoLiMa)")
    for answer in (recommendation_for(long_agentless_chat(), model="gpt-4o", facts=facts, **limits),  # replayed
                   recommend(dict(FitSession(long_agentless_chat()).plans(model="gpt-4o", **limits)), facts=facts)):
        assert answer.strategy is not None and answer.sentence.endswith(f"; {risk}.")
        assert ". " not in answer.sentence[:-1]  # still one sentence
        # the choice and the rest of the sentence are what they are without the risk
        plain = decide(tuple(dataclasses.replace(o, risk=None) for o in answer.outcomes), answer.priority, answer.basis)
        assert plain.strategy == answer.strategy and plain.sentence == answer.sentence.replace(f"; {risk}", "")
        assert answer.to_dict()["strategies"][answer.strategy]["risk"] == risk


def test_no_risk_within_the_effective_context_or_with_nothing_in_the_middle():
    from contextfit.replays.answer import recommendation_for

    short = recommendation_for(long_agentless_chat()[-40:], model="gpt-4o", facts=["Ilse Brandt"])
    assert "middle" not in short.sentence and all(o.risk is None for o in short.outcomes)
    # past 8,000 tokens, but the only fact is in the question, at the end
    ending = recommendation_for(long_agentless_chat(), model="gpt-4o", facts=["which port"],
                                context_limit=11000, response_reserve=500)
    assert "middle" not in ending.sentence and all(o.risk is None for o in ending.outcomes)


def test_an_audits_plan_places_the_facts_as_the_plan_it_was_made_from():
    from contextfit.serving.audit import audit_from_plan

    chat = [SYSTEM, *history("ORD-7731"), QUESTION]
    plan = plan_prompt(chat, model="gpt-4o")
    audited = audit_from_plan(plan, chat_id="c", provider="echo").as_plan(chat)  # no fit, texts from the chat
    assert fact_placement(audited, ["7731", "ORD-7731"]) == fact_placement(plan, ["7731", "ORD-7731"])


def test_a_block_an_interceptor_adds_is_placed_where_it_is_sent():
    import contextfit

    # the history that says it is dropped; a plugin's interceptor says it again just before the question
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"The vault code is 7731. {FILLER}"},
            *history()[1:], {"role": "user", "content": "And the vault code?"}]
    late = {"role": "system", "content": "Reminder: the vault code is 7731."}
    undo = contextfit.register_interceptor(lambda messages: [*messages[:-1], late, messages[-1]])
    try:
        plan = plan_prompt(chat, model="gpt-4o", context_limit=500, response_reserve=100)
    finally:
        undo()
    sent = [block for block in plan.blocks if block.included]
    assert sent[-2].origin.startswith("interceptor") and sent[-1].origin == "input"
    assert "m1" not in [block.id for block in sent]
    fact = fact_placement(plan, ["7731"]).facts[0]
    assert (fact.status, fact.where, fact.block) == ("verbatim", END, sent[-2].id)
    assert fact.offset == sum(block.tokens for block in sent[:-2]) + COUNT.tokenizer.count("Reminder: the vault code is ")
