"""Counting tokens for one profile: :class:`Tokenizer` and :func:`get_tokenizer`.

Lazy: importing this module reads no file and loads no vocabulary. The profiles
are in ``profiles.py`` (the catalogue), the exact vocabularies in
``vocabularies.py``; :class:`~contextfit.tokens.chat_counter.TokenCounter`
(``chat_counter.py``) is the ``count_tokens(messages)`` callable the fitting
engine takes, chat-format overhead included.
"""

from __future__ import annotations

import json
import logging
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contextfit.caches import register
from contextfit.tokens import approximate_rules, long_blanks, summed_counts as joins
from contextfit.tokens import fast as fast_counting
from contextfit.memo import DIGEST_FROM, TextMemo, digest
from contextfit.errors import TokenizerUnavailable
from contextfit.tokens.profiles import ESTIMATES, PROFILES, TokenizerProfile, find_profile, profiles
from contextfit.tokens.vocabularies import exact_encoding, load_encoding

if TYPE_CHECKING:  # tiktoken is imported on first load, not at import time
    import tiktoken

__all__ = ["PROFILES", "Tokenizer", "TokenizerProfile", "get_tokenizer", "load_encoding", "profiles"]

#: Bytes a tokenizer's text-count cache may hold (each tokenizer has its own);
#: past it the oldest counts are forgotten. Long texts are keyed by a digest
#: (``contextfit/memo.py``), so the cache never keeps a message alive.
CACHE_BYTES = 16 * 1024 * 1024

_LOCK = threading.RLock()


# -------------------------------------------------------------------------- tokenizer

_DIGIT_TABLES: dict[str, bytes] = register("tokenizers.digit_tables", {}, vocabulary=True)


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




def _is_panic(exc: BaseException) -> bool:
    """A failure that is no ``Exception`` and no request to stop: a Rust panic (``PanicException``)."""
    return not isinstance(exc, (Exception, KeyboardInterrupt, SystemExit, GeneratorExit))


