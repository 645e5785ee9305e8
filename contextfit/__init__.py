"""contextfit: see exactly what an LLM will see.

The public API, listed explicitly (the names SPEC.md marks are kept
exactly). Importing contextfit reads no file and opens no connection; the
store, generation and the HTTP app (which need SQLAlchemy, httpx and
FastAPI) load on first use of their names.
"""

from . import audit
from .audit import AuditBlock, PromptContextAudit
from .caches import clear_caches
from .chat_counter import TokenCounter, token_counter
from .errors import (
    AuditNotFound,
    ChatNotFound,
    ContextfitError,
    DuplicateStrategy,
    GenerationCancelled,
    GenerationInterrupted,
    InvalidBudget,
    InvalidConversation,
    InvalidMessages,
    InvalidModelFile,
    InvalidRequest,
    InvalidSettings,
    PluginError,
    ProviderAuthError,
    ProviderBadRequest,
    ProviderContextOverflow,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    RequestTooLarge,
    TokenBudgetExceeded,
    TokenizerUnavailable,
    UnknownModel,
    UnknownProvider,
    UnknownStrategy,
)
from .fitting import shift_context
from .formats import CharacterCard, Conversation, detect_format, load_conversation, load_conversation_file
from .lorebook import Lorebook, LorebookEntry, activate, lorebook_blocks, parse_world_info
from .models import ModelInfo, get_model, list_models, load_models_file, register_model, reload_models
from .pipeline import PlanBlock, PromptPlan, TokenizerInfo, compare_strategies, plan_prompt
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
from .tokenizers import Tokenizer, TokenizerProfile, get_tokenizer, profiles

_builtins(registry)

__version__ = "0.1.0"

# Loaded on first use: they pull in SQLAlchemy, httpx and FastAPI.
_LAZY = {
    "Store": "store",
    "open_store": "store",
    "generate": "generation",
    "send_conversation": "generation",
    "create_app": "api",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'contextfit' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)


__all__ = [
    "AuditBlock",
    "AuditNotFound",
    "CharacterCard",
    "ChatNotFound",
    "ContextStrategy",
    "ContextStrategyRegistry",
    "ContextfitError",
    "Conversation",
    "Decision",
    "DuplicateStrategy",
    "EmbeddingRelevance",
    "FitResult",
    "GenerationCancelled",
    "GenerationInterrupted",
    "InterceptorRegistry",
    "InvalidBudget",
    "InvalidConversation",
    "InvalidMessages",
    "InvalidModelFile",
    "InvalidRequest",
    "InvalidSettings",
    "LexicalRelevance",
    "Lorebook",
    "LorebookEntry",
    "ModelInfo",
    "PlanBlock",
    "PluginError",
    "PromptContextAudit",
    "PromptPlan",
    "Proposal",
    "ProviderAuthError",
    "ProviderBadRequest",
    "ProviderContextOverflow",
    "ProviderError",
    "ProviderRateLimited",
    "ProviderTimeout",
    "ProviderUnavailable",
    "RelevanceScorer",
    "RequestTooLarge",
    "Store",
    "TokenBudgetExceeded",
    "TokenCounter",
    "Tokenizer",
    "TokenizerInfo",
    "TokenizerProfile",
    "TokenizerUnavailable",
    "UnknownModel",
    "UnknownProvider",
    "UnknownStrategy",
    "activate",
    "audit",
    "clear_caches",
    "compare_strategies",
    "create_app",
    "detect_format",
    "generate",
    "get_model",
    "get_tokenizer",
    "interceptors",
    "list_models",
    "load_conversation",
    "load_conversation_file",
    "load_models_file",
    "load_plugins",
    "lorebook_blocks",
    "open_store",
    "parse_world_info",
    "plan_prompt",
    "profiles",
    "register_interceptor",
    "register_model",
    "registry",
    "reload_models",
    "send_conversation",
    "shift_context",
    "token_counter",
]
