"""contextfit.replay: costs, prompt-cache prefixes and facts, with expectations worked out by hand."""

from __future__ import annotations

import json

import pytest
from support.chats import fact_chat
from support.paths import shared_path

import contextfit
from contextfit.pipeline.plan import plan_prompt
from contextfit.replays.prompt_cache import AUTOMATIC_MINIMUM, AUTOMATIC_STEP, anthropic_cache, prefix_cached
from contextfit.replays.run import ENTITY_RULE, replay
from contextfit.replays.facts import declared_facts, entities
from contextfit.errors import InvalidMessages, InvalidSettings
from contextfit.tokens.models import get_model

HELLO = "hello" + " hello" * 1199  # 1,200 o200k tokens: "hello", then 1,199 times " hello"

# gpt-4o counts a message as 3 + 1 (role) + its text; a request adds 3 to prime the reply.
SMALL_CHAT = [
    {"role": "system", "content": HELLO},  # 4 + 1200 = 1204
    {"role": "user", "content": "Hi there."},  # 4 + 3 = 7
    {"role": "assistant", "content": "Noted."},  # output of turn 1: 3 tokens
    {"role": "user", "content": "What now?"},  # 4 + 3 = 7
    {"role": "assistant", "content": "Fine."},  # output of turn 2: 2 tokens
]


def test_costs_and_cache_prefix_of_a_small_chat_worked_out_by_hand():
    result = replay(SMALL_CHAT, model="gpt-4o", strategies=["truncate"])
    first, second = result.turns["truncate"]
    # Turn 1: 3 + 1204 + 7 = 1214 prompt tokens, nothing cached; $2.50 and $10 per million.
    assert (first.prompt_tokens, first.shared_tokens, first.cache_read, first.output_tokens) == (1214, 0, 0, 3)
    assert first.cost.total == pytest.approx(1214 * 2.50e-6 + 3 * 10e-6)  # 0.003065
    # Turn 2: 3 + 1204 + 7 + 7 + 7 = 1228; it shares the system prompt and the first user
    # message with turn 1: 1204 + 7 = 1211 tokens, served as 1024 + 128 * floor(187 / 128) = 1152.
    assert (second.prompt_tokens, second.shared_tokens, second.cache_read, second.cache_write) == (1228, 1211, 1152, 0)
    assert second.cost.input == pytest.approx((1228 - 1152) * 2.50e-6)
    assert second.cost.cached_input == pytest.approx(1152 * 1.25e-6)
    assert second.cost.total == pytest.approx(0.00019 + 0.00144 + 0.00002)
    totals = result.totals["truncate"]
    assert totals.tokens_sent == 1214 + 1228
    assert totals.cache_hit_rate == pytest.approx(1152 / 2442)
    assert totals.total_cost == pytest.approx(0.003065 + 0.00165)
    assert totals.mean_cost == pytest.approx((0.003065 + 0.00165) / 2)


def test_anthropic_breakpoints_write_then_read_the_previous_request():
    result = replay(SMALL_CHAT, model="claude-sonnet-4", strategies=["truncate"])
    first, second = result.turns["truncate"]
    base = contextfit.token_counter("claude-sonnet-4").base_tokens
    one, two = first.prompt_tokens - base, second.prompt_tokens - base  # what the breakpoints cover
    assert one >= 1024  # the minimum an Anthropic prefix needs to be cached
    assert (first.cache_read, first.cache_write) == (0, one)  # the first request writes its whole prompt
    assert (second.cache_read, second.cache_write) == (one, two - one)  # the second reads it, writes the rest
    # $3 input, $0.30 cache read, $3.75 cache write, $15 output per million
    assert second.cost.total == pytest.approx(base * 3e-6 + one * 0.30e-6 + (two - one) * 3.75e-6
                                              + second.output_tokens * 15e-6)
    assert result.cache_rule == "anthropic-breakpoints"


