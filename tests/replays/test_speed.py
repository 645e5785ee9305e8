"""What the replay's speed work carries or shortcuts gives exactly what it did
before: each shortcut is checked against the slow way (a fresh plan of every
prefix, or the formula written out word by word)."""

from __future__ import annotations

import copy
import math
from collections import Counter

from support.conversations import WORDS, word_count_counter
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.replays import VARIANTS, check_against_fresh_plans
from support.sessions import fit_or_refusal, growth, walk_outcome

import contextfit
from contextfit.pipeline.session import FitSession
from contextfit.replays import run as replay_module
from contextfit.fitting.relevance import LexicalRelevance

SETTINGS = settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow])


def _scores_word_by_word(query_bag: Counter, bags: list[Counter]) -> list[float]:
    """The lexical scorer as first written: every weight and sum one word at a time."""
    if not query_bag:
        return [0.0] * len(bags)
    corpus = [*bags, query_bag]
    document_frequency: Counter = Counter()
    for bag in corpus:
        document_frequency.update(bag.keys())
    total = len(corpus)
    idf = {word: math.log((1 + total) / (1 + df)) + 1.0 for word, df in document_frequency.items()}

    def weigh(bag: Counter) -> dict[str, float]:
        return {word: (1.0 + math.log(tf)) * idf[word] for word, tf in bag.items()}

    query_vector = weigh(query_bag)
    query_norm = math.sqrt(sum(v * v for v in query_vector.values()))
    scores = []
    for bag in bags:
        vector = weigh(bag)
        norm = math.sqrt(sum(v * v for v in vector.values()))
        if not norm:
            scores.append(0.0)
            continue
        dot = sum(weight * query_vector[word] for word, weight in vector.items() if word in query_vector)
        scores.append(min(1.0, max(0.0, dot / (norm * query_norm))))
    return scores


_TEXT = st.lists(st.sampled_from(WORDS + ["Wolves", "wolves", "x1", "rivers"]), max_size=30).map(" ".join)


@SETTINGS
@given(_TEXT, st.lists(_TEXT, max_size=6))
def test_lexical_relevance_gives_the_word_by_word_floats(query, documents):
    scorer = LexicalRelevance()
    from contextfit.fitting.relevance import word_counts as _bag

    assert scorer.score(query, documents) == _scores_word_by_word(_bag(query), [_bag(text) for text in documents])


def _twins_chat(turns: int = 6) -> list[dict]:
    """Messages equal in role and content but not in what else is sent (a name,
    a tool call id): a replay must not take one for the other."""
    chat = [{"role": "system", "content": "Be brief."}]
    for turn in range(turns):
        name = "ann" if turn % 2 else "bartholomew_of_the_northern_marches"
        chat += [
            {"role": "user", "content": "Same question again about ORD-77?", "name": name},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": f"call_{turn}" * (1 + turn % 3), "type": "function",
                             "function": {"name": "lookup", "arguments": '{"order": "ORD-77", "verbose": true}'}}]},
            {"role": "tool", "tool_call_id": f"call_{turn}" * (1 + turn % 3), "content": "result " * 40},
            {"role": "assistant", "content": "Same answer about ORD-77."},
        ]
    return chat


def test_blocks_equal_in_content_but_not_in_what_is_sent_are_told_apart():
    # a call whose arguments clear_inputs empties keeps its role, content and id: only the full comparison tells
    variants = [*VARIANTS, {"strategy": "clear-tool-results", "options": {"keep": 1, "clear_inputs": True}}]
    for limit in (420, 520, 640):
        check_against_fresh_plans(_twins_chat(10), "gpt-4o", limit, 100, variants)
    check_against_fresh_plans(_twins_chat(), "claude-sonnet-4", 420, 100, variants)


