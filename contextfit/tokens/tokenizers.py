"""Counting tokens for one profile: :class:`Tokenizer` and :func:`get_tokenizer`.

Lazy: importing this module reads no file and loads no vocabulary. The profiles
are in ``profiles.py`` (the catalogue), the exact vocabularies in
``vocabularies.py``; :class:`~contextfit.tokens.chat_counter.TokenCounter`
(``chat_counter.py``) is the ``count_tokens(messages)`` callable the fitting
engine takes, chat-format overhead included.
"""

from __future__ import annotations

import json
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contextfit.tokens import blank_runs
from contextfit.tokens.memo import DIGEST_FROM, TextMemo, digest
from contextfit.tokens.profiles import PROFILES, TokenizerProfile, find_profile, profiles
from contextfit.tokens.vocabularies import exact_encoding, load_encoding

if TYPE_CHECKING:  # tiktoken is imported on first load, not at import time
    import tiktoken

__all__ = ["PROFILES", "Tokenizer", "TokenizerProfile", "get_tokenizer", "load_encoding", "profiles"]

#: Bytes a tokenizer's text-count cache may hold (each tokenizer has its own);
#: past it the oldest counts are forgotten. Long texts are keyed by a digest
#: (``contextfit/tokens/memo.py``), so the cache never keeps a message alive.
CACHE_BYTES = 16 * 1024 * 1024

_LOCK = threading.RLock()


# -------------------------------------------------------------------------- tokenizer

_DIGIT_TABLES: dict[str, bytes] = {}


def _digit_extra_table(encoding: tiktoken.Encoding) -> bytes:
    """For each token id, how many more tokens it costs where every digit is its own token.

    The exact encodings keep numbers in tokens of up to 3 digits, so a number
    token of ``k`` digits stands for ``k`` tokens in families that split digits.
    """
    table = _DIGIT_TABLES.get(encoding.name)
    if table is None:
        extra = bytearray(encoding.max_token_value + 1)
        for token in encoding.token_byte_values():
            try:
                text = token.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(text) > 1 and all(unicodedata.category(char)[0] == "N" for char in text):
                extra[encoding.encode_single_token(token)] = len(text) - 1
        table = _DIGIT_TABLES[encoding.name] = bytes(extra)
    return table


def _as_text(value: object) -> str:
    """Text for a value that is not a string: what a client would serialize."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, (int, float)):
        return str(value)
    return _json(value)


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # cycles, odd keys, absurd nesting
        try:
            return repr(value)
        except Exception:  # noqa: BLE001 - a broken __repr__ must not break counting
            return ""




@dataclass(frozen=True, slots=True, eq=False)
class Tokenizer:
    """Counts tokens for one profile. Get one with :func:`get_tokenizer`.

    >>> tok = get_tokenizer("o200k_base")
    >>> tok.name, tok.approximate, tok.count("Hello world!")
    ('o200k_base', False, 3)
    >>> get_tokenizer("anthropic").count("Hello world!")  # ceil(3 x 1.35)
    5
    """

    profile: TokenizerProfile
    encoding: Any = field(repr=False)  # the exact tiktoken.Encoding counts start from
    _cache: TextMemo[int] = field(default_factory=lambda: TextMemo(CACHE_BYTES), repr=False)
    _digit_extra: bytes = field(default=b"", repr=False)  # token id -> digits in it - 1

    def __post_init__(self) -> None:
        if self.profile.split_digits and not self._digit_extra:
            object.__setattr__(self, "_digit_extra", _digit_extra_table(self.encoding))

    @property
    def name(self) -> str:
        """The profile name, e.g. ``"o200k_base"`` or ``"anthropic"``."""
        return self.profile.name

    @property
    def approximate(self) -> bool:
        """True when counts are an estimate rather than the model's vocabulary."""
        return self.profile.approximate

    @property
    def basis(self) -> str:
        """One sentence: how counts are made."""
        return self.profile.basis

    def count(self, text: str) -> int:
        """Tokens in ``text``; special-token text counts as ordinary text.

        Never raises on odd text: blank runs of any length are counted exactly
        (``contextfit/tokens/blank_runs.py``), where tiktoken alone panics past a million.

        >>> get_tokenizer("cl100k_base").count("<|endoftext|>")
        7
        >>> get_tokenizer("o200k_base").count(" " * 1_000_000)
        7813
        """
        if text.__class__ is not str:
            text = _as_text(text)
        key = text if len(text) < DIGEST_FROM else digest(text)
        tokens = self._cache.lookup(key)
        if tokens is None:
            profile = self.profile
            digits = profile.split_digits
            if len(text) < blank_runs.LONG_BLANK_RUN:  # too short for a run tiktoken cannot take
                ids = self.encoding.encode_ordinary(text)
                tokens = len(ids)
                if digits:  # a number token of k digits costs k tokens in these families
                    tokens += sum(map(self._digit_extra.__getitem__, ids))
            else:  # a long text: its ids a part at a time
                tokens = 0
                for ids in blank_runs.encode_parts(self.encoding, text):
                    tokens += len(ids)
                    if digits:
                        tokens += sum(map(self._digit_extra.__getitem__, ids))
            if profile.approximate:
                tokens = -(-tokens * profile.factor_percent // 100)
            self._cache.put_key(key, tokens)
        return tokens

    def count_many(self, texts: Iterable[str]) -> list[int]:
        """``count`` for each text, in order.

        >>> get_tokenizer("o200k_base").count_many(["Hello", "Hello world!"])
        [1, 3]
        """
        count = self.count
        return [count(text) for text in texts]

    def encode(self, text: str) -> list[int]:
        """Token ids of the underlying exact encoding (for approximate profiles: of cl100k_base).

        >>> get_tokenizer("cl100k_base").encode("Hello world!")
        [9906, 1917, 0]
        """
        return blank_runs.encode_ordinary(self.encoding, _as_text(text))

    def pieces(self, text: str) -> list[str]:
        """``text`` split into token strings, for a token viewer.

        Each token's bytes are decoded on their own (``errors="replace"``), so a
        character split across tokens shows as U+FFFD. Approximate profiles show
        their base encoding's pieces.

        >>> get_tokenizer("o200k_base").pieces("Hello world!")
        ['Hello', ' world', '!']
        """
        decode = self.encoding.decode_single_token_bytes
        return [decode(token).decode("utf-8", errors="replace") for token in self.encode(text)]


_TOKENIZERS: dict[str, Tokenizer] = {}


def get_tokenizer(profile: str) -> Tokenizer:
    """The cached :class:`Tokenizer` for a profile name (see :func:`profiles`).

    The first call per vocabulary loads it (offline, about 0.1-0.3 s).

    >>> get_tokenizer("o200k_base") is get_tokenizer("o200k_base")
    True
    """
    tokenizer = _TOKENIZERS.get(profile) if isinstance(profile, str) else None
    if tokenizer is None:
        info = find_profile(profile)
        with _LOCK:
            tokenizer = _TOKENIZERS.get(info.name)
            if tokenizer is None:
                tokenizer = _TOKENIZERS[info.name] = Tokenizer(info, exact_encoding(info.encoding))
    return tokenizer
