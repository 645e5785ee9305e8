"""The request and response models of the HTTP API (pydantic lives here only).

JSON keys are camelCase as in SPEC §5–§6. The settings model is built from
:data:`contextfit.pipeline.settings.SETTINGS`, so the schema, the validation and the
package agree on one list of names.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any, Literal, get_type_hints

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..audit import AuditBlock, PromptContextAudit
from ..json_names import camel_case
from ...jsonpath import lone_surrogate, too_deep
from ...inputs.messages import ROLES
from ...pipeline.plan import TokenizerInfo
from ...pipeline.settings import SETTINGS
from ...replays.recommend import PRIORITIES
from ..store import Appended as StoredAppended
from ..store import Chat as StoredChat

MAX_MESSAGES = 10_000
#: How deeply a request body may nest objects and lists (a real chat, card or tool schema stays far below).
MAX_DEPTH = 64
#: The validation error types of a string that holds a lone surrogate, and of a body nested too deeply.
LONE_SURROGATE = "lone_surrogate"
TOO_DEEP = "too_deep"
_Id = Annotated[str, Field(max_length=200)]
_Text = Annotated[StrictStr, Field(max_length=1_000)]


def _setting_type(kind: str, minimum: float | None, maximum: float | None) -> Any:
    bounds = {key: value for key, value in (("ge", minimum), ("le", maximum)) if value is not None}
    return {
        "int": Annotated[StrictInt, Field(**bounds)],
        "number": Annotated[StrictFloat | StrictInt, Field(allow_inf_nan=False, **bounds)],
        "str": StrictStr,
        "bool": StrictBool,
        "object": dict[str, Any],
        "list": list[Any],
    }[kind]


Settings = create_model(
    "Settings",
    __config__=ConfigDict(extra="forbid"),
    __doc__="Prompt and generation settings; every one is optional (the model's defaults apply).",
    **{
        setting.name: (
            _setting_type(setting.kind, setting.minimum, setting.maximum) | None,
            Field(None, description=setting.description),
        )
        for setting in SETTINGS
    },
)


class Message(BaseModel):
    """A chat message in the OpenAI shape; other keys are kept as they are."""

    model_config = ConfigDict(extra="allow")

    role: Literal[ROLES] = Field(description="system, developer, user, assistant, tool or function (SPEC 3.2)")  # type: ignore[valid-type]
    content: StrictStr | list[dict[str, Any]] | None = Field(None, description="Text, or a list of content parts.")
    name: StrictStr | None = None
    id: StrictStr | None = Field(None, description="A stable id shown in audits.")
    pinned: StrictBool | None = Field(None, description="Protected: never dropped.")
    meta: dict[str, Any] | None = Field(None, description="kind, pinned, required, manualExcluded, relevance, id...")
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: StrictStr | None = None
    toolCallId: StrictStr | None = None
    callId: StrictStr | None = None


def messages_json(messages: list[Message] | None) -> list[dict] | None:
    """The messages as plain dicts, with only the keys the client sent."""
    return None if messages is None else [message.model_dump(exclude_unset=True) for message in messages]


class _Body(BaseModel):
    """A request body: unknown keys refused, no string (value or key) holding
    a lone surrogate, and no nesting deeper than :data:`MAX_DEPTH`.

    ``"\\ud800"`` is valid JSON but no text: it cannot be stored, tokenized or
    sent back. A body nested hundreds of levels deep validates but cannot be
    serialized back. Both are refused with the path of the field at fault.
    """

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _text_and_depth(cls, data: Any) -> Any:
        path = too_deep(data, MAX_DEPTH)
        if path is not None:
            raise PydanticCustomError(
                TOO_DEEP, "{path} is nested more than {limit} levels deep.", {"path": path, "limit": MAX_DEPTH}
            )
        path = lone_surrogate(data)
        if path is not None:
            raise PydanticCustomError(
                LONE_SURROGATE,
                "{path} holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not text; remove or replace it.",
                {"path": path},
            )
        return data


class ChatCreate(_Body):

    title: _Text | None = None
    model: _Text | None = Field(None, description="Model id or alias from the catalog (default gpt-4o).")
    settings: Settings | None = None  # type: ignore[valid-type]
    messages: Annotated[list[Message], Field(max_length=MAX_MESSAGES)] = []


class ChatUpdate(_Body):

    title: _Text | None = None
    model: _Text | None = None
    settings: Settings | None = Field(None, description="Replaces the chat's settings whole.")  # type: ignore[valid-type]


class MessagesAppend(_Body):

    messages: Annotated[list[Message], Field(min_length=1, max_length=MAX_MESSAGES)]


class GenerateRequest(_Body):

    provider: _Text | None = Field(None, description="echo (default), openai, anthropic, or another configured name.")
    model: _Text | None = Field(None, description="Overrides the chat's model for this generation.")
    settings: Settings | None = Field(None, description="Override the chat's settings for this generation.")  # type: ignore[valid-type]


class PreviewRequest(_Body):

    chatId: _Id | None = Field(None, description="Plan this stored chat (its messages, model and settings).")
    messages: Annotated[list[Message], Field(max_length=MAX_MESSAGES)] | None = Field(
        None, description="Inline messages (instead of, or replacing, the chat's)."
    )
    provider: _Text | None = Field(None, description="Shape the provider messages for this provider.")
    model: _Text | None = None
    persona: StrictStr | None = None
    character: dict[str, Any] | None = Field(None, description="A character card (V1, V2 or V3 JSON).")
    lorebook: dict[str, Any] | None = Field(None, description="World Info or character_book JSON.")
    memory: list[Any] | None = Field(None, description="Strings or {content, relevance} objects.")
    tools: list[dict[str, Any]] | None = None
    settings: Settings | None = None  # type: ignore[valid-type]


class ReplayRequest(PreviewRequest):

    strategies: Annotated[list[StrictStr | dict[str, Any]], Field(min_length=1, max_length=16)] | None = Field(
        None, description="Strategy names, or {strategy, label, options} with camelCase options (default: the built-ins)."
    )
    facts: Annotated[list[StrictStr | dict[str, Any]], Field(max_length=200)] | None = Field(
        None, description="Must-survive facts: text, /regex/flags, or {text|regex|message, name} (default: the facts the conversation marks)."
    )
    priority: Literal[PRIORITIES] | None = Field(  # type: ignore[valid-type]
        None, description="What the recommendation favours: retention (default), cost or cache."
    )


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ChatCreated(BaseModel):
    id: str


class AuditState(BaseModel):
    status: str
    errorCode: str | None
    finishedAt: str | None


class ChatSummary(_Open):
    id: str
    title: str | None
    model: str | None
    messageCount: int
    createdAt: str
    updatedAt: str
    audit: AuditState | None


class ChatList(BaseModel):
    chats: list[ChatSummary]


def _model_of(cls: type, name: str, doc: str, **extra: Any) -> type[BaseModel]:
    """A response model whose fields are a dataclass's, under their camelCase JSON names."""
    hints = get_type_hints(cls)
    return create_model(
        name,
        __base__=_Open,
        __doc__=doc,
        **{**{camel_case(field.name): (hints[field.name], ...) for field in fields(cls)}, **extra},
    )


