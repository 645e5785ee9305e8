"""A plan assembled again at every turn (a lorebook's) reuses what the session made.

A lorebook's entries follow the recent messages and can change the top of the
prompt, so a session assembles such a plan again after each append. It keeps
the block it made of each message (``assembly.Filled``), what it learnt of
each block (``analysis.Known``) and the last plan's texts; each is used only
for the same dict, still equal to its copy. These tests hold the result to a
fresh ``plan_prompt`` and to a fresh analysis, including after edits in place.
"""

from __future__ import annotations

import copy
import random

from support.conversations import WORDS, conversations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

import contextfit
from contextfit.fitting.analysis import ChatAnalysis
from contextfit.fitting.counting import counting_for
from contextfit.pipeline.session import FitSession
from contextfit.inputs.lorebook import Lorebook, LorebookEntry, activate

SETTINGS = settings(max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow])
STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results"]
_SLOTS = set(ChatAnalysis.__slots__) - {"shared"}  # whether the group dicts are still the parent's: copy-on-write only


def _facts_state(facts: ChatAnalysis) -> dict:
    return {slot: getattr(facts, slot) for slot in _SLOTS}


@SETTINGS
@given(conversations(max_turns=14), st.lists(st.integers(0, 10_000), max_size=30), st.booleans(),
       st.integers(0, 3), st.randoms(use_true_random=False))
def test_known_blocks_give_the_facts_of_a_fresh_analysis(chat, picks, count_now, edits, rng):
    """Blocks met before, in another order and among new ones, some edited in place since."""
    counting = counting_for(contextfit.token_counter("gpt-4o"))
    known: dict = {}
    ChatAnalysis().extended(chat, counting, count_now, known)
    again = [chat[pick % len(chat)] for pick in picks] if chat else []
    again += [copy.deepcopy(message) for message in chat[: len(chat) // 2]]  # equal dicts, not the same
    rng.shuffle(again)
    for _ in range(edits if again else 0):  # an edit in place after the first analysis
        message = rng.choice(again)
        if rng.random() < 0.5:
            message["content"] = "edited " + rng.choice(WORDS)
        else:
            message["meta"] = {**(message.get("meta") or {}), "manualExcluded": True, "relevance": 0.25}
    for reuse in (count_now, not count_now):
        warm = ChatAnalysis().extended(again, counting, reuse, known)
        cold = ChatAnalysis().extended(again, counting, reuse)
        assert _facts_state(warm) == _facts_state(cold)


def test_a_lazy_entry_is_counted_when_a_counted_analysis_meets_it():
    counting = counting_for(contextfit.token_counter("gpt-4o"))
    chat = [{"role": "user", "content": "alpha beta"}, {"role": "assistant", "content": "gamma"}]
    known: dict = {}
    lazy = ChatAnalysis().extended(chat, counting, False, known)
    assert lazy.tokens == [None, None] and lazy.counted_total is None
    counted = ChatAnalysis().extended(chat, counting, True, known)
    assert counted.tokens == ChatAnalysis().extended(chat, counting, True).tokens
    assert counted.counted_total == sum(counted.tokens)
    assert all(entry[6] is not None for entry in known.values())


@st.composite
def lorebooks(draw):
    """World Info whose entries come and go with the recent messages: before and
    after the character, at a depth, constant, delayed; keys from the chats' words."""
    entries = {}
    for number in range(draw(st.integers(1, 5))):
        entry = {"key": [draw(st.sampled_from(WORDS))],
                 "content": f"Lore {number}: the {draw(st.sampled_from(WORDS))}.",
                 "position": draw(st.sampled_from([0, 1, 4])), "depth": draw(st.integers(0, 4)),
                 "order": draw(st.integers(0, 200))}
        if draw(st.integers(0, 4)) == 0:
            entry["constant"] = True
        if draw(st.integers(0, 4)) == 0:
            entry["delay"] = draw(st.integers(1, 6))
        entries[str(number)] = entry
    book = {"entries": entries}
    if draw(st.booleans()):
        book["scan_depth"] = draw(st.integers(0, 6))
    return book


@SETTINGS
@given(conversations(max_turns=18), lorebooks(), st.lists(st.integers(1, 3), min_size=1, max_size=10),
       st.integers(120, 2500), st.sampled_from(["gpt-4o", "claude-sonnet-4"]), st.booleans(), st.booleans())
def test_a_lorebook_session_plans_like_plan_prompt(chat, book, pieces, limit, model, card, overrides):
    keywords = {"model": model, "context_limit": limit, "response_reserve": 60, "lorebook": book}
    if card:
        keywords["character"] = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
            "name": "Ava", "description": "A guide for {{user}}.", "post_history_instructions": "Stay {{char}}."}}
    if overrides:
        keywords["overrides"] = {"m2": {"pinned": True}, "m4": {"manualExcluded": True}}
    session, mirror, done = FitSession(), [], 0
    for piece in [*pieces, len(chat)]:
        if done >= len(chat):
            break
        session.extend(chat[done: done + piece])
        mirror += copy.deepcopy(chat[done: done + piece])
        done += piece
        for name in STRATEGIES:
            warm = _outcome(lambda: session.plan(name, **keywords))
            cold = _outcome(lambda: contextfit.plan_prompt(copy.deepcopy(mirror), context_strategy=name, **keywords))
            assert warm == cold, name


