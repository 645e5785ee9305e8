"""fact-ledger's entries carried from fit to fit (strategies/ledger_entries.py) are the plain
pass's over the whole history, exactly: after appends, after an edit, after a trimmed tail,
when an older line turns boilerplate and when the rarity weights turn a supersession over.
A session's fact-ledger fits and plans are a fresh fit's and plan's, byte for byte."""

from __future__ import annotations

import copy
import math
import threading

from support.conversations import word_count_counter
from support.depth import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.agent_runs import agent_run
from support.sessions import fit_or_refusal

import contextfit
from contextfit.fitting.analysis import ChatAnalysis, FitView
from contextfit.fitting.counting import counting_for
from contextfit.fitting.strategies import ledger_entries as carried
from contextfit.fitting.strategies.ledger_facts import (
    BOILERPLATE_MESSAGES, BOILERPLATE_PENALTY, LEDGER_THRESHOLD, SUPERSEDE_SIMILARITY, FactLine, fact_lines,
)
from contextfit.inputs import messages as msg
from contextfit.pipeline.session import FitSession

SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
COUNT = contextfit.token_counter("gpt-4o")

# A handful of words so that keys overlap in part (the rarity weights then decide), values of a few sorts,
# and line shapes that recur (boilerplate once in three messages).
SUBJECTS = ["billing", "search", "auth", "cache", "queue", "ledger"]
ATTRIBUTES = ["port", "timeout", "region", "owner", "limit"]
VALUES = st.one_of(st.integers(10, 9999).map(str), st.sampled_from(["eu-west-3", "us-east-1", "250 ms", "3 GB", "v2.3.1",
                                                                  "Priya Raman", "Omar Haddad", "2025-03-14"]))


@st.composite
def fact_text(draw) -> str:
    """A message of one to three sentences: facts with overlapping keys, recurring shapes, filler."""
    sentences = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 8))
        words = " ".join(draw(st.lists(st.sampled_from(SUBJECTS + ATTRIBUTES), min_size=1, max_size=4)))
        near = list(SUBJECTS + ATTRIBUTES[:3])  # nine words: one swapped, keys near the supersession mark
        near[draw(st.integers(0, 8))] = draw(st.sampled_from(ATTRIBUTES[3:] + ["mike", "oscar"]))
        value = draw(VALUES)
        sentences.append([
            f"Important: the {words} is {value}.",
            f"Change of plan: the {words} is now {value}.",
            f"The {draw(st.sampled_from(SUBJECTS))} {draw(st.sampled_from(ATTRIBUTES))} is {value}.",
            f"Retry {draw(st.integers(10, 99))} took {value}.",  # one shape: boilerplate in three messages
            f"We use {draw(st.sampled_from(['pnpm', 'hatch', 'Redis', 'uv']))} for the {words}.",
            "We walked through the logs and nothing stood out.",
            f'Set "{words}" to {value} please.',
            f"Important: the {' '.join(near)} is {value}.",
            f"Retry {draw(st.integers(10, 99))} took 250 ms.",  # boilerplate that supersedes nothing: dropped in place
        ][kind])
    return " ".join(sentences)


@st.composite
def fact_chats(draw, max_messages: int = 24) -> list[dict]:
    """A chat of fact-bearing history, with now and then a block that is not history."""
    chat: list[dict] = [{"role": "system", "content": "You are a helpful agent."}]
    for _ in range(draw(st.integers(1, max_messages))):
        shape = draw(st.integers(0, 9))
        if shape == 0:
            chat.append({"role": "system", "content": draw(fact_text()), "meta": {"kind": "memory"}})
        else:
            chat.append({"role": ["user", "assistant"][shape % 2], "content": draw(fact_text())})
    return chat


def _ledger_outcome(result, counted=True):
    """Everything a fit answers: the kept blocks (the ledger's text and meta), the tokens, each
    decision, the diagnostics whole; ``counted=False``: an excluded block's tokens may be known or not."""
    if isinstance(result, contextfit.TokenBudgetExceeded):
        return ("refused", result.protected_tokens, result.budget)
    return (result.kept, result.tokens, result.truncated, result.diagnostics,
            [(d.index, d.id, d.reason, d.tokens if counted or d.included else None) for d in result.decisions])


