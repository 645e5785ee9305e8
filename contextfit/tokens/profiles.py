"""The tokenizer catalogue: how tokens are counted for each family of models (data only).

Every approximate profile is an exact ``cl100k_base`` count scaled up by a
documented factor and rounded up; the basis of each is in :data:`PROFILES` and
in ``docs/tokenizers.md``. Nothing here loads a vocabulary
(``vocabularies.py`` does; ``tokenizers.py`` counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TokenizerUnavailable

__all__ = ["PROFILES", "ChatFormat", "TokenizerProfile", "find_profile", "profiles"]


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


def find_profile(name: object) -> TokenizerProfile:
    """The profile called ``name`` (case and blanks forgiven), or ``TOKENIZER_UNAVAILABLE`` listing the known ones."""
    profile = PROFILES.get(name) if isinstance(name, str) else None
    if profile is None and isinstance(name, str):
        profile = PROFILES.get(name.strip().lower())
    if profile is None:
        raise TokenizerUnavailable(
            f"No tokenizer profile named {name!r}. Known profiles: {', '.join(PROFILES)}."
        )
    return profile
