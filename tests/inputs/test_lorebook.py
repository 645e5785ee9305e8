"""Lorebooks: parsing SillyTavern World Info and card books, and activation."""

from __future__ import annotations

import dataclasses
import gc
import json
import random
import sys
import weakref

import pytest
from support.paths import TEST_DATA, shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

from contextfit import plan_prompt
from contextfit.errors import InvalidConversation
from contextfit.inputs.lorebook import (
    Activation,
    Lorebook,
    LorebookEntry,
    Position,
    SelectiveLogic,
    activate,
    lorebook_blocks,
    parse_world_info,
)
from contextfit.inputs.lorebook import matching
from contextfit.inputs.lorebook.matching import RegexLimits, compile_regex_key, regex_limits
from contextfit.memo import TextMemo

SILLYTAVERN = ("sillytavern",)
CARD_FILES = (
    "default_Seraphina_staging.chara_v2.extracted.json",
    "default_Seraphina_staging.ccv3_v3.extracted.json",
)


def load_shared(name: str) -> object:
    return json.loads(shared_path(*SILLYTAVERN, name).read_text(encoding="utf-8"))


def load_own(name: str) -> Lorebook:
    return parse_world_info(json.loads((TEST_DATA / "lorebook" / name).read_text(encoding="utf-8")))


def card_book(name: str) -> Lorebook:
    card = load_shared(name)
    return parse_world_info(card["data"]["character_book"], location="$.data.character_book")


def uids(activations: list[Activation]) -> list[object]:
    return [a.entry.uid for a in activations]


@pytest.fixture
def eldoria() -> Lorebook:
    return parse_world_info(load_shared("Eldoria_staging.json"))


@pytest.fixture
def own() -> Lorebook:
    return load_own("keys_and_logic.json")


# --- parsing the real files ---


def test_parses_the_2023_world_info_without_position_or_disable():
    book = parse_world_info(load_shared("Toaru_worldinfo_2023.json"))
    assert book.source_format == "world_info"
    assert [e.uid for e in book.entries] == list(range(18))
    first = book.entries[0]
    assert first.keys == ("Tokiwadai Middle School", "Tokiwadai")
    assert (first.order, first.selective, first.constant) == (8, False, False)
    # Fields the 2023 format lacks take SillyTavern's defaults.
    assert (first.position, first.disabled, first.depth, first.probability) == (Position.BEFORE_CHAR, False, 4, 100)
    assert first.selective_logic is SelectiveLogic.AND_ANY


@pytest.mark.parametrize("name", ["Eldoria_release.json", "Eldoria_staging.json"])
def test_parses_both_eldoria_books(name):
    book = parse_world_info(load_shared(name))
    assert [e.uid for e in book.entries] == [0, 1, 2, 3]
    assert book.entries[0].keys == ("eldoria", "wood", "forest", "magical forest")
    assert all(e.order == 100 and e.position == 0 and not e.disabled for e in book.entries)


def test_current_world_info_fields_are_read(eldoria):
    entry = eldoria.entries[1]
    assert entry.comment == "shadowfang"
    assert entry.selective is True and entry.depth == 4 and entry.display_index == 1
    assert (entry.case_sensitive, entry.match_whole_words, entry.scan_depth) == (None, None, None)
    assert (entry.sticky, entry.cooldown, entry.delay, entry.probability) == (0, 0, 0, 100)


@pytest.mark.parametrize("name", CARD_FILES)
def test_parses_the_seraphina_card_books(name, eldoria):
    book = card_book(name)
    assert (book.name, book.source_format) == ("Eldoria", "character_book")
    assert [e.uid for e in book.entries] == [0, 1, 2, 3]
    assert all(e.use_regex and e.role == 0 and e.position == Position.BEFORE_CHAR for e in book.entries)
    # The card carries the same lorebook as the standalone World Info file.
    shape = lambda b: [(e.uid, e.keys, e.content, e.order, e.comment, e.selective) for e in b.entries]  # noqa: E731
    assert shape(book) == shape(eldoria)