def _upper(profile: TokenizerProfile, tokens: int, text: str) -> int:
    """The upper end of an approximate profile's band for an unscaled count of ``tokens``:
    scaled up by the factor, plus the per-text slack, and at least ``headroom_tokens`` above it.

    >>> _upper(PROFILES["gemini"], 100, "x"), _upper(PROFILES["anthropic"], 2, "x")
    (121, 6)
    """
    if not text:
        return -(-tokens * profile.factor_percent // 100)
    upper = -(-tokens * profile.factor_percent // 100) + profile.slack_tokens
    return max(upper, tokens + profile.headroom_tokens)


@dataclass(frozen=True, slots=True, eq=False)
class Tokenizer:
    """Counts tokens for one profile. Get one with :func:`get_tokenizer`.

    >>> tok = get_tokenizer("o200k_base")
    >>> tok.name, tok.approximate, tok.count("Hello world!")
    ('o200k_base', False, 3)
    >>> get_tokenizer("anthropic").count("Hello world!")  # max(ceil(3 x 1.35) + 1, 3 + 4)
    7
    """

    profile: TokenizerProfile
    encoding: Any = field(repr=False)  # the exact tiktoken.Encoding counts start from
    _cache: TextMemo[int] = field(default_factory=lambda: TextMemo(CACHE_BYTES), repr=False)
    _digit_extra: bytes = field(default=b"", repr=False)  # token id -> digits in it - 1
    #: Counts the vocabulary with the fastest exact engine (``contextfit/tokens/fast.py``);
    #: ``None``: tiktoken counts. Profiles that split digits need the ids, so tiktoken.
    fast: fast_counting.FastCounter | None = field(default=None, repr=False)

    #: An approximate profile's extra tokens for what the proxy under-counts (``approximate_rules.py``).
    _extra: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        profile = self.profile
        if profile.split_digits and not self._digit_extra:
            object.__setattr__(self, "_digit_extra", _digit_extra_table(self.encoding))
        if profile.approximate and profile.has_terms:
            object.__setattr__(self, "_extra", approximate_rules.extra_counter(
                profile.char_percent, profile.blank_tokens, profile.mixed_blanks))

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
        (``contextfit/tokens/long_blanks.py``), where tiktoken alone panics past a million.

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
            tokens = self._unscaled(text, key)
        if self.profile.approximate:  # the upper end of the band: what the fit uses
            return _upper(self.profile, tokens, text)
        return tokens

    def _unscaled(self, text: str, key: Any) -> int:
        """Count ``text`` with the exact encoding (digits split where the profile says) and cache it.

        The cache holds this unscaled count, which an approximate profile's
        upper bound (:meth:`count`) and point estimate (:meth:`estimate`) share.
        """
        try:
            tokens = self._counted(text)
        except BaseException as exc:  # noqa: BLE001 - a Rust panic is a BaseException
            if not _is_panic(exc):
                raise
            raise self._engine_failed(text, exc) from exc
        self._cache.put_key(key, tokens)
        return tokens

    def _engine_failed(self, text: str, exc: BaseException) -> TokenizerUnavailable:
        """``TOKENIZER_UNAVAILABLE`` for an engine's panic on ``text`` (a run that no cut of
        ``long_blanks.py`` covers): a refusal that says so, never a traceback or a 500."""
        return TokenizerUnavailable(
            f"The {self.name} tokenizer's engine failed on a text of {len(text):,} characters "
            f"({type(exc).__name__}: {str(exc)[:120]}); it cannot be counted exactly. Shorten the text's "
            "longest run of one kind of character, or choose another model."
        )

    def _counted(self, text: str) -> int:
        digits = self.profile.split_digits
        if self.fast is not None and not digits:
            tokens = self.fast.count(text)
        elif len(text) < long_blanks.LONG_BLANK_RUN:  # too short for a run tiktoken cannot take
            ids = self.encoding.encode_ordinary(text)
            tokens = len(ids)
            if digits:  # a number token of k digits costs k tokens in these families
                tokens += sum(map(self._digit_extra.__getitem__, ids))
        else:  # a long text: its ids a part at a time
            tokens = 0
            for ids in long_blanks.encode_parts(self.encoding, text):
                tokens += len(ids)
                if digits:
                    tokens += sum(map(self._digit_extra.__getitem__, ids))
        if self._extra is not None:  # what the proxy under-counts (approximate_rules.py)
            tokens += self._extra(text)
        return tokens

    def estimate(self, text: str) -> int:
        """The point estimate of ``text``'s tokens: :meth:`count` for an exact
        profile; for an approximate one the unscaled count times the profile's
        typical ratio (``point_percent``), never above :meth:`count`, the upper
        end of the band.

        >>> claude = get_tokenizer("anthropic")
        >>> claude.estimate("Hello world!"), claude.count("Hello world!")
        (3, 7)
        >>> get_tokenizer("o200k_base").estimate("Hello world!")
        3
        """
        profile = self.profile
        if not profile.approximate:
            return self.count(text)
        text = text if text.__class__ is str else _as_text(text)
        key = text if len(text) < DIGEST_FROM else digest(text)
        tokens = self._cache.lookup(key)  # one lookup: the unscaled count both numbers come from
        tokens = self._unscaled(text, key) if tokens is None else tokens
        return min(_upper(profile, tokens, text), (tokens * profile.point_percent + 50) // 100)

    def count_joined(self, parts: Sequence[str]) -> int:
        """``count("".join(parts))``, as the sum of the parts' (cached) counts where
        tiktoken provably cuts between them (``joins.py``: a part ending with a line
        break before one starting with ``-``); an approximate profile, or a pattern
        the proof does not cover, counts the join.

        >>> tok = get_tokenizer("o200k_base")
        >>> parts = ["Summary:\\n", "- The wolves came.\\n", "- They left."]
        >>> tok.count_joined(parts) == tok.count("".join(parts))
        True
        """
        if self.profile.approximate or self._extra is not None or not joins.covers(self.encoding):
            return self.count("".join(parts))
        texts = joins.runs(parts)
        counts = list(map(self._cache.lookup, [text if len(text) < DIGEST_FROM else digest(text) for text in texts]))
        if None in counts:  # the parts not counted yet (an exact profile's cached count is its count)
            counts = [self.count(text) if tokens is None else tokens for text, tokens in zip(texts, counts)]
        return sum(counts)

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
        text = _as_text(text)
        try:
            return long_blanks.encode_ordinary(self.encoding, text)
        except BaseException as exc:  # noqa: BLE001 - a Rust panic is a BaseException
            if not _is_panic(exc):
                raise
            raise self._engine_failed(text, exc) from exc

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


def _forget_tokenizers() -> None:
    with _LOCK:  # their count memos are emptied with every other TextMemo
        _TOKENIZERS.clear()


register("tokenizers.tokenizers", _TOKENIZERS, clear=_forget_tokenizers)


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
                try:
                    encoding = exact_encoding(info.encoding)
                except TokenizerUnavailable as exc:
                    if info.name not in ESTIMATES:
                        raise
                    # an open model's vocabulary package is missing: its estimate, flagged approximate
                    logging.getLogger(__name__).warning("%s; counting %s with its estimate.", exc, info.name)
                    info = ESTIMATES[info.name]
                    encoding = exact_encoding(info.encoding)
                tokenizer = _TOKENIZERS[info.name] = Tokenizer(
                    info, encoding, fast=fast_counting.counter_for(info.encoding, encoding)
                )
    return tokenizer
