"""Everything timed, each as ``prepare`` (not timed), ``run`` (timed) and
``outcome`` (not timed: what it kept, in input indices, for the judge).

* ``floor``: tiktoken's ``encode_ordinary`` on each message's text, once; no
  fitting at all. The least any exact fitter must do.
* ``contextfit <strategy> cold``: :func:`contextfit.shift_context` after
  :func:`contextfit.caches.clear_caches` (every cache empty but the loaded
  vocabulary, which the floor and LangChain use too), with the counter
  ``token_counter("gpt-4o")`` then returns; every block counted (the
  default, what the dashboard and the audit need). ``truncate lazy`` passes
  ``count_excluded=False``: it counts only what it keeps.
* ``... warm``: the same counter already fitted the conversation without its
  last message (timed apart, as the refit's paired cold baseline); the refit
  after that one message is timed.
* ``langchain ... uncached``: ``langchain_core.messages.trim_messages``
  configured as its documentation says for a valid history
  (:data:`LANGCHAIN_OPTIONS`) with an exact ``o200k_base`` counter written
  the way the OpenAI cookbook counts, which recounts every message of every
  list it is given. Converting the dicts to LangChain messages is not timed;
  the call, with every count it makes, is. The like-for-like row for the
  all-counted fits.
* ``langchain ... memoized``: the same call with the same counter behind a
  per-message memo keyed by role, name, content and tool calls, as a
  LangChain user who caches writes it; the memo starts empty on each run
  (cold, like ``truncate lazy cold``). The like-for-like row for the lazy fit.
* ``litellm``: ``litellm.utils.trim_messages(model="gpt-4o",
  max_tokens=budget)`` on the messages without contextfit's own keys. Its
  internal deep copy and counting are timed. Runs in a worker that is killed
  at the time cap.
"""

from __future__ import annotations

import gc
import json
import logging
import os
from collections.abc import Callable
from time import perf_counter
from dataclasses import dataclass
from typing import Any

from .oracle import Outcome, count, encoding

OPENAI_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


@dataclass(frozen=True, slots=True)
class Contender:
    """One thing that is timed."""

    key: str
    family: str  # floor | contextfit | langchain | litellm
    prepare: Callable[[list[dict], int], Any]
    run: Callable[[Any], Any]
    outcome: Callable[[Any, Any], Outcome] | None  # None: not a fitter (the floor)
    capped: bool = False  # runs in a worker that is killed at the time cap
    strategy: str | None = None
    mode: str | None = None  # cold | warm
    counts_excluded: bool = True
    # The contextfit contender timed just before each run, for a paired ratio (LangChain's like for like).
    paired_with: str | None = None

    def missing(self) -> str | None:
        """Why this contender cannot run here, or ``None``."""
        module = {"langchain": "langchain_core", "litellm": "litellm"}.get(self.family)
        if module is None:
            return None
        import importlib.util

        return None if importlib.util.find_spec(module) else f"{module} is not installed (requirements-bench.txt)"


# -- the floor ------------------------------------------------------------------


def _floor_prepare(messages: list[dict], budget: int) -> Any:
    return messages, encoding().encode_ordinary


def _floor_run(state: Any) -> int:
    messages, encode = state
    total = 0
    for message in messages:
        content = message.get("content")
        if content.__class__ is str:
            total += len(encode(content))
        elif content is not None:
            total += len(encode(json.dumps(content, ensure_ascii=False)))
        calls = message.get("tool_calls")
        if calls:
            for call in calls:
                total += len(encode(call["function"]["name"])) + len(encode(call["function"]["arguments"]))
    return total


# -- contextfit -----------------------------------------------------------------