@pytest.mark.parametrize("name", CARD_FILES)
def test_a_whole_card_yields_its_embedded_book(name):
    assert parse_world_info(load_shared(name)) == card_book(name)


def test_card_entries_take_sillytavern_defaults():
    book = load_own("recursive_book.json")
    assert (book.scan_depth, book.token_budget, book.recursive) == (3, 500, True)
    by_comment = {e.comment: e for e in book.entries}
    assert by_comment["kraken"].position == Position.AFTER_CHAR  # no "position": after, as in SillyTavern
    assert by_comment["moat, wakes nothing"].position == Position.BEFORE_CHAR  # extensions.position wins
    assert by_comment["disabled, no id"].uid == 6  # the smallest id nobody uses
    assert by_comment["disabled, no id"].disabled
    assert by_comment["ghost, waits for a recursion pass"].delay_until_recursion == 1


def test_world_info_entries_may_be_a_list_and_keys_a_string():
    book = parse_world_info({"entries": [{"key": "sword, shield", "content": "Arms."}, {"uid": 0, "key": []}]})
    assert [e.uid for e in book.entries] == [1, 0]
    assert book.entries[0].keys == ("sword", "shield")


@pytest.mark.parametrize(
    ("data", "location", "words"),
    [
        ([], "$", "JSON object"),
        ({}, "$", "entries"),
        ({"entries": 5}, "$.entries", "object keyed by entry id"),
        ({"entries": {"3": "x"}}, '$.entries["3"]', "JSON object"),
        ({"entries": {"3": {"key": 7}}}, '$.entries["3"].key', "list of keywords"),
        ({"entries": {"0": {"key": ["a", {}]}}}, '$.entries["0"].key[1]', "must be text"),
        ({"entries": {"0": {"key": ["a"], "content": ["x"]}}}, '$.entries["0"].content', "must be text"),
        ({"entries": {"0": {"order": "soon"}}}, '$.entries["0"].order', "must be a number"),
        ({"entries": {"0": {"scanDepth": -1}}}, '$.entries["0"].scanDepth', "0 or more"),
        ({"entries": {"0": {"constant": "yes"}}}, '$.entries["0"].constant', "true or false"),
        ({"entries": {"0": {"selectiveLogic": 9}}}, '$.entries["0"].selectiveLogic', "AND_ALL"),
        ({"entries": [{"keys": ["a"], "extensions": {"selectiveLogic": 9}}]},
         "$.entries[0].extensions.selectiveLogic", "AND_ANY"),
        ({"entries": [{"keys": ["a"], "extensions": []}]}, "$.entries[0].extensions", "JSON object"),
        ({"entries": {"0": {"uid": 1}, "1": {"uid": 1}}}, '$.entries["1"]', "share the id"),
        ({"entries": {"0": {"order": float("nan")}}}, '$.entries["0"].order', "must be a number"),
        ({"spec": "chara_card_v2", "data": {"character_book": None}}, "$.data.character_book", "no embedded lorebook"),
    ],
)
def test_malformed_books_say_what_and_where(data, location, words):
    with pytest.raises(InvalidConversation) as caught:
        parse_world_info(data)
    assert caught.value.location == location
    assert words in caught.value.message
    assert caught.value.code == "INVALID_CONVERSATION"


def test_error_locations_start_at_the_given_location():
    with pytest.raises(InvalidConversation) as caught:
        parse_world_info({"entries": [{"keys": "a", "enabled": "maybe"}]}, location="$.data.character_book")
    assert caught.value.location == "$.data.character_book.entries[0].enabled"


# --- activation on the real books ---


def test_a_key_in_the_chat_activates_its_entry(eldoria):
    [hit] = activate(eldoria, ["Hello.", "A beast howls outside."])
    assert (hit.entry.uid, hit.matched_key, hit.matched_in, hit.constant) == (1, "beast", 1, False)
    assert "beast" in hit.reason and "message 1" in hit.reason


