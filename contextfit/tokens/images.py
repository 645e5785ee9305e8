"""Image parts counted from their dimensions, by each provider's published rule.

An image's cost depends on its width and height, never on its byte size (a
1 MB base64 photo is not 250,000 text tokens). The dimensions come from the
image header — PNG, JPEG, GIF or WebP — read without decoding any pixels;
only the first bytes of a data URL are decoded. An image whose size cannot
be known (a plain URL, a file id, a header that is cut or lies) costs the
rule's documented default and is flagged ``approximate``.

The rules (sources and worked examples in docs/tokenizers.md):

* ``openai-tiles`` (GPT-4o and the tile family): ``detail: low`` costs the
  base (85); ``high``/``auto`` scale the image to fit 2048×2048, then its
  shortest side to 768, and add 170 per 512-px tile to the base 85.
  GPT-4o mini uses the same tiling with 2,833 base and 5,667 per tile.
* ``openai-patches`` (GPT-4.1 mini and nano): 32-px patches, at most 1,536
  (the image is scaled down to fit), times the model's multiplier.
* ``anthropic``: ``ceil(width × height / 750)`` after the documented resize
  (long edge at most 1,568 px, at most ~1,600 tokens ≈ 1.2 megapixels).
* ``gemini``: 258 when both sides are at most 384 px, else 258 per 768×768 tile.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidImage

#: Content part types that hold an image (OpenAI Chat, OpenAI Responses, Anthropic).
IMAGE_PARTS = frozenset(("image_url", "input_image", "image", "image_file"))
#: Largest width or height a header may claim before it is taken for a lie.
MAX_SIDE = 1 << 16
#: Base64 characters decoded first from a data URL: enough for every PNG, GIF
#: and WebP header and for JPEG frame headers after typical EXIF blocks.
HEAD_CHARS = 96 * 1024


def image_size(data: bytes) -> tuple[int, int]:
    """``(width, height)`` from a PNG, JPEG, GIF or WebP header.

    Raises ``INVALID_IMAGE`` naming what is wrong for any other bytes, a cut
    header or impossible dimensions (0, or more than 65,536 px).

    >>> image_size(b"GIF89a" + (640).to_bytes(2, "little") + (480).to_bytes(2, "little"))
    (640, 480)
    >>> image_size(b"hello")
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidImage: The image is not a PNG, JPEG, GIF or WebP (its first bytes are b'hello').
    """
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        size = _png(data)
    elif data[:3] == b"\xff\xd8\xff":
        size = _jpeg(data)
    elif data[:6] in (b"GIF87a", b"GIF89a"):
        size = _need(data, 10, "GIF") and struct.unpack("<HH", data[6:10])
    elif data[:4] == b"RIFF" and (data[8:12] == b"WEBP" or len(data) < 12):
        size = _webp(data)
    else:
        raise InvalidImage(f"The image is not a PNG, JPEG, GIF or WebP (its first bytes are {bytes(data[:8])!r}).")
    width, height = size
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise InvalidImage(f"The image header claims {width}×{height} pixels, which is impossible.")
    return width, height


def _need(data: bytes, length: int, kind: str) -> bool:
    if len(data) < length:
        raise InvalidImage(f"The {kind} header is cut short ({len(data)} bytes; its size needs {length}).")
    return True


def _png(data: bytes) -> tuple[int, int]:
    _need(data, 24, "PNG")
    if data[12:16] != b"IHDR":
        raise InvalidImage("The PNG does not start with its IHDR chunk, which holds the size.")
    return struct.unpack(">II", data[16:24])


# JPEG start-of-frame markers (every SOFn but DHT C4, JPG C8 and DAC CC).
_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg(data: bytes) -> tuple[int, int]:
    position = 2
    while True:
        while position < len(data) and data[position] == 0xFF and position + 1 < len(data) and data[position + 1] == 0xFF:
            position += 1  # fill bytes
        _need(data, position + 4, "JPEG")
        if data[position] != 0xFF:
            raise InvalidImage(f"The JPEG has no marker where one belongs (byte {position}).")
        marker = data[position + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            position += 2
            continue
        if marker == 0xD9:
            raise InvalidImage("The JPEG ends before any frame header gives its size.")
        length = struct.unpack(">H", data[position + 2 : position + 4])[0]
        if length < 2:
            raise InvalidImage(f"The JPEG has a segment of impossible length {length} (byte {position}).")
        if marker in _SOF:
            _need(data, position + 9, "JPEG")
            height, width = struct.unpack(">HH", data[position + 5 : position + 9])
            return width, height
        position += 2 + length


def _webp(data: bytes) -> tuple[int, int]:
    _need(data, 30, "WebP")
    chunk = data[12:16]
    if chunk == b"VP8 ":
        if data[23:26] != b"\x9d\x01\x2a":
            raise InvalidImage("The WebP (lossy) frame has no start code.")
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        if data[20] != 0x2F:
            raise InvalidImage("The WebP (lossless) frame has no signature byte.")
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    raise InvalidImage(f"The WebP has an unknown first chunk {bytes(chunk)!r}.")


def data_url_size(url: str) -> tuple[int, int]:
    """The size of the image in a ``data:image/...;base64,`` URL, decoding only its head.

    >>> data_url_size("data:image/gif;base64," + base64.b64encode(b"GIF89a\\x10\\x00\\x20\\x00").decode())
    (16, 32)
    """
    head, _, payload = url.partition(",")
    if not head.startswith("data:") or not head.endswith(";base64"):
        raise InvalidImage("The data URL is not base64 (it should start data:image/...;base64,).")
    return base64_size(payload)


def base64_size(payload: str) -> tuple[int, int]:
    """The size of a base64-encoded image, decoding its head first and all of it only if needed."""
    payload = payload.strip()
    cut = min(len(payload), HEAD_CHARS) // 4 * 4
    try:
        try:
            return image_size(base64.b64decode(payload[:cut] if cut else payload, validate=False))
        except InvalidImage as exc:
            if cut >= len(payload) or "cut short" not in str(exc) and "JPEG" not in str(exc):
                raise
            return image_size(base64.b64decode(payload + "=" * (-len(payload) % 4), validate=False))
    except (binascii.Error, ValueError) as exc:
        raise InvalidImage(f"The image's base64 data cannot be decoded ({exc}).") from None


# -- the providers' rules -------------------------------------------------------


def openai_tiles(width: int, height: int, detail: str = "auto", base: int = 85, tile: int = 170) -> int:
    """OpenAI's tile rule (GPT-4o family).

    >>> openai_tiles(1024, 1024, "high"), openai_tiles(2048, 4096, "high"), openai_tiles(4096, 8192, "low")
    (765, 1105, 85)
    """
    if detail == "low":
        return base
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    width, height = width * scale, height * scale
    return base + tile * math.ceil(width / 512) * math.ceil(height / 512)


def openai_patches(width: int, height: int, multiplier: float = 1.0, cap: int = 1536) -> int:
    """OpenAI's 32-px patch rule (GPT-4.1 mini and nano), scaled down to ``cap`` patches.

    >>> openai_patches(1024, 1024), openai_patches(1800, 2400)
    (1024, 1452)
    """
    patches = math.ceil(width / 32) * math.ceil(height / 32)
    if patches > cap:
        shrink = math.sqrt(cap * 32 * 32 / (width * height))
        scaled_w, scaled_h = width * shrink, height * shrink
        # then fit the width to a whole number of patches, as OpenAI's worked example does
        fit = math.floor(scaled_w / 32) / (scaled_w / 32)
        patches = math.ceil(scaled_w * fit / 32) * math.ceil(scaled_h * fit / 32)
    return math.ceil(min(patches, cap) * multiplier)


#: Anthropic resizes an image whose long edge passes 1,568 px or that would
#: cost more than "~1,600 tokens". The exact area is not published; its table
#: of sizes sent unscaled goes up to 784×1568 (1,229,312 px), so that is the
#: cap here: an image near it may be counted a few tokens high, never low.
ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 784 * 1568


def anthropic_tokens(width: int, height: int) -> int:
    """Anthropic's rule: ``ceil(w × h / 750)`` after the documented resize.

    >>> anthropic_tokens(200, 200), anthropic_tokens(1000, 1000), anthropic_tokens(1092, 1092)
    (54, 1334, 1590)
    """
    scale = min(1.0, ANTHROPIC_LONG_EDGE / max(width, height), math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)))
    if scale < 1.0:
        width, height = int(width * scale), int(height * scale)
    return math.ceil(width * height / 750)


def gemini_tokens(width: int, height: int) -> int:
    """Gemini's rule: 258 up to 384×384, else 258 per 768×768 tile.

    >>> gemini_tokens(384, 384), gemini_tokens(600, 400), gemini_tokens(1920, 1080)
    (258, 258, 1548)
    """
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


@dataclass(frozen=True, slots=True)
class ImageRule:
    """How one model family counts an image; ``default`` is the cost of an
    image whose size cannot be known (the rule's largest unscaled image)."""

    name: str
    kind: str  # tiles | patches | anthropic | gemini
    base: int = 85
    tile: int = 170
    multiplier: float = 1.0

    def tokens_for(self, width: int, height: int, detail: str = "auto") -> int:
        """Tokens for an image of ``width`` × ``height`` pixels."""
        if self.kind == "tiles":
            return openai_tiles(width, height, detail, self.base, self.tile)
        if self.kind == "patches":
            return openai_patches(width, height, self.multiplier)
        if self.kind == "anthropic":
            return anthropic_tokens(width, height)
        return gemini_tokens(width, height)

    def default(self, detail: str = "auto") -> int:
        """The documented cost of an image of unknown size: the most an image can
        cost after the rule's resize (OpenAI tiles: 768×2048, patches: the cap,
        Anthropic: 784×1568); Gemini has no cap, so 1536×1536 (4 tiles)."""
        if self.kind == "tiles":
            return self.tokens_for(768, 2048, detail)
        if self.kind == "patches":
            return math.ceil(1536 * self.multiplier)
        if self.kind == "anthropic":
            return math.ceil(ANTHROPIC_MAX_PIXELS / 750)
        return gemini_tokens(1536, 1536)

    def count(self, part: Mapping) -> tuple[int, bool]:
        """Tokens for one image content part, and whether the size was unknown
        (then the cost is :meth:`default`, an estimate). Never raises."""
        detail, size = _read_part(part)
        if self.kind == "tiles" and detail == "low":
            return self.base, False  # low detail is a fixed cost, whatever the size
        if size is None:
            return self.default(detail), True
        return self.tokens_for(*size, detail), False


OPENAI_TILES = ImageRule("openai-tiles", "tiles")
OPENAI_4O_MINI = ImageRule("openai-4o-mini", "tiles", base=2833, tile=5667)
OPENAI_41_MINI = ImageRule("openai-patches-1.62", "patches", multiplier=1.62)
OPENAI_41_NANO = ImageRule("openai-patches-2.46", "patches", multiplier=2.46)
ANTHROPIC = ImageRule("anthropic", "anthropic")
GEMINI = ImageRule("gemini", "gemini")

_BY_MODEL = {"gpt-4o-mini": OPENAI_4O_MINI, "gpt-4.1-mini": OPENAI_41_MINI, "gpt-4.1-nano": OPENAI_41_NANO}
_BY_PROVIDER = {"anthropic": ANTHROPIC, "google": GEMINI}


def rule_for(model_id: str, provider: str) -> ImageRule:
    """The image rule for a catalog model: its documented variant, else its
    provider's, else OpenAI's tile rule (an open model's vision encoder is not
    in the catalog, so its count is an estimate like its text).

    >>> rule_for("gpt-4o-mini", "openai").name, rule_for("claude-sonnet-4", "anthropic").name
    ('openai-4o-mini', 'anthropic')
    """
    for prefix, rule in _BY_MODEL.items():
        if model_id == prefix or model_id.startswith(prefix + "-"):
            return rule
    return _BY_PROVIDER.get(provider, OPENAI_TILES)


def profile_rule(profile: str) -> ImageRule:
    """The image rule for a tokenizer profile used without a model id.

    >>> profile_rule("o200k_base").name, profile_rule("anthropic-2026").name
    ('openai-tiles', 'anthropic')
    """
    if profile.startswith("anthropic"):
        return ANTHROPIC
    return GEMINI if profile.startswith("gemini") else OPENAI_TILES


def _read_part(part: Mapping) -> tuple[str, tuple[int, int] | None]:
    """``(detail, (width, height) or None)`` for an OpenAI or Anthropic image part."""
    detail = "auto"
    url: Any = None
    kind = part.get("type")
    if kind == "image_url":
        inner = part.get("image_url")
        if isinstance(inner, Mapping):
            url, detail = inner.get("url"), inner.get("detail") or "auto"
        else:
            url = inner
    elif kind == "input_image":  # the Responses API
        url, detail = part.get("image_url"), part.get("detail") or "auto"
    elif kind == "image":  # Anthropic
        source = part.get("source")
        if isinstance(source, Mapping):
            if source.get("type") == "base64" and isinstance(source.get("data"), str):
                return detail, _known(lambda: base64_size(source["data"]))
            url = source.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        return str(detail), _known(lambda: data_url_size(url))
    return str(detail), None


def _known(read) -> tuple[int, int] | None:
    try:
        return read()
    except InvalidImage:
        return None


def unknown_size(part: Any) -> bool:
    """Whether an image part's size cannot be read (it is counted at the default).

    >>> unknown_size({"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}})
    True
    """
    if not isinstance(part, Mapping) or part.get("type") not in IMAGE_PARTS:
        return False
    detail, size = _read_part(part)
    return size is None and not (detail == "low" and part.get("type") in ("image_url", "input_image"))
