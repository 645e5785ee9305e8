"""The four built-in strategies, by example."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.conversations import word_count_counter as count

import contextfit
from contextfit.fitting.relevance import EmbeddingRelevance, LexicalRelevance


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def assistant(text, **extra):
    return {"role": "assistant", "content": text, **extra}


def reasons(result):
    return [d.reason for d in result.decisions]


def fit(chat, budget, strategy="truncate", **options):
    return contextfit.shift_context(chat, count, budget, strategy=strategy, interceptors=(), **options)


# -- truncate -----------------------------------------------------------------


def test_truncate_drops_the_oldest_first_and_keeps_the_recent_run():
    chat = [{"role": "system", "content": "rules"}] + [user(f"message {i} " + "w " * 10) for i in range(6)]
    result = fit(chat, count(chat[:1] + chat[-3:]))
    assert reasons(result) == ["system", "over_budget", "over_budget", "over_budget", "within_budget", "within_budget", "current_input"]
    assert result.kept == [chat[0], *chat[-3:]]
    assert result.excluded == chat[1:4]
    assert result.truncated == []


def test_a_call_and_its_late_result_go_together():
    call = assistant(None, tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    chat = [user("old " * 30), call, user("meanwhile " * 5), assistant("chatting " * 5), {"role": "tool", "tool_call_id": "c1", "content": "result"}, user("now")]
    # Room for everything but the oldest message: the group (call + late result) is older than the chat in
    # between, so it goes before "meanwhile".
    result = fit(chat, count(chat) - count([chat[0]]) + 3 - 1)
    decisions = {d.index: d for d in result.decisions}
    assert decisions[1].included == decisions[4].included
    assert not decisions[0].included
    assert decisions[1].group == decisions[4].group == 1


def test_parallel_calls_form_one_group_with_all_their_results():
    call = assistant(None, tool_calls=[
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ])
    chat = [user("q"), call, {"role": "tool", "tool_call_id": "a", "content": "1"}, assistant("x"),
            {"role": "tool", "toolCallId": "b", "content": "2 " * 40}, user("next")]
    result = fit(chat, count([chat[-1]]) + 20)
    kept = [d.index for d in result.decisions if d.included]
    assert 1 not in kept and 2 not in kept and 4 not in kept


def test_anthropic_tool_use_and_results_link_by_id():
    chat = [
        user("family?"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "who", "input": {}},
                                          {"type": "tool_use", "id": "t2", "name": "who", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                                     {"type": "tool_result", "tool_use_id": "t2", "content": "b"}]},
    ]
    result = fit(chat, count(chat))
    # The last message is a user message, so it is the current input: its whole group is protected.
    assert reasons(result) == ["within_budget", "current_input", "current_input"]


def test_orphan_results_are_their_own_group_and_reported():
    chat = [user("a"), {"role": "tool", "tool_call_id": "gone", "content": "orphan"}, user("b")]
    result = fit(chat, count(chat))
    assert [d["code"] for d in result.diagnostics] == ["ORPHAN_TOOL_RESULT"]
    assert result.diagnostics[0]["indices"] == [1]


def test_protection_rules():
    chat = [
        {"role": "developer", "content": "dev rules"},
        {"role": "system", "content": "lore " * 30, "meta": {"kind": "lorebook"}},
        {"role": "system", "content": "card", "meta": {"kind": "character"}},
        {"role": "system", "content": "me", "meta": {"kind": "persona"}},
        {"role": "system", "content": "must", "meta": {"kind": "lorebook", "required": True}},
        user("pinned " * 20, pinned=True),
        user("pinned in meta " * 20, meta={"pinned": True}),
        assistant("drop me " * 20),
        user("current"),
    ]
    protected = count([m for i, m in enumerate(chat) if i not in (1, 7)])
    result = fit(chat, protected)
    assert reasons(result) == ["system", "over_budget", "character", "persona", "required", "pinned", "pinned", "over_budget", "current_input"]
    with pytest.raises(contextfit.TokenBudgetExceeded) as caught:
        fit(chat, protected - 1)
    assert caught.value.protected_tokens == protected


def test_a_pinned_call_protects_its_results():
    call = assistant(None, pinned=True, tool_calls=[{"id": "k", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    chat = [call, user("x " * 50), {"role": "tool", "callId": "k", "content": "r " * 10}, assistant("y")]
    result = fit(chat, count([chat[0], chat[2]]))
    assert reasons(result) == ["pinned", "over_budget", "pinned", "over_budget"]


# -- summarize ----------------------------------------------------------------

STORY = [
    {"role": "system", "content": "You are a helpful router support agent."},
    user("My router keeps dropping the wifi connection every evening. It started after the firmware update."),
    assistant("Sorry to hear that. Which router model do you have? The firmware version matters here."),
    user("It is an Archer AX55. The firmware version is 1.2.3 from last week."),
    assistant("Version 1.2.3 has a known bug with the 5 GHz band. Please disable band steering in the settings."),
    {"role": "assistant", "content": None, "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "lookup_ticket", "arguments": '{"model": "AX55"}'}}]},
    {"role": "tool", "tool_call_id": "t1", "content": "Ticket 881: AX55 firmware 1.2.3 drops 5 GHz clients nightly; fixed in 1.2.5."},
    assistant("A fix exists in firmware 1.2.5. You can download it from the support page."),
    user("Thanks. I updated and it seems fine now."),
    assistant("Great. Let me know if the drops come back."),
    user("It dropped again tonight. What now?"),
]


def test_summarize_turns_dropped_history_into_one_traceable_block_before_the_input():
    budget = count(STORY[:1] + STORY[-3:]) + 90
    result = fit(STORY, budget, "summarize", summary_tokens=90)
    assert result.tokens <= budget == result.budget
    assert len(result.truncated) == 1
    summary = result.truncated[0]
    assert summary["meta"]["kind"] == "summary"
    # Just before the current user input.
    assert result.kept[-1] is STORY[-1] and result.kept[-2] is summary
    # Every line is a verbatim sentence of the message it names.
    lines = summary["content"].splitlines()[1:]
    assert lines, "the summary has no sentence"
    sources = summary["meta"]["sources"]
    assert len(sources) == len(lines)
    for line, source in zip(lines, sources):
        speaker, sentence = line[2:].split(": ", 1)
        original = STORY[source["index"]]
        text = original["content"] or ""
        if original.get("tool_calls"):
            assert sentence.startswith("called lookup_ticket(")
        elif original["role"] == "tool":
            assert sentence.startswith("result: ") and sentence[len("result: "):] in text
        else:
            assert sentence in text
    # Kept in source order.
    assert [s["index"] for s in sources] == sorted(s["index"] for s in sources)
    # The summarized messages are excluded with that reason; the summary decision names them.
    summarized = [d.index for d in result.decisions if d.reason == "summarized"]
    assert summarized and all(STORY[i] in result.excluded for i in summarized)
    decision = next(d for d in result.decisions if d.index is None)
    assert decision.reason == "summary" and decision.included and list(decision.sources) == summarized


def test_summary_salience_prefers_what_the_span_is_about():
    budget = count(STORY[:1] + STORY[-3:]) + 60
    result = fit(STORY, budget, "summarize", summary_tokens=60)
    lines = result.truncated[0]["content"].splitlines()
    # the span is about the firmware: its two firmware sentences are picked, the small talk is not
    assert "- Tool: result: Ticket 881: AX55 firmware 1.2.3 drops 5 GHz clients nightly; fixed in 1.2.5." in lines
    assert "- Assistant: The firmware version matters here." in lines


_SAME_EVERYWHERE = r"""
import json, sys
import contextfit
titles = ["Inception", "Heat", "Alien", "Vertigo", "Psycho", "Jaws", "Rocky", "Fargo", "Memento", "Amadeus", "Gandhi",
          "Platoon"]