def test_cache_rules_by_hand():
    assert [prefix_cached(n, AUTOMATIC_MINIMUM, AUTOMATIC_STEP) for n in (0, 1023, 1024, 1151, 1152, 5000)] == [0, 0, 1024, 1024, 1152, 4992]
    # the previous request is not a prefix (the cut moved): only the system head is read
    assert anthropic_cache(3000, 1200, 2500, False, True).read == 1200
    # a head under the minimum is not cached; a prompt under it neither read nor written
    assert anthropic_cache(3000, 900, 2500, False, True) == anthropic_cache(3000, 900, None, False, False)
    assert anthropic_cache(800, 100, 700, True, True).write == 0


def test_a_model_without_prices_gives_no_cost_and_says_so():
    result = replay(SMALL_CHAT, model="llama-3.1-8b", strategies=["truncate"])
    assert result.prices is None and all(turn.cost is None for turn in result.turns["truncate"])
    assert result.totals["truncate"].total_cost is None
    assert any("no prices" in note for note in result.notes)


def test_retention_of_declared_facts_is_exact():
    facts = ["ORD-7731", "/zenith\\s+express/i", {"message": "courier", "name": "the courier message"}]
    result = replay(fact_chat(), model="gpt-4o", context_limit=400, response_reserve=100,
                    strategies=["truncate", "summarize"], facts=facts)
    assert result.fact_rule == "declared"
    # Message tokens (gpt-4o): system 10, user 254, assistant 133, user 191, assistant 133, user 7; budget 300,
    # 3 to prime the reply.
    # Turn 1: 3 + 10 + 254 = 267 fits; only the order number is in force yet (the other two come with message 3).
    # Turn 2: system, current input: 3 + 10 + 191 = 204; 96 left, the 133-token reply does not fit: the first
    #   exchange goes (the order number with it); the courier message is the current input, sent.
    # Turn 3: 3 + 10 + 7 = 20; 280 left: the 133-token reply fits ("Zenith Express is slow..."), the
    #   191-token courier message no longer does.
    truncate = [[(fact.name, fact.status) for fact in turn.facts] for turn in result.turns["truncate"]]
    assert [turn.prompt_tokens for turn in result.turns["truncate"]] == [267, 204, 153]
    assert truncate == [
        [("ORD-7731", "verbatim")],
        [("ORD-7731", "lost"), ("/zenith\\s+express/i", "verbatim"), ("the courier message", "verbatim")],
        [("ORD-7731", "lost"), ("/zenith\\s+express/i", "verbatim"), ("the courier message", "lost")],
    ]
    assert result.totals["truncate"].retention == 4 / 7
    assert result.totals["truncate"].first_loss_turn == 2
    # summarize quotes the dropped sentences that hold the order number, and the courier message
    summarize = [[fact.status for fact in turn.facts] for turn in result.turns["summarize"]]
    assert summarize == [["verbatim"], ["summary", "verbatim", "verbatim"], ["summary", "verbatim", "summary"]]
    assert result.totals["summarize"].retention == 1.0 and result.verdict()["bestRetention"] == "summarize"


def test_a_fact_quoted_by_the_summary_counts_as_present():
    chat = fact_chat()
    result = replay(chat, model="gpt-4o", context_limit=420, response_reserve=100, strategies=["summarize"],
                    facts=["I see order ORD-7731."])
    states = [turn.facts for turn in result.turns["summarize"]]
    assert any(state and state[0].status == "summary" for state in states)


def test_default_entity_rule():
    assert entities('Use "blue box" with parse_args() on ORD-1234, 42 times, ask Ada Lovelace.') == [
        "blue box", "parse_args()", "ORD-1234", "42", "Ada Lovelace"]
    result = replay(fact_chat()[:6] + [{"role": "user", "content": "Is ORD-7731 still with Zenith Express?"}],
                    model="gpt-4o", context_limit=400, response_reserve=100, strategies=["truncate"],
                    facts=ENTITY_RULE)
    assert result.fact_rule == "default-entities"
    last = result.turns["truncate"][-1]
    assert [fact.name for fact in last.facts] == ["ORD-7731", "Zenith Express"]
    assert last.lost == ["ORD-7731"]  # the first exchange was dropped; the courier is still sent
    assert result.totals["truncate"].first_loss_turn == last.turn


