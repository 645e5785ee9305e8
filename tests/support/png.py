"""PNG files built chunk by chunk: character cards inside images, and damaged ones."""

from __future__ import annotations

import json
import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(*chunks: bytes) -> bytes:
    """A 1x1 grey PNG with the given extra chunks before IEND."""
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    return SIGNATURE + header + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + b"".join(chunks) + chunk(b"IEND", b"")


def card_json(name: str, spec: str = "chara_card_v2", **fields: object) -> bytes:
    data = {"name": name, "description": "", "first_mes": f"Hi, I am {name}.", **fields}
    return json.dumps({"spec": spec, "spec_version": spec[-1] + ".0", "data": data}).encode()
