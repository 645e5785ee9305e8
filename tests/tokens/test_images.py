"""Image parts are counted from their header's dimensions by each provider's rule (issue 15)."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

import contextfit
from contextfit.tokens import images
from contextfit.errors import InvalidImage
from contextfit.tokens.images import image_size


def encoded(width: int, height: int, kind: str, **save) -> bytes:
    buffer = io.BytesIO()
    mode = "RGBA" if save.pop("alpha", False) else "RGB"
    picture = Image.new(mode, (width, height), (120, 30, 200))
    if save.pop("noisy", False):  # a bigger file of the same size
        picture = Image.effect_noise((width, height), 80).convert(mode)
    picture.save(buffer, kind, **save)
    return buffer.getvalue()


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode()


# -- header parsers ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "save"),
    [
        ("PNG", {}),
        ("PNG", {"alpha": True}),
        ("JPEG", {}),
        ("JPEG", {"progressive": True}),  # SOF2
        ("JPEG", {"exif": b"Exif\x00\x00" + b"\x00" * 30_000}),  # the frame header after a big APP1
        ("GIF", {}),
        ("WEBP", {}),  # lossy: VP8
        ("WEBP", {"lossless": True}),  # VP8L
        ("WEBP", {"alpha": True, "exif": b"Exif\x00\x00" + b"\x00" * 20}),  # VP8X
    ],
)
@pytest.mark.parametrize(("width", "height"), [(1, 1), (640, 480), (333, 1999), (4097, 17)])
def test_every_format_gives_its_size_from_the_header(kind, save, width, height):
    data = encoded(width, height, kind, **dict(save))
    assert image_size(data) == (width, height)
    assert images.data_url_size(data_url(data)) == (width, height)


@pytest.mark.parametrize(("kind", "cut"), [("PNG", 20), ("JPEG", 20), ("GIF", 8), ("WEBP", 9), ("WEBP", 25)])
def test_a_cut_header_is_a_clear_error(kind, cut):
    data = encoded(300, 200, kind)
    with pytest.raises(InvalidImage) as caught:
        image_size(data[:cut])
    assert caught.value.code == "INVALID_IMAGE"
    assert "cut short" in str(caught.value) or "no marker" in str(caught.value)


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + b"\x00\x00\x00\x00" + b"\x00\x00\x01\x00",  # 0 wide
        b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + b"\xff\xff\xff\xff" * 2,  # 4 billion px
        b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dtEXt" + b"\x00" * 8,  # no IHDR first
        b"\xff\xd8\xff\xe0\x00\x01",  # a segment of impossible length
        b"\xff\xd8\xff\xd9\x00\x00",  # ends before a frame
        b"RIFF\x00\x00\x00\x00WEBPVP9 " + b"\x00" * 20,  # unknown chunk
        b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 20,  # no start code
        b"%PDF-1.7",
        b"",
    ],
)
def test_lying_or_foreign_headers_are_refused_not_tracebacks(data):
    with pytest.raises(InvalidImage):
        image_size(data)


# -- the providers' published worked examples ------------------------------------------


def test_openai_tile_rule_matches_the_documented_examples():
    # platform.openai.com/docs/guides/vision, "Calculating costs"
    assert images.openai_tiles(1024, 1024, "high") == 765
    assert images.openai_tiles(2048, 4096, "high") == 1105
    assert images.openai_tiles(4096, 8192, "low") == 85
    assert images.openai_tiles(512, 512, "auto") == 255  # one tile
    assert images.openai_tiles(1024, 1024, "high", base=2833, tile=5667) == 2833 + 4 * 5667  # GPT-4o mini


def test_openai_patch_rule_matches_the_documented_examples():
    # the GPT-4.1 mini/nano section: 1024×1024 → 1024 patches; 1800×2400 → 1452 after the scale-down
    assert images.openai_patches(1024, 1024) == 1024
    assert images.openai_patches(1800, 2400) == 1452
    assert images.openai_patches(1024, 1024, 1.62) == 1659  # ceil(1024 × 1.62)
    assert images.openai_patches(8000, 8000) <= 1536


def test_anthropic_rule_matches_the_documented_table():
    # docs.anthropic.com vision: 200×200 ~54, 1000×1000 ~1334, 1092×1092 ~1590
    assert [images.anthropic_tokens(s, s) for s in (200, 1000, 1092)] == [54, 1334, 1590]
    assert images.anthropic_tokens(784, 1568) == 1640  # ceil(1,229,312 / 750)  # the largest size the docs send unscaled
    # a 4000×3000 photo is scaled down first: it costs what the largest allowed size does, not 16,000
    assert 1550 <= images.anthropic_tokens(4000, 3000) <= 1640


def test_gemini_rule():
    # ai.google.dev token guide: both sides <= 384 → 258; else 258 per 768×768 tile
    assert images.gemini_tokens(384, 384) == 258 and images.gemini_tokens(385, 10) == 258
    assert images.gemini_tokens(1920, 1080) == 258 * 3 * 2


# -- in the counters and the plan --------------------------------------------------------


def openai_image(data: bytes, detail: str | None = None) -> dict:
    inner = {"url": data_url(data)}
    if detail:
        inner["detail"] = detail
    return {"type": "image_url", "image_url": inner}


def image_cost(model: str, part: dict) -> int:
    counter = contextfit.token_counter(model)
    return counter.count_message({"role": "user", "content": [part]}) - counter.count_message({"role": "user", "content": []})


def test_counted_from_dimensions_never_from_byte_size():
    small = encoded(1024, 1024, "PNG")
    big = encoded(1024, 1024, "PNG", noisy=True)
    assert len(big) > 20 * len(small)
    assert image_cost("gpt-4o", openai_image(small, "high")) == image_cost("gpt-4o", openai_image(big, "high")) == 765
    assert image_cost("gpt-4o", openai_image(big, "low")) == 85


def test_each_model_uses_its_rule():
    data = encoded(1000, 1000, "JPEG")
    anthropic = {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                              "data": base64.b64encode(data).decode()}}
    assert image_cost("claude-sonnet-4", anthropic) == 1334
    assert image_cost("gpt-4o-mini", openai_image(data, "high")) == 2833 + 4 * 5667
    assert image_cost("gpt-4.1-mini", openai_image(data)) == images.openai_patches(1000, 1000, 1.62)
    assert image_cost("gemini-2.5-flash", openai_image(data)) == 258 * 4


def test_a_url_image_costs_the_documented_default_and_the_plan_says_approximate():
    url = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    chat = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, url]}]
    assert image_cost("gpt-4o", url) == images.OPENAI_TILES.default() == 85 + 8 * 170
    plan = contextfit.plan_prompt(chat, model="gpt-4o")
    assert plan.tokenizer.approximate is True  # o200k_base is exact, but the image size was guessed
    [found] = [d for d in plan.diagnostics if d["code"] == "IMAGE_SIZE_UNKNOWN"]
    assert found["images"] == 1 and found["tokensEach"] == 1445
    exact = contextfit.plan_prompt([{"role": "user", "content": [openai_image(encoded(64, 64, "GIF"))]}], model="gpt-4o")
    assert exact.tokenizer.approximate is False and not [d for d in exact.diagnostics if d["code"] == "IMAGE_SIZE_UNKNOWN"]


def test_a_lying_image_in_a_message_is_counted_at_the_default_never_raised():
    lying = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 4).decode()
    part = {"type": "image_url", "image_url": {"url": lying}}
    assert image_cost("gpt-4o", part) == images.OPENAI_TILES.default()
    assert image_cost("claude-sonnet-4", {"type": "image", "source": {"type": "base64", "data": "!!!not base64"}}) == (
        images.ANTHROPIC.default())
    plan = contextfit.plan_prompt([{"role": "user", "content": [part]}], model="gpt-4o")
    assert any(d["code"] == "IMAGE_SIZE_UNKNOWN" for d in plan.diagnostics)
