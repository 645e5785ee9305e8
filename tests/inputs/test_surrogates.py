"""A lone surrogate (JSON's ``"\\ud800"``) is refused with the field it is in: never a traceback.

Importers raise ``INVALID_CONVERSATION`` with the JSON path (or the line and
column of pasted text); ``plan_prompt`` and ``shift_context`` raise
``INVALID_MESSAGES`` with the path; the CLI exits 2 with that message.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.png import card_json, chunk, png

import contextfit
from contextfit.errors import InvalidConversation, InvalidMessages

BAD = "\ud800"


@pytest.mark.parametrize(
    ("source", "location"),
    [
        ('{"messages": [{"role": "user", "content": "a\\ud800"}]}', "$.messages[0].content"),
        ('[{"role": "user", "content": "ok"}, {"role": "assistant", "content": "x", "name": "\\udfff"}]', "$[1].name"),
        ('{"system": "s", "messages": [{"role": "user", "content": [{"type": "text", "text": "\\udc00"}]}]}',
         "$.messages[0].content[0].text"),
        ('{"user_name": "You", "character_name": "A"}\n{"name": "A", "is_user": false, "mes": "hi"}\n'
         '{"name": "You", "is_user": true, "mes": "cut \\ud83d"}', "line 3: $.mes"),
        ('{"entries": {"0": {"key": ["wolf\\ud800"], "content": "Wolves."}}}', 'line: $.entries["0"].key[0]'),
        ('{"spec": "chara_card_v2", "data": {"name": "A\\ud800", "first_mes": "hi"}}', "$.data.name"),
        ('{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "\\udbff"}]}',
         "$.conversations[1].value"),
        ('{"messages": [{"role": "user", "content": "hi", "meta": {"\\ud800": 1}}]}', '$.messages[0].meta["\\ud800"]'),
        ("User: hello\nAssistant: fine\nUser: cut " + BAD + " here", "line 3, column 11"),
    ],
    ids=["openai", "openai-name", "anthropic-part", "sillytavern-line", "world-info", "card", "sharegpt", "meta-key", "text"],
)
def test_importers_name_where_the_lone_surrogate_is(source: str, location: str) -> None:
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(source)
    expected = location.removeprefix("line: ")
    assert caught.value.location == expected
    assert "lone surrogate" in caught.value.message


def test_parsed_json_and_bytes_are_checked_too() -> None:
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation({"messages": [{"role": "user", "content": "x" + BAD}]})
    assert caught.value.location == "$.messages[0].content"
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(b'[{"role": "user", "content": "\\ud800"}]')
    assert caught.value.location == "$[0].content"


def test_a_png_card_with_a_lone_surrogate_names_its_chunk() -> None:
    payload = card_json("Sensei", description="broken " + BAD)  # json.dumps writes it as \ud800
    data = png(chunk(b"tEXt", b"chara\x00" + base64.b64encode(payload)))
    with pytest.raises(InvalidConversation) as caught:
        contextfit.load_conversation(data)
    assert caught.value.location == "PNG chunk tEXt 'chara': $.data.description"


def test_a_whole_emoji_written_as_a_surrogate_pair_is_fine() -> None:
    conversation = contextfit.load_conversation('[{"role": "user", "content": "\\ud83d\\ude00 hi"}]')
    assert conversation.messages[0]["content"] == "\U0001f600 hi"


@pytest.mark.parametrize(
    ("settings", "location"),
    [
        ({"messages": [{"role": "user", "content": "hi " + BAD}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "meta": {BAD: 1}}]},
         'messages[1].meta["\\ud800"]'),
        ({"messages": [{"role": BAD, "content": "a"}]}, "messages[0].role"),
        ({"persona": "I am " + BAD}, "persona"),
        ({"memory": ["fine", {"content": "x" + BAD}]}, "memory[1].content"),
        ({"tools": [{"type": "function", "function": {"name": "f" + BAD}}]}, "tools[0].function.name"),
        ({"lorebook": {"entries": {"0": {"key": ["k"], "content": "c" + BAD}}}}, 'lorebook.entries["0"].content'),
        ({"character": {"name": "A", "description": BAD}}, "character.description"),
    ],
    ids=["content", "meta-key", "role", "persona", "memory", "tools", "lorebook", "character"],
)
def test_plan_prompt_refuses_a_lone_surrogate_naming_the_field(settings: dict, location: str) -> None:
    messages = settings.pop("messages", [{"role": "user", "content": "hi"}])
    with pytest.raises(InvalidMessages) as caught:
        contextfit.plan_prompt(messages, model="gpt-4o", **settings)
    assert caught.value.code == "INVALID_MESSAGES"
    assert caught.value.location == location


def test_shift_context_refuses_a_lone_surrogate_naming_the_message() -> None:
    chat = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "result " + BAD}]},
    ]
    with pytest.raises(InvalidMessages) as caught:
        contextfit.shift_context(chat, contextfit.token_counter("gpt-4o"), 1_000)
    assert caught.value.location == "messages[2].content[0].text"


json_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | json_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_text, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=examples(150))
@given(
    chat=st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": json_text},
                                        optional={"meta": st.dictionaries(json_text, json_value, max_size=3)}),
                  min_size=1, max_size=5),
    data=st.data(),
)
def test_a_lone_surrogate_anywhere_in_a_message_is_named_never_raised_otherwise(chat: list, data) -> None:
    index = data.draw(st.integers(0, len(chat) - 1))
    where = data.draw(st.sampled_from(["content", "meta-value", "meta-key"]))
    message = chat[index]
    if where == "content":
        message["content"] += BAD
        expected = f"messages[{index}].content"
    elif where == "meta-value":
        message["meta"] = {**message.get("meta", {}), "note": ["ok", "x" + BAD]}
        expected = f"messages[{index}].meta.note[1]"
    else:
        message["meta"] = {BAD: True}
        expected = f'messages[{index}].meta["\\ud800"]'
    for first in range(index):  # only the damaged message holds one
        chat[first].pop("meta", None)
    with pytest.raises(InvalidMessages) as caught:
        contextfit.plan_prompt(chat, model="gpt-4o")
    assert caught.value.location == expected


# -- the command line


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("contextfit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "contextfit"]
    return subprocess.run([*command, *args], capture_output=True, text=True, input=stdin, timeout=120)


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["table", "json"])
def test_the_cli_says_where_the_lone_surrogate_is(tmp_path, output: list[str]) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "cut " + BAD}]}))  # ASCII: \ud800
    done = run_cli("fit", str(path), *output)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr
    assert "INVALID_CONVERSATION" in done.stderr and "$.messages[0].content" in done.stderr
    done = run_cli("fit", "-", *output, stdin=path.read_text())
    assert done.returncode == 2 and "Traceback" not in done.stderr and "$.messages[0].content" in done.stderr
