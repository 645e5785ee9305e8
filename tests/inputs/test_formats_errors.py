"""Bad input: a clear InvalidConversation with a location — never another exception,
never a hang — and properties over arbitrary bytes, text and JSON."""

from __future__ import annotations

import base64
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from support.png import chunk, png

from contextfit.errors import InvalidConversation
from contextfit.inputs.formats import FORMATS, Conversation, detect_format, load_conversation
from contextfit.inputs.formats import load as loading
from contextfit.inputs.formats.load import _load

MB = 1024 * 1024


@pytest.mark.parametrize(
    ("source", "message", "location"),
    [
        ("", "The input is empty", "input"),
        ("  \n\t \n", "The input is empty", "input"),
        (b"", "The input is empty", "input"),
        ('{"messages": [{"role": "user", "content": "hi"}', "The JSON ends too early", "line 1, column 48"),
        ('{"messages": [{"role": "user" "content": "hi"}]}', "Line 1 is not valid JSON: Expecting ',' delimiter at column 31", "line 1, column 31"),
        ('{\n  "messages": [\n    {"role": "user", "content": "hi",}\n  ]\n}', "Line 3 is not valid JSON", "line 3, column 38"),
        ('{"role": "user", "content": "a"}\n{"role": "user", "content": "b"}\n{"role": "user" "content": "c"}',
         "Line 3 is not valid JSON: Expecting ',' delimiter at column 17", "line 3, column 17"),
        ('{"messages": [{"role": 5, "content": "x"}]}', "$.messages[0].role must be a string (got a number)", "$.messages[0].role"),
        ('{"messages": [{"role": "wizard", "content": "x"}]}', "is 'wizard'; expected one of", "$.messages[0].role"),
        ('{"messages": ["hi"]}', "$.messages[0] must be an object", "$.messages[0]"),
        ('{"messages": [{"role": "user", "content": 42}]}', "$.messages[0].content must be a string, a list of parts, or null", "$.messages[0].content"),
        ('{"messages": [{"role": "user"}]}', "has no content", "$.messages[0]"),
        ('{"system": 5, "messages": []}', "$.system must be a string or a list of text blocks", "$.system"),
        ('{"system": "s", "messages": [{"role": "user", "content": [{"text": "no type"}]}]}', "$.messages[0].content[0].type must be a string", "$.messages[0].content[0].type"),
        ('{"foo": 1, "bar": 2}', "not a format contextfit knows", "$"),
        ("[]", "This JSON list is empty", "$"),
        ("[1, 2]", "holds a number items", "$[0]"),
        ('{"spec": "chara_card_v2", "data": "nope"}', "$.data must be an object (got a string)", "$.data"),
        ('{"spec": "chara_card_v2"}', "has no 'data' object", "$.data"),
        ('{"spec": "chara_card_v9", "data": {"name": "x"}}', "Unknown card spec 'chara_card_v9'", "$.spec"),
        ('{"name": "", "first_mes": "hi"}', "The character card has no name", "$.name"),
        ('{"spec": "chara_card_v2", "data": {"name": "A", "tags": 3}}', "$.data.tags must be a list of strings", "$.data.tags"),
        ('{"user_name": "You", "character_name": "A"}\n{"name": "A", "is_user": false, "mes": 5}', "line 2: $.mes must be a string", "line 2: $.mes"),
        ('{"user_name": "You", "character_name": "A"}\n{"name": "A", "is_user": false}', "has no 'mes'", "line 2: $"),
        ('{"conversations": [{"from": "human", "value": ["x"]}]}', "$.conversations[0].value must be a string", "$.conversations[0].value"),
        ('{"conversations": "hello"}', "$.conversations must be a list", "$.conversations"),
        ('{"chosen": []}', "is an empty list", "$.chosen"),
        (b"User: caf\xe9", "This is not UTF-8 text: byte 9 (0xe9, line 1)", "byte 9"),
        (b"\x00\x01\x02\x03binary\x00stuff", "binary data", "character 0"),
        (bytes(range(1, 32)) * 10, "binary data", "input"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "This is a JPEG image", "byte 0"),
        (b"PK\x03\x04rest", "ZIP archive", "byte 0"),
        ("[" * 100_000, "nested too deeply", "$"),
        ("[" + "9" * 5000 + "]", "cannot be read", "$"),
        (12, "Cannot read a int", "input"),
        (None, "Cannot read a NoneType", "input"),
    ],
)
def test_bad_input_is_a_clear_error_with_a_location(source: object, message: str, location: str) -> None:
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(source)  # type: ignore[arg-type]
    error = caught.value
    assert error.code == "INVALID_CONVERSATION"
    assert message in error.message
    assert error.location == location
    assert error.to_dict()["location"] == location


