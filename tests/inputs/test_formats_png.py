"""Character cards inside PNG images, built here chunk by chunk."""

from __future__ import annotations

import base64
import json
import zlib

import pytest
from support.paths import TEST_DATA
from support.png import SIGNATURE, card_json, chunk, png

from contextfit.errors import InvalidConversation
from contextfit.inputs.formats import detect_format, load_conversation
from contextfit.inputs.formats import png as png_module

DATA = TEST_DATA / "formats"
MB = 1024 * 1024


def text_chunk(keyword: bytes, payload: bytes) -> bytes:
    return chunk(b"tEXt", keyword + b"\x00" + base64.b64encode(payload))


def test_committed_png_card_loads() -> None:
    conversation = load_conversation((DATA / "card_v2.png").read_bytes())
    assert conversation.format == "character-card"
    assert conversation.character.name == "Sensei"
    assert len(conversation.lorebook.entries) == 2
    assert detect_format(DATA / "card_v2.png") == "character-card"


def test_ccv3_is_preferred_over_chara() -> None:
    data = png(text_chunk(b"chara", card_json("Old")), text_chunk(b"ccv3", card_json("New", "chara_card_v3")))
    card = load_conversation(data).character
    assert (card.name, card.spec) == ("New", "chara_card_v3")


def test_chara_is_the_fallback_when_ccv3_is_broken() -> None:
    data = png(chunk(b"tEXt", b"ccv3\x00!!!not base64!!!"), text_chunk(b"chara", card_json("Old")))
    conversation = load_conversation(data)
    assert conversation.character.name == "Old"
    assert "'ccv3' chunk could not be read" in conversation.warnings[0]


def test_ztxt_and_itxt_chunks() -> None:
    payload = base64.b64encode(card_json("Zed"))
    compressed = chunk(b"zTXt", b"chara\x00\x00" + zlib.compress(payload))
    assert load_conversation(png(compressed)).character.name == "Zed"
    international = chunk(b"iTXt", b"chara\x00\x00\x00en\x00\x00" + payload)
    assert load_conversation(png(international)).character.name == "Zed"
    international_compressed = chunk(b"iTXt", b"chara\x00\x01\x00\x00\x00" + zlib.compress(payload))
    assert load_conversation(png(international_compressed)).character.name == "Zed"


def test_plain_json_chunk_and_base64_without_padding() -> None:
    assert load_conversation(png(chunk(b"tEXt", b"chara\x00" + card_json("Raw")))).character.name == "Raw"
    unpadded = base64.b64encode(card_json("Pad")).rstrip(b"=")
    assert load_conversation(png(chunk(b"tEXt", b"chara\x00" + unpadded))).character.name == "Pad"


def test_a_v1_card_in_a_png() -> None:
    flat = json.dumps({"name": "Flat", "first_mes": "hey", "personality": "calm"}).encode()
    card = load_conversation(png(text_chunk(b"chara", flat))).character
    assert (card.name, card.spec, card.personality) == ("Flat", "chara_card_v1", "calm")


@pytest.mark.parametrize(
    ("data", "message", "location"),
    [
        (png(chunk(b"tEXt", b"Comment\x00hello")), "This PNG has no character card (no 'chara' or 'ccv3' text chunk)", "PNG"),
        (png(chunk(b"tEXt", b"chara\x00%%%%")), "is not valid base64", "PNG chunk tEXt 'chara'"),
        (png(text_chunk(b"chara", b"\xff\xfe\x00")), "does not hold UTF-8 text", "PNG chunk tEXt 'chara'"),
        (png(text_chunk(b"chara", b'{"spec": "chara_card_v2", "data": {"name": ')), "does not hold valid JSON", "PNG chunk tEXt 'chara'"),
        (png(text_chunk(b"chara", b"[1, 2]")), "must be an object", "PNG chunk tEXt 'chara': $"),
        (png(text_chunk(b"chara", card_json(""))), "has no name", "PNG chunk tEXt 'chara': $.data.name"),
        (png(chunk(b"zTXt", b"chara\x00\x00not zlib")), "cannot be decompressed", "PNG chunk zTXt 'chara'"),
        (png()[:30], "cut off", "byte 8"),
        (SIGNATURE + b"\x00\x00\x00\x05" + b"\x00\x01\x02\x03" + b"12345xxxx", "damaged", "byte 8"),
    ],
)
def test_bad_png_cards_say_what_is_wrong_and_where(data: bytes, message: str, location: str) -> None:
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(data)
    assert message in caught.value.message
    assert caught.value.location == location
    assert caught.value.code == "INVALID_CONVERSATION"


