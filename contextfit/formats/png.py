"""Character cards inside PNG images: a ``chara`` (V2) or ``ccv3`` (V3) text chunk.

The chunk text is base64 of the card's JSON. ``tEXt``, ``zTXt`` and
``iTXt`` chunks are read; when both keywords are present ``ccv3`` wins,
and ``chara`` is the fallback when ``ccv3`` cannot be read.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass

from contextfit.errors import InvalidConversation

from .cards import card_conversation, read_card
from .conversation import Conversation
from .source import PNG_SIGNATURE, refuse_lone_surrogates

CARD_KEYWORDS = ("ccv3", "chara")  # in order of preference
_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")
NO_CARD = "This PNG has no character card (no 'chara' or 'ccv3' text chunk)."


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A PNG text chunk: its type, keyword and (decompressed) text bytes."""

    chunk_type: str
    keyword: str
    text: bytes

    @property
    def location(self) -> str:
        return f"PNG chunk {self.chunk_type} {self.keyword!r}"


def import_png_card(data: bytes, max_bytes: int) -> Conversation:
    """Read the character card stored in a PNG image."""
    chunks = card_chunks(data, max_bytes)
    if not chunks:
        raise InvalidConversation(NO_CARD, location="PNG")
    first_error: InvalidConversation | None = None
    for keyword in CARD_KEYWORDS:
        chunk = chunks.get(keyword)
        if chunk is None:
            continue
        try:
            card, warnings = read_card(decode_card_json(chunk), f"{chunk.location}: $")
        except InvalidConversation as error:
            first_error = first_error or error
            continue
        if first_error is not None:
            warnings = [f"The 'ccv3' chunk could not be read ({first_error.message}); the 'chara' chunk was used.", *warnings]
        return card_conversation(card, warnings)
    assert first_error is not None
    raise first_error


def card_chunks(data: bytes, max_bytes: int) -> dict[str, TextChunk]:
    """The ``chara`` / ``ccv3`` text chunks of a PNG, by lower-case keyword."""
    if not data.startswith(PNG_SIGNATURE):
        raise InvalidConversation("This is not a PNG image (its signature is missing).", location="byte 0")
    found: dict[str, TextChunk] = {}
    position = len(PNG_SIGNATURE)
    while position < len(data):
        if position + 8 > len(data):
            return _truncated(found, position)
        length = int.from_bytes(data[position:position + 4], "big")
        chunk_type = data[position + 4:position + 8]
        if length > 0x7FFFFFFF or not chunk_type.isalpha():
            raise InvalidConversation(f"This PNG is damaged: the chunk at byte {position} is not valid.", location=f"byte {position}")
        end = position + 12 + length
        if end > len(data):
            return _truncated(found, position)
        if chunk_type in _TEXT_CHUNKS:
            chunk = _text_chunk(chunk_type.decode("ascii"), data[position + 8:position + 8 + length], position, max_bytes)
            if chunk is not None and chunk.keyword.lower() in CARD_KEYWORDS:
                found.setdefault(chunk.keyword.lower(), chunk)
        if chunk_type == b"IEND":
            break
        position = end
    return found


def _truncated(found: dict[str, TextChunk], position: int) -> dict[str, TextChunk]:
    if found:
        return found  # the card came before the cut; the missing image data does not matter here
    raise InvalidConversation(
        f"This PNG is cut off at byte {position}, before any character card was found.", location=f"byte {position}"
    )


def _text_chunk(chunk_type: str, body: bytes, position: int, max_bytes: int) -> TextChunk | None:
    keyword, separator, rest = body.partition(b"\x00")
    if not separator or len(keyword) > 79:
        return None  # not a well-formed text chunk; no card can hide in it
    name = keyword.decode("latin-1")
    if name.lower() not in CARD_KEYWORDS:
        return None
    location = f"PNG chunk {chunk_type} {name!r}"
    if chunk_type == "tEXt":
        return TextChunk(chunk_type, name, rest)
    if chunk_type == "zTXt":
        return TextChunk(chunk_type, name, _inflate(rest[1:], location, max_bytes))
    # iTXt: compression flag, method, language tag \0, translated keyword \0, text
    if len(rest) < 2:
        return None
    compressed = rest[0] == 1
    _language, _, tail = rest[2:].partition(b"\x00")
    _translated, _, text = tail.partition(b"\x00")
    return TextChunk(chunk_type, name, _inflate(text, location, max_bytes) if compressed else text)


def _inflate(data: bytes, location: str, max_bytes: int) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, max_bytes + 1)
    except zlib.error as error:
        raise InvalidConversation(f"The {location} cannot be decompressed: {error}.", location=location) from None
    if len(out) > max_bytes:
        raise InvalidConversation(f"The {location} decompresses to more than {max_bytes} bytes.", location=location)
    return out


def decode_card_json(chunk: TextChunk) -> object:
    """The JSON value in a card chunk: base64 of UTF-8 JSON (plain JSON is accepted too)."""
    raw = chunk.text.strip()
    if not raw.startswith(b"{"):
        compact = b"".join(raw.split())
        compact += b"=" * (-len(compact) % 4)
        try:
            raw = base64.b64decode(compact, altchars=b"-_" if (b"-" in compact or b"_" in compact) else None, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidConversation(
                f"The {chunk.location} is not valid base64, so the character card cannot be read.",
                location=chunk.location,
            ) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidConversation(
            f"The {chunk.location} does not hold UTF-8 text (byte {error.start} after decoding).",
            location=chunk.location,
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidConversation(
            f"The {chunk.location} does not hold valid JSON: {error.msg} at line {error.lineno}, column {error.colno}.",
            location=chunk.location,
        ) from None
    except (ValueError, RecursionError) as error:
        raise InvalidConversation(f"The {chunk.location} cannot be read: {error}.", location=chunk.location) from None
    refuse_lone_surrogates(value, f"{chunk.location}: $")
    return value