def test_a_20_mb_paste_is_refused_before_parsing(monkeypatch) -> None:
    # Work done, not time: every step that reads the content (decoding, the text checks, JSON,
    # the PNG chunks, the transcript parser) records its call; a refused paste reaches none.
    steps: list[str] = []
    for name in ("decode_text", "check_text", "parse_json", "import_png_card", "import_text"):
        original = getattr(loading, name)
        monkeypatch.setattr(loading, name, lambda *args, _name=name, _original=original: (steps.append(_name), _original(*args))[1])
    load_conversation('{"messages": [{"role": "user", "content": "x"}]}'.encode())
    assert steps == ["decode_text", "check_text", "parse_json"]  # the spies are on the path a paste takes
    huge_text = '{"messages": [' + '{"role": "user", "content": "x"},' * (20 * MB // 33) + "]"
    huge_bytes = b"\x89PNG\r\n\x1a\n" + bytes(20 * MB)
    for source in (huge_text, huge_bytes, huge_text.encode()):
        steps.clear()
        with pytest.raises(InvalidConversation) as caught:
            load_conversation(source)
        assert "the limit is 16.0 MB" in caught.value.message
        assert steps == [], steps
    # multi-byte characters count as bytes, not characters
    with pytest.raises(InvalidConversation):
        load_conversation("é" * 600, max_bytes=1000)


def test_a_big_file_is_refused_unread(tmp_path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 2000)
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(path, max_bytes=1000)
    assert "2000 bytes" in caught.value.message


def test_missing_file_and_folder(tmp_path) -> None:
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(tmp_path / "nope.jsonl")
    assert "There is no file at" in caught.value.message
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(tmp_path)
    assert "is a folder" in caught.value.message


def test_max_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError):
        load_conversation("User: hi", max_bytes=0)


def ten_megabytes_of_openai_json() -> str:
    messages = []
    for index in range(20_000):
        messages.append({"role": "user", "content": "word " * 80})
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{index}", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{index}", "content": "ok " * 20})
    text = json.dumps({"model": "gpt-4o", "messages": messages})
    assert len(text) > 10 * 1_000_000
    return text


def test_ten_megabytes_of_openai_json_load() -> None:
    assert len(load_conversation(ten_megabytes_of_openai_json()).messages) == 60_000


@pytest.mark.perf
def test_ten_megabytes_of_openai_json_loads_quickly() -> None:
    text = ten_megabytes_of_openai_json()
    start = time.perf_counter()
    conversation = load_conversation(text)
    elapsed = time.perf_counter() - start
    assert len(conversation.messages) == 60_000
    assert elapsed < 10, f"10 MB took {elapsed:.1f}s"


def test_detect_format_errors_like_load_conversation() -> None:
    with pytest.raises(InvalidConversation):
        detect_format("")
    with pytest.raises(InvalidConversation) as caught:
        detect_format(png(chunk(b"tEXt", b"Comment\x00hi")))
    assert "no character card" in caught.value.message


def test_never_mutates_the_callers_data() -> None:
    data = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}], "meta": {"pinned": True}}]}
    snapshot = json.dumps(data, sort_keys=True)
    conversation = load_conversation(data)
    conversation.messages[0]["content"][0]["text"] = "changed"
    conversation.messages[0]["meta"]["pinned"] = False
    assert json.dumps(data, sort_keys=True) == snapshot