def _rarity(keys):
    counts: dict[str, int] = {}
    for key in keys:
        for word in key:
            counts[word] = counts.get(word, 0) + 1
    return {word: math.log(1 + len(keys) / count) for word, count in counts.items()}


def _same_key(a, b, weight):
    if not a or not b:
        return False
    shared = sum(weight.get(word, 1.0) for word in a & b)
    lighter = min(sum(weight.get(word, 1.0) for word in a), sum(weight.get(word, 1.0) for word in b))
    return lighter > 0 and shared >= SUPERSEDE_SIMILARITY * lighter


def plain_entries(view: FitView) -> list[tuple]:
    """The pass as fact_ledger.py wrote it before it was carried — every history line, every
    fit, weighed over all entries — with the rarity and key rules as they were: the oracle."""
    kinds = view.analysis.kinds
    history = [index for index in range(view.n) if kinds[index] == msg.HISTORY]
    per_message = [(index, fact_lines(msg.message_text(view.messages[index]), view.analysis.roles[index]))
                   for index in history]
    seen_in: dict[str, set[int]] = {}
    for index, lines in per_message:
        for line in lines:
            if line.signature:
                seen_in.setdefault(line.signature, set()).add(index)
    entries = []
    for index, lines in per_message:
        for line in lines:
            priority = line.base_priority
            if len(seen_in.get(line.signature, ())) >= BOILERPLATE_MESSAGES:
                priority += BOILERPLATE_PENALTY
            if priority >= LEDGER_THRESHOLD:
                entries.append({"index": index, "line": line, "priority": priority, "replaces": None,
                                "superseded": False})
    weight = _rarity([entry["line"].key for entry in entries])
    by_word: dict[str, list[dict]] = {}
    for entry in entries:
        earlier: dict[int, dict] = {}
        for word in entry["line"].key:
            for other in by_word.get(word, ()):
                earlier[id(other)] = other
        for other in earlier.values():
            if (not other["superseded"] and other["index"] < entry["index"]
                    and other["line"].main_sort == entry["line"].main_sort
                    and not set(other["line"].values) & set(entry["line"].values)
                    and _same_key(other["line"].key, entry["line"].key, weight)):
                other["superseded"] = True
                entry["replaces"] = other["index"] if entry["replaces"] is None else max(entry["replaces"], other["index"])
        for word in entry["line"].key:
            by_word.setdefault(word, []).append(entry)
    return [(e["index"], e["line"], e["priority"], e["superseded"], e["replaces"]) for e in entries]


def carried_entries(view: FitView) -> list[tuple]:
    """The carried entries as the oracle gives them; their ranked list is the ledger's old order
    of choice (a stable sort of the entries by priority, then the newest first)."""
    with carried.held_entries(view) as state:
        assert state.ranked == sorted(state.entries, key=lambda e: (-e.priority, -e.index))
        return [(e.index, e.line, e.priority, e.superseded, e.replaces) for e in state.entries]


def _view(messages: list[dict], analysis: ChatAnalysis, counting) -> FitView:
    return FitView(messages, analysis, counting)


@SETTINGS
@given(fact_chats(), st.lists(st.integers(0, 30), min_size=1, max_size=8), st.lists(st.booleans(), max_size=8),
       fact_text())
def test_carried_entries_are_the_plain_pass_after_appends_and_edits(chat, cuts, edits, other):
    """A chat's analysis extended chunk by chunk (the state taken over each time); now and then
    a sibling analysis with another last message (an edit: it takes the state over, and the
    main line, whose state is then gone, starts again): every state is the plain pass's."""
    counting = counting_for(lambda ms: word_count_counter(ms))
    analysis = ChatAnalysis()
    for cut, edit in zip(sorted(min(cut, len(chat)) for cut in cuts), [*edits, *[False] * len(cuts)]):
        messages = chat[:cut]
        analysis = analysis.extended(messages, counting, True) if cut > analysis.n else analysis
        view = _view(messages, analysis, counting)
        assert carried_entries(view) == plain_entries(view)
        assert carried_entries(view) == plain_entries(view)  # the same analysis again: the same state
        if edit:
            edited = [*messages, {"role": "user", "content": other}]
            sibling = analysis.extended(edited, counting, True)
            sibling_view = _view(edited, sibling, counting)
            assert carried_entries(sibling_view) == plain_entries(sibling_view)
    view = _view(chat, analysis.extended(chat, counting, True) if analysis.n < len(chat) else analysis, counting)
    assert carried_entries(view) == plain_entries(view)


