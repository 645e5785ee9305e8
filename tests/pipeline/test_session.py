"""FitSession: an append-aware chat answers exactly what a fresh fit or plan answers."""

from __future__ import annotations

import copy

import pytest
from support.conversations import WORDS, conversations, word_count_counter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.reasoning import chats_with_reasoning
from support.sessions import fit_or_refusal, outcome

import contextfit
from contextfit.pipeline import session as session_module
from contextfit.pipeline.session import FitSession
from contextfit.pipeline.settings import PlanSettings


STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results"]
SETTINGS = settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow])


def _fresh_counter():
    return lambda ms: word_count_counter(ms)  # a new object: a cache of its own


@st.composite
def changes(draw):
    """A chat, then steps: append a turn, edit one message, regenerate the last one."""
    messages = draw(conversations(max_turns=16))
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        step = draw(st.sampled_from(["append", "append", "append", "edit", "last"]))
        words = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30)))
        message = {"role": draw(st.sampled_from(["user", "assistant"])), "content": words}
        if draw(st.integers(0, 5)) == 0:
            message["meta"] = {"pinned": True}
        steps.append((step, draw(st.integers(0, 10_000)), message))
    return messages, steps


def _apply(session: FitSession, mirror: list[dict], step: str, where: int, message: dict) -> None:
    if step == "append" or not mirror:
        session.append(message)
        mirror.append(copy.deepcopy(message))
        return
    index = len(mirror) - 1 if step == "last" else where % len(mirror)
    session.edit(index, message)
    mirror[index] = copy.deepcopy(message)


@SETTINGS
@given(changes(), st.floats(0.2, 1.1), st.sampled_from(STRATEGIES), st.booleans())
def test_a_session_fits_like_a_fresh_fit_after_appends_and_edits(chat, share, strategy, count_excluded):
    messages, steps = chat
    counter = _fresh_counter()
    session, mirror = FitSession(messages), copy.deepcopy(messages)
    for step, where, message in steps:
        budget = int(share * word_count_counter(mirror))
        fit_or_refusal(session.fit, counter, budget, strategy, count_excluded=count_excluded)  # warm the session
        _apply(session, mirror, step, where, message)
        budget = int(share * word_count_counter(mirror))
        warm = fit_or_refusal(session.fit, counter, budget, strategy, count_excluded=count_excluded)
        cold = fit_or_refusal(contextfit.shift_context, copy.deepcopy(mirror), _fresh_counter(), budget, strategy,
                    count_excluded=count_excluded)
        assert session.messages == mirror
        assert outcome(warm, count_excluded) == outcome(cold, count_excluded)


@st.composite
def plan_settings(draw):
    """Settings with the parts that keep appends cheap (persona, memory,
    overrides) and those that do not (a character card, a lorebook)."""
    keywords = {"model": "gpt-4o", "context_limit": draw(st.integers(200, 3000)), "response_reserve": 100}
    if draw(st.booleans()):
        keywords["persona"] = "I am {{user}}, curious."
    if draw(st.booleans()):
        keywords["memory"] = ["alpha is a wolf.", {"content": "beta likes rivers.", "relevance": 0.4}]
    if draw(st.booleans()):
        keywords["overrides"] = {"m1": {"pinned": True}, "m3": {"manualExcluded": True}, "m6": {"relevance": 0.9}}
    if draw(st.integers(0, 3)) == 0:
        keywords["character"] = {"name": "Ava", "description": "A guide.", "post_history_instructions": "Stay brief."}
    if draw(st.integers(0, 3)) == 0:
        keywords["lorebook"] = {"entries": {"0": {"key": ["wolf"], "content": "Wolves howl.", "depth": 2}}}
    keywords["user_name"] = draw(st.sampled_from([None, "Ann"]))
    return keywords


def _plan_outcome(plan):
    if isinstance(plan, contextfit.ContextfitError):
        return ("error", plan.code)
    return plan.to_dict()