directors = ["Nolan", "Mann", "Scott", "Hitchcock", "Lumet", "Spielberg", "Avildsen", "Coen", "Forman", "Attenborough",
             "Stone", "Kubrick"]
chat = [{"role": "system", "content": "You answer questions about movies."}]
for i, (title, director) in enumerate(zip(titles * 3, directors[3:] + directors[:3] + directors * 2)):
    ident = 10000 + 7919 * i
    chat.append({"role": "user", "content": f"Can you tell me about the movie with ID {ident}?"})
    chat.append({"role": "assistant", "content": f'The movie with ID {ident} is "{title}", directed by {director}. '
                 f"It was released in {1950 + i} and rated {5 + i % 5}.{i % 10} out of 10."})
chat.append({"role": "user", "content": "Which of them should I watch tonight?"})
sent = []
for limit in range(300, 1400, 100):
    try:
        plan = contextfit.plan_prompt(chat, model="gpt-4o", context_strategy="summarize", context_limit=limit,
                                      response_reserve=100, summary_tokens=120)
    except contextfit.ContextfitError as exc:
        sent.append(exc.code)
        continue
    sent.append([m["content"] for m in plan.fit.kept])
replayed = contextfit.replay(chat, model="gpt-4o", context_limit=700, response_reserve=100, strategies=["summarize"])
sent.append([row.prompt_tokens for row in replayed.turns["summarize"]])
print(json.dumps(sent))
"""


def test_a_summary_is_the_same_in_every_process():
    # Lines alike but for their names and numbers score the same. Each line's weights were
    # summed in the order of a set of its words, which changes with each process's string
    # hashing: the sums differed in their last bits, and each process picked its own lines
    # (an API worker and the dashboard showed two summaries of one chat).
    import os
    import subprocess
    import sys

    from support.paths import REPO

    answers = set()
    for seed in ("0", "1", "2", "3"):
        done = subprocess.run([sys.executable, "-c", _SAME_EVERYWHERE], cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, timeout=300, check=True)
        answers.add(done.stdout)
    assert len(answers) == 1
    summaries = [sent for sent in json.loads(answers.pop())[:-1] if isinstance(sent, list)]
    assert any("Summary of" in text for sent in summaries for text in sent)  # the ties are in the summaries


def _saliences_one_by_one(line_words, sizes, lengths, tool_line, weight, query_words):
    """The candidates and saliences as the summary scored them a line at a time."""
    import math

    from contextfit.fitting.strategies.summarize import _QUERY_BONUS, MIN_SENTENCE_WORDS

    eligible, salience = [], []
    for position, size in enumerate(sizes):
        if not size or (size < MIN_SENTENCE_WORDS and not tool_line[position]):
            continue
        value = math.fsum(weight[word] for word in line_words[position]) / math.sqrt(lengths[position])
        value *= 1.0 + _QUERY_BONUS * len(query_words & line_words[position]) / size
        eligible.append(position)
        salience.append(value)
    return eligible, salience


@given(st.lists(st.tuples(st.lists(st.sampled_from("abcdefgh"), max_size=8), st.integers(0, 4), st.booleans()),
                max_size=30),
       st.lists(st.floats(0.01, 50, allow_nan=False), min_size=8, max_size=8), st.sets(st.sampled_from("abcdefgh")))
def test_the_mapped_saliences_are_those_of_a_line_at_a_time(rows, weights, query):
    # The scoring runs as C-level maps; it must pick the same lines with the same floats
    # (a summary must not change with how it is computed).
    from contextfit.fitting.strategies.summarize import _saliences

    line_words = [frozenset(words) for words, _, _ in rows]
    sizes = [len(words) for words in line_words]
    lengths = [size + extra for size, (_, extra, _) in zip(sizes, rows)]
    tool_line = [tool for _, _, tool in rows]
    weight = dict(zip("abcdefgh", weights))
    assert _saliences(line_words, sizes, lengths, tool_line, weight, frozenset(query)) == \
        _saliences_one_by_one(line_words, sizes, lengths, tool_line, weight, frozenset(query))


def test_summarize_without_room_falls_back_to_truncate():
    budget = count(STORY[:1] + STORY[-1:]) + 5
    result = fit(STORY, budget, "summarize")
    assert result.truncated == []
    assert "SUMMARY_SKIPPED" in [d["code"] for d in result.diagnostics]
    assert "summarized" not in reasons(result)


def test_summarize_does_nothing_when_everything_fits():
    result = fit(STORY, count(STORY), "summarize")
    assert result.kept == STORY and result.truncated == []


def test_summarize_reads_only_the_recent_dropped_history_when_told():
    long = [STORY[0]] + [user(f"Sentence number {i} talks about topic {i}. " * 3) for i in range(40)] + [user("now?")]
    result = fit(long, count([long[0], long[-1]]) + 80, "summarize", summary_scan_chars=600)
    codes = [d["code"] for d in result.diagnostics]
    assert "SUMMARY_SCAN_LIMITED" in codes
    assert "over_budget" in reasons(result) and "summarized" in reasons(result)


def test_an_edited_dropped_message_changes_the_summary():
    """The summary's per-message candidates are cached with the chat's analysis;
    an in-place edit of a summarized message must reach the summary."""
    chat = [dict(m) for m in STORY]
    budget = count(chat[:1] + chat[-3:]) + 90
    counter = lambda ms: count(ms)  # noqa: E731  (one cache for this test)
    first = contextfit.shift_context(chat, counter, budget, strategy="summarize", summary_tokens=90)
    index = next(s["index"] for s in first.truncated[0]["meta"]["sources"] if not chat[s["index"]].get("tool_calls"))
    chat[index]["content"] = "Zebras graze near the quiet river bend. Zebras sleep standing up."
    second = contextfit.shift_context(chat, counter, budget, strategy="summarize", summary_tokens=90)
    cold = contextfit.shift_context([dict(m) for m in chat], count, budget, strategy="summarize", summary_tokens=90)
    assert second.truncated == cold.truncated
    assert "Zebras" in second.truncated[0]["content"]


def test_a_long_lived_chat_keeps_the_summary_cache_small():
    from contextfit.fitting.counting import counting_for

    chat = [STORY[0]] + [user(f"Turn {i} mentions router {i % 7} and firmware {i % 5}. Then more words.") for i in range(400)]
    counter = lambda ms: count(ms)  # noqa: E731  (one cache for this test)
    budget = count(chat[:1]) + 400
    sizes = []
    for n in range(40, len(chat) + 1):
        result = contextfit.shift_context(chat[:n], counter, budget, strategy="summarize", summary_scan_chars=400)
        facts = max(counting_for(counter).state.prefixes, key=lambda f: f.n)
        sizes.append(len(facts.derived))
    assert max(sizes) < 4 * (64 + 40), "the cache grew with the chat"
    cold = contextfit.shift_context(list(chat), count, budget, strategy="summarize", summary_scan_chars=400)
    assert result.truncated == cold.truncated and result.kept == cold.kept


# -- vector-recall --------------------------------------------------------------

LORE = [
    {"role": "system", "content": "You are Seraphina, guardian of the forest."},
    {"role": "system", "content": "The Shadowfangs are wolves corrupted by dark magic.", "meta": {"kind": "lorebook", "id": "wolves"}},
    {"role": "system", "content": "Eldoria's lake turned bitter long ago.", "meta": {"kind": "lorebook", "id": "lake"}},
    {"role": "system", "content": "The user likes bread and tea in the morning.", "meta": {"kind": "memory", "id": "bread"}},
    user("I heard howling. Are the Shadowfangs near?"),
    assistant("The wolves prowl at the edge of the glade."),
    user("Will the Shadowfangs attack us tonight?"),
]


def test_vector_recall_drops_the_least_relevant_lore_first():
    result = fit(LORE, count(LORE) - 1, "vector-recall")
    assert reasons(result).count("low_relevance") == 1
    assert result.decisions[1].included, "the block about the Shadowfangs is the relevant one"
    scores = {s["index"]: s["relevance"] for s in next(d for d in result.diagnostics if d["code"] == "RELEVANCE")["scores"]}
    assert scores[1] > scores[2] and scores[1] > scores[3]
    budget = count(LORE) - count([LORE[2], LORE[3]]) + 3
    result = fit(LORE, budget, "vector-recall")
    assert reasons(result)[1:4] == ["within_budget", "low_relevance", "low_relevance"]
    # The history is untouched while lore could still go.
    assert all(d.included for d in result.decisions if d.index in (4, 5, 6))


def test_meta_relevance_overrides_the_computed_score():
    chat = [dict(m) for m in LORE]
    chat[1] = {**chat[1], "meta": {"kind": "lorebook", "relevance": 0.0}}
    chat[3] = {**chat[3], "meta": {"kind": "memory", "relevance": 0.9}}
    chat[2] = {**chat[2], "meta": {"kind": "lorebook", "relevance": 0.5}}
    result = fit(chat, count(chat) - 1, "vector-recall")
    assert result.decisions[1].reason == "low_relevance"
    assert result.decisions[2].included and result.decisions[3].included


def test_vector_recall_then_truncates_history_oldest_first():
    result = fit(LORE, count([LORE[0], LORE[-1]]) + 3, "vector-recall")
    assert reasons(result) == ["system", "low_relevance", "low_relevance", "low_relevance", "over_budget", "over_budget", "current_input"]


def test_a_real_embedding_model_drops_in():
    def embed(texts):
        return [[1.0, 0.0] if "bread" in t else [0.0, 1.0] for t in texts]

    result = fit(LORE, count(LORE) - 1, "vector-recall", embed=embed, query="breakfast bread")
    assert result.decisions[3].included
    scorer = EmbeddingRelevance(embed, name="toy")
    result = fit(LORE, count(LORE) - 1, "vector-recall", scorer=scorer, query="bread")
    assert next(d for d in result.diagnostics if d["code"] == "RELEVANCE")["scorer"] == "toy"


def test_lexical_relevance_is_bounded():
    scores = LexicalRelevance().score("wolves wolves", ["wolves", "", "wolves and more wolves"])
    assert all(0.0 <= s <= 1.0 for s in scores) and scores[1] == 0.0


# -- manual ---------------------------------------------------------------------


def test_manual_excludes_marked_messages_with_their_partners_first():
    call = assistant(None, meta={"manualExcluded": True}, tool_calls=[{"id": "m", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    chat = [user("keep me"), call, {"role": "tool", "tool_call_id": "m", "content": "partner"}, assistant("fine"), user("go")]
    result = fit(chat, count(chat))
    assert all(d.included for d in result.decisions)
    result = fit(chat, count(chat), "manual")
    assert reasons(result) == ["within_budget", "manual", "manual", "within_budget", "current_input"]


def test_manual_marks_on_protected_messages_are_ignored_and_reported():
    chat = [{"role": "system", "content": "s", "meta": {"manualExcluded": True}}, user("x")]
    result = fit(chat, count(chat), "manual")
    assert reasons(result) == ["system", "current_input"]
    assert result.diagnostics[0]["code"] == "MANUAL_MARK_IGNORED"


def test_manual_continues_like_truncate_when_more_room_is_needed():
    chat = [user("old " * 20), user("marked", meta={"manualExcluded": True}), user("recent"), user("now")]
    result = fit(chat, count(chat[2:]))
    assert reasons(result)[0] == "over_budget"
    result = fit(chat, count(chat[2:]), "manual")
    assert reasons(result) == ["over_budget", "manual", "within_budget", "current_input"]
