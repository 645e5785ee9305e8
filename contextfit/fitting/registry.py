"""Registries of strategies and interceptors.

Modelled on tiktoken's registry (a plain dict behind a lock that rejects
duplicate names) and pluggy's undo functions: ``register`` returns a cleanup
callable that removes exactly that registration, and calling it twice is
harmless. Streamlit serves sessions on threads, so every access is locked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import DuplicateStrategy, InvalidStrategy, UnknownStrategy

Cleanup = Callable[[], None]

#: The origin of the package's own registrations, the only trusted ones.
BUILT_IN = "built-in"



@dataclass(frozen=True, slots=True)
class StrategyInfo:
    """A registered strategy with where it came from (for the Plugins page)."""

    name: str
    strategy: Any
    description: str
    origin: str


def _describe(obj: Any) -> str:
    text = getattr(obj, "description", None) or (obj.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(str(text).split())


class ContextStrategyRegistry:
    """Strategies by name.

    >>> reg = ContextStrategyRegistry()
    >>> undo = reg.register("keep-all", lambda messages, count_tokens, budget, **options: list(messages))
    >>> reg.names()
    ['keep-all']
    >>> undo(); undo()
    >>> reg.names()
    []

    ``builtins``, when given, returns the strategies registered first, as
    ``built-in``, on the registry's first use (the default registry's
    built-ins load only when a strategy is first looked up or listed).
    """

    def __init__(self, builtins: Callable[[], Sequence[Any]] | None = None) -> None:
        self._lock = threading.Lock()
        self._pending = builtins
        self._entries: dict[str, StrategyInfo] = {}

    def _ready(self) -> None:
        """Register the pending built-ins (under the lock), ahead of anything else."""
        if self._pending is None:
            return
        pending, self._pending = self._pending, None
        first = {}
        for strategy in pending():
            _check_builtin(strategy.name, strategy)
            first[strategy.name] = StrategyInfo(strategy.name, strategy, strategy.description, BUILT_IN)
        self._entries = {**first, **self._entries}

    def register(self, name: str, strategy: Any, *, description: str | None = None, origin: str = "plugin") -> Cleanup:
        """Register ``strategy`` under ``name``; returns the cleanup callable.

        Raises :class:`~contextfit.errors.DuplicateStrategy` when the name is
        taken (call the earlier registration's cleanup first).
        """
        if not isinstance(name, str) or not name.strip():
            raise InvalidStrategy(f"A strategy name must be a non-empty string, got {name!r}.")
        if origin == BUILT_IN:
            _check_builtin(name, strategy)
        if not callable(strategy) and not callable(getattr(strategy, "propose", None)):
            raise InvalidStrategy(
                f"Strategy {name!r} must be callable as strategy(messages, count_tokens, budget, **options); "
                f"got {type(strategy).__name__}."
            )
        info = StrategyInfo(name, strategy, description or _describe(strategy), origin)
        with self._lock:
            self._ready()
            taken = self._entries.get(name)
            if taken is not None:
                raise DuplicateStrategy(
                    f"A strategy named {name!r} is already registered (from {taken.origin}). "
                    f"Call the cleanup its register() returned before registering another."
                )
            self._entries[name] = info

        def cleanup() -> None:
            with self._lock:
                if self._entries.get(name) is info:
                    del self._entries[name]

        return cleanup

    def get(self, name: str) -> Any:
        """The strategy registered as ``name``; ``UNKNOWN_STRATEGY`` otherwise."""
        with self._lock:
            self._ready()
            info = self._entries.get(name) if isinstance(name, str) else None
            if info is None:
                raise UnknownStrategy(name, sorted(self._entries))
            return info.strategy

    def names(self) -> list[str]:
        """Registered names, built-ins first in registration order."""
        with self._lock:
            self._ready()
            return list(self._entries)

    def entries(self) -> list[StrategyInfo]:
        """Every registration with its description and origin."""
        with self._lock:
            self._ready()
            return list(self._entries.values())

    def __contains__(self, name: object) -> bool:
        with self._lock:
            self._ready()
            return name in self._entries

    def __len__(self) -> int:
        with self._lock:
            self._ready()
            return len(self._entries)


def _check_builtin(name: str, strategy: Any) -> None:
    from .strategies import is_trusted

    if not is_trusted(strategy):
        raise InvalidStrategy(
            f"Strategy {name!r} cannot be registered as {BUILT_IN!r}: only the package's own strategies are."
        )


@dataclass(frozen=True, slots=True)
class InterceptorInfo:
    """A registered interceptor."""

    name: str
    interceptor: Callable[[list[dict]], list[dict] | None]
    origin: str
    description: str


class InterceptorRegistry:
    """Interceptors in registration order; ``register`` returns a cleanup."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[InterceptorInfo] = []

    def register(
        self, interceptor: Callable[[list[dict]], list[dict] | None], *, name: str | None = None, origin: str = "plugin"
    ) -> Cleanup:
        """Add ``interceptor`` (called as ``fn(messages)``); returns the cleanup."""
        if not callable(interceptor):
            raise InvalidStrategy(f"An interceptor must be callable as fn(messages); got {type(interceptor).__name__}.")
        label = name or getattr(interceptor, "__qualname__", None) or type(interceptor).__name__
        info = InterceptorInfo(str(label), interceptor, origin, _describe(interceptor))
        with self._lock:
            self._entries.append(info)

        def cleanup() -> None:
            with self._lock:
                self._entries = [entry for entry in self._entries if entry is not info]

        return cleanup

    def entries(self) -> list[InterceptorInfo]:
        """A snapshot of the registered interceptors, in order."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _builtin_strategies() -> tuple:
    from .strategies import BUILTINS

    return BUILTINS


registry = ContextStrategyRegistry(builtins=_builtin_strategies)
interceptors = InterceptorRegistry()


def register_interceptor(interceptor: Callable[[list[dict]], list[dict] | None], *, name: str | None = None) -> Cleanup:
    """Register an interceptor on the default registry; returns the cleanup.

    An interceptor is called as ``fn(messages)`` with a copy of the final
    provider messages and returns the new list (or ``None`` for no change).
    The host recounts and runs a final fit after it, so it cannot push the
    prompt over the budget.
    """
    return interceptors.register(interceptor, name=name)


# -- entry points ---------------------------------------------------------------

ENTRY_POINT_GROUP = "contextfit.plugins"
#: The code of a plugin that failed to load: reported by :func:`plugin_errors`, never raised.
PLUGIN_ERROR = "PLUGIN_ERROR"
_loaded_lock = threading.Lock()
_loaded = False
_plugin_errors: list[dict] = []
_plugin_cleanups: list[Cleanup] = []


class PluginHost:
    """What an entry-point plugin receives: the doors it may register through."""

    def __init__(self, origin: str, cleanups: list[Cleanup]) -> None:
        self.origin = origin
        self._cleanups = cleanups

    def register_strategy(self, name: str, strategy: Any, *, description: str | None = None) -> Cleanup:
        """Register a strategy on the default registry."""
        cleanup = registry.register(name, strategy, description=description, origin=self.origin)
        self._cleanups.append(cleanup)
        return cleanup

    def register_interceptor(self, interceptor: Callable[[list[dict]], list[dict] | None], *, name: str | None = None) -> Cleanup:
        """Register an interceptor on the default registry."""
        cleanup = interceptors.register(interceptor, name=name, origin=self.origin)
        self._cleanups.append(cleanup)
        return cleanup


def load_plugins(*, force: bool = False) -> list[dict]:
    """Load the installed plugins of the ``contextfit.plugins`` entry-point group.

    Each entry point names a callable ``setup(host)`` that registers through
    ``host.register_strategy(...)`` / ``host.register_interceptor(...)``.
    Runs once per process (``force=True`` reloads). A plugin that fails to
    load is reported, not fatal: the returned list (also
    :func:`plugin_errors`) holds ``{"code": "PLUGIN_ERROR", "plugin", "message"}``.
    """
    global _loaded
    from importlib.metadata import entry_points

    with _loaded_lock:
        if _loaded and not force:
            return list(_plugin_errors)
        _unload()
        _loaded = True
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(getattr(entry, "dist", None), "name", None)
            origin = f"entry point {entry.name}" + (f" ({dist})" if dist else "")
            cleanups: list[Cleanup] = []
            try:
                setup = entry.load()
                if not callable(setup):
                    raise TypeError(f"{entry.value} is not callable; it must be setup(host)")
                setup(PluginHost(origin, cleanups))
            except Exception as exc:  # a broken plugin must not take the host down
                for cleanup in cleanups:
                    cleanup()
                _plugin_errors.append(
                    {"code": PLUGIN_ERROR, "plugin": entry.name, "message": f"{type(exc).__name__}: {exc}"}
                )
            else:
                _plugin_cleanups.extend(cleanups)
        return list(_plugin_errors)


def unload_plugins() -> None:
    """Undo every registration made by entry-point plugins (they load again on next use)."""
    global _loaded
    with _loaded_lock:
        _unload()
        _loaded = False


def _unload() -> None:
    for cleanup in reversed(_plugin_cleanups):
        cleanup()
    _plugin_cleanups.clear()
    _plugin_errors.clear()


def plugin_errors() -> list[dict]:
    """Plugins that failed to load, as diagnostics."""
    with _loaded_lock:
        return list(_plugin_errors)