def _entries_and_passes(monkeypatch):
    """Count the pass' steps (one per entry passed over)."""
    steps = []
    step = carried._supersede

    def counted(entry, *args):
        steps.append(entry.line.text)
        return step(entry, *args)

    monkeypatch.setattr(carried, "_supersede", counted)
    return steps


def _grown(chat: list[dict]) -> tuple[list[tuple], FitView]:
    """The chat appended message by message, its entries carried at each step but the last:
    the entries before the last message, and the view with it."""
    counting = counting_for(lambda ms: word_count_counter(ms))
    analysis, before = ChatAnalysis(), []
    for end in range(1, len(chat)):
        analysis = analysis.extended(chat[:end], counting, True)
        before = carried_entries(_view(chat[:end], analysis, counting))
    return before, _view(chat, analysis.extended(chat, counting, True), counting)


def test_an_appended_fact_is_the_only_one_passed_over(monkeypatch):
    chat = [{"role": "system", "content": "Be brief."}]
    chat += [{"role": "user", "content": f"Important: the {s} port is {5000 + i}."} for i, s in enumerate(SUBJECTS)]
    chat.append({"role": "user", "content": "Change of plan: the billing port is now 6001."})
    _, last = _grown(chat)
    steps = _entries_and_passes(monkeypatch)
    found = carried_entries(last)
    assert steps == ["Change of plan: the billing port is now 6001."]
    assert found == plain_entries(last)
    assert found[0][3] and found[-1][4] == 1  # the first port superseded, by the new line


def test_a_line_that_turns_boilerplate_is_marked_down_and_dropped_in_place(monkeypatch):
    """The third message with a shape marks the two before down (below the threshold: gone);
    they superseded nothing, so the pass is not run again."""
    chat = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Important: the billing port is 5433."}]
    chat += [{"role": "assistant", "content": f"Retry {n} took 250 ms."} for n in (11, 12, 13)]  # "250 ms" in each
    before, last = _grown(chat)
    assert [entry[1].text for entry in before] == ["Important: the billing port is 5433.", "Retry 11 took 250 ms.",
                                                     "Retry 12 took 250 ms."]
    steps = _entries_and_passes(monkeypatch)
    after = carried_entries(last)
    assert after == plain_entries(last)
    assert [entry[1].text for entry in after] == ["Important: the billing port is 5433."]
    assert steps == []  # the new line is boilerplate too: nothing to pass over


def test_a_dropped_line_that_superseded_runs_the_pass_again(monkeypatch):
    """m2 supersedes m1's port and m3 supersedes m2; m4 makes their shape boilerplate, and they go:
    m1's port is current again, which only a pass over every entry finds."""
    chat = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Important: the billing port is 5433."}]
    chat += [{"role": "user", "content": f"The billing port is {port}."} for port in (6001, 6002, 6003)]
    before, last = _grown(chat)
    assert [(index, superseded, replaces) for index, _, _, superseded, replaces in before] == \
        [(1, True, None), (2, True, 1), (3, False, 2)]
    steps = _entries_and_passes(monkeypatch)
    after = carried_entries(last)
    assert after == plain_entries(last)
    assert [(index, superseded, replaces) for index, _, _, superseded, replaces in after] == [(1, False, None)]
    assert steps == ["Important: the billing port is 5433."]


def test_a_supersession_the_weights_turn_over_runs_the_pass_again(monkeypatch):
    """m2's key shares all but a word or two with m1's: too little while "golf" is as common as the
    others; a fourth line with "golf" makes it lighter, and m2 now supersedes m1 (found by search)."""
    chat = [{"role": "system", "content": "Be brief."}] + [{"role": "user", "content": f"Important: the {key} is {value}."}
                                                           for key, value in [
        ("alpha bravo charlie delta lima foxtrot golf hotel india juliet", 8172),
        ("alpha bravo charlie delta echo foxtrot lima hotel india lima juliet", 7143),
        ("alpha bravo charlie delta echo mike golf hotel india lima", 3512),
        ("golf", 7642)]]
    before, last = _grown(chat)
    assert [(index, superseded, replaces) for index, _, _, superseded, replaces in before] == \
        [(1, False, None), (2, False, None), (3, False, None)]
    steps = _entries_and_passes(monkeypatch)
    after = carried_entries(last)
    assert after == plain_entries(last)
    assert [(index, superseded, replaces) for index, _, _, superseded, replaces in after] == \
        [(1, True, None), (2, False, 1), (3, True, None), (4, False, 3)]
    assert len(steps) == 4  # an answer turned over: the pass ran again over every entry


