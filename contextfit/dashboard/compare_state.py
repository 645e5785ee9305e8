"""The Compare page's settings: always valid, kept for the whole browser
session, and written to the URL — without Streamlit, so it is tested here.

Streamlit forgets the value of a widget that a run does not draw: leaving
Compare for another page (or for the audit after "Send with echo provider")
would reset the model, the limits and the strategies. :func:`settle` runs at
the top of every Compare run on ``st.session_state`` (any mutable mapping
here): it puts back what Streamlit dropped from a copy kept under a key no
widget owns, reads the URL's ``model``, ``limit``, ``reserve`` and
``strategies`` once per session, fills the defaults of a new conversation,
and repairs combinations the engine would refuse (a reserve at or above the
limit) with a one-line note instead of an exception. The widgets are then
drawn with these keys and bounds that follow each other (:func:`reserve_max`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ContextfitError
from ..fitting import results as r
from ..pipeline.plan import BUILTIN_STRATEGIES, PromptPlan
from ..jsonpath import replace_lone_surrogates
from ..inputs.formats import Conversation
from ..inputs.messages import HISTORY, kind_of, role_of
from ..limits import MAX_MESSAGES

#: Widget keys of the "Model and budget" section whose values are kept.
KEPT = ("model", "limit", "reserve", "strategies", "summary_tokens", "relevance_window", "user_name")
#: The query parameters this module owns (the source section owns ``sample`` and ``upload``).
URL_KEYS = ("model", "limit", "reserve", "strategies")
#: Where the Compare page leaves the conversation it shows, and the key that changes with it (its
#: ``Source.key``): the Replay page's "Current conversation".
CURRENT, CURRENT_KEY = "compare_conversation", "compare_conversation_key"
#: Bounds of the widgets: the engine has no upper bound, a browser's number field has (2**53).
MAX_LIMIT = 100_000_000
MAX_SUMMARY_TOKENS = 1_000_000
MAX_RELEVANCE_WINDOW = MAX_MESSAGES
MAX_USER_NAME = 200
DEFAULTS: dict[str, Any] = {"summary_tokens": 0, "relevance_window": 6, "user_name": "User"}
#: What "Squeeze" keeps of the tokens strategies may drop.
SQUEEZE_SHARE = 0.75


def kept(key: str) -> str:
    """The session key, owned by no widget, that keeps a widget's value.

    >>> kept("limit")
    'kept:limit'
    """
    return f"kept:{key}"


@dataclass(frozen=True, slots=True)
class UrlSettings:
    """What the URL asked for (``None``: not asked, or not valid) and a note per value ignored."""

    model: str | None = None
    limit: int | None = None
    reserve: int | None = None
    strategies: tuple[str, ...] | None = None
    notes: tuple[str, ...] = field(default=())


def query_value(params: Mapping[str, Any], key: str) -> str | None:
    """A query parameter's value (the last one given), or ``None``."""
    value = params.get(key)
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else None
    return None if value is None else str(value)


def _whole(text: str, minimum: int, maximum: int) -> int | None:
    text = text.strip().replace(",", "").replace("_", "")
    if not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if minimum <= value <= maximum else None


def read_query(params: Mapping[str, Any], models: Sequence[str], names: Sequence[str]) -> UrlSettings:
    """The comparison a URL asks for; a value that is not valid is ignored with a note.

    >>> url = read_query({"model": "gpt-4o", "limit": "8000", "reserve": "-1", "strategies": "truncate,nope"},
    ...                  ["gpt-4o"], ["truncate", "summarize"])
    >>> url.model, url.limit, url.reserve, url.strategies
    ('gpt-4o', 8000, None, ('truncate',))
    >>> url.notes
    ("Ignored reserve='-1' from the link: a whole number of tokens from 0 is expected.", "Ignored the unknown strategy 'nope' from the link.")
    """
    notes: list[str] = []
    model = query_value(params, "model")
    if model is not None and model not in models:
        notes.append(f"Ignored model={model[:60]!r} from the link: it is not in the catalog.")
        model = None
    found: dict[str, int | None] = {}
    for key, minimum in (("limit", 1), ("reserve", 0)):
        text = query_value(params, key)
        found[key] = None if text is None else _whole(text, minimum, MAX_LIMIT)
        if text is not None and found[key] is None:
            notes.append(f"Ignored {key}={text[:60]!r} from the link: a whole number of tokens from {minimum} is expected.")
    limit, reserve = found["limit"], found["reserve"]
    if limit is not None and reserve is not None and reserve >= limit:
        notes.append(f"Ignored reserve={reserve} from the link: it must be below the limit ({limit}).")
        reserve = None
    strategies: tuple[str, ...] | None = None
    text = query_value(params, "strategies")
    if text is not None:
        asked = [name.strip() for name in text.split(",") if name.strip()]
        strategies = tuple(dict.fromkeys(name for name in asked if name in names))
        notes.extend(f"Ignored the unknown strategy {name[:60]!r} from the link." for name in asked if name not in names)
        if asked and not strategies:
            strategies = None
    return UrlSettings(model, limit, reserve, strategies, tuple(notes))


