"""contextfit: see exactly what an LLM will see.

The public API, listed explicitly (SPEC.md names are kept exactly).
"""

from .errors import (
    ContextfitError,
    DuplicateStrategy,
    InvalidBudget,
    InvalidConversation,
    InvalidMessages,
    TokenBudgetExceeded,
    TokenizerUnavailable,
    UnknownModel,
    UnknownStrategy,
)
from .fitting import shift_context
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

_builtins(registry)

__version__ = "0.1.0"

__all__ = [
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