def test_matching_ignores_case_unless_asked(eldoria):
    assert uids(activate(eldoria, ["The SHADOWFANG returns"])) == [1]
    assert activate(eldoria, ["The SHADOWFANG returns"], case_sensitive=True) == []
    assert uids(activate(eldoria, ["the shadowfang returns"], case_sensitive=True)) == [1]


def test_whole_words_off_matches_inside_words_and_on_does_not(eldoria):
    assert uids(activate(eldoria, ["We camp in the woodland."])) == [0]
    assert activate(eldoria, ["We camp in the woodland."], match_whole_words=True) == []
    assert uids(activate(eldoria, ["We camp in the wood."], match_whole_words=True)) == [0]


def test_a_key_just_outside_the_scan_depth_does_not_activate(eldoria):
    chat = ["The forest is dark.", "I follow you.", "Where are we going?"]
    assert activate(eldoria, chat) == []  # SillyTavern's default depth is 2 messages
    [hit] = activate(eldoria, chat, scan_depth=3)
    assert (hit.entry.uid, hit.matched_in) == (0, 0)
    assert activate(eldoria, chat, scan_depth=0) == []


def test_the_newest_message_is_where_a_key_is_reported(eldoria):
    [hit] = activate(eldoria, ["old glade talk", "new glade talk"])
    assert hit.matched_in == 1


@pytest.mark.parametrize("name", CARD_FILES)
def test_the_card_book_activates_like_the_world_info_file(name, eldoria):
    chat = ["The beasts gather near the glade.", "Use your magic in the forest!"]
    assert uids(activate(card_book(name), chat)) == uids(activate(eldoria, chat))


def test_equal_orders_come_out_as_sillytavern_inserts_them(eldoria):
    # SillyTavern walks entries by descending order and prepends each one, so
    # among equal orders the later entry of the book ends up first.
    chat = ["The beasts gather near the glade.", "Use your magic in the forest!"]
    assert uids(activate(eldoria, chat)) == [3, 2, 1, 0]


def test_what_is_not_chat_is_not_scanned(eldoria):
    chat = [
        {"role": "system", "content": "You guard the forest."},
        {"role": "system", "content": "The glade.", "meta": {"kind": "lorebook"}},
        {"role": "user", "content": [{"type": "text", "text": "Show me your magic"}]},
    ]
    [hit] = activate(eldoria, chat)
    assert (hit.entry.uid, hit.matched_in) == (3, 2)


def test_a_speaker_name_is_scanned_as_sillytavern_includes_names(eldoria):
    chat = [{"role": "assistant", "name": "Beast", "content": "Grr."}]
    assert uids(activate(eldoria, chat)) == [1]
    assert activate(eldoria, chat, include_names=False) == []


def test_blocks_for_the_fitting_engine(eldoria):
    constant = dataclasses.replace(eldoria.entries[2], constant=True, order=1)
    book = dataclasses.replace(eldoria, entries=(eldoria.entries[1], constant))
    blocks = lorebook_blocks(activate(book, ["A monster!"]), names={"user": "Ana", "char": "Seraphina"})
    assert [b["meta"]["id"] for b in blocks] == ["lorebook:2", "lorebook:1"]
    assert all(b["role"] == "system" and b["meta"]["kind"] == "lorebook" for b in blocks)
    assert [b["meta"]["required"] for b in blocks] == [True, False]
    assert blocks[1]["meta"]["lorebook"] == {
        "uid": 1, "comment": "shadowfang", "matchedKey": "monster", "position": 0, "order": 100,
    }
    assert blocks[1]["content"].startswith('Ana: "What are Shadowfangs?"\nSeraphina: ')


# --- activation cases the real books lack (tests/data/lorebook) ---


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a dragon breathing fire", {0, 1}),  # AND_ANY, NOT_ALL
        ("a dragon of fire and ice", {0, 3}),  # AND_ANY, AND_ALL
        ("a lone dragon", {1, 2}),  # NOT_ALL, NOT_ANY
        ("fire and ice, no wyrm", set()),  # the primary key is always needed
    ],
)
def test_secondary_key_logic(own, text, expected):
    activated = set(uids(activate(own, [text]))) & {0, 1, 2, 3}
    assert activated == expected


