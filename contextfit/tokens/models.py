"""The model catalog: context limit, default response reserve and tokenizer per model.

The built-in entries live in ``contextfit/data/models.toml``, each with the
public source of its figures. Users add or override models without code in a
TOML file of the same shape, read from ``$CONTEXTFIT_MODELS`` or else
``~/.config/contextfit/models.toml``::

    [models."my-llama"]            # a new model: context_limit, max_output, tokenizer
    provider = "meta"
    context_limit = 32768
    max_output = 2048
    tokenizer = "llama3"
    aliases = ["llama-local"]

    [models."gpt-4o"]              # an override: only the fields that change
    max_output = 4096

In code: :func:`register_model` and :func:`load_models_file`. Nothing is read at
import time; the first lookup loads the catalog.
"""

from __future__ import annotations

import datetime
import difflib
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from contextfit import environment
from contextfit.errors import InvalidModelFile, UnknownModel, shown
from contextfit.tokens.effective import EffectiveLength, effective_lengths, lengths_problem
from contextfit.tokens.prices import PRICE_FIELDS, Prices, price_problem
from contextfit.tokens.profiles import PROFILES

import tomllib

__all__ = [
    "PROVIDERS",
    "ModelInfo",
    "get_model",
    "list_models",
    "load_models_file",
    "register_model",
    "reload_models",
]

#: Environment variable naming the user's catalog file.
ENV_VAR = "CONTEXTFIT_MODELS"
#: The user's catalog file when ``$CONTEXTFIT_MODELS`` is not set (read if present).
USER_FILE = "~/.config/contextfit/models.toml"
#: Providers of the built-in catalog; user files may name others.
PROVIDERS = ("openai", "anthropic", "google", "meta", "mistral", "qwen", "deepseek")

_PROVIDER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_REQUIRED_FOR_NEW = ("context_limit", "max_output", "tokenizer")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model: its window, default response reserve and tokenizer profile.

    >>> info = ModelInfo("my-model", "meta", context_limit=8192, max_output=1024, tokenizer="llama3")
    >>> info.response_reserve, info.context_limit - info.response_reserve
    (1024, 7168)
    """

    id: str
    provider: str
    context_limit: int
    max_output: int
    tokenizer: str
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    #: Published prices (US dollars per million tokens), or None when the catalog has none.
    prices: Prices | None = None
    #: The shortest prompt prefix the provider caches for this model, where it documents one per
    #: model (Anthropic, Gemini); None: its provider's rule (``replays/prompt_cache.py``).
    cache_minimum: int | None = None
    #: The granularity of a cached prefix in tokens (OpenAI 128, DeepSeek 64); None: its provider's rule.
    cache_unit: int | None = None
    #: Published effective context lengths (``tokens/effective.py``): benchmark, tokens, source.
    effective_context: tuple[EffectiveLength, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.aliases, (list, set, frozenset)):
            object.__setattr__(self, "aliases", tuple(self.aliases))
        if isinstance(self.effective_context, (list, tuple)) and lengths_problem(self.effective_context) is None:
            object.__setattr__(self, "effective_context", effective_lengths(self.effective_context))
        if isinstance(self.prices, Mapping):
            problem = price_problem(self.prices)
            if problem:
                raise ValueError(f"ModelInfo {self.id!r}: prices {problem}")
            object.__setattr__(self, "prices", Prices(**self.prices))
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in values.items():
            problem = _field_problem(name, value, values)
            if problem:
                raise ValueError(f"ModelInfo {self.id!r}: {name} {problem}")

    @property
    def response_reserve(self) -> int:
        """Tokens kept free for the answer by default: the model's max output."""
        return self.max_output