@SETTINGS
@given(changes(), plan_settings(), st.lists(st.sampled_from(STRATEGIES), min_size=1, max_size=3))
def test_a_session_plans_like_plan_prompt_after_appends_and_edits(chat, keywords, strategies):
    messages, steps = chat
    messages = [m for m in messages if "meta" not in m or m["meta"].get("kind") is None]  # chat turns only
    session, mirror = FitSession(messages), copy.deepcopy(messages)
    for step, where, message in [("append", 0, {"role": "user", "content": "hi {{char}}"}), *steps]:
        _apply(session, mirror, step, where, message)
        warm = dict(session.plans(strategies=strategies, **keywords))
        cold = dict(dict(FitSession(copy.deepcopy(mirror)).plans(strategies=strategies, **keywords)))
        assert {name: _plan_outcome(plan) for name, plan in warm.items()} == \
            {name: _plan_outcome(plan) for name, plan in cold.items()}
        one = strategies[0]
        warm_one = _or_error(lambda: session.plan(one, **keywords))
        cold_one = _or_error(lambda: contextfit.plan_prompt(copy.deepcopy(mirror), context_strategy=one, **keywords))
        assert _plan_outcome(warm_one) == _plan_outcome(cold_one)


def _or_error(plan):
    try:
        return plan()
    except contextfit.ContextfitError as exc:
        return exc


def test_a_session_keeps_its_own_copies():
    caller = [{"role": "user", "content": "alpha beta"}]
    session = FitSession(caller)
    message = {"role": "assistant", "content": "gamma", "meta": {"pinned": False}}
    session.append(message)
    caller[0]["content"] = "changed in place " * 20
    message["meta"]["pinned"] = True
    counter = _fresh_counter()
    result = session.fit(counter, 1000)
    assert session.messages == [{"role": "user", "content": "alpha beta"},
                                {"role": "assistant", "content": "gamma", "meta": {"pinned": False}}]
    assert [d.reason for d in result.decisions] == ["within_budget", "within_budget"]
    assert result.tokens == word_count_counter(session.messages)


def test_an_edit_is_seen_by_the_next_fit():
    counter = _fresh_counter()
    session = FitSession([{"role": "system", "content": "s"}, {"role": "user", "content": "a b c"},
                          {"role": "user", "content": "d"}])
    session.fit(counter, 100)
    session.edit(1, {"role": "user", "content": "a b c " * 50, "meta": {"pinned": True}})
    result = session.fit(counter, 1000)
    assert result.decisions[1].reason == "pinned"
    assert result.decisions[1].tokens == word_count_counter([session[1]]) - 3
    session.edit(-1, {"role": "user", "content": "regenerated"})
    assert session[2]["content"] == "regenerated" and session.version == 3


def test_a_plain_fit_still_notices_an_edit_in_place_after_a_session_fitted_the_chat():
    counter = _fresh_counter()
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "a b c"}, {"role": "user", "content": "d"}]
    contextfit.shift_context(chat, counter, 100)
    FitSession(chat).fit(counter, 100)
    chat[1]["content"] = "a b c " * 50
    chat[1]["meta"] = {"pinned": True}
    result = contextfit.shift_context(chat, counter, 1000)
    assert result.decisions[1].reason == "pinned"
    assert result.decisions[1].tokens == word_count_counter([chat[1]]) - 3


@pytest.mark.parametrize("bad", [None, "text", 3, ["role", "user"]])
def test_a_bad_message_is_refused_and_changes_nothing(bad):
    session = FitSession([{"role": "user", "content": "a"}])
    with pytest.raises(contextfit.errors.InvalidMessages) as caught:
        session.extend([{"role": "assistant", "content": "b"}, bad])
    assert caught.value.code == "INVALID_MESSAGES" and "messages[2]" in str(caught.value.location)
    with pytest.raises(contextfit.errors.InvalidMessages):
        session.append(bad)
    with pytest.raises(contextfit.errors.InvalidMessages):
        session.edit(0, bad)
    assert session.messages == [{"role": "user", "content": "a"}] and session.version == 1


def test_lone_surrogates_are_refused_like_a_fit_refuses_them():
    session = FitSession()
    with pytest.raises(contextfit.errors.InvalidMessages):
        session.append({"role": "user", "content": "bad \ud800"})
    assert len(session) == 0


