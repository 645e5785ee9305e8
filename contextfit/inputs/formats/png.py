"""Character cards inside PNG images: a ``chara`` (V2) or ``ccv3`` (V3) text chunk.

The chunk text is base64 of the card's JSON. ``tEXt``, ``zTXt`` and
``iTXt`` chunks are read; when both keywords are present ``ccv3`` wins,
and ``chara`` is the fallback when ``ccv3`` cannot be read.

The work per file is bounded: only the first chunk of each keyword is read (a
later one is skipped before it is decompressed), the walk stops once both are
found (or at ``IEND``), everything decompressed may add up to ``max_bytes``
at most, and at most :data:`MAX_CHUNKS` chunks are looked at.
A file of 200 compressed ``chara`` chunks of 16 MB each (3 MB on disk) took
8 s to refuse when every one was decompressed; it now decompresses one.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass

from contextfit.errors import InvalidConversation
from contextfit.limits import MAX_PNG_CHUNKS

from .cards import card_conversation, read_card
from .conversation import Conversation
from .source import PNG_SIGNATURE, refuse_lone_surrogates

CARD_KEYWORDS = ("ccv3", "chara")  # in order of preference
_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")
NO_CARD = "This PNG has no character card (no 'chara' or 'ccv3' text chunk)."
#: Chunks looked at per file at most (see contextfit.limits).
MAX_CHUNKS = MAX_PNG_CHUNKS


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
    """The first ``ccv3`` and ``chara`` text chunks of a PNG, by lower-case keyword.

    Everything decompressed adds up to ``max_bytes`` at most; see the module docstring.
    """
    if not data.startswith(PNG_SIGNATURE):
        raise InvalidConversation("This is not a PNG image (its signature is missing).", location="byte 0")
    found: dict[str, TextChunk] = {}
    budget = [max_bytes]  # bytes that decompressing may still produce
    position = len(PNG_SIGNATURE)
    for _ in range(MAX_CHUNKS):
        if position >= len(data):
            return found
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
            body = data[position + 8:position + 8 + length]
            chunk = _text_chunk(chunk_type.decode("ascii"), body, found, budget, max_bytes)
            if chunk is not None:
                found[chunk.keyword.lower()] = chunk
                if len(found) == len(CARD_KEYWORDS):
                    return found  # the card and its fallback: nothing after them matters
        if chunk_type == b"IEND":
            return found
        position = end
    if found:
        return found
    raise InvalidConversation(
        f"This PNG has more than {MAX_CHUNKS:,} chunks before any character card; it is not read further.",
        location=f"byte {position}",
    )


def _truncated(found: dict[str, TextChunk], position: int) -> dict[str, TextChunk]:
    if found:
        return found  # the card came before the cut; the missing image data does not matter here
    raise InvalidConversation(
        f"This PNG is cut off at byte {position}, before any character card was found.", location=f"byte {position}"
    )


def _text_chunk(
    chunk_type: str, body: bytes, found: dict[str, TextChunk], budget: list[int], max_bytes: int
) -> TextChunk | None:
    """The card chunk in ``body``, or ``None`` for any other text chunk or a
    keyword already found (skipped before anything is decompressed)."""
    keyword, separator, rest = body.partition(b"\x00")
    if not separator or len(keyword) > 79:
        return None  # not a well-formed text chunk; no card can hide in it
    name = keyword.decode("latin-1")
    if name.lower() not in CARD_KEYWORDS or name.lower() in found:
        return None
    location = f"PNG chunk {chunk_type} {name!r}"
    if chunk_type == "tEXt":
        return TextChunk(chunk_type, name, rest)
    if chunk_type == "zTXt":
        return TextChunk(chunk_type, name, _inflate(rest[1:], location, budget, max_bytes))
    # iTXt: compression flag, method, language tag \0, translated keyword \0, text
    if len(rest) < 2:
        return None
    compressed = rest[0] == 1
    _language, _, tail = rest[2:].partition(b"\x00")
    _translated, _, text = tail.partition(b"\x00")
    return TextChunk(chunk_type, name, _inflate(text, location, budget, max_bytes) if compressed else text)


def _inflate(data: bytes, location: str, budget: list[int], max_bytes: int) -> bytes:
    """Decompress at most what is left of the file's ``budget`` (and take it from there)."""
    allowed = budget[0]
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, allowed + 1)
    except zlib.error as error:
        raise InvalidConversation(f"The {location} cannot be decompressed: {error}.", location=location) from None
    if len(out) > allowed:
        left = "" if allowed == max_bytes else f" (what is left of the {max_bytes} bytes all of a file's compressed text may make)"
        raise InvalidConversation(f"The {location} decompresses to more than {allowed} bytes{left}.", location=location)
    budget[0] = allowed - len(out)
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