def test_a_block_sent_again_as_an_equal_copy_reuses_its_entry(monkeypatch):
    """clear-tool-results hands out a fresh copy of each cleared result every
    fit: the replay reads an equal copy from the entry it made before."""
    made: list = []
    real = replay_module.trace

    def counted(blocks, template):  # the replay renders each block it reads (gpt-4o: OpenAI messages)
        made.extend(blocks)
        return real(blocks, template)

    monkeypatch.setattr(replay_module, "trace", counted)
    chat = _twins_chat(12)
    replay_module.replay(chat, model="gpt-4o", context_limit=420, response_reserve=100,
                         strategies=[{"strategy": "clear-tool-results", "options": {"keep": 1}}])
    cleared = [block for block in made if (block.get("meta") or {}).get("compressed")]
    contents = [(block["tool_call_id"], block["content"]) for block in cleared]
    assert cleared and len(contents) == len(set(contents))  # each cleared result read once, however often sent


def test_strategies_sending_the_same_blocks_share_what_the_replay_reads_of_them(monkeypatch):
    sent, states = [], []
    real_sent, real_states = replay_module._Walker.sent, replay_module._Walker.fact_states
    monkeypatch.setattr(replay_module._Walker, "sent", lambda self, *a: sent.append(1) or real_sent(self, *a))
    monkeypatch.setattr(replay_module._Walker, "fact_states", lambda self, *a: states.append(1) or real_states(self, *a))
    chat = _twins_chat(12)
    variants = ["truncate", {"strategy": "truncate", "label": "again"}, "summarize"]
    result = replay_module.replay(chat, model="gpt-4o", context_limit=420, response_reserve=100, strategies=variants,
                                  facts=["lookup", {"message": 1}])
    turns = len(result.requests)
    # truncate twice sends the same blocks: one reading per turn for both (three without the sharing);
    # summarize its own once it summarizes, and truncate's while everything fits
    assert any(row.summarized for row in result.turns["summarize"])
    assert len(sent) == len(states) and turns < len(sent) <= 2 * turns
    for first, again in zip(result.turns["truncate"], result.turns["again"], strict=True):
        assert first.to_dict() | {"strategy": "again"} == again.to_dict()  # shared, and still each one's own
    alone = replay_module.replay(chat, model="gpt-4o", context_limit=420, response_reserve=100,
                                 strategies=["summarize"], facts=["lookup", {"message": 1}])
    assert [row.to_dict() for row in alone.turns["summarize"]] == [row.to_dict() for row in result.turns["summarize"]]


CLEAR_VARIANTS = [
    {}, {"keep": 0}, {"keep": 1, "clear_at_least": 7}, {"keep": 5}, {"stable_prefix": True},
    {"keep": 1, "clear_inputs": True}, {"keep": 1, "placeholder": "[gone: {tool}]"},
    {"keep": 0, "exclude_tools": ["lookup"]}, {"keep": 1, "keep_thinking": False},
]


@SETTINGS
@given(growth(), st.lists(st.floats(0.05, 1.0), min_size=1, max_size=3), st.booleans(),
       st.lists(st.sampled_from(CLEAR_VARIANTS), min_size=1, max_size=3))
def test_clear_tool_results_session_refits_like_fresh_fits(chat, shares, count_excluded, options_list):
    """clear-tool-results in a growing session, fitted at several budgets and with several
    option sets on each state of the chat (the cleared copies are cached in the chat's
    analysis), its last message regenerated now and then, fits as a fresh fit of a copy does."""
    messages, cuts, edits = chat
    counter = lambda ms: word_count_counter(ms)  # noqa: E731 - a counter of its own: a fresh cache
    session = FitSession(messages[:cuts[0]])
    for end, edit in zip([*cuts[1:], len(messages)], edits):
        for _ in range(1 + edit):
            for share in shares:
                budget = int(share * word_count_counter(messages))
                for options in options_list:
                    warm = fit_or_refusal(session.fit, counter, budget, "clear-tool-results", count_excluded=count_excluded,
                                **options)
                    cold = fit_or_refusal(contextfit.shift_context, copy.deepcopy(session.messages),
                                lambda ms: word_count_counter(ms), budget, "clear-tool-results",
                                count_excluded=count_excluded, **options)
                    assert walk_outcome(warm, count_excluded) == walk_outcome(cold, count_excluded)
            if edit and len(session):
                session.edit(-1, {"role": "tool", "tool_call_id": "call_1", "content": "regenerated " * (1 + len(session) % 7)}
                             if len(session) % 2 else {"role": "user", "content": "again " * (1 + len(session) % 5)})
        session.extend(messages[len(session):end])


