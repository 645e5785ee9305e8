"""The one error family of contextfit.

Every error carries a stable ``code`` (the strings users, the API and the
acceptance checks rely on) and a message a person can act on. The HTTP layer
maps :class:`ContextfitError` to ``{"error": {"code", "message"}}`` once.
"""

from __future__ import annotations

from typing import Any


class ContextfitError(Exception):
    """Base class: a stable ``code`` plus a human message.

    >>> err = ContextfitError("something is off")
    >>> err.code, str(err)
    ('CONTEXTFIT_ERROR', 'something is off')
    """

    code: str = "CONTEXTFIT_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by the API: ``{"code", "message"}``."""
        return {"code": self.code, "message": self.message}


class TokenBudgetExceeded(ContextfitError):
    """The protected blocks alone do not fit the budget.

    Nothing may be sent to a provider when this is raised.

    >>> err = TokenBudgetExceeded(protected_tokens=5200, budget=4096)
    >>> err.code, err.protected_tokens, err.budget
    ('TOKEN_BUDGET_EXCEEDED', 5200, 4096)
    """

    code = "TOKEN_BUDGET_EXCEEDED"

    def __init__(self, protected_tokens: int, budget: int, message: str | None = None) -> None:
        self.protected_tokens = protected_tokens
        self.budget = budget
        super().__init__(
            message
            or (
                f"The protected context alone needs {protected_tokens} tokens but the budget "
                f"is {budget}. Raise the context limit, lower the response reserve, or unpin "
                f"or shorten protected messages."
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "protectedTokens": self.protected_tokens, "budget": self.budget}


class UnknownStrategy(ContextfitError):
    """No strategy is registered under that name."""

    code = "UNKNOWN_STRATEGY"

    def __init__(self, name: object, available: list[str]) -> None:
        self.name = name
        self.available = available
        super().__init__(
            f"No context strategy named {name!r}. Registered strategies: {', '.join(available) or 'none'}."
        )


class DuplicateStrategy(ContextfitError):
    """A strategy name is already taken; unregister the old one first."""

    code = "DUPLICATE_STRATEGY"


class InvalidMessages(ContextfitError):
    """The messages given to the engine are not a list of message dicts."""

    code = "INVALID_MESSAGES"

    def __init__(self, message: str, *, location: str | None = None) -> None:
        self.location = location
        super().__init__(f"{message} (at {location})" if location else message)


class InvalidBudget(ContextfitError):
    """The budget is not a non-negative whole number of tokens."""

    code = "INVALID_BUDGET"


class InvalidSettings(ContextfitError):
    """A prompt setting is out of range or of the wrong type; the message names it."""

    code = "INVALID_SETTINGS"


class InvalidConversation(ContextfitError):
    """An importer could not read the input.

    ``location`` says where (a line number, a JSON path, a PNG chunk).
    """

    code = "INVALID_CONVERSATION"

    def __init__(self, message: str, *, location: str | None = None) -> None:
        self.location = location
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "location": self.location}


class TokenizerUnavailable(ContextfitError):
    """A tokenizer profile is unknown or its vocabulary cannot be loaded."""

    code = "TOKENIZER_UNAVAILABLE"


class UnknownModel(ContextfitError):
    """A model id is not in the catalog."""

    code = "UNKNOWN_MODEL"


class PluginError(ContextfitError):
    """A plugin could not be loaded; ``plugin`` names the offending object."""

    code = "PLUGIN_ERROR"

    def __init__(self, message: str, *, plugin: object = None) -> None:
        self.plugin = plugin
        super().__init__(message)


class InvalidModelFile(ContextfitError):
    """A model catalog file (TOML) or a model definition has a bad value.

    ``path``, ``model`` and ``field`` say where; any of them may be ``None``.

    >>> err = InvalidModelFile("context_limit must be a positive whole number",
    ...                        path="models.toml", model="my-model", field="context_limit")
    >>> err.code, err.field
    ('INVALID_MODEL_FILE', 'context_limit')
    """

    code = "INVALID_MODEL_FILE"

    def __init__(
        self,
        message: str,
        *,
        path: object = None,
        model: str | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.model = model
        self.field = field
        where = ", ".join(
            part
            for part in (
                f"file {self.path}" if self.path else "",
                f"model {model!r}" if model else "",
                f"field {field!r}" if field else "",
            )
            if part
        )
        super().__init__(f"{where}: {message}" if where else message)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "path": self.path, "model": self.model, "field": self.field}