def fresh_counter(exact: Any = None) -> Any:
    """The ``gpt-4o`` counter after :func:`contextfit.caches.clear_caches`: every
    cache contextfit holds is empty; only the loaded vocabulary (and its fast
    counting engine, loaded untimed before any run uses it) is kept, as it is
    in any process after its first fit (the floor and LangChain use it too).
    ``exact`` replaces the tiktoken encoding and leaves the fast engine out
    (bench/overhead.py)."""
    import contextfit

    contextfit.caches.clear_caches(vocabularies=False)
    if exact is None:
        fast_counter()
        return contextfit.token_counter("gpt-4o")
    from contextfit.tokens.chat_counter import TokenCounter
    from contextfit.tokens.profiles import PROFILES
    from contextfit.tokens.tokenizers import Tokenizer

    return TokenCounter(Tokenizer(PROFILES["o200k_base"], exact))


def fast_counter() -> Any:
    """The process's ``o200k_base`` FastCounter, loaded (untimed) before any run uses it."""
    import contextfit

    counter = contextfit.get_tokenizer("o200k_base").fast
    if counter is not None:
        counter.wait()
    return counter


def _fit(messages: list[dict], counter: Any, budget: int, strategy: str, count_excluded: bool) -> Any:
    import contextfit

    try:
        return contextfit.shift_context(messages, counter, budget, strategy=strategy, count_excluded=count_excluded)
    except contextfit.TokenBudgetExceeded as exc:
        return exc


def _contextfit(strategy: str, warm: bool, count_excluded: bool) -> Contender:
    def prepare(messages: list[dict], budget: int) -> Any:
        counter = fresh_counter()
        first = None
        if warm:  # the chat before its last message, already fitted with this counter
            gc.collect()
            start = perf_counter()
            _fit(messages[:-1], counter, budget, strategy, count_excluded)
            first = perf_counter() - start  # a cold fit, the warm refit's own baseline
        return messages, counter, budget, first

    def run(state: Any) -> Any:
        messages, counter, budget, _ = state
        return _fit(messages, counter, budget, strategy, count_excluded)

    def outcome(state: Any, result: Any) -> Outcome:
        if isinstance(result, Exception):
            return Outcome(error=f"{type(result).__name__}: {getattr(result, 'code', '')}")
        where = {id(message): index for index, message in enumerate(state[0])}
        kept = [where[id(message)] for message in result.kept if id(message) in where]
        # a result cleared by clear-tool-results is sent changed, in its original's place
        altered = sorted(d.sources[0] for d in result.decisions if d.index is None and d.reason == "compressed" and d.sources)
        return Outcome(kept=kept, altered=altered, sent=list(result.kept))

    name = strategy + ("" if count_excluded else " lazy")
    return Contender(
        f"contextfit {name} {'warm' if warm else 'cold'}",
        "contextfit",
        prepare,
        run,
        outcome,
        strategy=strategy,
        mode="warm" if warm else "cold",
        counts_excluded=count_excluded,
    )


# -- LangChain ------------------------------------------------------------------

_LANGCHAIN_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool", "function": "function"}


def openai_only(message: dict) -> dict:
    """The message as an OpenAI client sends it: contextfit's keys (``meta``,
    ``pinned``, ``id``) left out."""
    return {key: message[key] for key in OPENAI_KEYS if key in message}


# What LangChain's trim_messages documentation sets for a valid chat history: keep
# the newest messages, start on a human message, keep the system message, end on
# a human or tool message.
LANGCHAIN_OPTIONS = {"strategy": "last", "start_on": "human", "include_system": True, "end_on": ("human", "tool")}


def _langchain_message_tokens(message: Any, encode: Callable[[str], list[int]]) -> int:
    """One LangChain message's ``o200k_base`` tokens, OpenAI cookbook style."""
    total = 3 + len(encode(_LANGCHAIN_ROLES.get(message.type, message.type)))
    content = message.content
    if isinstance(content, str):
        total += len(encode(content))
    else:
        for block in content:
            text = block if isinstance(block, str) else block.get("text") if block.get("type") == "text" else None
            total += len(encode(text if text is not None else json.dumps(block)))
    for call in getattr(message, "tool_calls", None) or ():
        total += 8 + len(encode(call["name"])) + len(encode(json.dumps(call["args"])))
    if message.name:
        total += 1 + len(encode(message.name))
    return total