def _field_problem(name: str, value: Any, values: Mapping[str, Any]) -> str | None:
    """What is wrong with one field's value, or None (shared by code and files)."""
    if name == "id":
        ok = isinstance(value, str) and value.strip() == value and value != ""
        return None if ok else "must be a non-empty string without surrounding spaces"
    if name == "provider":
        ok = isinstance(value, str) and _PROVIDER_NAME.fullmatch(value) is not None
        return None if ok else f"must be a lowercase name such as {', '.join(PROVIDERS)}; got {value!r}"
    if name == "context_limit":
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        return None if ok else f"must be a positive whole number of tokens; got {value!r}"
    if name == "max_output":
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            return f"must be a whole number of tokens (0 or more); got {value!r}"
        limit = values.get("context_limit")
        if isinstance(limit, int) and value >= limit:
            return f"({value}) must be smaller than context_limit ({limit}), or no prompt fits"
        return None
    if name == "tokenizer":
        if isinstance(value, str) and value in PROFILES:
            return None
        return f"must be one of the tokenizer profiles {', '.join(PROFILES)}; got {value!r}"
    if name == "aliases":
        ok = isinstance(value, (tuple, list)) and all(isinstance(a, str) and a.strip() for a in value)
        return None if ok else f"must be a list of non-empty strings; got {value!r}"
    if name in ("source", "notes"):
        return None if isinstance(value, str) else f"must be a string; got {value!r}"
    if name == "effective_context":
        return lengths_problem(value)
    if name in ("cache_minimum", "cache_unit"):
        ok = value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0)
        return None if ok else f"must be a positive whole number of tokens; got {value!r}"
    if name == "prices":
        if value is None or isinstance(value, Prices):
            return None
        if isinstance(value, Mapping):
            return price_problem(value)
        return f"must be a table of {', '.join(PRICE_FIELDS)}; got {value!r}"
    return f"is not a model field; use {', '.join(_FILE_FIELDS)}"


_FILE_FIELDS = tuple(f.name for f in fields(ModelInfo) if f.name != "id")


# ---------------------------------------------------------------------------- catalog


@dataclass(frozen=True, slots=True)
class _Catalog:
    """An immutable snapshot; writers build a new one under the lock, readers never lock."""

    models: dict[str, ModelInfo] = field(default_factory=dict)  # lowercased id -> info, in order
    aliases: dict[str, str] = field(default_factory=dict)  # lowercased alias -> lowercased id

    def find(self, key: str) -> ModelInfo | None:
        """Exact lookup of a lowercased id or alias; ids win over aliases."""
        info = self.models.get(key)
        if info is None:
            target = self.aliases.get(key)
            info = self.models.get(target) if target is not None else None
        return info

    def with_model(self, info: ModelInfo) -> _Catalog:
        key = info.id.lower()
        models = dict(self.models)
        models[key] = info  # replacing keeps the old position: list order stays stable
        aliases = {alias: target for alias, target in self.aliases.items() if target != key}
        aliases.update((alias.lower(), key) for alias in info.aliases)
        return _Catalog(models, aliases)

    def without(self, model_id: str) -> _Catalog:
        key = model_id.lower()
        models = {k: v for k, v in self.models.items() if k != key}
        aliases = {alias: target for alias, target in self.aliases.items() if target != key}
        return _Catalog(models, aliases)


_LOCK = threading.RLock()
_STATE: _Catalog | None = None


def _catalog() -> _Catalog:
    global _STATE
    catalog = _STATE
    if catalog is None:
        with _LOCK:
            if _STATE is None:
                built_in = resources.files("contextfit.data").joinpath("models.toml")
                where = "contextfit/data/models.toml"
                catalog = _apply(_Catalog(), _parse(built_in.read_text(encoding="utf-8"), where), where)
                user_file = _user_file()
                if user_file is not None:
                    catalog = _apply(catalog, _parse(_read(user_file), user_file), user_file)
                _STATE = catalog  # only once everything parsed: a bad user file leaves nothing half-loaded
            catalog = _STATE
    return catalog


def _user_file() -> Path | None:
    configured = (environment.read(ENV_VAR) or "").strip()
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise InvalidModelFile(
                f"${ENV_VAR} names a file that does not exist; create it or unset ${ENV_VAR}.", path=path
            )
        return path
    try:
        path = Path(USER_FILE).expanduser()
    except RuntimeError:  # no home directory
        return None
    return path if path.is_file() else None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidModelFile(f"cannot be read ({exc}).", path=path) from exc