@pytest.mark.parametrize("index", [3, -4, True, "1", 1.0, None])
def test_edit_needs_the_index_of_a_message(index):
    session = FitSession([{"role": "user", "content": "a"}] * 3)
    with pytest.raises(contextfit.errors.InvalidMessages):
        session.edit(index, {"role": "user", "content": "b"})


def test_messages_must_be_a_list():
    for bad in ("text", {"role": "user"}, 5):
        with pytest.raises(contextfit.errors.InvalidMessages):
            FitSession(bad)


def test_a_session_holds_a_bounded_number_of_analyses_and_settings():
    session = FitSession([{"role": "user", "content": f"turn {i}"} for i in range(30)])
    counters = [_fresh_counter() for _ in range(session_module.COUNTERS_KEPT + 5)]
    for turn in range(12):
        session.append({"role": "assistant", "content": f"reply {turn}"})
        for counter in counters:
            session.fit(counter, 60)
        session.plan("truncate", model="gpt-4o", context_limit=400 + turn, response_reserve=50)
    held = session.held()
    assert held["analyses"] <= session_module.COUNTERS_KEPT * session_module.ANALYSES_PER_COUNTER + \
        session_module.PLANS_KEPT * session_module.ANALYSES_PER_COUNTER
    assert held["settings"] <= session_module.PLANS_KEPT and held["messages"] == 42


def test_an_append_refits_from_the_last_analysis_without_reading_the_others(monkeypatch):
    """The work a refit does: only the appended message is analysed and counted."""
    session = FitSession([{"role": "user", "content": f"turn {i} alpha"} for i in range(200)])
    counter = contextfit.token_counter("gpt-4o")
    session.fit(counter, 500, count_excluded=False)
    analysed = []
    original = contextfit.fitting.analysis.ChatAnalysis._add

    def spy(self, messages, start, counting, count_now, stop=None):
        analysed.append((len(messages) if stop is None else stop) - start)
        return original(self, messages, start, counting, count_now, stop)

    monkeypatch.setattr(contextfit.fitting.analysis.ChatAnalysis, "_add", spy)
    compared = []
    monkeypatch.setattr(contextfit.fitting.analysis, "_same_prefix", lambda *a: compared.append(1) or True)
    session.append({"role": "user", "content": "one more"})
    result = session.fit(counter, 500, count_excluded=False)
    assert analysed == [1] and compared == []
    assert result.kept[-1] == {"role": "user", "content": "one more"}


# -- the API's per-process sessions ------------------------------------------------


def test_chat_sessions_notice_another_process_write(database):
    from contextfit.replays.placement import with_fact_placement
    from contextfit.serving.generation import preview
    from contextfit.serving.sessions import chat_sessions
    from contextfit.serving.store import open_store

    here, there = open_store(database), open_store(database)  # two processes' stores on one database
    try:
        chat = here.create_chat(model="gpt-4o", settings={"contextLimit": 2000, "responseReserve": 100},
                                messages=[{"role": "user", "content": f"turn {i}"} for i in range(5)])
        first = preview(here, {}, chat_id=chat.id)
        session = chat_sessions().session_for(here.get_chat(chat.id))
        assert len(session) == 5 and len(first.blocks) == 5
        there.append_messages(chat.id, [{"role": "assistant", "content": "written by another process"}])
        second = preview(here, {}, chat_id=chat.id)
        assert [b.content for b in second.blocks][-1] == "written by another process"
        assert chat_sessions().session_for(here.get_chat(chat.id)) is session and len(session) == 6
        fresh = contextfit.plan_prompt(here.get_chat(chat.id).messages, model="gpt-4o", context_limit=2000,
                                       response_reserve=100)
        # the preview also says where the default must-survive facts land (``factPlacement``)
        assert second.to_dict() == with_fact_placement(fresh).to_dict()
    finally:
        here.close()
        there.close()


def test_chat_sessions_start_over_when_the_held_messages_are_not_the_chat():
    from contextfit.serving.sessions import ChatSessions
    from contextfit.serving.store import Chat

    sessions = ChatSessions()
    old = Chat("c1", None, None, {}, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "t0", "t1")
    held = sessions.session_for(old)
    assert sessions.session_for(old) is held  # same version: reused as it is
    other = Chat("c1", None, None, {}, [{"role": "user", "content": "a"}, {"role": "user", "content": "X"},
                                        {"role": "user", "content": "c"}], "t0", "t2")
    renewed = sessions.session_for(other)
    assert renewed is not held and renewed.messages == other.messages
    shorter = Chat("c1", None, None, {}, [{"role": "user", "content": "a"}], "t0", "t3")
    assert sessions.session_for(shorter).messages == shorter.messages