@pytest.mark.parametrize("facts", [["ok", 5], [{"text": "a", "regex": "/a/"}], [{"regex": "no slashes"}], "text",
                                   [{"bogus": 1}], [""], ["/(x/"], ["/[a-/i"]])
def test_bad_facts_are_refused(facts):
    with pytest.raises(InvalidSettings):
        declared_facts(facts)


@pytest.mark.parametrize("facts, says", [
    (["ORD-7731", {"text": "ORD-7731"}], r"facts\[1\] repeats facts\[0\]"),
    ([{"text": "a", "name": "order"}, {"regex": "/b/", "name": "order"}], r"facts\[1\] is named 'order', as facts\[0\]"),
    (["order", {"text": "b", "name": "order"}], r"facts\[1\] is named 'order', as facts\[0\]"),
])
def test_a_fact_given_twice_or_a_name_given_twice_is_refused(facts, says):
    with pytest.raises(InvalidSettings, match=says):
        declared_facts(facts)


def test_facts_whose_derived_names_agree_are_told_apart_in_the_report():
    """Two long facts that differ past their 79th character were reported under one name: a
    turn's states could not be told apart, and the page took a fact no message holds for checked."""
    head = "The courier promised the parcel would reach the depot on Tuesday morning, weather permitting "
    sent, never = head + "and it did.", head + "but it never came."
    chat = [{"role": "user", "content": f"Note this: {sent}"}, {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Anything else?"}]
    result = replay(chat, model="gpt-4o", strategies=["truncate"], facts=[sent, never])
    names = [fact.name for fact in result.facts]
    assert len(set(names)) == 2 and names[1].endswith("… (2)") and len(names[1]) <= 80
    assert [(state.name, state.status) for state in result.turns["truncate"][-1].facts] == [(names[0], "verbatim")]
    from contextfit.dashboard.replay import fact_notes
    assert fact_notes(result) == [f"No message holds “{names[1]}”, so no turn checks it."]


def test_a_fact_written_as_a_regex_that_does_not_compile_is_refused_and_says_how_to_mean_text():
    # the suggested fix is JSON, which the facts box and --fact read ({"text": '/(x/'} was not)
    with pytest.raises(InvalidSettings, match=r'does not compile.*\{"text": "/\(x/"\}') as refused:
        declared_facts(["ok", "/(x/"])
    suggested = str(refused.value).split("or give ")[1].split(" to look")[0]
    assert json.loads(suggested) == {"text": "/(x/"}
    # a slash inside is no regex key (a path): text, as a lorebook reads it; and the text form is text
    assert [f.to_dict() for f in declared_facts(["/usr/bin/", {"text": "/(x/"}])] == [
        {"name": "/usr/bin/", "text": "/usr/bin/"}, {"name": "/(x/", "text": "/(x/"}]


@pytest.mark.parametrize("pin", [-1, 10**30, 6, "nope"])
def test_a_fact_pinned_to_a_message_the_conversation_does_not_hold_is_refused(pin):
    chat = fact_chat()[:6]
    with pytest.raises(InvalidSettings, match=f"pinned to message {pin!r}.*6 messages"):
        replay(chat, model="gpt-4o", strategies=["truncate"], facts=[{"message": pin}])
    assert replay(chat, model="gpt-4o", strategies=["truncate"], facts=[{"message": 5}]).facts  # the last one is held


@pytest.mark.parametrize("entry, field", [
    (5, r"strategies\[0\]"), (None, r"strategies\[0\]"), ({"strategy": 5}, r"strategies\[0\]\.strategy"),
    ({"strategy": None}, r"strategies\[0\]\.strategy"), ({"strategy": ["truncate"]}, r"strategies\[0\]\.strategy"),
    ({"strategy": "truncate", "label": {}}, r"strategies\[0\]\.label"),
    ({"strategy": "truncate", "label": " "}, r"strategies\[0\]\.label"),
    ({"strategy": "truncate", "options": {"context_limit": 150}}, r"strategies\[0\]\.options\.context_limit"),
    ({"strategy": "truncate", "options": {"model": "gpt-4o-mini"}}, r"strategies\[0\]\.options\.model"),
    ({"strategy": "truncate", "options": {"context_strategy": "summarize"}}, r"options\.context_strategy"),
])
def test_a_strategy_entry_a_replay_cannot_honour_is_refused(entry, field):
    # before: 5 or None ran the settings' strategy labelled "int" / "NoneType", and a context
    # limit among a strategy's options was left out of its fits while its label named it
    with pytest.raises(InvalidSettings, match=field):
        replay(SMALL_CHAT, model="gpt-4o", strategies=[entry])


def test_a_strategy_object_and_its_own_interceptors_are_a_replay_strategy():
    from contextfit.fitting.strategies.truncate import Truncate

    seen = []

    def interceptor(kept):
        seen.append(len(kept))

    result = replay(SMALL_CHAT, model="gpt-4o", strategies=[
        Truncate(), {"strategy": "truncate", "label": "watched", "options": {"interceptors": [interceptor]}}])
    assert list(result.turns) == ["truncate", "watched"] and seen


def test_hostile_inputs():
    with pytest.raises(InvalidMessages):
        replay([{"role": "system", "content": "x"}], model="gpt-4o")
    with pytest.raises(InvalidSettings):
        replay(SMALL_CHAT, model="gpt-4o", strategies=["truncate", "truncate"])
    with pytest.raises(InvalidSettings):
        replay(SMALL_CHAT, model="gpt-4o", strategies=[{"strategy": "truncate", "options": {"stable_prefix": "yes"}}])
    # a catastrophic regex is stopped by the lorebook's time limit and reported, not hung on
    result = replay([{"role": "user", "content": "a" * 40 + "b"}], model="gpt-4o", strategies=["truncate"],
                    facts=["/(a|a)+$/"])
    assert result.turns["truncate"][0].facts == ()
    # a turn that cannot fit is recorded with its error, the others go on
    tiny = replay(fact_chat(), model="gpt-4o", context_limit=120, response_reserve=10, strategies=["truncate"])
    assert [turn.error for turn in tiny.turns["truncate"]][:2] == ["TOKEN_BUDGET_EXCEEDED"] * 2
    assert tiny.totals["truncate"].failed_turns >= 2


def test_progress_follows_every_turn_and_what_it_raises_stops_the_replay():
    seen = []
    replay(SMALL_CHAT, model="gpt-4o", strategies=["truncate", "summarize"],
           progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 2), (1, 2), (2, 2)]  # once checked, then after each turn (every strategy fitted)

    class Cancelled(Exception):
        pass

    def cancel(done: int, total: int) -> None:
        seen.append(done)
        if done == 1:
            raise Cancelled

    seen.clear()
    with pytest.raises(Cancelled):
        replay(SMALL_CHAT, model="gpt-4o", strategies=["truncate"], progress=cancel)
    assert seen == [0, 1]  # the second turn was never replayed
    with pytest.raises(InvalidSettings, match="progress must be a callable"):
        replay(SMALL_CHAT, model="gpt-4o", progress=5)
    seen.clear()
    with pytest.raises(InvalidMessages):  # bad input is refused before any report
        replay([{"role": "system", "content": "x"}], model="gpt-4o", progress=lambda *report: seen.append(report))
    assert seen == []


def _long_real_chat() -> list[dict]:
    """The five ShareGPT conversations of the shared sample, one after the other (25 real turns)."""
    records = json.loads(shared_path("dialogstudio", "sharegpt_original_example.json").read_text())
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for record in records:
        for turn in record["conversations"]:
            messages.append({"role": "user" if turn["from"] == "human" else "assistant", "content": turn["value"]})
    return messages


def _independent_hit_rate(messages, **settings) -> float:
    """Rendered requests compared message by message from the start; OpenAI's rule applied by hand.
    A request is each user message and each tool result the next message (an assistant's) answers."""
    counter = contextfit.token_counter("gpt-4o")
    previous, cached, sent = None, 0, 0
    for position, message in enumerate(messages):
        answered = message["role"] == "tool" and (position + 1 == len(messages)
                                                  or messages[position + 1]["role"] == "assistant")
        if message["role"] != "user" and not answered:
            continue
        plan = plan_prompt(messages[: position + 1], model="gpt-4o", **settings)
        request = plan.provider_messages
        same = 0
        while previous is not None and same < min(len(previous), len(request)) and previous[same] == request[same]:
            same += 1
        shared = counter(request[:same]) - counter.base_tokens if same else 0
        cached += 0 if shared < 1024 else 1024 + (shared - 1024) // 128 * 128
        sent += plan.prompt_tokens
        previous = request
    return cached / sent


def _long_tool_chat() -> list[dict]:
    """The first 80 Glaive function-calling conversations of the shared sample, one after the
    other: 210 real turns, 59 of them with a tool call and its result."""
    records = json.loads(shared_path("llama-factory", "glaive_toolcall_en_demo.json").read_text())
    messages = [{"role": "system", "content": "You are a helpful assistant with tools."}]
    for record in records[:80]:
        messages += [m for m in contextfit.load_conversation(json.dumps(record)).messages if m["role"] != "system"]
    return messages


@pytest.mark.parametrize("chat, limit", [(_long_real_chat, 3500), (_long_tool_chat, 2500)], ids=["sharegpt", "glaive-tools"])
@pytest.mark.parametrize("strategy", ["truncate", "summarize", "clear-tool-results"])
def test_stable_prefix_keeps_more_of_the_prompt_cached(strategy, chat, limit):
    chat = chat()
    limits = {"context_limit": limit, "response_reserve": 500, "context_strategy": strategy}
    default = _independent_hit_rate(chat, **limits)
    stable = _independent_hit_rate(chat, **limits, stable_prefix=True)
    assert stable > default
    result = replay(chat, model="gpt-4o", context_limit=limit, response_reserve=500,
                    strategies=[strategy, {"strategy": strategy, "options": {"stable_prefix": True}}])
    assert result.totals[f"{strategy}+stable_prefix"].cache_hit_rate > result.totals[strategy].cache_hit_rate
    # and the replay's own rates are the ones worked out the slow way
    assert (result.totals[strategy].cache_hit_rate, result.totals[f"{strategy}+stable_prefix"].cache_hit_rate) == (
        pytest.approx(default, rel=1e-12), pytest.approx(stable, rel=1e-12))


def _first_sent_history(plan) -> str:
    return next(block.id for block in plan.blocks[1:] if block.included)


def test_stable_prefix_cuts_down_to_the_low_water_mark_and_holds():
    chat = _long_real_chat()
    plans = [plan_prompt(chat[: p + 1], model="gpt-4o", context_limit=3500, response_reserve=500, stable_prefix=True)
             for p, m in enumerate(chat) if m["role"] == "user"]
    assert all(plan.prompt_tokens <= plan.budget for plan in plans)
    cut = [_first_sent_history(plan) for plan in plans]  # the oldest history block sent is where the cut stands
    moves = sum(a != b for a, b in zip(cut, cut[1:]))
    default = [_first_sent_history(plan_prompt(chat[: p + 1], model="gpt-4o", context_limit=3500, response_reserve=500))
               for p, m in enumerate(chat) if m["role"] == "user"]
    assert moves < sum(a != b for a, b in zip(default, default[1:]))


def test_fast_path_matches_planning_each_prefix():
    chat = fact_chat()
    result = replay(chat, model="gpt-4o", context_limit=400, response_reserve=100, strategies=["summarize"])
    for turn in result.turns["summarize"]:
        plan = plan_prompt(chat[: turn.message_index + 1], model="gpt-4o", context_limit=400, response_reserve=100,
                           context_strategy="summarize")
        assert plan.prompt_tokens == turn.prompt_tokens


def test_a_replay_says_why_no_turn_reads_from_the_cache():
    small = replay(fact_chat()[:6], model="gpt-4o", context_limit=600, response_reserve=100, strategies=["truncate"])
    assert small.totals["truncate"].cache_hit_rate == 0
    note = next(note for note in small.notes if "no turn reads from the cache" in note)
    largest = max(row.prompt_tokens for row in small.turns["truncate"])
    assert note == (f"No request reaches the 1,024 tokens a prompt needs before OpenAI caches it (the largest is "
                    f"{largest:,}): no turn reads from the cache.")
    haiku = replay(fact_chat()[:6], model="claude-3-5-haiku", context_limit=1800, response_reserve=100,
                   strategies=["truncate"])
    assert any("2,048 tokens a prompt needs before Anthropic" in note for note in haiku.notes)
    # a prompt that reaches the minimum: no such note (whether or not a turn then hits)
    large = replay(SMALL_CHAT, model="gpt-4o", strategies=["truncate"])
    assert max(row.prompt_tokens for row in large.turns["truncate"]) >= 1024
    assert not [note for note in large.notes if "reads from the cache" in note]


def test_each_anthropic_model_caches_from_its_own_documented_minimum():
    from contextfit.replays import prompt_cache as pc

    models = ("claude-sonnet-4-5", "claude-sonnet-4-6", "claude-3-5-haiku", "claude-haiku-4-5", "claude-opus-4-5",
              "claude-opus-4-6")
    assert [pc.anthropic_minimum(m, get_model(m).cache_minimum) for m in models] == [
        1024, 1024, 2048, 4096, 4096, 4096]  # the catalog's cache_minimum, as Anthropic lists them
    # a prompt between 2,048 and 4,096 tokens: Haiku 3.5 reads its previous request from the cache,
    # Haiku 4.5 caches nothing (before, every Haiku was held to 2,048)
    chat = [{"role": "system", "content": "You are a support agent. " + "Policy text. " * 900}]
    for k in range(3):
        chat += [{"role": "user", "content": f"Question {k}?"}, {"role": "assistant", "content": f"Answer {k}."}]
    reads = {}
    for model in ("claude-3-5-haiku", "claude-haiku-4-5"):
        result = replay(chat, model=model, context_limit=200_000, response_reserve=1000, strategies=["truncate"])
        prompts = [row.prompt_tokens for row in result.turns["truncate"]]
        assert all(2048 <= tokens < 4096 for tokens in prompts), prompts
        reads[model] = sum(row.cache_read for row in result.turns["truncate"])
    assert reads["claude-3-5-haiku"] > 0 and reads["claude-haiku-4-5"] == 0


def test_the_notes_name_the_provider_as_it_names_itself():
    # a page showed "google prompt caching is modelled with OpenAI's automatic prefix rules."
    result = replay(fact_chat()[:6], model="mistral-large", context_limit=1800, response_reserve=100,
                    strategies=["truncate"])
    assert "Mistral prompt caching is modelled with OpenAI's automatic prefix rules." in result.notes
    # Gemini's implicit caching is modelled with its own minimum (2,048 tokens for Gemini 2.5)
    gemini = replay(fact_chat()[:6], model="gemini-2.5-flash", context_limit=1800, response_reserve=100,
                    strategies=["truncate"])
    assert not any("modelled with OpenAI's" in note for note in gemini.notes)
    assert any("the 2,048 tokens a prompt needs before Google caches it" in note for note in gemini.notes)
