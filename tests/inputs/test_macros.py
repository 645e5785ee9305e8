"""{{user}} and {{char}}: names and what filling them in adds, bounded and refused before anything is filled.

An 83 KB request (a 3,000-character user name, ``{{user}}`` ten thousand
times) became a 30 MB prompt and peaked at 1.7 GB. A name has at most
``MAX_NAME_CHARS`` characters and filling every macro of a prompt adds at most
``MAX_MACRO_GROWTH`` characters, wherever the macros are (messages, card,
persona, memory, lorebook, a session's appends, a replay's facts); each is
``INVALID_SETTINGS`` naming the field. Peak memory of the bomb itself is
measured in ``tests/test_hostile_inputs.py``.
"""

from __future__ import annotations

import json

import pytest

import contextfit
from contextfit.errors import InvalidSettings
from contextfit.inputs import macros
from contextfit.limits import MAX_MACRO_GROWTH, MAX_NAME_CHARS
from contextfit.pipeline import assembly

USER = {"role": "user", "content": "Hello {{char}}, I am {{user}}."}
LONGEST = "N" * MAX_NAME_CHARS
#: {{user}} this many times with the longest name adds just over the limit.
OVER = MAX_MACRO_GROWTH // (MAX_NAME_CHARS - len("{{user}}")) + 1


def refusal(call) -> InvalidSettings:
    with pytest.raises(InvalidSettings) as caught:
        call()
    assert caught.value.code == "INVALID_SETTINGS"
    return caught.value


def plan(messages=(USER,), **keywords):
    return contextfit.plan_prompt(list(messages), model="gpt-4o", context_limit=2_000_000, response_reserve=1_000,
                                  **keywords)


@pytest.mark.parametrize(
    ("keywords", "field"),
    [
        ({"user_name": "N" * 3_000}, "user_name (userName) is 3,000 characters long"),
        ({"char_name": "C" * 3_000}, "char_name (charName) is 3,000 characters long"),
        ({"character": {"name": "C" * 3_000, "description": "{{char}} waits."}}, "character card's name (character.name)"),
        ({"user_name": 5}, "user_name (userName) must be a string"),
        ({"user_name": ["Ann"]}, "user_name (userName) must be a string"),
        ({"char_name": {"x": 1}}, "char_name (charName) must be a string"),
    ],
    ids=["user", "char", "card", "user-number", "user-list", "char-object"],
)
def test_a_name_over_the_limit_or_not_a_string_is_refused_naming_its_field(keywords, field) -> None:
    assert field in str(refusal(lambda: plan(**keywords)))


def test_names_at_the_limit_are_used_and_a_short_char_name_overrides_a_long_card_name() -> None:
    assert LONGEST in plan(user_name=LONGEST).provider_messages[0]["content"]
    card = {"name": "C" * 3_000, "description": "{{char}} waits."}
    assert plan(character=card, char_name="Mara").provider_messages[0]["content"].startswith("Mara waits.")


@pytest.mark.parametrize(
    ("keywords", "where"),
    [
        ({"messages": [{"role": "user", "content": "{{user}}" * OVER}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "<USER>" * OVER}]}]},
         "messages[0].content[0].text"),
        ({"persona": "{{user}}" * OVER}, "persona"),
        ({"memory": [{"content": "{{ user }}" * (OVER + 200)}]}, "memory[0].content"),
        ({"lorebook": {"entries": {"0": {"key": ["x"], "content": "{{user}}" * OVER}}}}, "lorebook.entries[0].content"),
        ({"character": {"name": "Mara", "description": "{{user}}" * OVER}}, "character.description"),
        ({"character": {"spec": "chara_card_v2", "data": {"name": "Mara", "character_book": {"entries": [
            {"keys": ["x"], "content": "{{user}}" * OVER, "enabled": True}]}}}}, "character.character_book.entries[0].content"),
    ],
    ids=["message", "text-part", "persona", "memory", "lorebook", "card", "card-book"],
)
def test_filling_in_more_than_the_limit_is_refused_before_a_macro_is_filled(monkeypatch, keywords, where) -> None:
    filled = []
    monkeypatch.setattr(assembly, "fill_macros", lambda text, names: filled.append(text) or text)
    messages = keywords.pop("messages", [{"role": "user", "content": "hi"}])
    error = refusal(lambda: plan(messages, user_name=LONGEST, **keywords))
    assert f"{where} adds" in str(error) and f"more than the {MAX_MACRO_GROWTH:,} allowed" in str(error)
    assert filled == []  # refused before the first one was filled in


def test_growth_spread_over_many_places_adds_up() -> None:
    quarter = "{{user}}" * (OVER // 4 + 1)
    error = refusal(lambda: plan([{"role": "user", "content": quarter}, {"role": "user", "content": quarter}],
                                 user_name=LONGEST, persona=quarter, memory=[quarter]))
    assert "would add 1,00" in str(error)
    plan([{"role": "user", "content": quarter}], user_name=LONGEST, persona=quarter, memory=[quarter])  # three quarters


def test_just_under_the_limit_is_filled_in() -> None:
    under = "{{user}}" * (OVER - 1)
    content = plan([{"role": "user", "content": under}], user_name=LONGEST).provider_messages[0]["content"]
    assert content == LONGEST * (OVER - 1)


def test_short_names_shrink_and_unknown_macros_cost_nothing() -> None:
    assert macros.macro_growth("{{user}}" * 10, {"user": "Al", "char": "B"}) == 0
    assert macros.macro_growth("{{time}} {{random}} <START>" * 1000, {"user": LONGEST, "char": LONGEST}) == 0


def test_a_session_counts_what_every_append_adds() -> None:
    session = contextfit.FitSession([{"role": "user", "content": "hi"}])
    keywords = {"model": "gpt-4o", "context_limit": 2_000_000, "response_reserve": 1_000, "user_name": LONGEST}
    session.plan("truncate", **keywords)
    half = "{{user}}" * (OVER // 2 + 1)
    session.append({"role": "user", "content": half})
    session.plan("truncate", **keywords)  # half the limit
    session.append({"role": "user", "content": half})
    assert "messages[2].content adds" in str(refusal(lambda: session.plan("truncate", **keywords)))


def test_a_replay_checks_its_facts_and_every_message_before_filling_them() -> None:
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "{{user}}" * OVER}]
    keywords = {"model": "gpt-4o", "strategies": ["truncate"], "user_name": LONGEST}
    assert "messages[2]" in str(refusal(lambda: contextfit.replay(chat, **keywords)))
    facts = ["{{user}}" * OVER]
    assert "facts[0].text adds" in str(refusal(lambda: contextfit.replay(chat[:2], facts=facts, **keywords)))


def test_the_cli_refuses_a_bundle_with_a_long_name(tmp_path, capsys) -> None:
    from contextfit.cli import main

    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"contextfit": "conversation", "messages": [USER], "settings": {"userName": "N" * 3_000}}))
    assert main(["fit", str(path), "--model", "gpt-4o"]) != 0
    err = capsys.readouterr().err
    assert "INVALID_SETTINGS" in err and "userName" in err and "Traceback" not in err