def test_chat_sessions_are_bounded():
    from contextfit.serving.sessions import ChatSessions
    from contextfit.serving.store import Chat

    sessions = ChatSessions(max_chats=3, max_messages=25)
    for number in range(6):
        sessions.session_for(Chat(f"c{number}", None, None, {}, [{"role": "user", "content": "x"}] * 5, "t", "t"))
    assert len(sessions) == 3 and sessions.held_messages() == 15
    sessions.session_for(Chat("big", None, None, {}, [{"role": "user", "content": "x"}] * 40, "t", "t"))
    assert len(sessions) == 1 and sessions.held_messages() == 40  # the newest stays whatever its size
    contextfit.caches.clear_caches(vocabularies=False)


def test_clear_caches_forgets_the_api_sessions():
    from contextfit.serving.sessions import chat_sessions
    from contextfit.serving.store import Chat

    chat_sessions().session_for(Chat("c9", None, None, {}, [{"role": "user", "content": "x"}], "t", "t"))
    assert len(chat_sessions()) >= 1
    contextfit.caches.clear_caches(vocabularies=False)
    assert len(chat_sessions()) == 0


# -- the dashboard's sessions --------------------------------------------------------


def test_the_dashboard_plans_through_one_session_per_conversation():
    from contextfit.dashboard import sessions as dashboard
    from contextfit.dashboard.sessions import session_for
    from contextfit.dashboard.setup import Setup

    conversation = contextfit.load_conversation(
        '{"messages": [' + ",".join(f'{{"role": "user", "content": "turn {i} alpha beta"}}' for i in range(40)) + "]}")
    setup = Setup.of(model="gpt-4o", context_limit=300, response_reserve=50)
    plans = dict(session_for(conversation).plans(setup.settings, strategies=setup.strategies))
    assert session_for(conversation) is session_for(conversation)
    fresh = dict(FitSession(conversation).plans(setup.settings))
    assert {k: v.to_dict() for k, v in plans.items()} == {k: v.to_dict() for k, v in fresh.items()}
    assert session_for(conversation).plan("manual", setup.settings).to_dict() == fresh["manual"].to_dict()
    sessions = [session_for(contextfit.load_conversation('{"messages": []}'))
                for _ in range(dashboard.SESSIONS_KEPT + 2)]
    assert len(dashboard._sessions) == dashboard.SESSIONS_KEPT and sessions[-1] in dashboard._sessions


# -- the analysis' short paths (issue 19: a lean cold fit's time) ----------------------


class _Dict(dict):
    """A dict subclass: analysed by the general path, the oracle of the short ones."""


def _as_general(value):
    if isinstance(value, dict):
        return _Dict({key: _as_general(item) for key, item in value.items()})
    if isinstance(value, list):
        return [_as_general(item) for item in value]
    return value


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(["", "x", "é", "ok"])
_CALL = st.fixed_dictionaries({"id": _TEXT, "type": st.just("function"),
                               "function": st.fixed_dictionaries({"name": _TEXT, "arguments": _TEXT})})
_SHAPES = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "tool"]), "content": _TEXT}),
    st.fixed_dictionaries({"role": st.sampled_from(["tool", "function", "user", "system"]), "content": _TEXT,
                           "tool_call_id": _TEXT}),
    st.fixed_dictionaries({"role": st.sampled_from(["assistant", "system", "é"]), "content": st.none(),
                           "tool_calls": st.lists(_CALL, max_size=3)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "tool_calls": st.lists(_CALL, min_size=1, max_size=2),
                           "name": _TEXT}),
)