def _outcome(plan):
    try:
        return plan().to_dict()
    except contextfit.ContextfitError as exc:
        return ("error", exc.code)


def _chat(turns: int) -> list[dict]:
    chat = []
    for turn in range(turns):
        chat += [{"role": "user", "content": f"Tell me of the {WORDS[turn % len(WORDS)]}, {{{{char}}}}."},
                 {"role": "assistant", "content": f"The {WORDS[turn % len(WORDS)]} is old. " * 4}]
    return chat


BOOK = {"entries": {"0": {"key": ["wolf"], "content": "Wolves guard the castle.", "position": 0},
                    "1": {"key": ["river"], "content": "The river runs north.", "position": 4, "depth": 1}}}
SETTINGS_KW = {"model": "gpt-4o", "context_limit": 900, "response_reserve": 100, "lorebook": BOOK}


def test_a_lorebook_plan_reuses_the_blocks_it_made(monkeypatch):
    """The work of a turn: each message is filled once, and the analysis reads only new blocks."""
    from contextfit.fitting import analysis
    from contextfit.pipeline import assembly

    session = FitSession(_chat(12))
    session.plan("truncate", **SETTINGS_KW)  # a first plan keeps no copies: most plans are appended to
    for more in ("And the river?", "And the castle?"):  # made again: it remembers what it made (the analysis,
        session.extend([{"role": "user", "content": more}])  # once a turn has read every block)
        session.plan("truncate", **SETTINGS_KW)
    filled, added = [], []
    inner_fill, inner_add = assembly.chat_blocks, analysis.ChatAnalysis._add
    monkeypatch.setattr(assembly, "chat_blocks", lambda messages, fill, positions=None, **rest: filled.extend(
        range(len(messages)) if positions is None else positions) or inner_fill(messages, fill, positions, **rest))
    monkeypatch.setattr(analysis.ChatAnalysis, "_add", lambda self, messages, start, *rest: added.append(
        messages[start]) or inner_add(self, messages, start, *rest))
    session.extend([{"role": "user", "content": "And the wolf?"}])
    plan = session.plan("truncate", **SETTINGS_KW)
    assert filled == [len(session) - 1]  # the new message only
    # the new message, and the entries activated this turn (made anew at each assembly)
    assert [block.get("meta", {}).get("kind") for block in added if block["content"] != "And the wolf?"] == \
        ["lorebook"] * (len(added) - 1)
    assert "Wolves guard the castle." in [block.content for block in plan.blocks]
    assert plan.to_dict() == contextfit.plan_prompt(session.messages, **SETTINGS_KW).to_dict()


def test_an_edit_in_place_is_seen_although_the_session_said_not_to():
    """Hostile: a handed-out block, a session's message and the lorebook's JSON edited in
    place between turns. What is sent follows the edit, as a fresh plan of the same data."""
    book = copy.deepcopy(BOOK)
    keywords = {**SETTINGS_KW, "lorebook": book}
    session = FitSession(_chat(6))
    first = session.plan("truncate", **keywords)
    first.fit.kept[-1]["content"] = "EDITED BLOCK"  # a kept block: the session's own
    session[0]["content"] = "Tell me of the wolf, please."  # a session message, edited in place
    book["entries"]["0"]["content"] = "Wolves are edited too."
    session.extend([{"role": "user", "content": "Go on."}])
    plan = session.plan("truncate", **keywords)
    fresh = contextfit.plan_prompt(copy.deepcopy(session.messages), **keywords)
    assert plan.to_dict() == fresh.to_dict()
    texts = [block.content for block in plan.blocks]
    assert "Wolves are edited too." in texts and "Tell me of the wolf, please." in texts


def test_reasoning_in_a_new_message_makes_the_provider_view_again():
    """The last plan's texts are taken only while no block carries reasoning."""
    keywords = {**SETTINGS_KW, "model": "o3"}
    session = FitSession(_chat(5))
    session.plan("truncate", **keywords)
    session.extend([{"role": "assistant", "content": "Hm.", "reasoning_content": "The wolf again."},
                    {"role": "user", "content": "And the river?"}])
    plan = session.plan("truncate", **keywords)
    assert plan.to_dict() == contextfit.plan_prompt(session.messages, **keywords).to_dict()
    assert any(block.kind == "reasoning" for block in plan.blocks)