def test_a_card_before_a_cut_off_image_still_loads() -> None:
    data = png(text_chunk(b"chara", card_json("Early")))
    truncated = data[: data.index(b"IEND") - 4] + b"\x00\x00"
    assert load_conversation(truncated).character.name == "Early"


def test_a_png_is_only_ever_a_character_card() -> None:
    data = png(text_chunk(b"chara", card_json("X")))
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(data, "openai")
    assert "PNG" in caught.value.message
    assert load_conversation(data, "character-card").character.name == "X"


def test_decompression_bombs_are_refused() -> None:
    bomb = chunk(b"zTXt", b"chara\x00\x00" + zlib.compress(b"A" * 5_000_000))
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(png(bomb), max_bytes=1_000_000)
    assert "decompresses to more than" in caught.value.message


# -- bounded work: many compressed card chunks, many chunks


def bomb(keyword: bytes, size: int) -> bytes:
    return chunk(b"zTXt", keyword + b"\x00\x00" + zlib.compress(b"\x00" * size, 9))


@pytest.fixture
def inflated(monkeypatch) -> list[int]:
    """The size of everything the PNG reader decompresses, chunk by chunk."""
    sizes: list[int] = []
    original = png_module._inflate

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        sizes.append(len(out))
        return out

    monkeypatch.setattr(png_module, "_inflate", spy)
    return sizes


def test_many_compressed_card_chunks_are_not_all_decompressed(inflated: list[int]) -> None:
    # The file: 200 zTXt 'chara' chunks of 16 MB each, 3 MB on disk (8 s+ to refuse before).
    one = bomb(b"chara", 16 * MB)
    data = png(*[one] * 200)
    assert len(data) < 4 * MB
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(data)
    assert caught.value.code == "INVALID_CONVERSATION" and "not valid base64" in caught.value.message
    assert inflated == [16 * MB]  # the first chunk only


def test_everything_decompressed_from_one_file_stays_within_max_bytes(inflated: list[int]) -> None:
    data = png(bomb(b"chara", 12 * MB), bomb(b"ccv3", 12 * MB), bomb(b"ccv3", 12 * MB))
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(data)
    assert "zTXt 'ccv3' decompresses to more than" in caught.value.message
    assert sum(inflated) <= 16 * MB


def test_the_walk_stops_once_both_card_chunks_are_found(inflated: list[int]) -> None:
    data = png(text_chunk(b"chara", card_json("Old")), text_chunk(b"ccv3", card_json("New", "chara_card_v3")),
               *[bomb(b"chara", MB)] * 50, *[bomb(b"ccv3", MB)] * 50)
    assert load_conversation(data).character.name == "New"
    assert inflated == []


def test_a_png_with_too_many_chunks_is_refused_unless_the_card_came_first(monkeypatch) -> None:
    monkeypatch.setattr(png_module, "MAX_CHUNKS", 50)
    filler = [chunk(b"tIME", b"\x07\xe8\x01\x01\x00\x00\x00")] * 60
    with pytest.raises(InvalidConversation) as caught:
        load_conversation(png(*filler, text_chunk(b"chara", card_json("Late"))))
    assert "more than 50 chunks" in caught.value.message
    assert load_conversation(png(text_chunk(b"chara", card_json("Early")), *filler)).character.name == "Early"
