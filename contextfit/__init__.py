"""contextfit: see exactly what an LLM will see.

The public API, listed explicitly (SPEC.md names are kept exactly).
"""

from .errors import (
    ContextfitError,
    DuplicateStrategy,
    InvalidBudget,
    InvalidConversation,
    InvalidMessages,
    InvalidSettings,
    TokenBudgetExceeded,
    TokenizerUnavailable,
    UnknownModel,
    UnknownStrategy,
)
from .fitting import shift_context
from .pipeline import PlanBlock, PromptPlan, TokenizerInfo, compare_strategies, plan_prompt
from .formats import CharacterCard, Conversation, detect_format, load_conversation, load_conversation_file
from .lorebook import Lorebook, LorebookEntry, activate, lorebook_blocks, parse_world_info
from .models import ModelInfo, get_model, list_models, load_models_file, register_model, reload_models
from .plugins import (
    ContextStrategyRegistry,
    InterceptorRegistry,
    _builtins,
    interceptors,
    load_plugins,
    register_interceptor,
    registry,
)
from .relevance import EmbeddingRelevance, LexicalRelevance, RelevanceScorer
from .results import Decision, FitResult
from .strategies import ContextStrategy, Proposal
from .chat_counter import TokenCounter, token_counter
from .tokenizers import Tokenizer, TokenizerProfile, get_tokenizer, profiles

_builtins(registry)

__version__ = "0.1.0"

__all__ = [
    "InvalidSettings",
    "PlanBlock",
    "PromptPlan",
    "TokenizerInfo",
    "compare_strategies",
    "plan_prompt",
    "CharacterCard",
    "Conversation",
    "detect_format",
    "load_conversation",
    "load_conversation_file",
    "Lorebook",
    "LorebookEntry",
    "ModelInfo",
    "TokenCounter",
    "Tokenizer",
    "TokenizerProfile",
    "reload_models",
    "activate",
    "get_model",
    "get_tokenizer",
    "list_models",
    "load_models_file",
    "lorebook_blocks",
    "parse_world_info",
    "profiles",
    "register_model",
    "token_counter",
    "ContextStrategy",
    "ContextStrategyRegistry",
    "ContextfitError",
    "Decision",
    "DuplicateStrategy",
    "EmbeddingRelevance",
    "FitResult",
    "InterceptorRegistry",
    "InvalidBudget",
    "InvalidConversation",
    "InvalidMessages",
    "LexicalRelevance",
    "Proposal",
    "RelevanceScorer",
    "TokenBudgetExceeded",
    "TokenizerUnavailable",
    "UnknownModel",
    "UnknownStrategy",
    "interceptors",
    "load_plugins",
    "register_interceptor",
    "registry",
    "shift_context",
]