def test_a_trimmed_tail_keeps_the_state_when_it_stated_no_fact():
    state = carried.Entries()
    state.n, state.last_line = 10, 7
    trimmed = carried._trimmed(state, 8)
    assert trimmed is not None and trimmed.n == 8 and state.taken
    assert carried._trimmed(state, 8) is None  # taken over: its analysis starts again
    other = carried.Entries()
    other.n, other.last_line = 10, 9
    assert carried._trimmed(other, 8) is None and not other.taken  # the tail had a fact line


def test_a_state_being_read_is_not_taken_over_half_way():
    """A fit holds its state's lock while it reads the entries: another thread's fit of a longer
    chat from the same analysis waits, then carries on from it."""
    chat = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user", "content": f"Important: the {s} port is {5000 + i}."} for i, s in enumerate(SUBJECTS)]
    counting = counting_for(lambda ms: word_count_counter(ms))
    short = ChatAnalysis().extended(chat[:-1], counting, True)
    done = []
    with carried.held_entries(_view(chat[:-1], short, counting)) as state:
        entries = state.entries
        longer = short.extended(chat, counting, True)  # its derived cache holds the state being read
        reader = [(e.index, e.superseded) for e in entries]
        thread = threading.Thread(target=lambda: done.append(carried_entries(_view(chat, longer, counting))))
        thread.start()
        thread.join(0.2)
        assert not done and [(e.index, e.superseded) for e in entries] == reader
    thread.join(5)
    assert done == [plain_entries(_view(chat, longer, counting))]
    view = _view(chat[:-1], short, counting)
    assert carried_entries(view) == plain_entries(view)  # taken over: made again


def test_a_result_edited_by_its_caller_changes_no_later_fit():
    """Each result's ledger block is its own (the lines and sources are made once per entry)."""
    chat = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user", "content": f"Important: the {s} port is {5000 + i}. " + "Filler words here. " * 20}
        for i, s in enumerate(SUBJECTS)] + [{"role": "user", "content": "Which ports?"}]
    session = FitSession(chat)
    first = session.fit(COUNT, 200, "fact-ledger")
    ledger = next(block for block in first.kept if block.get("meta", {}).get("method") == "fact-ledger")
    want = copy.deepcopy(ledger)
    ledger["meta"]["sources"][0]["text"] = "edited"
    ledger["meta"]["sources"].append({"index": 0})
    again = session.fit(COUNT, 200, "fact-ledger")
    assert next(block for block in again.kept if block.get("meta", {}).get("method") == "fact-ledger") == want


@st.composite
def ledger_growth(draw):
    chat = draw(fact_chats(max_messages=30))
    cuts = sorted(draw(st.lists(st.integers(1, len(chat)), min_size=1, max_size=12)))
    edits = draw(st.lists(st.booleans(), min_size=len(cuts), max_size=len(cuts)))
    return chat, cuts, edits