@SETTINGS
@given(st.lists(_SHAPES, max_size=12), st.booleans())
def test_the_short_analysis_paths_agree_with_the_general_one(messages, count_now):
    from contextfit.fitting.analysis import ChatAnalysis
    from contextfit.fitting.counting import counting_for

    counting = counting_for(contextfit.token_counter("gpt-4o"))
    results = []
    for chat in (messages, _as_general(messages)):
        try:
            results.append(ChatAnalysis().extended(chat, counting, count_now))
        except contextfit.errors.InvalidMessages as exc:
            results.append((exc.code, exc.location))
    short, general = results
    if isinstance(general, tuple):
        assert short == general
        return
    for slot in set(ChatAnalysis.__slots__) - {"nbytes"}:  # a memory estimate, which sizes a dict subclass apart
        assert getattr(short, slot) == getattr(general, slot), slot


def test_the_api_plans_exactly_the_messages_it_read(monkeypatch):
    from contextfit.serving.sessions import ChatSessions
    from contextfit.serving.store import Chat

    sessions = ChatSessions()
    chat = Chat("c1", None, None, {}, [{"role": "user", "content": f"turn {i}"} for i in range(3)], "t0", "t1")
    settings = PlanSettings(model="gpt-4o")
    assert len(sessions.plan(chat, settings).blocks) == 3
    # another request of this process read the chat later and moved its session on meanwhile
    moved = FitSession([*chat.messages, {"role": "assistant", "content": "newer"}])
    monkeypatch.setattr(sessions, "session_for", lambda _chat: moved)
    plan = sessions.plan(chat, settings)
    assert plan.to_dict() == contextfit.plan_prompt(chat.messages, settings).to_dict() and len(plan.blocks) == 3


def test_an_orphan_result_whose_call_comes_later_stops_being_reported():
    """The orphan groups are listed once per analysis (every fit of a turn asks): a refit after
    the call arrives lists them anew, as a fresh fit does."""
    chat = [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "early result"},
            {"role": "user", "content": "b"}]
    session = FitSession(chat)
    counter = _fresh_counter()
    first = session.fit(counter, 1_000)
    assert [d["code"] for d in first.diagnostics] == ["ORPHAN_TOOL_RESULT"]
    assert session.fit(counter, 1_000).diagnostics == first.diagnostics  # the listed groups, again
    later = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
        {"role": "user", "content": "c"}]
    session.extend(later)
    refit = session.fit(counter, 1_000)
    fresh = contextfit.shift_context([*chat, *later], _fresh_counter(), 1_000)
    assert refit.diagnostics == fresh.diagnostics == []
    assert outcome(refit) == outcome(fresh)


@st.composite
def cards(draw):
    """A character card, with or without post-history instructions (the block a new message goes before)."""
    card = {"name": draw(st.sampled_from(["Ava", "Seraphina"])), "description": "A guide for {{user}}."}
    if draw(st.booleans()):
        card["post_history_instructions"] = "Stay in character as {{char}}; be brief."
    if draw(st.booleans()):
        card["system_prompt"] = "You are {{char}}."
    if draw(st.integers(0, 3)) == 0:
        card["mes_example"] = "<START>\n{{user}}: hi\n{{char}}: hello"
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": card}  # a V1 card has no post-history


@SETTINGS
@given(changes(), chats_with_reasoning(), cards(), st.integers(150, 3000),
       st.sampled_from(["gpt-4o", "claude-sonnet-4", "claude-opus-4-5", "o3"]), st.lists(st.integers(1, 3), min_size=1, max_size=12),
       st.booleans(), st.booleans())
def test_a_session_with_a_character_card_plans_like_plan_prompt(chat, thinking, card, limit, model, pieces, persona,
                                                                 reasoned):
    # A new message goes before the card's post-history instructions: the session moves that
    # block and keeps what it learnt of the blocks before it (it used to assemble and analyse
    # the whole chat again at every message). Chats with reasoning and tool results too: what
    # strategies carried over the chat is made again for the blocks before the tail.
    messages, steps = chat
    if reasoned:
        messages = thinking
    keywords = {"model": model, "context_limit": limit, "response_reserve": 100, "character": card}
    if persona:
        keywords["persona"] = "I am {{user}}, talking to {{char}}."
    session, mirror, done = FitSession(), [], 0

    def check() -> None:
        warm = {name: _plan_outcome(_or_error(lambda: session.plan(name, **keywords))) for name in STRATEGIES}
        cold = {name: _plan_outcome(_or_error(lambda: contextfit.plan_prompt(copy.deepcopy(mirror),
                                                                             context_strategy=name, **keywords)))
                for name in STRATEGIES}
        assert warm == cold
        stable = {**keywords, "stable_prefix": True}
        assert _plan_outcome(_or_error(lambda: session.plan("truncate", **stable))) == \
            _plan_outcome(_or_error(lambda: contextfit.plan_prompt(copy.deepcopy(mirror), **stable)))

    for piece in pieces + [len(messages)]:
        if done >= len(messages):
            break
        session.extend(messages[done: done + piece])
        mirror += copy.deepcopy(messages[done: done + piece])
        done += piece
        check()
    for step, where, message in steps:
        _apply(session, mirror, step, where, message)
        check()