def query_of(state: Mapping[str, Any]) -> dict[str, str]:
    """The URL's query parameters for the current comparison (what :func:`read_query` reads back).

    >>> query_of({"model": "gpt-4o", "limit": 8000, "reserve": 1000, "strategies": ["truncate", "manual"]})
    {'model': 'gpt-4o', 'limit': '8000', 'reserve': '1000', 'strategies': 'truncate,manual'}
    """
    return {
        "model": str(state["model"]),
        "limit": str(int(state["limit"])),
        "reserve": str(int(state["reserve"])),
        "strategies": ",".join(state["strategies"]),
    }


def default_reserve(limit: int, suggested: int) -> int:
    """A reserve that fits under ``limit``: the suggested one, at most a quarter of the limit.

    >>> default_reserve(8000, 16384), default_reserve(1, 400), default_reserve(200_000, 16384)
    (2000, 0, 16384)
    """
    return max(0, min(suggested, limit // 4, limit - 1))


def reserve_below(limit: int, reserve: int, suggested: int) -> tuple[int, str | None]:
    """``reserve`` if it stays below ``limit``, else :func:`default_reserve` and a note that says so
    (the engine refuses a reserve at or above the limit: nothing would be left for the prompt).

    >>> reserve_below(8000, 1000, 16384)
    (1000, None)
    >>> reserve_below(8000, 16384, 16384)[0], reserve_below(1, 400, 400)
    (2000, (0, 'Response reserve lowered from 400 to 0: it must stay below the context limit (1), or nothing is left for the prompt. Raise the limit for a bigger reserve.'))
    """
    if reserve < limit:
        return reserve, None
    fixed = default_reserve(limit, suggested)
    return fixed, (f"Response reserve lowered from {reserve:,} to {fixed:,}: it must stay below the context limit "
                   f"({limit:,}), or nothing is left for the prompt. Raise the limit for a bigger reserve.")


def lowered_key(reserve_key: str) -> str:
    """The session key under which :func:`keep_reserve_below` remembers a reserve it lowered
    (a new conversation pops it: a reserve lowered for another does not come back).

    >>> lowered_key("reserve")
    'lowered:reserve'
    """
    return f"lowered:{reserve_key}"


def keep_reserve_below(state: MutableMapping[str, Any], limit_key: str, reserve_key: str,
                       suggested: Callable[[], int]) -> str | None:
    """:func:`reserve_below` on the widgets' values in ``state``, remembering a reserve it lowered:
    once the limit leaves room for it again, and while the user has not chosen another, it comes
    back (setting the limit to 1 lowered the reserve to 0, and putting the limit back left it
    there, unsaid). ``suggested()``: the reserve to lower to. Returns the note to show, if any.

    >>> state = {"limit": 1, "reserve": 400}
    >>> keep_reserve_below(state, "limit", "reserve", lambda: 400), state["reserve"]
    ('Response reserve lowered from 400 to 0: it must stay below the context limit (1), or nothing is left for the prompt. Raise the limit for a bigger reserve.', 0)
    >>> state["limit"] = 2200
    >>> keep_reserve_below(state, "limit", "reserve", lambda: 400), state["reserve"]
    ('Response reserve back to 400: it fits below the context limit (2,200) again.', 400)
    """
    memo = lowered_key(reserve_key)
    limit, reserve = int(state[limit_key]), int(state[reserve_key])
    wanted, lowered_to = state.get(memo) or (None, None)
    if wanted is not None and reserve != lowered_to:  # the user chose another reserve since
        wanted = None
        state.pop(memo, None)
    if wanted is not None and wanted < limit:
        state[reserve_key] = wanted
        state.pop(memo, None)
        return f"Response reserve back to {wanted:,}: it fits below the context limit ({limit:,}) again."
    fixed, note = reserve_below(limit, reserve, suggested()) if reserve >= limit else (reserve, None)
    if note is not None:
        state[memo] = (reserve if wanted is None else wanted, fixed)  # lowered twice: the first reserve comes back
        state[reserve_key] = fixed
    return note


def reserve_max(limit: int) -> int:
    """The largest reserve the widget accepts under ``limit``: the prompt keeps at least one token.

    >>> reserve_max(8000), reserve_max(1)
    (7999, 0)
    """
    return max(0, int(limit) - 1)


def _whole_in(value: Any, minimum: int, maximum: int, default: int) -> int:
    if isinstance(value, bool):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return min(max(number, minimum), maximum)


def settle(
    state: MutableMapping[str, Any],
    *,
    input_key: Any,
    suggest: Callable[[str | None], Any],
    models: Sequence[str],
    names: Sequence[str],
    query: Mapping[str, Any] | None = None,
) -> list[str]:
    """Make the session's settings whole and valid before the widgets are drawn.

    ``suggest(model)`` gives the conversation's defaults for a model (``None``:
    the conversation's own), an object with ``model``, ``context_limit`` and
    ``response_reserve`` (:func:`~contextfit.dashboard.page_data.suggested_setup`).
    ``query`` is read once per session. Returns notes to show, one line each.

    >>> from types import SimpleNamespace as S
    >>> suggest = lambda model: S(model=model or "gpt-4o", context_limit=128000, response_reserve=16384)
    >>> state = {}
    >>> settle(state, input_key=1, suggest=suggest, models=["gpt-4o"], names=["truncate"], query={"limit": "x"})
    ["Ignored limit='x' from the link: a whole number of tokens from 1 is expected."]
    >>> state["model"], state["limit"], state["reserve"], state["strategies"]
    ('gpt-4o', 128000, 16384, ['truncate'])
    >>> state["limit"] = 8000  # typed in the widget
    >>> settle(state, input_key=1, suggest=suggest, models=["gpt-4o"], names=["truncate"])
    ['Response reserve lowered from 16,384 to 2,000: it must stay below the context limit (8,000), or nothing is left for the prompt. Raise the limit for a bigger reserve.']
    >>> del state["limit"]  # Streamlit drops a widget's value on another page
    >>> _ = settle(state, input_key=1, suggest=suggest, models=["gpt-4o"], names=["truncate"])
    >>> state["limit"]
    8000
    """
    notes: list[str] = []
    for key in KEPT:  # what Streamlit dropped while another page was shown
        if key not in state and kept(key) in state:
            state[key] = state[kept(key)]
    if "url_read" not in state:
        state["url_read"] = True
        url = read_query(query or {}, models, names)
        notes.extend(url.notes)
        state["url_pending"] = url
    pending: UrlSettings | None = state.get("url_pending")
    if state.get("input_key") != input_key:  # a new conversation: its defaults, no edits
        state["input_key"] = input_key
        state["overrides"] = {}
        state["editor_version"] = state.get("editor_version", 0) + 1
        state["model"] = pending.model if pending is not None and pending.model else suggest(None).model
    if state.get("model") not in models:
        state["model"] = suggest(None).model if suggest(None).model in models else models[0]
    chosen = state.get("strategies")
    if chosen is None:
        chosen = list(pending.strategies) if pending is not None and pending.strategies is not None else [
            name for name in names if name in BUILTIN_STRATEGIES
        ]
    state["strategies"] = [name for name in dict.fromkeys(chosen) if name in names]
    for key, value in DEFAULTS.items():
        state.setdefault(key, value)
    state["summary_tokens"] = _whole_in(state["summary_tokens"], 0, MAX_SUMMARY_TOKENS, 0)
    state["relevance_window"] = _whole_in(state["relevance_window"], 1, MAX_RELEVANCE_WINDOW, 6)
    name = str(state["user_name"])[:MAX_USER_NAME]
    if replace_lone_surrogates(name) != name:  # no UTF-8 text can carry it: the engine would refuse the whole run
        name = replace_lone_surrogates(name)
        notes.append("A broken character (a lone surrogate) in the user name was replaced by \ufffd.")
    state["user_name"] = name
    model = state["model"]
    suggested = None
    if state.get("limits_for") != (input_key, model) or "limit" not in state or "reserve" not in state:
        state["limits_for"] = (input_key, model)
        suggested = suggest(model)
        state["limit"], state["reserve"] = int(suggested.context_limit), int(suggested.response_reserve)
        state.pop(lowered_key("reserve"), None)  # a reserve lowered for another conversation or model does not come back
        if pending is not None:  # the link's limits, for the first conversation of the session
            state["limit"] = pending.limit or state["limit"]
            state["reserve"] = pending.reserve if pending.reserve is not None else state["reserve"]
            if pending.limit is not None and pending.reserve is None:
                state["reserve"] = default_reserve(state["limit"], state["reserve"])
    state["url_pending"] = None
    if state["limit"] is None or state["reserve"] is None:  # a box emptied (the options' go back to DEFAULTS above)
        suggested = suggested or suggest(model)
        notes.extend(refill(state, {"limit": ("context limit", int(suggested.context_limit)),
                                    "reserve": ("response reserve", int(suggested.response_reserve))}))
    state["limit"] = _whole_in(state["limit"], 1, MAX_LIMIT, 1)
    state["reserve"] = _whole_in(state["reserve"], 0, MAX_LIMIT, 0)
    lowered = keep_reserve_below(state, "limit", "reserve",
                                 lambda: int((suggested or suggest(model)).response_reserve))
    if lowered:
        notes.append(lowered)
    for key in KEPT:
        state[kept(key)] = state[key]
    return notes


def refill(state: MutableMapping[str, Any], defaults: Mapping[str, tuple[str, int]]) -> list[str]:
    """Give each number box the user emptied (its widget, made with ``value=None``, then holds
    ``None``; its clear button does that) its default, with a note: ``defaults`` maps the
    widgets' keys to what a note calls them and their default (the conversation's
    suggestion). An emptied box used to read as its minimum: clearing the context limit
    to type another made it 1 and lowered the reserve to 0.

    >>> state = {"limit": None, "reserve": 400}
    >>> refill(state, {"limit": ("context limit", 2200), "reserve": ("response reserve", 400)}), state["limit"]
    (["The context limit box was emptied: back to 2,200, this conversation's suggestion."], 2200)
    """
    notes = []
    for key, (name, default) in defaults.items():
        if key in state and state[key] is None:
            state[key] = default
            notes.append(f"The {name} box was emptied: back to {default:,}, this conversation's suggestion.")
    return notes


def remember(state: MutableMapping[str, Any], key: str, value: Any) -> None:
    """Set a kept setting from code (a button's callback): the widget's key and its kept copy."""
    state[key] = value
    state[kept(key)] = value


def everything_fits(plans: Mapping[str, Any]) -> bool:
    """Whether every strategy that could plan sends every block but those
    excluded by hand: nothing gave way for room, so the strategies look alike."""
    fitted = [plan for plan in plans.values() if isinstance(plan, PromptPlan)]
    return bool(fitted) and all(block.included or block.reason == r.MANUAL for plan in fitted for block in plan.blocks)


def fits_note(plans: Mapping[str, Any]) -> str:
    """What the page says when :func:`everything_fits`: every strategy sends every block, or every block but
    those marked by hand for exclusion (which ``manual`` leaves out: said so, with their count).

    >>> from contextfit import plan_prompt
    >>> chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "off topic", "meta": {"manualExcluded": True}},
    ...         {"role": "user", "content": "and now?"}]
    >>> plans = {s: plan_prompt(chat, model="gpt-4o", context_limit=9000, response_reserve=1000, context_strategy=s)
    ...          for s in ("truncate", "manual")}
    >>> fits_note(plans)
    'Everything fits: every strategy sends all 3 blocks (at most 21 tokens of the 8,000-token budget) but manual, which leaves out the 1 block marked by hand for exclusion; nothing gives way for room, so the strategies look alike.'
    """
    fitted = [plan for plan in plans.values() if isinstance(plan, PromptPlan)]
    whole = max(fitted, key=lambda plan: plan.prompt_tokens)
    by_hand = max(sum(block.reason == r.MANUAL for block in plan.blocks) for plan in fitted)
    sends = f"every strategy sends all {len(whole.blocks)} blocks"
    budget = f"the {whole.budget:,}-token budget"
    if not by_hand:
        return f"Everything fits: {sends} ({whole.prompt_tokens:,} tokens of {budget}), so the strategies have nothing to do and look alike."
    blocks = "block" if by_hand == 1 else "blocks"
    return (f"Everything fits: {sends} (at most {whole.prompt_tokens:,} tokens of {budget}) but manual, which leaves out the "
            f"{by_hand} {blocks} marked by hand for exclusion; nothing gives way for room, so the strategies look alike.")


def squeeze_limit(plan: PromptPlan) -> int | None:
    """A context limit under which strategies have work to do: the protected
    blocks and the chat overhead fit, and a quarter of the rest does not.
    ``None`` when nothing could be dropped.

    >>> from contextfit import plan_prompt
    >>> chat = [{"role": "user" if i % 2 else "assistant", "content": f"turn {i} " * 20} for i in range(1, 12)]
    >>> plan = plan_prompt(chat, model="gpt-4o", context_limit=100_000, response_reserve=1000)
    >>> limit = squeeze_limit(plan)
    >>> squeezed = plan_prompt(chat, model="gpt-4o", context_limit=limit, response_reserve=1000)
    >>> limit < 100_000 and any(not block.included for block in squeezed.blocks)
    True
    """
    droppable = sum(block.tokens or 0 for block in plan.blocks if block.included and block.fate != "protected")
    if droppable <= 1:
        return None
    budget = plan.prompt_tokens - droppable + int(droppable * SQUEEZE_SHARE)
    return plan.response_reserve + max(1, budget)


def current_input_note(conversation: Conversation) -> str | None:
    """One line when the chat does not end on a user message: what is then the current input.

    >>> from contextfit import load_conversation
    >>> current_input_note(load_conversation([{"role": "user", "content": "Hi"}])) is None
    True
    >>> print(current_input_note(load_conversation([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])))
    The chat ends on an assistant message: no user input is pending, so no message is protected as the current input (strategies keep the newest messages first), and a summary goes just before the newest reply.
    """
    for message in reversed(conversation.messages):
        if kind_of(message) != HISTORY:
            continue
        role = role_of(message)
        if role == "user":
            return None
        return (
            f"The chat ends on {'an' if role[:1] in 'aeiou' else 'a'} {role} message: no user input is pending, so "
            "no message is protected as the current input (strategies keep the newest messages first), and a "
            "summary goes just before the newest reply."
        )
    return None


def each_strategy(
    made: Iterable[tuple[str, PromptPlan | ContextfitError]], strategies: Sequence[str]
) -> Iterator[tuple[str, PromptPlan | ContextfitError]]:
    """``(strategy, plan or error)`` for every strategy, even when the run
    itself fails (settings the engine refuses): that error is then each
    remaining strategy's, shown in its column, not an exception on the page.

    >>> def failing():
    ...     yield "truncate", "a plan"
    ...     raise ContextfitError("refused", code="INVALID_SETTINGS")
    >>> [(name, getattr(plan, "code", plan)) for name, plan in each_strategy(failing(), ["truncate", "manual", "summarize"])]
    [('truncate', 'a plan'), ('manual', 'INVALID_SETTINGS'), ('summarize', 'INVALID_SETTINGS')]
    """
    done = 0
    try:
        for item in made:
            done += 1
            yield item
    except ContextfitError as error:
        for name in strategies[done:]:
            yield name, error