@SETTINGS
@given(ledger_growth(), st.floats(0.1, 0.9), st.sampled_from([{}, {"ledger_tokens": 40}, {"ledger_tokens": 400}]))
def test_a_growing_session_fits_fact_ledger_like_a_fresh_fit(chat, share, options):
    """The replay's case (one budget, appends, the last message regenerated now and then), and
    half that budget at every step: every refit is a fresh ``shift_context``'s, ledger text
    included. (Every block counted: with ``count_excluded=False`` whether fact-ledger sees that
    everything fits depends on what earlier fits of the analysis counted.)"""
    messages, cuts, edits = chat
    counter = lambda ms: word_count_counter(ms)  # noqa: E731 - a cache of its own
    budget = int(share * word_count_counter(messages))
    session = FitSession(messages[:cuts[0]])
    for end, edit in zip([*cuts[1:], len(messages)], edits):
        for step in range(1 + edit):
            for at in (budget, budget // 2):
                warm = fit_or_refusal(session.fit, counter, at, "fact-ledger", **options)
                cold = fit_or_refusal(contextfit.shift_context, copy.deepcopy(session.messages), lambda ms: word_count_counter(ms),
                            at, "fact-ledger", **options)
                assert _ledger_outcome(warm) == _ledger_outcome(cold)
            if edit and not step:
                session.edit(-1, {"role": "assistant", "content": "Change of plan: the billing port is now 7100."})
        session.extend(messages[len(session):end])


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fact_chats(max_messages=16), st.integers(200, 1500), st.booleans())
def test_a_session_plans_fact_ledger_like_plan_prompt(chat, limit, card):
    """Plans through a session (a character card's post-history instructions trim the tail at
    each append), message by message, against a fresh ``plan_prompt``."""
    keywords = {"model": "gpt-4o", "context_limit": limit, "response_reserve": 50}
    if card:
        keywords["character"] = {"spec": "chara_card_v2", "spec_version": "2.0",  # a V1 card has no post-history
                                 "data": {"name": "Ava", "description": "A guide.", "post_history_instructions": "Be brief."}}
    session = FitSession(chat[:1])
    for message in chat[1:]:
        session.append(message)
        warm = _plan(lambda: session.plan("fact-ledger", **keywords))
        cold = _plan(lambda: contextfit.plan_prompt(copy.deepcopy(session.messages), context_strategy="fact-ledger",
                                                    **keywords))
        assert warm == cold


def _plan(plan):
    try:
        return plan().to_dict()
    except contextfit.ContextfitError as exc:
        return exc.code


def test_an_agent_run_refits_like_fresh_fits():
    """A long agent run (tool calls whose lines turn boilerplate as the run goes on), appended to
    a session in chunks: each fit is a fresh fit's."""
    chat = agent_run(300)
    session = FitSession([])
    for end in (40, 41, 150, 151, 152, 400, len(chat)):
        session.extend(chat[len(session):end])
        warm = session.fit(COUNT, 6000, "fact-ledger")
        cold = contextfit.shift_context(copy.deepcopy(chat[:end]), contextfit.token_counter("gpt-4o"), 6000,
                                        "fact-ledger")
        assert _ledger_outcome(warm) == _ledger_outcome(cold)
    assert any(d.reason == "summarized" for d in warm.decisions)  # the ledger was at work


@st.composite
def pass_entries(draw) -> list[carried.Entry]:
    """Entries in message order (a message may hold several), keys over a few words so that they
    overlap, hold one another or are empty; values and sorts shared now and then."""
    words = ["port", "billing", "search", "owner", "region", "limit", "cache", "queue", "alpha", "bravo", "delta", "golf"]
    entries, index = [], 0
    for order in range(draw(st.integers(1, 40))):
        index += draw(st.integers(0, 2))
        if draw(st.booleans()):
            key = frozenset(draw(st.lists(st.sampled_from(words[:6]), max_size=4)))
        else:  # most of the words, one or two swapped: keys near the supersession mark, the weights decide
            key = frozenset(words) - frozenset(draw(st.lists(st.sampled_from(words), min_size=1, max_size=3)))
        values = tuple(draw(st.lists(st.sampled_from(["5433", "6001", "eu-west-3", "pnpm", "uv"]), min_size=1, max_size=2)))
        sort = draw(st.sampled_from(["number", "identifier", "choice"]))
        line = FactLine(f"line {order}", values, (sort,) if sort != "choice" else (), None, key, 2.0, "")
        entries.append(carried.Entry(index, line, 2.0, order))
    return entries