def _call(ident: str, name: str = "lookup") -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": ident, "type": "function", "function": {"name": name, "arguments": "{}"}}]}


def _result(ident: str, words: int, word: str = "data") -> dict:
    return {"role": "tool", "tool_call_id": ident, "content": f"{word} " * words}


def _same_as_fresh(session: FitSession, budget: int, **options) -> None:
    counter = contextfit.token_counter("gpt-4o")
    warm = fit_or_refusal(session.fit, counter, budget, "clear-tool-results", **options)
    cold = fit_or_refusal(contextfit.shift_context, copy.deepcopy(session.messages), contextfit.token_counter("gpt-4o"), budget,
                "clear-tool-results", **options)
    assert walk_outcome(warm) == walk_outcome(cold)
    return warm


def test_an_edited_result_is_not_read_from_a_walk_carried_past_it():
    # the longer chat's analysis cleared the last result; after the edit the shorter chat's
    # analysis is extended again, and must not hold that result's cleared copy
    session = FitSession([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Look it up."},
                          _call("c1"), _result("c1", 300), {"role": "assistant", "content": "Found it."},
                          {"role": "user", "content": "And the other?"}, _call("c2")])
    _same_as_fresh(session, 200, keep=0)
    session.append(_result("c2", 300))
    fit = _same_as_fresh(session, 200, keep=0)
    assert sum(bool((block.get("meta") or {}).get("compressed")) for block in fit.kept) == 2
    session.edit(-1, _result("c2", 60, "other"))
    _same_as_fresh(session, 200, keep=0)
    _same_as_fresh(session, 120, keep=0, placeholder="[gone: {tool}, {tokens}]")


def test_a_result_named_before_its_call_is_not_carried_under_the_wrong_name():
    # a result whose call comes later is named "tool" until the call arrives: that step is not carried
    session = FitSession([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."},
                          _result("late", 300), {"role": "assistant", "content": "Done."},
                          {"role": "user", "content": "Again?"}])
    _same_as_fresh(session, 150, keep=0)
    session.extend([_call("late", "read_file"), _result("c3", 5), {"role": "user", "content": "Well?"}])
    fit = _same_as_fresh(session, 150, keep=0)
    assert any("read_file" in str(block.get("content")) for block in fit.kept)


def _summarized_chat(turns: int = 14) -> list[dict]:
    chat = [{"role": "system", "content": "Be brief."}]
    for turn in range(turns):
        chat.append({"role": "user", "content": f"Where is ORD-{1000 + turn}? The Zenith depot said day {turn}."})
        chat.append({"role": "assistant", "content": f"ORD-{1000 + turn} left the depot.\nIt ships on day {turn + 2}!"})
    return chat


def test_a_summary_the_fit_counted_is_not_counted_again(monkeypatch):
    """The replay takes an inserted block's tokens from the fit (its count with the
    request's counter), and the summary is counted from its lines' cached counts:
    no summary text is counted whole."""
    from contextfit.tokens.sent import SentCounter

    counted: list[str] = []
    real = SentCounter.count_message

    def spy(self, block):
        meta = block.get("meta") or {}
        if meta.get("kind") == "summary" and meta.get("sources"):  # a summary, not its header alone
            counted.append(block["content"])
        return real(self, block)

    monkeypatch.setattr(SentCounter, "count_message", spy)
    result = replay_module.replay(_summarized_chat(), model="gpt-4o", context_limit=420, response_reserve=100,
                                  strategies=["summarize"])
    assert sum(turn.summarized for turn in result.turns["summarize"]) > 0
    assert counted == []