def _parse(text: str, path: object) -> list[tuple[str, dict[str, Any]]]:
    """``[models."id"]`` tables of a catalog file, checked for shape (not yet for values)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidModelFile(f"is not valid TOML: {exc}.", path=path) from exc
    extra = [key for key in data if key != "models"]
    if extra:
        raise InvalidModelFile(
            f"has top-level key(s) {', '.join(map(repr, extra))}; put each model under [models.\"<id>\"].",
            path=path,
        )
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise InvalidModelFile('`models` must be a table: write [models."<id>"] sections.', path=path)
    entries = []
    for model_id, table in models.items():
        if not isinstance(table, dict):
            raise InvalidModelFile(
                f'must be a table of fields ({", ".join(_FILE_FIELDS)}).', path=path, model=model_id
            )
        entries.append((model_id, table))
    return entries


def _apply(catalog: _Catalog, entries: list[tuple[str, dict[str, Any]]], path: object = None) -> _Catalog:
    """Merge parsed entries onto a catalog: overrides keep unset fields, new ids need the essentials."""
    for model_id, table in entries:
        for name in table:
            if name not in _FILE_FIELDS:
                raise InvalidModelFile(
                    f"is not a model field; use {', '.join(_FILE_FIELDS)}.", path=path, model=model_id, field=name
                )
        existing = catalog.find(model_id.strip().lower())
        if existing is not None:
            values = {f.name: getattr(existing, f.name) for f in fields(ModelInfo)}
            values.update(table)
            values["id"] = existing.id
            if isinstance(table.get("aliases"), list):  # aliases add up rather than replace
                values["aliases"] = [*existing.aliases, *table["aliases"]]
            if isinstance(table.get("prices"), dict) and existing.prices is not None:  # a price override keeps the rest
                values["prices"] = {**existing.prices.to_dict(), **table["prices"]}
        else:
            missing = [name for name in _REQUIRED_FOR_NEW if name not in table]
            if missing:
                raise InvalidModelFile(
                    f"is a new model, so it needs {', '.join(missing)} "
                    f"(an override must use an id or alias the catalog already has).",
                    path=path, model=model_id, field=missing[0],
                )
            values = {"id": model_id, "provider": "custom", "aliases": (), "source": str(path or ""), "notes": "",
                      "prices": None, "cache_minimum": None, "cache_unit": None, "effective_context": ()}
            values.update(table)
        if isinstance(values.get("prices"), dict) and isinstance(values["prices"].get("date"), datetime.date):
            values["prices"] = {**values["prices"], "date": values["prices"]["date"].isoformat()}  # TOML's bare date
        for name in ("id", *_FILE_FIELDS):
            problem = _field_problem(name, values[name], values)
            if problem:
                raise InvalidModelFile(f"{problem}.", path=path, model=model_id, field=name)
        values["aliases"] = tuple(dict.fromkeys(values["aliases"]))
        if isinstance(values.get("prices"), dict):
            values["prices"] = Prices(**values["prices"])
        catalog = catalog.with_model(ModelInfo(**values))
    return catalog


# ------------------------------------------------------------------------- public API


def get_model(model_id: str) -> ModelInfo:
    """The catalog entry for a model id or alias, case-insensitively.

    Dated snapshots and provider prefixes resolve to their family when they are
    not listed themselves; an unknown id raises :class:`UnknownModel` with the
    closest ids.

    >>> get_model("GPT-4o-2024-08-06").id, get_model("claude-sonnet-4-20250514").id
    ('gpt-4o', 'claude-sonnet-4')
    >>> get_model("openai/gpt-4.1-2025-04-14").context_limit
    1047576
    """
    catalog = _catalog()
    if isinstance(model_id, str):
        for candidate in _candidates(model_id.strip().lower()):
            info = catalog.find(candidate)
            if info is not None:
                return info
    raise _unknown(model_id, catalog)


# Suffixes providers put on a family id: Bedrock versions, dates, "latest"/"preview".
_SUFFIXES = (
    re.compile(r"-v\d+(?::\d+)?$"),  # anthropic.claude-...-v1:0
    re.compile(r"[-@]\d{4}-\d{2}-\d{2}$"),  # gpt-4o-2024-08-06
    re.compile(r"[-@]\d{8}$"),  # claude-sonnet-4-20250514, claude-sonnet-4@20250514
    re.compile(r"-\d{3,4}$"),  # gpt-4-0613, mistral-large-2411, gemini-2.0-flash-001
    re.compile(r"-(?:preview|exp)-\d{2}-\d{2}$"),  # gemini-2.5-pro-preview-05-06
    re.compile(r"-(?:latest|preview|exp)$"),
)
_HOST_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?(?:anthropic|meta|mistral|deepseek|qwen|openai|google)\.")


def _candidates(key: str) -> Iterator[str]:
    """The key, then what it becomes without host prefixes and snapshot suffixes."""
    queue, seen = [key], set()
    while queue:
        candidate = queue.pop(0)
        if not candidate or candidate in seen:
            continue
        seen.add(candidate)
        yield candidate
        if "/" in candidate:  # openai/gpt-4o, models/gemini-2.5-pro
            queue.append(candidate.rsplit("/", 1)[1])
        prefix = _HOST_PREFIX.match(candidate)  # us.anthropic.claude-...
        if prefix:
            queue.append(candidate[prefix.end():])
        queue.extend(pattern.sub("", candidate) for pattern in _SUFFIXES if pattern.search(candidate))


def _unknown(model_id: object, catalog: _Catalog) -> UnknownModel:
    key = model_id.strip().lower() if isinstance(model_id, str) else ""
    names = [*catalog.models, *catalog.aliases]
    suggestions: list[str] = []
    for name in difflib.get_close_matches(key, names, n=8, cutoff=0.6) if key else []:
        canonical = catalog.find(name)
        if canonical is not None and canonical.id not in suggestions:
            suggestions.append(canonical.id)
    hint = f" Did you mean {', '.join(suggestions[:5])}?" if suggestions else ""
    named = str(model_id) if len(str(model_id)) <= 80 else "<its id>"  # a megabyte of name is not echoed twice
    error = UnknownModel(
        f"Unknown model {shown(model_id)}.{hint} `contextfit models` lists the catalog. To add it, "
        f'write [models."{named}"] with provider, context_limit, max_output and tokenizer '
        f"in ${ENV_VAR} or {USER_FILE}, or call contextfit.tokens.models.register_model(...)."
    )
    error.model_id = model_id  # type: ignore[attr-defined]
    error.suggestions = suggestions[:5]  # type: ignore[attr-defined]
    return error


def list_models() -> list[ModelInfo]:
    """Every model in the catalog, in a stable order (built-ins as listed, then added ones).

    >>> len(list_models()) >= 30
    True
    """
    return list(_catalog().models.values())


def register_model(info: ModelInfo) -> Callable[[], None]:
    """Add a model, or replace the one with the same id; returns an undo function.

    The undo restores exactly what was there before (calling it twice is harmless).

    >>> undo = register_model(ModelInfo("my-model", "meta", 8192, 1024, "llama3", aliases=("mine",)))
    >>> get_model("mine").context_limit
    8192
    >>> undo()
    """
    if not isinstance(info, ModelInfo):
        raise TypeError(f"register_model() takes a ModelInfo, not {type(info).__name__}.")
    global _STATE
    with _LOCK:
        catalog = _catalog()
        previous = catalog.models.get(info.id.lower())
        _STATE = catalog.with_model(info)

    def undo() -> None:
        global _STATE
        with _LOCK:
            current = _catalog()
            if current.models.get(info.id.lower()) is not info:
                return  # already undone, or replaced since: leave the newer entry alone
            _STATE = current.without(info.id) if previous is None else current.with_model(previous)

    return undo


def load_models_file(path: str | os.PathLike[str]) -> list[ModelInfo]:
    """Add or override models from a TOML file; returns the resulting entries.

    Raises :class:`contextfit.errors.InvalidModelFile` (naming the file, model
    and field) without changing the catalog when anything in the file is wrong.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "models.toml"
    >>> _ = path.write_text('[models."gpt-4o"]\\nmax_output = 4096\\n')
    >>> [(info.id, info.max_output, info.context_limit) for info in load_models_file(path)]
    [('gpt-4o', 4096, 128000)]
    >>> reload_models()  # back to the built-in figures
    """
    global _STATE
    path = Path(path).expanduser()
    entries = _parse(_read(path), path)
    with _LOCK:
        catalog = _apply(_catalog(), entries, path)
        _STATE = catalog
    return [catalog.find(model_id.strip().lower()) for model_id, _ in entries]  # type: ignore[misc]


def reload_models() -> None:
    """Forget the loaded catalog (and code registrations); the next lookup re-reads the files.

    >>> reload_models()
    >>> get_model("gpt-4o").max_output
    16384
    """
    global _STATE
    with _LOCK:
        _STATE = None
