"""contextfit: see exactly what an LLM will see.

Fifteen names, loaded on first use: ``import contextfit`` reads no file,
opens no connection and imports none of the engine, so a page or a script
pays only for what it touches.

>>> import contextfit
>>> plan = contextfit.plan_prompt([{"role": "user", "content": "Hello"}], model="gpt-4o")
>>> plan.prompt_tokens, plan.strategy
(8, 'truncate')

The rest of the package is reached through its modules, named in the docs
(``contextfit.pipeline.settings.PlanSettings``, ``contextfit.tokens.models.get_model``,
``contextfit.errors``…). Names this facade used to export still resolve,
with a ``DeprecationWarning`` that says where they live now.
"""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: The public API: each name and the module that defines it (loaded on first use).
_PUBLIC = {
    "shift_context": "fitting.host",
    "FitResult": "fitting.results",
    "plan_prompt": "pipeline.plan",
    "PromptPlan": "pipeline.plan",
    "FitSession": "pipeline.session",
    "replay": "replays.run",
    "registry": "fitting.registry",
    "ContextStrategyRegistry": "fitting.registry",
    "register_interceptor": "fitting.registry",
    "token_counter": "tokens.chat_counter",
    "get_tokenizer": "tokens.tokenizers",
    "load_conversation": "inputs.formats",
    "Conversation": "inputs.formats",
    "ContextfitError": "errors",
    "TokenBudgetExceeded": "errors",
}

#: SPEC names outside the fifteen: they resolve without a warning.
_SPEC = {
    "InvalidConversation": "errors",
    "PromptContextAudit": "serving.audit",
}

#: Names the facade exported before it was cut to fifteen, and where they live now.
_MOVED = {
    **dict.fromkeys(
        ["AuditNotFound", "ChatNotFound", "DuplicateStrategy", "GenerationCancelled", "GenerationInterrupted",
         "InvalidBudget", "InvalidMessages", "InvalidModelFile", "InvalidSettings",
         "ProviderAuthError", "ProviderBadRequest", "ProviderContextOverflow", "ProviderError",
         "ProviderRateLimited", "ProviderTimeout", "ProviderUnavailable", "RequestTooLarge",
         "TokenizerUnavailable", "UnknownModel", "UnknownProvider", "UnknownStrategy"],
        "errors",
    ),
    "clear_caches": "caches",
    "AuditBlock": "serving.audit",
    "TokenCounter": "tokens.chat_counter",
    "CharacterCard": "inputs.formats",
    "detect_format": "inputs.formats",
    "load_conversation_file": "inputs.formats",
    **dict.fromkeys(["Lorebook", "LorebookEntry", "activate", "lorebook_blocks", "parse_world_info"], "inputs.lorebook"),
    **dict.fromkeys(["ModelInfo", "get_model", "list_models", "load_models_file", "register_model", "reload_models"],
                    "tokens.models"),
    "PlanBlock": "pipeline.plan",
    "TokenizerInfo": "pipeline.plan",
    "compare_strategies": "pipeline.session",
    "PlanSettings": "pipeline.settings",
    **dict.fromkeys(["InterceptorRegistry", "interceptors", "load_plugins"], "fitting.registry"),
    "Replay": "replays.run",
    **dict.fromkeys(["EmbeddingRelevance", "LexicalRelevance", "RelevanceScorer"], "fitting.relevance"),
    "Decision": "fitting.results",
    **dict.fromkeys(["ContextStrategy", "Proposal"], "fitting.strategies"),
    **dict.fromkeys(["Tokenizer", "TokenizerProfile", "profiles"], "tokens.tokenizers"),
    **dict.fromkeys(["Store", "open_store"], "serving.store"),
    **dict.fromkeys(["generate", "send_conversation"], "serving.generation"),
    "create_app": "serving.api",
}

__all__ = sorted(_PUBLIC)


#: The package's modules, reachable as attributes (``contextfit.errors.InvalidSettings``).
_MODULES = {"caches", "cli", "dashboard", "environment", "errors", "fitting", "inputs", "jsonpath", "limits",
            "pipeline", "replays", "serving", "text", "tokens"}


def __getattr__(name: str):
    if name in _MODULES:
        return import_module(f".{name}", __name__)
    module = _PUBLIC.get(name) or _SPEC.get(name)
    if module is None and name == "audit":  # the module reading stored audits
        warnings.warn("contextfit.audit is contextfit.serving.audits; import it from there.",
                      DeprecationWarning, stacklevel=2)
        return import_module(".serving.audits", __name__)
    if module is None and (module := _MOVED.get(name)) is not None:
        warnings.warn(f"contextfit.{name} is contextfit.{module}.{name}; import it from there.",
                      DeprecationWarning, stacklevel=2)
    if module is None:
        raise AttributeError(f"module 'contextfit' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    if name in _PUBLIC or name in _SPEC:
        globals()[name] = value  # the next access is a plain attribute read
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, "__version__"})


if TYPE_CHECKING:  # for type checkers and editors: the fifteen, re-exported
    from .errors import ContextfitError as ContextfitError
    from .errors import TokenBudgetExceeded as TokenBudgetExceeded
    from .fitting.host import shift_context as shift_context
    from .fitting.registry import ContextStrategyRegistry as ContextStrategyRegistry
    from .fitting.registry import register_interceptor as register_interceptor
    from .fitting.registry import registry as registry
    from .fitting.results import FitResult as FitResult
    from .inputs.formats import Conversation as Conversation
    from .inputs.formats import load_conversation as load_conversation
    from .pipeline.plan import PromptPlan as PromptPlan
    from .pipeline.session import FitSession as FitSession
    from .replays.run import replay as replay
    from .tokens.chat_counter import token_counter as token_counter
    from .tokens.tokenizers import get_tokenizer as get_tokenizer