def langchain_counter(messages: list[Any]) -> int:
    """Exact ``o200k_base`` tokens of LangChain messages (3 to prime the reply),
    uncached: what a LangChain user passes as ``token_counter``."""
    encode = encoding().encode_ordinary
    return 3 + sum(_langchain_message_tokens(message, encode) for message in messages)


def memoized_langchain_counter() -> Callable[[list[Any]], int]:
    """:func:`langchain_counter` with a memo of its own, per message: keyed by
    what is counted (role, name, content, tool calls), so equal messages share
    an entry and an edited one is recounted."""
    encode = encoding().encode_ordinary
    memo: dict[tuple, int] = {}

    def count(messages: list[Any]) -> int:
        total = 3
        for message in messages:
            content = message.content
            calls = getattr(message, "tool_calls", None)
            key = (message.type, message.name, content if isinstance(content, str) else json.dumps(content),
                   json.dumps(calls) if calls else None)
            tokens = memo.get(key)
            if tokens is None:
                tokens = memo[key] = _langchain_message_tokens(message, encode)
            total += tokens
        return total

    return count


def _langchain(memoized: bool) -> Contender:
    def prepare(messages: list[dict], budget: int) -> Any:
        from langchain_core.messages import convert_to_messages, trim_messages

        converted = convert_to_messages([openai_only(m) for m in messages])
        trim_messages(converted[:2], max_tokens=budget, token_counter=langchain_counter, **LANGCHAIN_OPTIONS)
        return converted, budget, trim_messages, messages  # (the first call's lazy set-up above is not timed)

    def run(state: Any) -> Any:
        converted, budget, trim_messages, _ = state
        counter = memoized_langchain_counter() if memoized else langchain_counter  # a new, empty memo each run
        return trim_messages(converted, max_tokens=budget, token_counter=counter, **LANGCHAIN_OPTIONS)

    name = "langchain trim_messages " + ("memoized" if memoized else "uncached")
    like = "contextfit truncate lazy cold" if memoized else "contextfit truncate cold"
    return Contender(name, "langchain", prepare, run, _langchain_outcome, capped=True, mode="cold", paired_with=like)


def _langchain_outcome(state: Any, result: Any) -> Outcome:
    where = {id(message): index for index, message in enumerate(state[0])}
    kept = [where[id(m)] for m in result if id(m) in where]
    if len(kept) != len(result):
        return Outcome(error="trim_messages returned messages that are not its input")
    return Outcome(kept=kept, sent=[state[3][index] for index in kept])


# -- LiteLLM --------------------------------------------------------------------


def litellm_offline() -> None:
    """Keep LiteLLM from reaching the network: the bundled model cost map,
    no Hugging Face tokenizer download, no telemetry."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _litellm_prepare(messages: list[dict], budget: int) -> Any:
    litellm_offline()
    import litellm
    from litellm.utils import trim_messages

    litellm.telemetry = False
    litellm.disable_hf_tokenizer_download = True  # gpt-4o counts with tiktoken anyway
    plain = [openai_only(m) for m in messages]
    trim_messages(plain[:2], model="gpt-4o", max_tokens=budget)  # first-call set-up (tokenizer load) not timed
    return plain, budget, trim_messages, _swallowed_exceptions()


class _Swallowed(logging.Handler):
    """Catches what LiteLLM logs when ``trim_messages`` swallows an exception
    (it then returns the messages untrimmed)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage().splitlines()[0][:200])


def _swallowed_exceptions() -> _Swallowed:
    handler = _Swallowed()
    logger = logging.getLogger("LiteLLM")
    for old in [h for h in logger.handlers if isinstance(h, _Swallowed)]:
        logger.removeHandler(old)
    logger.addHandler(handler)
    return handler