def test_secondary_keys_are_ignored_when_the_entry_is_not_selective(own):
    assert 4 in uids(activate(own, ["a dragon"]))


def test_regex_keys_ignore_the_case_and_whole_word_settings(own):
    [hit] = [a for a in activate(own, ["The Shadow Fang strikes"], case_sensitive=True) if a.entry.uid == 5]
    assert hit.matched_key == "/shadow ?fangs?/i"
    assert 5 in uids(activate(own, ["shadowfangs!"], match_whole_words=True))
    assert 5 not in uids(activate(own, ["shadows"]))


def test_a_variable_width_lookbehind_works_as_in_javascript(own):
    assert 6 in uids(activate(own, ["aab"]))
    assert 6 not in uids(activate(own, ["b alone"]))


def test_a_regex_that_cannot_compile_is_matched_as_plain_text():
    book = Lorebook(entries=(LorebookEntry(uid=1, keys=("/a(b/",), content="x"),))
    assert uids(activate(book, ["ab"])) == []
    assert uids(activate(book, ["literally /a(b/"])) == [1]


def test_an_entry_can_be_case_sensitive_on_its_own(own):
    assert 7 not in uids(activate(own, ["a rose garden"]))
    assert 7 in uids(activate(own, ["Rose rides out"]))
    assert 7 not in uids(activate(own, ["a rose garden"], case_sensitive=False))  # the entry wins


def test_an_entry_can_match_whole_words_on_its_own_including_phrases(own):
    assert 8 not in uids(activate(own, ["the woodland"]))
    assert 8 in uids(activate(own, ["the wood."]))
    assert 8 not in uids(activate(own, ["a magical forestry school"]))
    assert 8 in uids(activate(own, ["a magical forest!"]))


def test_constant_entries_always_activate_and_disabled_ones_never(own):
    [hit] = activate(own, ["nothing relevant"])
    assert (hit.entry.uid, hit.constant, hit.matched_key, hit.matched_in) == (9, True, None, None)
    assert 10 not in uids(activate(own, ["a dragon"]))


def test_names_fill_macros_in_keys(own):
    assert 11 not in uids(activate(own, ["Seraphina's sword gleams"]))
    assert 11 in uids(activate(own, ["Seraphina's sword gleams"], names={"char": "Seraphina"}))


def test_an_entry_scan_depth_overrides_the_book(own):
    assert 12 in uids(activate(own, ["ancient ruins", "one", "two", "three"]))
    assert 12 not in uids(activate(own, ["ancient ruins", "zero", "one", "two", "three"]))


def test_results_follow_ascending_insertion_order(own):
    assert uids(activate(own, ["the tavern"])) == [9, 14, 13]


def test_one_entry_per_inclusion_group(own):
    rained = [u for u in uids(activate(own, ["rain again"])) if u in (15, 16)]
    assert rained == [16]  # without a random source the heaviest member wins
    seen = {u for seed in range(200) for u in uids(activate(own, ["rain"], rng=random.Random(seed))) if u in (15, 16)}
    assert seen == {15, 16}


def test_delay_waits_for_enough_messages(own):
    assert 17 not in uids(activate(own, ["an omen"], scan_depth=3))
    assert 17 in uids(activate(own, ["x", "y", "an omen"], scan_depth=3))


def test_probability_is_rolled_only_with_a_random_source(own):
    assert 18 in uids(activate(own, ["a coin"]))
    assert 18 not in uids(activate(own, ["a coin"], rng=random.Random(0)))


# --- recursion ---