@settings(max_examples=examples(150))
@given(pass_entries())
def test_the_word_index_supersedes_as_the_pairwise_rule(entries):
    """The pass over the index of entries not superseded yet (each entry meets only those that
    share a key word and its sort) makes the pairwise rule's decisions — every earlier entry,
    same_key weighed over all the entries — and asks same_key of exactly the pairs that need it:
    not those the words alone answer (one key holds the other; too many words of their own)."""
    keys = [entry.line.key for entry in entries]
    weight = _rarity(keys)
    bound = carried.unasked_bound(max(2 * len(entries), carried.UNASKED_FLOOR))
    expected, asked, unasked = [], [], []
    superseded = [False] * len(entries)
    for later, entry in enumerate(entries):
        replaces = None
        for earlier, other in enumerate(entries[:later]):
            if (superseded[earlier] or other.index >= entry.index or other.sort != entry.sort
                    or set(other.line.values) & set(entry.line.values)):
                continue
            answer = _same_key(other.line.key, entry.line.key, weight)
            shared = len(other.line.key & entry.line.key)
            if shared and not (other.line.key <= entry.line.key or entry.line.key <= other.line.key):
                ratio = (min(len(other.line.key), len(entry.line.key)) - shared) / shared
                if ratio > bound:  # too many words of their own: the same key under no weights, not asked
                    assert not answer
                    unasked.append(ratio)
                else:
                    asked.append((earlier, later, answer))
            if answer:
                superseded[earlier] = True
                replaces = other.index if replaces is None else max(replaces, other.index)
        expected.append(replaces)
    counts: dict[str, int] = {}
    for key in keys:
        for word in key:
            counts[word] = counts.get(word, 0) + 1
    by_word: dict = {}
    checks: list = []
    pass_weight = carried._Rarity(len(entries), counts)
    least = min(carried._supersede(entry, by_word, pass_weight, checks) for entry in entries)
    assert [(entry.superseded, entry.replaces) for entry in entries] == list(zip(superseded, expected))
    assert least == min(unasked, default=math.inf)
    place = {id(entry): at for at, entry in enumerate(entries)}
    assert sorted((place[id(a)], place[id(b)], answer) for a, b, answer in checks) == sorted(asked)
    assert all(not entry.superseded for passed in by_word.values() for entry in passed)  # they left the index


def test_a_pair_left_unasked_is_asked_again_once_the_entries_could_make_it_the_same(monkeypatch):
    """m1 and m2 share four key words and have three of their own each (ratio 0.75): past the
    bound of 64 entries, left unasked. With 107 entries weights could make them the same key
    (the bound passes 0.75): that append runs the pass again over every entry; the one before
    passes over its own entry only. Every state is the plain pass's."""
    assert carried.unasked_bound(106) < 0.75 < carried.unasked_bound(107)
    chat = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Important: the alpha bravo charlie delta echo foxtrot golf is 5433."},
            {"role": "user", "content": "Important: the alpha bravo charlie delta hotel india juliet is 6001."}]
    chat += [{"role": "user", "content": f"Important: the w{n}a w{n}b w{n}c w{n}d w{n}e is {1000 + n}."} for n in range(105)]
    counting = counting_for(lambda ms: word_count_counter(ms))
    analysis = ChatAnalysis()
    steps = _entries_and_passes(monkeypatch)
    passes = []
    for end in range(2, len(chat) + 1):
        analysis = analysis.extended(chat[:end], counting, True)
        view = _view(chat[:end], analysis, counting)
        steps.clear()
        found = carried_entries(view)
        passes.append((len(found), len(steps)))
        assert found == plain_entries(view)
    with carried.held_entries(view) as state:
        assert len(state.entries) == 107 and state.unasked > carried.unasked_bound(107)
    assert passes[-2] == (106, 1) and passes[-1] == (107, 107)
    assert [entry[3] for entry in found[:2]] == [False, False]  # the weights still keep them apart


def test_the_carried_state_and_each_message_s_lines_count_toward_the_analysis_bytes():
    """The analysis' byte bound (analysis.PREFIX_BYTES) sees what fact-ledger keeps with it: each
    message's fact lines and the carried entries and checks, also as the state grows by an append."""
    from contextfit.fitting.strategies.ledger_facts import lines_bytes

    chat = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user", "content": f"Important: the {s} port is {5000 + i}. Later the {s} port is {6000 + i}."}
        for i, s in enumerate(SUBJECTS)]
    counting = counting_for(lambda ms: word_count_counter(ms))
    analysis = ChatAnalysis().extended(chat, counting, True)
    before = analysis.derived_bytes
    view = _view(chat, analysis, counting)
    with carried.held_entries(view) as state:
        held = state.nbytes
        assert held == carried.ENTRY_BYTES * len(state.entries) + carried.CHECK_BYTES * len(state.checks) > 0
    lines = sum(lines_bytes(carried.lines_of(view, index)) for index in range(len(chat)))
    assert analysis.derived_bytes - before == lines + held
    chat.append({"role": "user", "content": "Important: the billing port is 7000."})
    longer = analysis.extended(chat, counting, True)
    grown = _view(chat, longer, counting)
    start = longer.derived_bytes
    with carried.held_entries(grown) as state:
        assert longer.derived_bytes - start == lines_bytes(carried.lines_of(grown, len(chat) - 1)) + state.nbytes - held