# --- properties -----------------------------------------------------------------------------

FAST = settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])

json_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)
# Values shaped like the formats, with wrong types mixed in, to reach the importers' inner checks.
keys = st.sampled_from([
    "role", "content", "messages", "system", "tool_calls", "tool_call_id", "name", "type", "text", "id",
    "tool_use_id", "input", "conversations", "from", "value", "tools", "mes", "is_user", "is_system",
    "send_date", "swipes", "swipe_id", "extra", "user_name", "character_name", "spec", "data", "first_mes",
    "character_book", "entries", "key", "keys", "chosen", "log", "user utterance", "choices", "message",
    "instructions", "call_id", "arguments", "output", "summary", "encrypted_content", "image_url", "object",
])
words = st.sampled_from([
    "user", "assistant", "system", "tool", "developer", "human", "gpt", "function_call", "observation",
    "text", "tool_use", "tool_result", "thinking", "chara_card_v2", "chara_card_v3", "narrator", "reasoning",
    '{"name": "f", "arguments": {}}', "[]", "",
    "message", "function_call_output", "input_text", "input_image", "output_text", "item_reference", "response",
])
shaped_values = st.recursive(
    json_leaves | words,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=6),
    max_leaves=40,
)


def only_invalid_conversation(call) -> None:
    try:
        result = call()
    except InvalidConversation as error:
        assert error.code == "INVALID_CONVERSATION" and error.message
        return
    assert isinstance(result, Conversation)
    assert result.format in FORMATS


def _strict(source: object) -> None:
    """The loader without its last-resort guard, so a bug cannot hide behind it."""
    only_invalid_conversation(lambda: _load(source, None, 16 * MB))


@FAST
@given(st.binary(max_size=3000))
def test_arbitrary_bytes(data: bytes) -> None:
    _strict(data)
    _strict(b"\x89PNG\r\n\x1a\n" + data)


@FAST
@given(st.text(max_size=3000))
def test_arbitrary_text(text: str) -> None:
    _strict(text)
    for name in FORMATS:
        only_invalid_conversation(lambda: load_conversation(text, name))


@FAST
@given(json_values)
def test_arbitrary_json_values(value: object) -> None:
    _strict(json.dumps(value))
    _strict(value)


@FAST
@given(shaped_values)
def test_format_shaped_json(value: object) -> None:
    text = json.dumps(value)
    _strict(text)
    _strict("\n".join(json.dumps(item) for item in value) if isinstance(value, list) and value else text)
    for name in FORMATS:
        only_invalid_conversation(lambda: load_conversation(text, name))


@FAST
@given(st.sampled_from([b"chara", b"ccv3", b"CHARA"]), st.one_of(st.binary(max_size=200), shaped_values.map(lambda v: json.dumps(v).encode())))
def test_png_text_chunks(keyword: bytes, payload: bytes) -> None:
    _strict(png(chunk(b"tEXt", keyword + b"\x00" + base64.b64encode(payload))))
    _strict(png(chunk(b"tEXt", keyword + b"\x00" + payload)))


TRANSCRIPT_PIECES = ["User:", "Assistant:", "Alice:", "Bob:", "**User:**", "\n", " ", "a", ":", "*", "{{char}}:"]


@pytest.mark.parametrize("piece", TRANSCRIPT_PIECES)
def test_transcripts_of_one_repeated_piece_read_or_refuse(piece: str) -> None:
    only_invalid_conversation(lambda: load_conversation((piece + " x " + "y" * 50 + "\n") * 2_000))


@pytest.mark.perf
@settings(max_examples=examples(30), deadline=5000)
@given(st.sampled_from(TRANSCRIPT_PIECES))
def test_transcript_parsing_is_linear(piece: str) -> None:
    text = (piece + " x " + "y" * 50 + "\n") * 20_000
    start = time.perf_counter()
    only_invalid_conversation(lambda: load_conversation(text))
    assert time.perf_counter() - start < 5