def test_a_replay_with_a_character_card_assembles_the_chat_once(monkeypatch):
    prepared = []
    inner = session_module.prepare
    monkeypatch.setattr(session_module, "prepare", lambda *args: prepared.append(1) or inner(*args))
    chat = []
    for turn in range(25):
        chat += [{"role": "user", "content": f"Where is ORD-{turn}, {{{{char}}}}?"},
                 {"role": "assistant", "content": f"ORD-{turn} ships on day {turn}. " * 8}]
    chat.append({"role": "user", "content": "And ORD-3?"})
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Ava", "description": "A shop assistant.", "post_history_instructions": "Answer as {{char}}."}}
    result = contextfit.replay(chat, model="gpt-4o", context_limit=700, response_reserve=100, character=card)
    assert len(prepared) == 1
    for label, rows in result.turns.items():
        last = contextfit.plan_prompt(chat, model="gpt-4o", context_limit=700, response_reserve=100, character=card,
                                      context_strategy=label)
        assert rows[-1].prompt_tokens == last.prompt_tokens
        assert last.blocks[-1].id == "character:post_history_instructions"
    # a card with its own lorebook: entries come and go with the recent messages, so each turn is assembled
    prepared.clear()
    book = {"entries": [{"keys": ["ORD-3"], "content": "ORD-3 was delayed by a storm.", "enabled": True,
                         "insertion_order": 1}]}
    v2 = {**card, "data": {**card["data"], "character_book": book}}
    booked = contextfit.replay(chat[:9], model="gpt-4o", context_limit=700, response_reserve=100, character=v2)
    assert len(prepared) == 5
    last = contextfit.plan_prompt(chat[:9], model="gpt-4o", context_limit=700, response_reserve=100, character=v2)
    assert "lorebook" in [block.kind for block in last.blocks]
    assert booked.turns["truncate"][-1].prompt_tokens == last.prompt_tokens


def test_trimmed_facts_are_the_facts_of_the_first_messages():
    from contextfit.fitting.analysis import analysis_for
    from contextfit.fitting.counting import counting_for

    chat = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Look it up."},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
            {"role": "user", "content": "Thanks.", "meta": {"relevance": 0.5}},
            {"role": "system", "content": "Stay brief.", "meta": {"kind": "character"}}]
    counting = counting_for(word_count_counter)
    whole = analysis_for(chat, counting, True)
    trimmed = whole.trimmed(5)
    fresh = analysis_for(chat[:5], counting_for(lambda ms: word_count_counter(ms)), True)
    fields = ("n", "snapshots", "roles", "kinds", "ids", "base_reasons", "protected_base", "manual", "recall",
              "relevance", "tokens", "link_root", "group_of", "members", "group_links", "has_call", "open_calls",
              "waiting", "repeated", "counted_total")
    assert {f: getattr(trimmed, f) for f in fields} == {f: getattr(fresh, f) for f in fields}
    assert whole.trimmed(6) is whole and whole.trimmed(7) is None
    assert whole.trimmed(4) is None  # message 4 has a relevance of its own
    assert whole.trimmed(3) is None  # message 3 is a tool result: not a plain tail


