"""contextfit: see exactly what an LLM will see.

The public API, listed explicitly (the names SPEC.md marks are kept
exactly). Importing contextfit reads no file and opens no connection; the
store, generation and the HTTP app (which need SQLAlchemy, httpx and
FastAPI) load on first use of their names.
"""

from .caches import clear_caches
from .serving.audit import AuditBlock, PromptContextAudit
from .tokens.chat_counter import TokenCounter, token_counter
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
from .fitting.host import shift_context
from .inputs.formats import CharacterCard, Conversation, detect_format, load_conversation, load_conversation_file
from .inputs.lorebook import Lorebook, LorebookEntry, activate, lorebook_blocks, parse_world_info
from .tokens.models import ModelInfo, get_model, list_models, load_models_file, register_model, reload_models
from .pipeline.plan import PlanBlock, PromptPlan, TokenizerInfo, compare_strategies, plan_prompt
from .pipeline.settings import PlanSettings
from .pipeline.session import FitSession
from .fitting.registry import (
    ContextStrategyRegistry,
    InterceptorRegistry,
    _builtins,
    interceptors,
    load_plugins,
    register_interceptor,
    registry,
)
from .replay.run import Replay, replay
from .fitting.relevance import EmbeddingRelevance, LexicalRelevance, RelevanceScorer
from .fitting.results import Decision, FitResult
from .fitting.strategies import ContextStrategy, Proposal
from .tokens.tokenizers import Tokenizer, TokenizerProfile, get_tokenizer, profiles

_builtins(registry)

__version__ = "0.1.0"

# Loaded on first use: they pull in SQLAlchemy, httpx and FastAPI.
_LAZY = {
    "audit": None,  # the module contextfit.serving.audits (reads audits through the store)
    "Store": "serving.store",
    "open_store": "serving.store",
    "generate": "serving.generation",
    "send_conversation": "serving.generation",
    "create_app": "serving.api",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'contextfit' has no attribute {name!r}")
    from importlib import import_module

    module = _LAZY[name]
    if module is None:
        return import_module(".views.audits", __name__)
    return getattr(import_module(f".{module}", __name__), name)


#: The public API: SPEC.md's names and the few more the README documents. Every
#: other name imported above stays importable from ``contextfit`` and from its module.
__all__ = [
    "ContextStrategy",
    "ContextStrategyRegistry",
    "ContextfitError",
    "Conversation",
    "Decision",
    "FitResult",
    "FitSession",
    "InvalidConversation",
    "PlanSettings",
    "PromptContextAudit",
    "PromptPlan",
    "TokenBudgetExceeded",
    "audit",
    "clear_caches",
    "compare_strategies",
    "get_model",
    "get_tokenizer",
    "list_models",
    "load_conversation",
    "load_conversation_file",
    "plan_prompt",
    "register_interceptor",
    "registry",
    "replay",
    "shift_context",
    "token_counter",
]