def test_the_fresh_plan_check_catches_a_wrong_inserted_count(monkeypatch):
    # The replay's check against fresh plans fails when the fit's count of an inserted
    # block is off by one token: it is the cache prefix's own count of that block (a
    # cleared tool result, sent turn after turn; a summary changes every turn and stands
    # just before the input, never inside the prefix).
    from contextfit.fitting.results import Decisions, InsertedBlock

    # a limit at which cleared tool results stand inside the cached prefix (680 with OpenAI's exact call counts)
    check_against_fresh_plans(_twins_chat(10), "gpt-4o", 680, 100)
    real = Decisions.inserted

    def off_by_one(self):
        return [InsertedBlock(b.message, b.before, b.reason, b.tokens + 1, b.sources, b.origin) for b in real(self)]

    monkeypatch.setattr(Decisions, "inserted", off_by_one)
    try:
        check_against_fresh_plans(_twins_chat(10), "gpt-4o", 680, 100)
    except AssertionError:
        return
    raise AssertionError("a wrong inserted count went unnoticed")


_PIECES = ["ORD-12", "ORD-123", "Ada Lovelace", "Ada", "x1", "42", "420", "Zenith\nExpress", "Zenith", "parse_args()",
           "os.path", "\"blue box\"", "NASA", "then", "the", "box", ".", "\n", "Met", "é42"]


@SETTINGS
@given(st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map(" ".join), min_size=2, max_size=12))
def test_the_entities_said_before_are_those_the_whole_earlier_text_holds(texts):
    """The default rule's search (``_Walker._said_before``) starts at the first message
    holding the entity's first word and remembers what it found: the entities in force
    are those a search of the whole earlier text finds, entities at message starts too."""
    from contextfit.replays.facts import contains_word, entities

    chat = [{"role": "user" if k % 2 == 0 else "assistant", "content": text} for k, text in enumerate(texts)]
    result = replay_module.replay(chat, model="gpt-4o", strategies=["truncate"], facts="entities")
    for turn in result.turns["truncate"]:
        earlier = "\n".join(texts[:turn.message_index])
        expected = [e for e in entities(texts[turn.message_index]) if contains_word(earlier, e)]
        assert [fact.name for fact in turn.facts] == expected


_CODE_TEXT = st.text(alphabet="aZz09_.()-` \"\nABcdéΣ٣", max_size=40)


@settings(max_examples=examples(500), suppress_health_check=[HealthCheck.too_slow])
@given(_CODE_TEXT, st.sampled_from(["_CODE_HINT", "_DIGIT"]))
def test_the_prefilters_change_no_entity(text, prefilter):
    """entities() skips the code-symbol pattern on a text without any of its hints
    (survival._CODE_HINT), and the identifier and number patterns on a text without a
    digit (survival._DIGIT; "٣" is a digit to them): the entities are those of every
    pattern run on every text."""
    import re

    from contextfit.replays import facts as survival

    fast = survival.entities(text)
    real = getattr(survival, prefilter)
    setattr(survival, prefilter, re.compile(""))  # matches every text: the patterns always run
    try:
        assert fast == survival.entities(text)
    finally:
        setattr(survival, prefilter, real)


def test_the_digit_prefilter_reads_digits_as_the_patterns_do(monkeypatch):
    """An ASCII-only digit test would skip the number pattern on "٣٣" (Unicode digits)."""
    import re

    from contextfit.replays import facts as survival

    assert survival.entities("room ٣٣ now") == ["٣٣"]
    monkeypatch.setattr(survival, "_DIGIT", re.compile("[0-9]"))
    assert survival.entities("room ٣٣ now") == []


@settings(max_examples=examples(500), suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="ab_ .\n4é", max_size=30), st.text(alphabet="ab_ .4é", min_size=1, max_size=4),
       st.integers(0, 32), st.one_of(st.none(), st.integers(0, 32)))