def _litellm_run(state: Any) -> Any:
    plain, budget, trim_messages, _ = state
    return trim_messages(plain, model="gpt-4o", max_tokens=budget)


def _litellm_own_count(result: list[dict], budget: int) -> str | None:
    """LiteLLM's own count of what it kept, when that disagrees with the budget check."""
    try:
        from litellm import token_counter

        own = token_counter(model="gpt-4o", messages=result)
    except Exception:  # noqa: BLE001 - only a note
        return None
    return f"by its own count {own:,} of {budget:,}" if own <= budget < count(result) else None


def _litellm_outcome(state: Any, result: Any) -> Outcome:
    """Map LiteLLM's copies back to input indices.

    It returns deep copies, merges every system message into one, and may
    shorten the oldest message it keeps: exact copies are ``kept``, the
    others ``altered``.
    """
    plain, swallowed = state[0], state[3].seen
    if isinstance(result, tuple):
        result = result[0]
    notes = [_litellm_own_count(result, state[1])] + ([f"LiteLLM logged: {swallowed[-1]}"] if swallowed else [])
    outcome = Outcome(sent=list(result), note="; ".join(note for note in notes if note) or None)
    systems = [i for i, m in enumerate(plain) if m.get("role") == "system"]
    pointer, unmatched = 0, []
    for message in result:
        found = next((j for j in range(pointer, len(plain)) if plain[j] == message), None)
        if found is not None:
            outcome.kept.append(found)
            pointer = found + 1
        elif message.get("role") == "system" and systems:
            merged = message.get("content") or ""
            for index in systems:
                text = plain[index].get("content")
                if isinstance(text, str) and text in merged:
                    (outcome.kept if len(systems) == 1 else outcome.altered).append(index)
        else:
            unmatched.append((pointer, message))
    for start, message in unmatched:  # a shortened message: the next one of its role
        candidate = next(
            (j for j in range(start, len(plain)) if plain[j].get("role") == message.get("role") and j not in outcome.kept),
            None,
        )
        if candidate is not None:
            outcome.altered.append(candidate)
    if outcome.altered and 0 in outcome.altered and plain[0].get("content") in (result[0].get("content") or ""):
        # the system prompt is there verbatim, merged with the other system blocks: not lost
        outcome.altered.remove(0)
        outcome.kept.append(0)
    return outcome


# -- the line-up ----------------------------------------------------------------

STRATEGIES = ("truncate", "summarize", "vector-recall", "manual")
#: The main tables time clear-tool-results too; the fast-engine and overhead
#: benches keep their targets' four.
TIMED_STRATEGIES = (*STRATEGIES, "clear-tool-results")


def all_contenders() -> list[Contender]:
    """Every contender, in the order the tables list them."""
    line_up = [Contender("floor (tiktoken)", "floor", _floor_prepare, _floor_run, None)]
    for warm in (False, True):
        line_up += [_contextfit(strategy, warm, True) for strategy in TIMED_STRATEGIES]
        line_up.append(_contextfit("truncate", warm, False))
    line_up += [_langchain(memoized=False), _langchain(memoized=True)]
    line_up.append(Contender("litellm trim_messages", "litellm", _litellm_prepare, _litellm_run, _litellm_outcome, capped=True))
    return line_up


def by_key(key: str) -> Contender:
    """The contender called ``key``."""
    for contender in all_contenders():
        if contender.key == key:
            return contender
    raise KeyError(key)


def measure_once(contender: Contender, messages: list[dict], budget: int) -> tuple[float, Any, Any]:
    """Prepare, then time one run: ``(seconds, state, output)``."""
    state = contender.prepare(messages, budget)
    gc.collect()
    start = perf_counter()
    output = contender.run(state)
    return perf_counter() - start, state, output
