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

    Nothing may be sent to a provider when this is raised. ``prompt_tokens``
    is what the smallest possible prompt (the protected blocks and the
    request's overhead) needs; ``blocks`` lists every block with its tokens
    and reason (``index``, ``id``, ``role``, ``kind``, ``tokens``,
    ``included``, ``reason``), so the protected ones that caused the refusal
    can be shown — empty when the refusal came before the blocks were known.

    >>> err = TokenBudgetExceeded(protected_tokens=5200, budget=4096)
    >>> err.code, err.protected_tokens, err.budget, err.prompt_tokens
    ('TOKEN_BUDGET_EXCEEDED', 5200, 4096, 5200)
    """

    code = "TOKEN_BUDGET_EXCEEDED"

    def __init__(
        self,
        protected_tokens: int,
        budget: int,
        message: str | None = None,
        *,
        blocks: list[dict[str, Any]] | None = None,
        prompt_tokens: int | None = None,
    ) -> None:
        self.protected_tokens = protected_tokens
        self.budget = budget
        self.blocks = list(blocks or [])
        self.prompt_tokens = protected_tokens if prompt_tokens is None else prompt_tokens
        super().__init__(
            message
            or (
                f"The protected context alone needs {protected_tokens} tokens but the budget "
                f"is {budget}. Raise the context limit, lower the response reserve, or unpin "
                f"or shorten protected messages."
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "protectedTokens": self.protected_tokens, "budget": self.budget,
                "promptTokens": self.prompt_tokens, "blocks": self.blocks}


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for a message, cut to about ``limit`` characters: an error names
    what it was given, but a name of a megabyte is not echoed back whole (twice, for a model).

    >>> shown("gpt-4o"), shown("abc" * 200, limit=12), shown(list(range(100)), limit=12)
    ("'gpt-4o'", "'abcabc…' (600 characters)", '[0, 1, …')
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, str):  # closed by its own quote, and its length said
        return f"{text[: limit - 5]}…{text[0]} ({len(value):,} characters)"
    return f"{text[: limit - 5]}…"


class UnknownStrategy(ContextfitError):
    """No strategy is registered under that name."""

    code = "UNKNOWN_STRATEGY"

    def __init__(self, name: object, available: list[str]) -> None:
        self.name = name
        self.available = available
        super().__init__(
            f"No context strategy named {shown(name)}. Registered strategies: {', '.join(available) or 'none'}."
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


class UnsupportedOption(InvalidSettings):
    """An option given to a built-in strategy that does not take it (``stable_prefix`` for
    ``vector-recall``): refused, never silently ignored. A comparison of several strategies
    reports it for that strategy alone, as it does a budget nothing fits."""


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


class InvalidStrategy(ContextfitError):
    """Something that is not a strategy was registered."""

    code = "INVALID_STRATEGY"


class InvalidCounter(ContextfitError):
    """``count_tokens`` did not behave like a token counter."""

    code = "INVALID_COUNTER"


class InvalidImage(ContextfitError):
    """An image's header is missing, cut short or impossible."""

    code = "INVALID_IMAGE"


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


class ChatNotFound(ContextfitError):
    """No chat has that id (it never existed, or it was deleted).

    >>> ChatNotFound("chat_123").code
    'CHAT_NOT_FOUND'
    """

    code = "CHAT_NOT_FOUND"

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        super().__init__(f"No chat with id {chat_id!r}.")


class AuditNotFound(ContextfitError):
    """The chat exists but has no finished generation, so no audit yet."""

    code = "AUDIT_NOT_FOUND"

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        super().__init__(f"Chat {chat_id!r} has no context audit yet: generate once to create one.")


class UnknownProvider(ContextfitError):
    """No provider is configured under that name."""

    code = "UNKNOWN_PROVIDER"

    def __init__(self, name: object, available: list[str]) -> None:
        self.name = name
        self.available = available
        super().__init__(f"No provider named {name!r}. Configured providers: {', '.join(available) or 'none'}.")


class RequestTooLarge(ContextfitError):
    """An HTTP request body is larger than the server accepts."""

    code = "REQUEST_TOO_LARGE"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"The request body is larger than {limit:,} bytes; send a shorter conversation.")


class ServerBusy(ContextfitError):
    """Every worker is busy and the queue is full: retry after ``retry_after`` seconds (HTTP 503)."""

    code = "SERVER_BUSY"

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"The server is busy with other requests; retry in {retry_after} s.")


class WorkTimedOut(ContextfitError):
    """A request's work ran past the server's per-request time limit (HTTP 503)."""

    code = "REQUEST_TIMEOUT"

    def __init__(self, seconds: float, retry_after: int) -> None:
        self.seconds = seconds
        self.retry_after = retry_after
        super().__init__(
            f"The request took longer than the server's limit of {seconds:g} s; send a smaller input, or retry in {retry_after} s."
        )


class HostNotAllowed(ContextfitError):
    """The request's ``Host`` is not a name this server answers to (HTTP 400)."""

    code = "HOST_NOT_ALLOWED"

    def __init__(self, host: str) -> None:
        self.host = host
        super().__init__(
            f"This server does not answer to the host {host[:100]!r}; start it with --allowed-host for that name."
        )


class CrossSiteRequest(ContextfitError):
    """A state-changing request came from another site's page (HTTP 403)."""

    code = "CROSS_SITE_REQUEST"

    def __init__(self) -> None:
        super().__init__("Requests that change data are refused when a web page of another origin sends them.")