def test_a_replay_with_a_lorebook_answers_what_fresh_plans_answer():
    chat = _chat(20)
    chat.append({"role": "user", "content": "What of the wolf and the river?"})
    result = contextfit.replay(chat, strategies=["truncate", "summarize", "clear-tool-results"], **SETTINGS_KW)
    requests = [index for index, message in enumerate(chat) if message["role"] == "user"]
    for label, rows in result.turns.items():
        for row, position in zip(rows, requests):
            fresh = contextfit.plan_prompt(chat[: position + 1], context_strategy=label, **SETTINGS_KW)
            assert row.prompt_tokens == fresh.prompt_tokens, (label, position)


def test_the_session_memos_stay_bounded(monkeypatch):
    from contextfit.pipeline import session as session_module

    monkeypatch.setattr(session_module, "KNOWN_SLACK", 4)  # a small slack, so 40 edits pass it many times
    session = FitSession(_chat(3))
    grown = []
    for turn in range(40):  # every turn, an edit: the old message's block and its entries are no longer sent
        session.edit(0, {"role": "user", "content": f"Tell me of the wolf, take {turn}." + " wolf" * turn})
        plan = session.plan("truncate", **SETTINGS_KW)
        assert plan.to_dict() == contextfit.plan_prompt(session.messages, **SETTINGS_KW).to_dict()
        grown.append(max(map(len, session._known.values())))
    blocks = len(plan.blocks) + 4  # the blocks of a plan (its entries too), and the slack
    assert len(session._filled.blocks) <= 2 * len(session) + 4
    assert max(grown) <= 2 * blocks + 4 and max(grown) < 40  # without pruning: one more entry per edit


def test_activation_reads_only_as_far_back_as_it_scans():
    read = []

    class Chat(list):
        def __getitem__(self, index):
            if isinstance(index, int):
                read.append(index)
            return list.__getitem__(self, index)

    book = Lorebook(entries=(LorebookEntry(uid=0, keys=("wolf",), content="Wolves."),))
    messages = Chat([{"role": "user", "content": "the wolf" if i == 0 else f"turn {i}"} for i in range(500)])
    assert activate(book, messages, scan_depth=2) == []
    assert sorted(read) == [498, 499]
    read.clear()
    found = activate(book, messages, scan_depth=500)
    assert [a.entry.uid for a in found] == [0] and len(read) == 500
    # a delay counts every chat message, read or not
    delayed = Lorebook(entries=(LorebookEntry(uid=1, keys=("turn",), content="Late.", delay=500),))
    assert [a.entry.uid for a in activate(delayed, messages, scan_depth=1)] == [1]
    assert activate(delayed, messages[:499], scan_depth=1) == []


def test_a_random_lorebook_replay_matches_fresh_plans():
    rng = random.Random(7)
    chat = []
    for _turn in range(30):
        chat += [{"role": "user", "content": " ".join(rng.choices(WORDS, k=6)) + "?"},
                 {"role": "assistant", "content": " ".join(rng.choices(WORDS, k=30)) + "."}]
    book = {"entries": {str(i): {"key": [word], "content": f"About the {word}.", "position": i % 2 * 4, "depth": i % 3}
                        for i, word in enumerate(WORDS[:6])}}
    keywords = {"model": "gpt-4o", "context_limit": 700, "response_reserve": 100, "lorebook": book}
    session = FitSession()
    for message in chat:
        session.append(message)
        if message["role"] == "user":
            for name in STRATEGIES:
                assert session.plan(name, **keywords).to_dict() == \
                    contextfit.plan_prompt(session.messages, context_strategy=name, **keywords).to_dict()


def test_a_plan_made_for_one_turn_walks_plainly():
    """A lorebook's plan is made again at the next turn: its fits walk from the newest block back
    to the cut, and keep no walk over every block for a later fit that will not come."""
    session = FitSession(_chat(12))
    for name in STRATEGIES:
        session.plan(name, **SETTINGS_KW)
    assert session.held()["walks"] == 0
    session.plan("truncate", model="gpt-4o", context_limit=900, response_reserve=100)  # no lorebook: carried
    assert session.held()["walks"] == 1


def test_an_appended_to_plan_keeps_no_memo_of_its_blocks():
    """Appends analyse each block once: a memo would only slow the first fit of a long chat."""
    session = FitSession(_chat(30))
    session.plan("truncate", model="gpt-4o", context_limit=900, response_reserve=100)
    session.fit(contextfit.token_counter("gpt-4o"), 800)
    session.append({"role": "user", "content": "More?"})
    session.plan("truncate", model="gpt-4o", context_limit=900, response_reserve=100)
    assert session._known == {} and session._filled.blocks == {}  # nor of the messages it assembled
    session.plan("truncate", **SETTINGS_KW)  # a lorebook's plan, made again each turn: from the second on,
    session.append({"role": "user", "content": "And the wolf?"})  # its blocks are remembered
    session.plan("truncate", **SETTINGS_KW)
    assert sum(map(len, session._known.values())) >= len(session) and session._filled.blocks