def test_recursion_wakes_entries_named_in_activated_content():
    book = load_own("recursive_book.json")
    hits = {a.entry.uid: a for a in activate(book, ["We reach the castle gates."])}
    assert set(hits) == {0, 1}
    assert hits[0].matched_in == 0
    assert hits[1].matched_in is None and "entry 0" in hits[1].reason
    assert uids(activate(book, ["We reach the castle gates."], recursive=False)) == [0]


def test_exclude_and_prevent_recursion():
    book = load_own("recursive_book.json")
    assert 2 in uids(activate(book, ["a dragon"]))  # a chat message may still wake it
    # The kraken stays asleep. The queen, woken in the second pass, comes first
    # among the equal orders: SillyTavern prepends later activations.
    assert uids(activate(book, ["the castle moat"])) == [1, 3, 0]


def test_delay_until_recursion_waits_for_a_recursion_pass():
    book = load_own("recursive_book.json")
    assert activate(book, ["a ghost!"]) == []  # nothing else activates, so no second pass
    hits = {a.entry.uid: a for a in activate(book, ["a ghost in the castle"])}
    assert set(hits) == {0, 1, 5}
    assert hits[5].matched_in == 0


# --- properties ---

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
FIELDS = [
    "uid", "id", "key", "keys", "keysecondary", "secondary_keys", "content", "comment", "constant",
    "disable", "enabled", "selective", "selectiveLogic", "order", "insertion_order", "position", "depth",
    "scanDepth", "caseSensitive", "matchWholeWords", "probability", "useProbability", "group",
    "groupWeight", "groupOverride", "delayUntilRecursion", "excludeRecursion", "delay", "extensions",
    "role", "use_regex", "sticky", "displayIndex",
]
WORDS = ["wood", "Wood", "fire", "/fi(re)?/i", "{{user}}", "/(/", "magic forest", "a", ""]
field_values = json_values | st.sampled_from(WORDS) | st.lists(st.sampled_from(WORDS), max_size=3)
entry_like = st.dictionaries(st.sampled_from(FIELDS), field_values, max_size=10)
book_like = st.fixed_dictionaries(
    {"entries": st.lists(entry_like, max_size=5) | st.dictionaries(st.text(max_size=3), entry_like, max_size=5)},
    optional={"name": json_values, "scan_depth": json_values, "recursive_scanning": json_values},
)


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(json_values, book_like))
def test_parsing_anything_raises_only_invalid_conversation(data):
    try:
        book = parse_world_info(data)
    except InvalidConversation as error:
        assert error.message and error.location and error.location.startswith("$")
    else:
        assert isinstance(book, Lorebook)


@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.too_slow])
@given(
    book_like,
    st.lists(st.sampled_from(WORDS) | st.text(max_size=12), max_size=6),
    st.none() | st.integers(min_value=-2, max_value=8),
    st.none() | st.booleans(),
    st.none() | st.booleans(),
    st.none() | st.booleans(),
    st.none() | st.integers(0, 3),
)
def test_activation_never_fails_on_a_parsed_book(data, chat, depth, case, whole, recursive, seed):
    try:
        book = parse_world_info(data)
    except InvalidConversation:
        return
    rng = None if seed is None else random.Random(seed)
    hits = activate(book, chat, scan_depth=depth, case_sensitive=case, match_whole_words=whole,
                    names={"user": "Ana"}, recursive=recursive, rng=rng)
    assert len({str(h.entry.uid) for h in hits}) == len(hits)
    assert all(not h.entry.disabled and h.entry in book.entries for h in hits)
    assert [h.entry.order for h in hits] == sorted(h.entry.order for h in hits)
    assert len(lorebook_blocks(hits)) <= len(hits)


@given(st.lists(st.booleans(), min_size=1, max_size=6))
def test_every_enabled_constant_entry_activates(disabled_flags):
    entries = tuple(
        LorebookEntry(uid=i, content=f"fact {i}", constant=True, disabled=flag) for i, flag in enumerate(disabled_flags)
    )
    hits = activate(Lorebook(entries=entries), [])
    assert sorted(uids(hits)) == [i for i, flag in enumerate(disabled_flags) if not flag]