def test_a_trimmed_walk_is_the_walk_of_the_first_messages():
    from contextfit.fitting.analysis import FitView, analysis_for
    from contextfit.fitting.counting import counting_for
    from contextfit.fitting.strategies.carried_walk import empty_walk, extend_walk, trimmed_walk

    chat = [{"role": "system", "content": "Be brief."}]
    for turn in range(8):
        chat += [{"role": "user", "content": f"question {turn} " + "word " * turn},
                 {"role": "assistant", "content": "answer " * (3 + turn)}]
    chat.append({"role": "user", "content": "last one"})
    chat.append({"role": "system", "content": "Stay brief.", "meta": {"kind": "character"}})  # the tail
    counting = counting_for(word_count_counter)
    whole = FitView(chat, analysis_for(chat, counting, True), counting)
    room = 40
    walk = extend_walk(whole, empty_walk(), room)
    k = len(chat) - 1
    prefix = FitView(chat[:k], analysis_for(chat[:k], counting, True), counting)
    fresh = extend_walk(prefix, empty_walk(), room)
    trimmed = trimmed_walk(walk, k)
    assert (trimmed.n, trimmed.roots, trimmed.cum, trimmed.cut, trimmed.reasons, trimmed.current) == \
        (fresh.n, fresh.roots, fresh.cum, fresh.cut, fresh.reasons, fresh.current)
    assert [id(m) for m in trimmed.kept] == [id(m) for m in fresh.kept] and trimmed.excluded == fresh.excluded
    # a tail that holds a unit of the walk is not trimmed
    assert trimmed_walk(extend_walk(whole, empty_walk(), room), k - 2) is None  # message 16 is a unit


@pytest.mark.parametrize("keep_thinking", [None, False])
def test_a_card_chat_that_keeps_earlier_thinking_refits_like_fresh_plans(keep_thinking):
    # Claude Opus 4.5 keeps every turn's thinking: a refit reads which messages carry it from
    # what it scanned before. After the tail moved, the scan must go on from the new message
    # that took the tail's place (a scan carried past it missed its thinking).
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Ava", "description": "A guide.", "post_history_instructions": "Be brief."}}
    chat = []
    for turn in range(10):
        chat += [{"role": "user", "content": f"Question {turn} " + "word " * 10},
                 {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm " * (20 + turn), "signature": "s"},
                                                   {"type": "text", "text": f"Answer {turn} " + "text " * 12}]}]
    chat.append({"role": "user", "content": "last"})
    for limit in (400, 700):
        keywords = {"model": "claude-opus-4-5", "context_limit": limit, "response_reserve": 100, "character": card,
                    "keep_thinking": keep_thinking}
        session = FitSession()
        for index, message in enumerate(chat):
            session.append(message)
            for strategy in ("truncate", "summarize", "clear-tool-results"):
                warm = _or_error(lambda: session.plan(strategy, **keywords))
                cold = _or_error(lambda: contextfit.plan_prompt(copy.deepcopy(chat[: index + 1]),
                                                                context_strategy=strategy, **keywords))
                assert _plan_outcome(warm) == _plan_outcome(cold), (limit, index, strategy)


def test_a_card_chat_with_tool_calls_clears_results_like_fresh_plans():
    # clear-tool-results names each cleared result after its call, from the names it scanned so
    # far: after the tail moved, the scan goes on from the new message in the tail's place.
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Ava", "description": "A guide.", "post_history_instructions": "Be brief."}}
    chat = []
    for turn in range(16):
        call = {"id": f"call_{turn}", "type": "function",
                "function": {"name": f"lookup_{turn % 3}", "arguments": f'{{"order": {turn}}}'}}
        chat += [{"role": "user", "content": f"Where is order {turn}?"},
                 {"role": "assistant", "content": None, "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": f"call_{turn}", "content": f"order {turn}: " + "in transit " * 40},
                 {"role": "assistant", "content": f"Order {turn} is in transit."}]
    chat.append({"role": "user", "content": "Thanks"})
    for limit in (700, 1200, 2000):
        keywords = {"model": "gpt-4o", "context_limit": limit, "response_reserve": 100, "character": card}
        session = FitSession()
        for index, message in enumerate(chat):
            session.append(message)
            warm = _or_error(lambda: session.plan("clear-tool-results", **keywords))
            cold = _or_error(lambda: contextfit.plan_prompt(copy.deepcopy(chat[: index + 1]),
                                                            context_strategy="clear-tool-results", **keywords))
            assert _plan_outcome(warm) == _plan_outcome(cold), (limit, index)