@example("a.a.ab", "a.a", 0, None)  # the last occurrence is inside a word; the one it overlaps is not
@example("x 42 442", "42", 0, 7)
def test_contains_word_finds_what_a_scan_of_every_position_finds(text, entity, start, end):
    """survival.contains_word (overlapping occurrences too, each checked for its boundaries)
    answers as a check of every position in ``text[start:end]`` does."""
    from contextfit.replays.facts import _word_char, contains_word

    stop = len(text) if end is None else min(end, len(text))
    expected = False
    for position in range(start, stop - len(entity) + 1):
        if text.startswith(entity, position):
            before = text[position - 1] if position else " "
            after = text[position + len(entity)] if position + len(entity) < len(text) else " "
            if not (_word_char(before) and _word_char(entity[0])) and not (_word_char(after) and _word_char(entity[-1])):
                expected = True
    assert contains_word(text, entity, start, end) is expected


@SETTINGS
@given(st.lists(st.sampled_from([None, "over_budget", "summarized"]), max_size=40), st.data())
def test_insertions_stand_where_a_count_of_each_prefix_puts_them(reasons, data):
    """proposals.insertions (a running count from the end) places each block after the kept
    messages before its position and the blocks sorted before it, as counting each prefix does."""
    from contextfit.fitting.proposals import insertions
    from contextfit.fitting.results import InsertedBlock

    befores = data.draw(st.lists(st.integers(0, len(reasons)), max_size=6))
    blocks = [InsertedBlock({"role": "system", "content": str(k)}, before, "summary", 1, ()) for k, before in enumerate(befores)]
    ordered = sorted(blocks, key=lambda block: block.before)
    expected = [(reasons[: block.before].count(None) + k, block) for k, block in enumerate(ordered)]
    assert insertions(reasons, blocks) == expected


def _tool_chat(turns: int) -> list[dict]:
    chat = [{"role": "system", "content": "You look things up."}]
    for turn in range(turns):
        call = f"call_{turn}"
        chat += [
            {"role": "user", "content": f"Look up order {turn}, please. It matters for the shipment."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "lookup", "arguments": f'{{"order": {turn}}}'}}]},
            {"role": "tool", "tool_call_id": call, "content": f"Order {turn} left the depot. " * 12},
            {"role": "assistant", "content": f"Order {turn} is on its way. The carrier has it now."},
        ]
    return chat


def test_the_summary_cache_is_cleaned_now_and_then_when_other_strategies_fill_it(monkeypatch):
    """clear-tool-results keeps an entry per cleared result in the chat's cache. The summary's
    clean-up counted them in its bound, so once they passed it every summarize refit rebuilt the
    whole cache: now it runs after the cache has grown by a few scan windows, and the
    summary's own entries stay as few as before."""
    from contextfit.fitting.strategies import summarize

    cleanups, fits, own = 0, 0, []
    inner = summarize._forget_old

    def spied(view, scanned):
        nonlocal cleanups, fits
        before = view.analysis.derived
        inner(view, scanned)
        fits += 1
        cleanups += view.analysis.derived is not before
        own.append(sum(key[0] in ("summarize", "words") for key in view.analysis.derived))

    monkeypatch.setattr(summarize, "_forget_old", spied)
    chat = _tool_chat(400)
    result = contextfit.replay(chat, model="gpt-4o", context_limit=3_000, response_reserve=500,
                               strategies=["clear-tool-results", "summarize"], summary_scan_chars=300)
    assert fits > 100 and 0 < cleanups < fits / 10, (cleanups, fits)
    assert max(own) < 5 * (summarize._RECENT_KEPT + 10)
    last = result.requests[-1]  # the newest request: the chat up to its last user message
    fresh = contextfit.plan_prompt(chat[: last + 1], model="gpt-4o", context_limit=3_000, response_reserve=500,
                                   context_strategy="summarize", summary_scan_chars=300)
    assert result.turns["summarize"][-1].prompt_tokens == fresh.prompt_tokens