# --- user regexes run under a budget ---

SLOW_KEY = "/(a|a)+$/"  # exponential backtracking on "a" * 40 + "b", in re and in regex alike
SLOW_TEXT = "a" * 40 + "b"


def regex_book(*keys: str) -> dict:
    return {"entries": {"0": {"uid": 0, "key": list(keys), "content": "Lore."}}}


def plan_with(book: dict, text: str, limits: RegexLimits | None = None):
    with regex_limits(limits or RegexLimits()):
        return plan_prompt([{"role": "user", "content": text}], model="gpt-4o", lorebook=book)


def codes(plan) -> list[str]:
    return [d["code"] for d in plan.diagnostics]


def test_the_reported_catastrophic_key_finishes_and_matches_correctly():
    # /(a+)+$/ ran for minutes on Python's re; the regex package needs no backtracking for it.
    assert not any(block.kind == "lorebook" for block in plan_with(regex_book("/(a+)+$/"), SLOW_TEXT).blocks)
    assert any(block.kind == "lorebook" for block in plan_with(regex_book("/(a+)+$/"), "a" * 40).blocks)


def test_a_key_that_runs_past_its_budget_does_not_match_and_says_so():
    plan = plan_with(regex_book(SLOW_KEY), SLOW_TEXT, RegexLimits(key_seconds=0.05))
    [note] = [d for d in plan.diagnostics if d["code"] == "LOREBOOK_KEY_TIMEOUT"]
    assert note["key"] == SLOW_KEY and "does not match" in note["message"]
    assert not any(block.kind == "lorebook" for block in plan.blocks)
    # The entry's other keys are still tried: a plain key after the slow one wakes it.
    plan = plan_with(regex_book(SLOW_KEY, "b"), SLOW_TEXT, RegexLimits(key_seconds=0.05))
    assert any(block.kind == "lorebook" for block in plan.blocks) and "LOREBOOK_KEY_TIMEOUT" in codes(plan)


def test_the_request_budget_is_shared_by_every_key():
    keys = [f"/(a|a)+${'x' * n}|(a|a)+$/" for n in range(8)]  # eight distinct slow keys
    plan = plan_with(regex_book(*keys), SLOW_TEXT, RegexLimits(key_seconds=0.05, request_seconds=0.1))
    notes = [d for d in plan.diagnostics if d["code"] == "LOREBOOK_KEY_TIMEOUT"]
    assert len(notes) == len(keys)
    skipped = [n for n in notes if "was not evaluated" in n["message"]]
    assert len(skipped) >= len(keys) - 3  # at most ~two keys ran; the rest were never started


def test_a_pattern_over_the_length_limit_is_never_compiled():
    key = "/" + "(a|b)" * 300 + "/"
    plan = plan_with(regex_book(key), "ab" * 300)
    assert "LOREBOOK_KEY_TOO_LONG" in codes(plan) and not any(b.kind == "lorebook" for b in plan.blocks)
    assert any(b.kind == "lorebook" for b in plan_with(regex_book(key), "ab" * 300, RegexLimits(max_pattern_chars=2000)).blocks)


BOMB = "/(?:a{999999}){999999}/"  # 24 characters that compiled for seconds into gigabytes


def test_a_key_that_would_compile_to_gigabytes_is_refused_before_it_is_compiled(monkeypatch):
    compiled = []
    real = matching.regex.compile
    monkeypatch.setattr(matching.regex, "compile", lambda pattern, *args, **kwargs: compiled.append(pattern) or real(
        pattern, *args, **kwargs))
    monkeypatch.setattr(matching, "_COMPILED", TextMemo(matching.COMPILED_KEYS_BYTES))  # nothing remembered
    plan = plan_with(regex_book(BOMB, "/fores+t/"), "Into the forest")
    [note] = [d for d in plan.diagnostics if d["code"] == "LOREBOOK_KEY_TOO_LARGE"]
    assert note["key"] == BOMB and "does not match" in note["message"] and "10,000" in note["message"]
    assert compiled == ["fores+t"]  # the bomb never reached the compiler; the entry's other key did
    assert any(block.kind == "lorebook" for block in plan.blocks)


