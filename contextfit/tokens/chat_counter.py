"""Counting chat messages as a provider receives them.

:class:`TokenCounter` is the ``count_tokens(messages)`` callable the fitting
engine takes: a profile's tokenizer plus its chat-format overhead (OpenAI: 3
tokens per message, 1 per ``name``, 3 to prime the reply; other families as
documented on each profile in ``profiles.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from contextfit.caches import register
from contextfit.tokens.images import IMAGE_PARTS, ImageRule, profile_rule, rule_for
from contextfit.memo import TextMemo
from contextfit.tokens.models import get_model
from contextfit.tokens import openai_tools
from contextfit.tokens.openai_tools import typescript_namespace
from contextfit.tokens.profiles import PROFILES, ChatFormat
from contextfit.tokens.reasoning_items import REASONING_ITEM, reasoning_item_tokens
from contextfit.tokens.tokenizers import _LOCK, Tokenizer, _as_text, _json, get_tokenizer
from contextfit.tokens.chat_templates import CHAT_TEMPLATES

__all__ = ["TOOL_CALL_TOKENS", "TokenCounter", "token_counter", "typescript_namespace"]

#: Tokens for one tool call, besides its name, arguments and id, where the format is
#: unknown (every family but OpenAI's, whose calls are counted as measured:
#: ``contextfit/tokens/openai_tools.py``): the call wrapper and delimiters, an over-count on purpose.
TOOL_CALL_TOKENS = 8



_ROLE_AND_CONTENT = frozenset(("role", "content"))
_LINK_KEYS = frozenset(("tool_call_id", "toolCallId", "callId"))
_TEXT_KEYS = frozenset(("refusal", "reasoning_content", "reasoning", "reasoning_details"))
_TEXT_PARTS = frozenset(("text", "input_text", "output_text"))
_IMAGE_PARTS = IMAGE_PARTS
_MAX_DEPTH = 32


class TokenCounter:
    """``count_tokens(messages)`` for one profile, chat-format overhead included.

    Only what a provider receives is counted: ``role``, ``content`` (text, image,
    tool and thinking parts), ``name``, the tool-call link id (once, under any of
    ``tool_call_id`` / ``toolCallId`` / ``callId``), ``tool_calls``,
    ``function_call``, ``refusal`` and reasoning text. contextfit's own keys
    (``meta``, ``pinned``, ``id``) are not. When ``additive`` (every profile
    but the exact open-model ones, whose chat templates are not additive) the
    engine relies on
    ``counter(messages) == counter.base_tokens + sum(map(counter.count_message, messages))``.

    >>> counter = token_counter("gpt-4o")
    >>> counter.base_tokens, counter.count_message({"role": "user", "content": "Hello world!"})
    (3, 7)
    >>> counter([{"role": "user", "content": "Hello world!"}])
    10
    """

    # __weakref__: the engine keeps per-counter state in a WeakKeyDictionary
    __slots__ = (
        "__weakref__", "_call_costs", "_count", "_estimator", "_per_message", "_role_costs", "_template", "additive",
        "base_tokens", "chat", "images", "tokenizer",
    )

    def __init__(self, tokenizer: Tokenizer, images: ImageRule | None = None, *, point: bool = False,
                 chat: ChatFormat | None = None) -> None:
        self.tokenizer = tokenizer
        # image parts are counted from their dimensions (contextfit/tokens/images.py)
        self.images = images if images is not None else profile_rule(tokenizer.name)
        # a model's own chat format (GPT-5's tool rendering), else its profile's
        self.chat = chat if chat is not None else tokenizer.profile.chat
        self._count = tokenizer.estimate if point else tokenizer.count
        self._estimator: TokenCounter | None = self if point or not tokenizer.approximate else None
        # An exact open-model profile counts with its family's chat template
        # (contextfit/tokens/chat_templates.py): exact for the whole conversation,
        # which is not the sum of its messages, so the engine recounts it.
        self._template = None if tokenizer.approximate else CHAT_TEMPLATES.get(tokenizer.name)
        self.additive: bool = self._template is None
        self.base_tokens: int = self.chat.reply_priming if self._template is None else self._template.count(self._count, ())
        self._per_message = self.chat.per_message
        self._role_costs: dict[str, int] = {}
        # what OpenAI tool calls cost, by their names and arguments (building the parallel wrapper's JSON
        # costs more than counting it)
        self._call_costs: TextMemo[int] = TextMemo(CALL_COSTS_BYTES)

    @property
    def profile(self) -> str:
        """The tokenizer profile name."""
        return self.tokenizer.name

    @property
    def approximate(self) -> bool:
        """True when the counts are estimates."""
        return self.tokenizer.approximate

    def __repr__(self) -> str:
        return f"TokenCounter(profile={self.profile!r}, approximate={self.approximate})"

    def estimator(self) -> TokenCounter:
        """The same counter giving point estimates (:meth:`Tokenizer.estimate`) instead of the
        band's upper end; itself for an exact profile. Chat overhead is the same.

        >>> counter = token_counter("claude-sonnet-4")
        >>> message = [{"role": "user", "content": "Hello world! " * 20}]
        >>> counter.estimator()(message), counter(message)
        (79, 96)
        >>> token_counter("gpt-4o").estimator() is token_counter("gpt-4o")
        True
        """
        if self._estimator is None:
            self._estimator = TokenCounter(self.tokenizer, self.images, point=True, chat=self.chat)
        return self._estimator

    def __call__(self, messages: Iterable[Any]) -> int:
        """Tokens of ``messages`` as sent, reply priming included."""
        if messages is None:
            return self.base_tokens
        if isinstance(messages, (Mapping, str, bytes)) or not isinstance(messages, Iterable):
            messages = (messages,)  # one message where a list was expected
        if self._template is not None:
            turns = list(map(self._turn, messages))
            return self._template.count(self._count, [turn for turn, _ in turns]) + sum(extra for _, extra in turns)
        return self.base_tokens + sum(map(self.count_message, messages))

    def _turn(self, message: Any) -> tuple[tuple[str, str], int]:
        """((role, text), tokens of everything else) of one message, for a chat template:
        text content goes through the template, other parts and fields are counted as usual."""
        if message.__class__ is not dict:
            try:
                message = dict(message) if isinstance(message, Mapping) else {"role": "user", "content": _as_text(message)}
            except Exception:  # noqa: BLE001 - a broken Mapping is still a message
                message = {"role": "user", "content": ""}
        role = message.get("role")
        role = role if role.__class__ is str else _as_text(role) if role is not None else "user"
        content = message.get("content")
        extra = 0
        if content is None or content.__class__ is str:
            text = content or ""
        else:
            text = ""
            extra += self._guarded(self._content_tokens, content)
        if len(message) > 2 or not _ROLE_AND_CONTENT.issuperset(message):
            extra += self._guarded(self._field_tokens, message)
        return (role, text), extra

    def count_message(self, message: Any) -> int:
        """Tokens one message adds to a request; never raises.

        >>> token_counter("gpt-4o").count_message({"role": "user", "name": "ann", "content": "Hi"})
        7
        """
        if self._template is not None:
            (role, text), extra = self._turn(message)
            return self._template.one(self._count, role, text) + extra
        if message.__class__ is not dict:
            try:
                as_dict = dict(message) if isinstance(message, Mapping) else None
            except Exception:  # noqa: BLE001 - a broken Mapping is still a message
                as_dict = None
            if as_dict is None:  # a bare string, number, list...: its text is the content
                return self._per_message + self._count(_as_text(message))
            message = as_dict
        role = message.get("role")
        content = message.get("content")
        tokens = self._per_message
        if role.__class__ is str:
            cost = self._role_costs.get(role)
            tokens += cost if cost is not None else self._role_cost(role)
        elif role is not None and self.chat.role_is_text:
            tokens += self._count(_as_text(role))
        if content.__class__ is str:
            tokens += self._count(content)
        elif content is not None:
            tokens += self._guarded(self._content_tokens, content)
        if len(message) > 2 or not _ROLE_AND_CONTENT.issuperset(message):
            tokens += self._guarded(self._field_tokens, message)
        return tokens

    def count_joined(self, message: dict, parts: Sequence[str]) -> int:
        """``count_message({**message, "content": "".join(parts)})``, the content
        counted from its parts (:meth:`Tokenizer.count_joined`) where the message's
        count is its count with no content plus its content's: an exact profile
        without a chat template.

        >>> counter = token_counter("gpt-4o")
        >>> block, parts = {"role": "system", "meta": {}}, ["Summary:\\n", "- One.\\n", "- Two."]
        >>> counter.count_joined(block, parts) == counter.count_message({**block, "content": "".join(parts)})
        True
        """
        if self._template is not None or self.tokenizer.approximate or message.get("tool_calls"):
            # (a call message's count depends on whether it has text: OpenAI's margin for text beside calls)
            return self.count_message({**message, "content": "".join(parts)})
        return self.count_message({**message, "content": ""}) + self.tokenizer.count_joined(parts)

    # -- the slow path: anything but a plain {"role", "content": str} message

    def _role_cost(self, role: str) -> int:
        cost = self._count(role) if self.chat.role_is_text else 0
        if role == "function" and self.chat.openai == openai_tools.CL100K:
            cost -= openai_tools.FUNCTION_RESULT_DISCOUNT  # hmarr: a function result costs 2 less
        if len(self._role_costs) < 64 and len(role) <= 64:  # a handful of real roles; don't grow on junk
            self._role_costs[role] = cost
        return cost

    def _guarded(self, count_part: Any, value: Any) -> int:
        try:
            return count_part(value)
        except Exception:  # noqa: BLE001 - odd shapes are counted, never raised
            return self._count(_json(value))

    def _value_tokens(self, value: Any) -> int:
        if value.__class__ is str:
            return self._count(value)
        return 0 if value is None else self._count(_as_text(value))

    def _field_tokens(self, message: dict[Any, Any]) -> int:
        tokens = 0
        linked = False
        for key, value in message.items():
            if key == "name":
                if value is not None:
                    tokens += self.chat.per_name + self._value_tokens(value)
            elif key in _LINK_KEYS:
                # one link id, whichever spelling carries it; providers get tool_call_id
                if value is not None and not linked and self.chat.ids_are_text:
                    tokens += self._value_tokens(value)
                    linked = True
            elif key in _TEXT_KEYS:
                tokens += self._value_tokens(value)
            elif key == "tool_calls":
                calls = value if isinstance(value, (list, tuple)) else (value,)
                if self.chat.openai:
                    tokens += self._openai_calls(message, calls)
                else:
                    tokens += sum(self._tool_call_tokens(call) for call in calls if call is not None)
            elif key == "function_call":
                if self.chat.openai and isinstance(value, Mapping):
                    tokens += openai_tools.function_call_tokens(value, self._count, self.chat.openai)
                else:
                    tokens += self._function_tokens(value)
            # role and content are counted by the caller; meta, pinned, id, ... are not sent
        return tokens

    def _openai_calls(self, message: dict, calls: Sequence[Any]) -> int:
        """OpenAI tool calls as measured (``openai_tools.calls_tokens``), with the margin of
        the shapes no recorded count covers; entries that are not calls as the generic rule."""
        functions = [call for call in calls if isinstance(call, Mapping)]
        junk = sum(self._tool_call_tokens(call) for call in calls if call is not None and not isinstance(call, Mapping))
        if not functions:
            return junk
        margin = openai_tools.text_margin(message)
        try:
            key = "\x1f".join(f"{call['function']['name']}\x1e{call['function']['arguments']}" for call in functions)
        except (KeyError, TypeError):  # an odd call: counted without the memo
            return openai_tools.calls_tokens(functions, self._count, self.chat.openai) + margin + junk
        cost = self._call_costs.get(key)
        if cost is None:
            cost = self._call_costs.put(key, openai_tools.calls_tokens(functions, self._count, self.chat.openai))
        return cost + margin + junk

    def _tool_call_tokens(self, call: Any) -> int:
        if not isinstance(call, Mapping):
            return self.chat.per_call + self._value_tokens(call)
        ident = self._value_tokens(call.get("id")) if self.chat.ids_are_text else 0
        return self._function_tokens(call.get("function")) + ident

    def _function_tokens(self, function: Any) -> int:
        if function is None:
            return 0
        if not isinstance(function, Mapping):
            return self.chat.per_call + self._value_tokens(function)
        return (
            self.chat.per_call
            + self._value_tokens(function.get("name"))
            + self._value_tokens(function.get("arguments"))
        )

    def count_tools(self, tools: Any, messages: Iterable[Any] | None = None, tool_choice: Any = None) -> int:
        """Tokens that tool definitions add to a request of ``messages``.

        For OpenAI the definitions are rendered the way the model sees them (a
        TypeScript ``namespace functions`` block, as reverse-engineered by
        hmarr/openai-chat-tokens and measured against the API:
        ``contextfit/tokens/openai_tools.py``) plus 9, 4 fewer when ``messages``
        open with a system (or developer) message, which they join and which
        is then read with a trailing newline; a schema construct no recorded
        count covers adds a token; a ``tool_choice`` (or legacy ``function_call``)
        of ``"none"`` adds 1, one naming a function 4 and the name. Elsewhere
        their JSON is counted. Never raises.

        >>> weather = {"type": "function", "function": {"name": "weather", "description": "Weather now.",
        ...            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
        >>> counter = token_counter("gpt-4o")
        >>> counter.count_tools([weather]), counter.count_tools([weather], [{"role": "system", "content": "Be brief."}])
        (32, 28)
        """
        if not tools:
            return 0
        if self.chat.tools_format != "typescript":
            return self._count(_json(tools))
        rule = self.chat.openai
        if not isinstance(tools, (list, tuple)):  # one definition, or junk: its JSON
            return self._count(_json(tools))
        functions = [tool for tool in tools if not openai_tools.is_hosted_search(tool)]
        tokens = openai_tools.TOOL_SEARCH_TOKENS * (len(tools) - len(functions))  # measured estimate
        if not functions:
            return tokens
        if rule in (openai_tools.HARMONY, openai_tools.HARMONY_O):  # GPT-5 in Chat Completions, measured
            tokens += openai_tools.HARMONY_TOOLS_TOKENS
        try:
            tokens += self._count(typescript_namespace(functions, rule)) + openai_tools.WRAPPER_TOKENS
            tokens += sum(openai_tools.definition_margins(functions, rule).values())
        except Exception:  # noqa: BLE001 - odd definitions are counted as JSON
            return tokens + self._count(_json(functions))
        system = _first_system(messages)
        if system is not None:
            tokens += openai_tools.system_padding(system.get("content"), self._count) - openai_tools.SYSTEM_SHARE
        return tokens + openai_tools.choice_tokens(tool_choice, self._count)

    def _content_tokens(self, content: Any, depth: int = 0) -> int:
        if isinstance(content, (list, tuple)):
            return sum(self._part_tokens(part, depth) for part in content)
        return self._part_tokens(content, depth)

    def _part_tokens(self, part: Any, depth: int) -> int:
        if part.__class__ is str:
            return self._count(part)
        if not isinstance(part, Mapping) or depth > _MAX_DEPTH:
            return self._value_tokens(part)
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            return self._value_tokens(part.get("text"))
        if kind in _IMAGE_PARTS:
            return self.images.count(part)[0]
        ids = self.chat.ids_are_text
        if kind in ("tool_use", "server_tool_use"):
            return (
                self.chat.per_call
                + self._value_tokens(part.get("name"))
                + (self._value_tokens(part.get("id")) if ids else 0)
                + self._count(_json(part.get("input")))
            )
        if kind == "tool_result":
            inner = part.get("content")
            inner_tokens = 0 if inner is None else self._content_tokens(inner, depth + 1)
            return self.chat.per_call + (self._value_tokens(part.get("tool_use_id")) if ids else 0) + inner_tokens
        if kind == "thinking":
            return self._value_tokens(part.get("thinking"))
        if kind == REASONING_ITEM:  # an OpenAI Responses reasoning item: text counted, encryption estimated
            return reasoning_item_tokens(part, self._count)
        if kind == "redacted_thinking":
            return self._value_tokens(part.get("data"))
        if kind == "refusal":
            return self._value_tokens(part.get("refusal"))
        return self._count(_json(part))  # unknown part: all of it, an over-count


_COUNTERS: dict[tuple[str, str, str], TokenCounter] = {}
#: Bytes each counter's memo of OpenAI tool-call costs may hold.
CALL_COSTS_BYTES = 4 * 1024 * 1024


def _forget_counters() -> None:
    with _LOCK:  # a counter someone kept starts over too
        for counter in _COUNTERS.values():
            counter._role_costs.clear()
        _COUNTERS.clear()


register("chat_counter.counters", _COUNTERS, clear=_forget_counters)


def token_counter(model: str) -> TokenCounter:
    """The ``count_tokens(messages)`` callable for a model id, alias or profile name.

    Model ids resolve through the catalog (:func:`contextfit.tokens.models.get_model`).
    Counters are cached per profile, so the same key always returns the same
    object (the engine caches per counter). Profile names win over model ids.

    >>> token_counter("gpt-4o") is token_counter("o200k_base")
    True
    >>> token_counter("claude-sonnet-4").approximate
    True
    """
    if isinstance(model, str) and model.strip().lower() in PROFILES:
        name = model.strip().lower()
        images, rule = profile_rule(name), PROFILES[name].chat.openai
    else:
        info = get_model(model)
        name, images = info.tokenizer, rule_for(info.id, info.provider)
        rule = openai_tools.rule_for(PROFILES[name].chat.openai, info.id) if name in PROFILES else ""
    key = (name, images.name, rule)  # one counter per profile, image rule and tool rendering
    counter = _COUNTERS.get(key)
    if counter is None:
        tokenizer = get_tokenizer(name)
        chat = tokenizer.profile.chat
        chat = replace(chat, openai=rule) if rule != chat.openai else None
        with _LOCK:
            counter = _COUNTERS.get(key)
            if counter is None:
                counter = _COUNTERS[key] = TokenCounter(tokenizer, images, chat=chat)
    return counter


def _first_system(messages: Iterable[Any] | None) -> Mapping | None:
    """The system or developer message ``messages`` open with, if they do (one further down
    does not take the definitions: measured on GPT-5, where the count is then theirs alone)."""
    if messages is None or isinstance(messages, (Mapping, str, bytes)):
        return None
    first = next(iter(messages), None)
    return first if isinstance(first, Mapping) and first.get("role") in ("system", "developer") else None