class Unauthorized(ContextfitError):
    """The server requires an API key and the request has none, or a wrong one (HTTP 401)."""

    code = "UNAUTHORIZED"

    def __init__(self) -> None:
        super().__init__("This server requires an API key: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'.")


class GenerationCancelled(ContextfitError):
    """A generation was cancelled (the client went away or asked to cancel)."""

    code = "CANCELLED"

    def __init__(self, message: str = "The generation was cancelled before the provider answered.") -> None:
        super().__init__(message)


class GenerationInterrupted(ContextfitError):
    """A generation's process stopped before its outcome was recorded; recorded at the next start."""

    code = "INTERRUPTED"

    def __init__(
        self, message: str = "The process running this generation stopped before its outcome was recorded."
    ) -> None:
        super().__init__(message)


class ChatTooLarge(ContextfitError):
    """A stored chat would pass the most messages or bytes a chat may hold (HTTP 413).

    ``location`` names the first message over the limit (``messages[3]``), or
    ``generate`` when a full chat is asked for one more reply.

    >>> err = ChatTooLarge("The chat is full.", location="messages[3]")
    >>> err.code, err.to_dict()["location"]
    ('CHAT_TOO_LARGE', 'messages[3]')
    """

    code = "CHAT_TOO_LARGE"

    def __init__(self, message: str, *, location: str | None = None) -> None:
        self.location = location
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "location": self.location}


class StoreUnavailable(ContextfitError):
    """The database could not be written: a generation could not start, or its
    reply could not be stored after the retries.

    When the provider had answered, ``reply`` is that answer (the chat message
    that was not stored) and ``audit`` the audit as finalized, ``failed`` with
    this code; both travel with the error, so the reply is not lost.

    >>> err = StoreUnavailable("the reply could not be stored", reply={"role": "assistant", "content": "Hi"})
    >>> err.code, err.to_dict()["reply"]["content"]
    ('STORE_UNAVAILABLE', 'Hi')
    """

    code = "STORE_UNAVAILABLE"

    def __init__(self, message: str, *, reply: dict | None = None, audit: dict | None = None) -> None:
        self.reply = reply
        self.audit = audit
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        extra = {name: value for name, value in (("reply", self.reply), ("audit", self.audit)) if value is not None}
        return {**super().to_dict(), **extra}


class SchemaTooNew(ContextfitError):
    """The database was migrated by a newer contextfit: this version refuses to use it.

    >>> print(SchemaTooNew("sqlite:///chats.db", ["m099_future"]))
    The database sqlite:///chats.db was migrated by a newer contextfit (migrations m099_future are unknown to this version): upgrade contextfit on this machine, or point --db at another database.
    """

    code = "SCHEMA_TOO_NEW"

    def __init__(self, database: str, unknown: list[str]) -> None:
        self.unknown = list(unknown)
        super().__init__(
            f"The database {database} was migrated by a newer contextfit (migrations {', '.join(unknown)} are "
            "unknown to this version): upgrade contextfit on this machine, or point --db at another database."
        )


class ProviderError(ContextfitError):
    """A provider call failed; ``code`` is one of the normalized ``PROVIDER_*`` codes.

    The message is written by contextfit from the HTTP status and the kind of
    failure; it never quotes the provider's response body or a credential.
    ``status`` is the provider's HTTP status when there was one.

    >>> err = ProviderRateLimited("openai", status=429)
    >>> err.code, err.status, str(err)
    ('PROVIDER_RATE_LIMITED', 429, 'openai: the provider is rate limiting requests (HTTP 429).')
    """

    code = "PROVIDER_ERROR"
    summary = "the provider failed"

    def __init__(self, provider: str, *, status: int | None = None, detail: str | None = None) -> None:
        self.provider = provider
        self.status = status
        http = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{provider}: {detail or self.summary}{http}.")


class ProviderAuthError(ProviderError):
    """The provider refused the credentials (401/403)."""

    code = "PROVIDER_AUTH"
    summary = "the provider refused the credentials; check the API key"


class ProviderRateLimited(ProviderError):
    """The provider kept answering 429 after the retries."""

    code = "PROVIDER_RATE_LIMITED"
    summary = "the provider is rate limiting requests"


class ProviderContextOverflow(ProviderError):
    """The provider says the prompt is longer than the model's context window."""

    code = "PROVIDER_CONTEXT_OVERFLOW"
    summary = "the provider says the prompt exceeds the model's context; lower contextLimit for this model"


class ProviderBadRequest(ProviderError):
    """The provider rejected the request (4xx other than auth, rate limit and context length)."""

    code = "PROVIDER_BAD_REQUEST"
    summary = "the provider rejected the request; check the model name and settings"


class ProviderTimeout(ProviderError):
    """The provider did not answer in time."""

    code = "PROVIDER_TIMEOUT"
    summary = "the provider did not answer in time"


class ProviderUnavailable(ProviderError):
    """The provider could not be reached, dropped the connection or is overloaded (502/503/504/529)."""

    code = "PROVIDER_UNAVAILABLE"
    summary = "the provider could not be reached or is overloaded"


# -- internal signals: caught inside the package, never shown to a user ----------


class Unusable(Exception):
    """The strategy's answer cannot be used; the message says why.

    ``altered`` are the protected blocks it returned changed (restored by the host).
    """

    def __init__(self, why: str, altered: list[int] | None = None) -> None:
        super().__init__(why)
        self.altered = altered or []


class InternalFailure(Exception):
    """A failure that was not an ``Exception`` (e.g. a Rust panic), wrapped so the 500 handler answers it."""