@pytest.mark.parametrize("key", ["/(?:a{101}){100}/", "/(?<=(?:ab){5001})c/", "/(?:(?<name>a)\\k<name>){2500}/",
                                 "/(?:a|b|c|d){2000}/i", "/(?x)a{1 0 0 0 1}/"])
def test_every_shape_of_oversized_key_is_refused_and_a_larger_limit_takes_it(key):
    assert "LOREBOOK_KEY_TOO_LARGE" in codes(plan_with(regex_book(key), "Into the forest"))
    assert compile_regex_key(key).refused == "LOREBOOK_KEY_TOO_LARGE"
    with regex_limits(RegexLimits(max_pattern_units=40_000)):
        assert compile_regex_key(key).pattern is not None


def test_compiled_keys_are_held_within_their_byte_budget(monkeypatch):
    # An lru_cache of 2,048 keys held whatever they compiled to; the memo charges each its size.
    memo = TextMemo(2 * 1024 * 1024)
    monkeypatch.setattr(matching, "_COMPILED", memo)
    compiled = []
    for number in range(100):  # about 110 KB each once compiled: 11 MB in all
        key = compile_regex_key(f"/a{{1000}}b{number}/")
        compiled.append(weakref.ref(key.pattern))
        assert compile_regex_key(f"/a{{1000}}b{number}/") is key  # kept while there is room
        del key
    gc.collect()
    kept = [pattern for pattern in (ref() for ref in compiled) if pattern is not None]
    assert memo.nbytes <= memo.max_bytes
    assert 0 < sum(map(sys.getsizeof, kept)) <= memo.max_bytes  # neither this cache nor the regex package's holds more
    assert all(compile_regex_key(f"/a{{1000}}b{n}/").pattern is not None for n in range(3))  # compiled again on demand


def test_the_regex_package_does_not_remember_every_pattern_text(monkeypatch):
    table = getattr(getattr(matching.regex, "_main", None), "_locale_sensitive", None)
    if not isinstance(table, dict):
        pytest.skip("this regex release keeps no such table")
    monkeypatch.setattr(matching, "_PURGE_EVERY_CHARS", 50_000)
    monkeypatch.setattr(matching, "_COMPILED", TextMemo(matching.COMPILED_KEYS_BYTES))
    for number in range(2_000):
        compile_regex_key(f"/{'x' * 200}{number}/")
    assert len(table) < 500  # 2,000 pattern texts of 200 characters were kept for good


def test_a_key_whose_search_runs_out_of_memory_does_not_match_and_says_so():
    class Runaway:
        pattern, refused = object(), None

        def search(self, text, timeout=None):
            raise MemoryError

    budget = matching.RegexBudget()
    assert budget.search(Runaway(), "text", "/runaway/") is None
    assert [(d["code"], d["key"]) for d in budget.diagnostics] == [("LOREBOOK_KEY_TOO_LARGE", "/runaway/")]


def test_groups_nothing_reads_back_are_compiled_non_capturing():
    assert compile_regex_key("/(wolf|wolves)(?<n>es)?/i").pattern.groups == 0
    assert compile_regex_key(r"/(a)\1/").pattern.groups == 1  # a backreference reads it back
    assert compile_regex_key("/(?<n>a)\\k<n>/").pattern.groups == 1


def test_regex_keys_read_only_the_newest_text_up_to_the_limit():
    text = "x" * 5000 + " needle"
    plan = plan_with(regex_book("/needle/"), text, RegexLimits(max_text_chars=1000))
    assert "LOREBOOK_SCAN_LIMITED" in codes(plan) and not any(b.kind == "lorebook" for b in plan.blocks)
    assert any(b.kind == "lorebook" for b in plan_with(regex_book("/needle/"), text).blocks)