AuditBlockModel = _model_of(AuditBlock, "AuditBlock", "One prompt block as the audit records it.")
ContextAudit = _model_of(
    PromptContextAudit,
    "ContextAudit",
    "The latest audit of a chat (SPEC §5); status is completed, failed or cancelled. Never holds a provider's response body.",
    blocks=(list[AuditBlockModel], ...),  # type: ignore[valid-type]
)
Chat = _model_of(StoredChat, "Chat", "A chat with its settings and its messages, in order.")
MessagesAppended = _model_of(
    StoredAppended,
    "MessagesAppended",
    "What an append stored: the chat's fields with only the messages just appended, as stored "
    "(``appendedFrom``: the position of the first; ``messageCount``: how many the chat holds now).",
)
PlanBlock = _model_of(
    AuditBlock, "PlanBlock", "One prompt block with its text and fate.", content=(str, ...), fate=(str, ...)
)


class Generated(BaseModel):
    message: dict[str, Any] | None = Field(description="The reply, as stored in the chat.")
    audit: ContextAudit  # type: ignore[valid-type]


class Recommendation(_Open):
    """Which strategy to ship under the priority (SPEC §10)."""

    strategy: str | None = Field(description="The strategy to ship; null for a tie, or when none can be.")
    priority: str
    sentence: str = Field(description="What it keeps and gives up, and the trade-off against the runner-up.")
    loses: str | None = Field(description="What it does not send, in words.")
    costPer1000Conversations: float | None = Field(description="US dollars, reply included, cache-aware.")


class ReplayResult(_Open):
    """A replay: ``Replay.to_dict()``."""

    model: str
    cacheRule: str
    strategies: list[str]
    totals: dict[str, Any]
    verdict: dict[str, Any]
    turns: dict[str, Any]
    recommendation: Recommendation | None = None


class PromptPlan(_Open):
    """What the model would see: ``PromptPlan.to_dict()``."""

    model: str
    strategy: str
    contextLimit: int
    responseReserve: int
    budget: int
    promptTokens: int
    tokenizer: TokenizerInfo
    blocks: list[PlanBlock]  # type: ignore[valid-type]
    providerMessages: list[dict[str, Any]]
    diagnostics: list[dict[str, Any]]
    effectiveContext: dict[str, Any] | None = Field(
        None, description="The model's published effective context (benchmark, tokens, source, exceeded, every "
        "figure the catalog holds); null when the catalog has none for the model.")
    factPlacement: dict[str, Any] | None = Field(
        None, description="Where each must-survive fact sits in what is sent: start, middle or end of the prompt "
        "by the token offset of its first occurrence (rule, promptTokens, counts, facts).")


class Cancelled(BaseModel):
    cancelled: int = Field(description="How many running generations of the chat were cancelled.")


class ErrorDetail(_Open):
    code: str = Field(description="A stable error code, e.g. CHAT_NOT_FOUND or PROVIDER_TIMEOUT.")
    message: str


class ErrorResponse(BaseModel):
    error: ErrorDetail
