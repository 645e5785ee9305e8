"""The dashboard's settings in the browser session — without Streamlit, so it is tested here.

One model, context limit, response reserve, set of strategies, priority and
number of conversations a day serve the Compare and Replay pages (the
sidebar ``app.py`` draws for both); each page
adds a few of its own (Compare's strategy options, Replay's facts,
``stable_prefix`` and turn). They live in ``st.session_state`` (any mutable
mapping here) under the keys of the widgets that show them:

* :func:`keep`, at the top of every run, saves each of them again: Streamlit
  forgets the value of a widget that a run does not draw (another page) unless
  the run set it — its documented way to keep widget values across pages;
* :func:`settle`, before the sidebar's widgets are drawn, makes them whole and
  valid: the URL's values once per session (a reload, a bookmark, a shared
  link), a new conversation's own model, limits and declared facts, a reserve
  below the limit (it comes back when the limit does), an emptied number box
  back to the conversation's suggestion, odd values within bounds — each change
  the user did not make said in one line;
* :func:`link_of` is the URL of the current choices, which :func:`read_link` reads back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..jsonpath import replace_lone_surrogates
from ..limits import MAX_MESSAGES
from ..pipeline.plan import BUILTIN_STRATEGIES
from ..replays.recommend import PRIORITIES, RETENTION
from ..replays.volume import DEFAULT_CONVERSATIONS_PER_DAY

# -- the settings, by the widget keys that show them ------------------------------------------

MODEL, LIMIT, RESERVE, STRATEGIES = "model", "limit", "reserve", "strategies"
#: What the recommendation favours (``retention``, ``cost`` or ``cache``) and the conversations a day its costs
#: at volume are shown for; the pages read them as ``widgets.shared().priority`` and ``.conversations_per_day``.
PRIORITY, PER_DAY = "priority", "conversations_per_day"
#: The sidebar's settings, shared by Compare and Replay.
SHARED = (MODEL, LIMIT, RESERVE, STRATEGIES, PRIORITY, PER_DAY)
SUMMARY_TOKENS, RELEVANCE_WINDOW, USER_NAME, PRESENTATION = "summary_tokens", "relevance_window", "user_name", "presentation"
TOOL_RESULT_CAP = "tool_result_cap"
#: The Compare page's own: its "Strategy options" and presentation mode (which Replay follows).
COMPARE = (SUMMARY_TOKENS, RELEVANCE_WINDOW, USER_NAME, TOOL_RESULT_CAP, PRESENTATION)
STABLE, FACTS, TURN = "replay_stable", "replay_facts", "replay_turn"
#: The Replay page's own: the stable_prefix variants, the must-survive facts, the turn shown.
REPLAY = (STABLE, FACTS, TURN)
KEPT = SHARED + COMPARE + REPLAY
#: The Compare page's edits of the blocks (no widget holds them) and its edit table's version.
OVERRIDES, EDITOR_VERSION = "overrides", "editor_version"
#: The must-survive facts Compare and Replay follow: the user's edits of the conversation's own list
#: (``{"off": names no longer followed, "added": lines typed}``, :mod:`contextfit.dashboard.fact_list`;
#: no widget holds them) and the version of the table that edits them.
MUST_SURVIVE, FACTS_VERSION = "must_survive", "must_survive_version"

#: Bounds of the widgets: the engine has no upper bound, a browser's number field has (2**53).
MAX_LIMIT = 100_000_000
MAX_SUMMARY_TOKENS = 1_000_000
MAX_RELEVANCE_WINDOW = MAX_MESSAGES
MAX_USER_NAME = 200
MAX_TURN = 10_000_000
MAX_PER_DAY = 1_000_000_000
DEFAULTS: dict[str, Any] = {SUMMARY_TOKENS: 0, RELEVANCE_WINDOW: 6, TOOL_RESULT_CAP: 0, USER_NAME: "User", STABLE: True,
                            PRIORITY: RETENTION, PER_DAY: DEFAULT_CONVERSATIONS_PER_DAY}
#: Characters of facts a link carries (longer facts stay out of it, said by :func:`unlinked_facts`).
LINKED_FACTS = 1000
#: The URL parameters of the settings (the conversation's are ``sample``, ``upload`` and ``chat``).
LINK_KEYS = (MODEL, LIMIT, RESERVE, STRATEGIES, PRIORITY, "per_day", "unfollow", "follow", "present", "stable", "facts",
             "turn")

# Session keys no widget owns.
_CONVERSATION, _LIMITS_FOR, _LINK_READ, _PENDING = "settings.conversation", "settings.limits_for", "settings.link_read", "settings.pending"


def keep(state: MutableMapping[str, Any]) -> None:
    """Save every setting the session holds again, before any widget is drawn: a page that
    does not draw a setting's widget (Models, Audit) then does not lose its value.

    >>> state = {"limit": 3000, "paste": "[...]"}
    >>> keep(state); state
    {'limit': 3000, 'paste': '[...]'}
    """
    for key in KEPT:
        if key in state:
            state[key] = state[key]


def compare_settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The plan settings Compare adds to the sidebar's — its "Strategy options" and its hand edits
    of the blocks — as ``Setup.replace`` takes them. Replay plans with the very same (it draws no
    such widgets: their values are kept in the session), so its latest request is Compare's plan.

    >>> compare_settings({"summary_tokens": 0, "relevance_window": 4, "user_name": "Ann", "overrides": {}})
    {'summary_tokens': None, 'relevance_window': 4, 'user_name': 'Ann', 'tool_result_cap': None, 'overrides': None}
    >>> compare_settings({"tool_result_cap": 2500})["tool_result_cap"]
    2500
    >>> compare_settings({"overrides": {"m3": {"pinned": True}}})["overrides"], compare_settings({})["user_name"]
    ({'m3': {'pinned': True}}, 'User')
    """
    return {
        "summary_tokens": _whole_in(state.get(SUMMARY_TOKENS), 0, MAX_SUMMARY_TOKENS, 0) or None,  # 0: a tenth
        "relevance_window": _whole_in(state.get(RELEVANCE_WINDOW), 1, MAX_RELEVANCE_WINDOW, DEFAULTS[RELEVANCE_WINDOW]),
        "user_name": DEFAULTS[USER_NAME] if state.get(USER_NAME) is None else str(state[USER_NAME]),
        "tool_result_cap": _whole_in(state.get(TOOL_RESULT_CAP), 0, MAX_SUMMARY_TOKENS, 0) or None,  # 0: off
        "overrides": state.get(OVERRIDES) or None,
    }


# -- the URL ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Link:
    """What a URL asked for (``None``: not asked, or not valid) and a note per value ignored."""

    model: str | None = None
    limit: int | None = None
    reserve: int | None = None
    strategies: tuple[str, ...] | None = None
    stable: bool | None = None
    facts: str | None = None
    turn: int | None = None
    priority: str | None = None
    per_day: int | None = None
    #: the must-survive facts' edits: names no longer followed, lines added
    unfollow: tuple[str, ...] | None = None
    follow: tuple[str, ...] | None = None
    present: bool | None = None
    notes: tuple[str, ...] = field(default=())


def query_value(params: Mapping[str, Any], key: str) -> str | None:
    """A query parameter's value (the last one given), or ``None``.

    >>> query_value({"limit": ["1", "2"]}, "limit"), query_value({}, "limit")
    ('2', None)
    """
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


def read_link(params: Mapping[str, Any], models: Sequence[str], names: Sequence[str]) -> Link:
    """The settings a URL asks for; a value that is not valid is ignored with a note.

    >>> link = read_link({"model": "gpt-4o", "limit": "8000", "reserve": "-1", "strategies": "truncate,nope",
    ...                   "stable": "0", "turn": "4", "priority": "cost", "per_day": "2,500"}, ["gpt-4o"],
    ...                  ["truncate", "summarize"])
    >>> link.model, link.limit, link.reserve, link.strategies, link.stable, link.turn, link.priority, link.per_day
    ('gpt-4o', 8000, None, ('truncate',), False, 4, 'cost', 2500)
    >>> link.notes
    ("Ignored reserve='-1' from the link: a whole number of tokens from 0 is expected.", "Ignored the unknown strategy 'nope' from the link.")
    """
    notes: list[str] = []
    model = query_value(params, MODEL)
    if model is not None and model not in models:
        notes.append(f"Ignored model={model[:60]!r} from the link: it is not in the catalog.")
        model = None
    found: dict[str, int | None] = {}
    for key, minimum in ((LIMIT, 1), (RESERVE, 0)):
        text = query_value(params, key)
        found[key] = None if text is None else _whole(text, minimum, MAX_LIMIT)
        if text is not None and found[key] is None:
            notes.append(f"Ignored {key}={text[:60]!r} from the link: a whole number of tokens from {minimum} is expected.")
    limit, reserve = found[LIMIT], found[RESERVE]
    if limit is not None and reserve is not None and reserve >= limit:
        notes.append(f"Ignored reserve={reserve} from the link: it must be below the limit ({limit}).")
        reserve = None
    strategies: tuple[str, ...] | None = None
    text = query_value(params, STRATEGIES)
    if text is not None:
        asked = [name.strip() for name in text.split(",") if name.strip()]
        strategies = tuple(dict.fromkeys(name for name in asked if name in names))
        notes.extend(f"Ignored the unknown strategy {name[:60]!r} from the link." for name in asked if name not in names)
        if asked and not strategies:
            strategies = None
    stable = query_value(params, "stable")
    if stable not in (None, "0", "1"):
        notes.append(f"Ignored stable={stable[:60]!r} from the link: 0 or 1 is expected.")
    turn_text = query_value(params, "turn")
    turn = None if turn_text is None else _whole(turn_text, 1, MAX_TURN)
    if turn_text is not None and turn is None:
        notes.append(f"Ignored turn={turn_text[:60]!r} from the link: a turn number from 1 is expected.")
    priority = query_value(params, PRIORITY)
    if priority is not None and priority not in PRIORITIES:
        notes.append(f"Ignored priority={priority[:60]!r} from the link: one of {', '.join(PRIORITIES)} is expected.")
        priority = None
    per_day_text = query_value(params, "per_day")
    per_day = None if per_day_text is None else _whole(per_day_text, 1, MAX_PER_DAY)
    if per_day_text is not None and per_day is None:
        notes.append(f"Ignored per_day={per_day_text[:60]!r} from the link: a whole number of conversations a day "
                     "from 1 is expected.")
    unfollow, follow = (_lines(query_value(params, key)) for key in ("unfollow", "follow"))
    present = query_value(params, "present")
    if present not in (None, "0", "1"):
        notes.append(f"Ignored present={present[:60]!r} from the link: 0 or 1 is expected.")
    return Link(model, limit, reserve, strategies, None if stable not in ("0", "1") else stable == "1",
                query_value(params, "facts"), turn, priority, per_day, unfollow, follow,
                None if present not in ("0", "1") else present == "1", tuple(notes))


def _lines(text: str | None) -> tuple[str, ...] | None:
    """A link's list of facts, one a line (``None``: not given)."""
    return None if text is None else tuple(line.strip() for line in text.splitlines() if line.strip())


def link_of(state: Mapping[str, Any], replay: bool = False) -> dict[str, str]:
    """The URL parameters of the current settings (what :func:`read_link` reads back); ``replay``
    adds the Replay page's own (facts too long for an address stay out: :func:`unlinked_facts`).

    >>> state = {"model": "gpt-4o", "limit": 8000, "reserve": 1000, "strategies": ["truncate", "manual"],
    ...          "priority": "cost", "conversations_per_day": 250,
    ...          "replay_stable": False, "replay_facts": "ORD-7731", "replay_turn": 4}
    >>> link_of(state)
    {'model': 'gpt-4o', 'limit': '8000', 'reserve': '1000', 'strategies': 'truncate,manual', 'priority': 'cost', 'per_day': '250'}
    >>> link_of(state, replay=True)["stable"], link_of(state, replay=True)["facts"], link_of(state, replay=True)["turn"]
    ('0', 'ORD-7731', '4')
    """
    link = {MODEL: state.get(MODEL), LIMIT: _text(state.get(LIMIT)), RESERVE: _text(state.get(RESERVE)),
            STRATEGIES: ",".join(state.get(STRATEGIES) or ())}
    # the priority and the volume when they are not the defaults (a link without them opens the defaults)
    if state.get(PRIORITY, RETENTION) != RETENTION:
        link[PRIORITY] = state.get(PRIORITY)
    if state.get(PER_DAY, DEFAULT_CONVERSATIONS_PER_DAY) != DEFAULT_CONVERSATIONS_PER_DAY:
        link["per_day"] = _text(state.get(PER_DAY))
    for key, text in _edit_texts(state.get(MUST_SURVIVE)).items():
        link[key] = text if len(text) <= LINKED_FACTS else None
    link["present"] = "1" if state.get(PRESENTATION) else None  # a reload keeps the room's view
    if replay:
        facts = state.get(FACTS) or None
        link.update(stable="1" if state.get(STABLE, True) else "0", turn=_text(state.get(TURN)),
                    facts=facts if facts is None or len(facts) <= LINKED_FACTS else None)
    return {key: value for key, value in link.items() if value}


def _text(number: Any) -> str | None:
    return None if number is None else str(int(number))


def _edit_texts(edits: Mapping[str, Any] | None) -> dict[str, str]:
    """The must-survive list's edits as the address writes them: the facts ticked off, the facts added."""
    edits = edits or {}
    return {key: "\n".join(edits.get(part) or ()) for key, part in (("unfollow", "off"), ("follow", "added"))}


def unlinked_edits(edits: Mapping[str, Any] | None) -> str | None:
    """:func:`unlinked_facts` for the must-survive list's edits (either part too long for the address).

    >>> unlinked_edits({"off": ["Mara"], "added": ["ORD-7731"]}) is None
    True
    >>> unlinked_edits({"off": [], "added": ["x" * 1200]}).startswith("These facts (1,200 characters)")
    True
    """
    return unlinked_facts(max(_edit_texts(edits).values(), key=len))


def unlinked_facts(facts: str | None) -> str | None:
    """What the page says when the facts are too long for its address (:func:`link_of` leaves
    them out): a reload or a shared link would open the page without them, unsaid.

    >>> unlinked_facts("ORD-7731") is None
    True
    >>> print(unlinked_facts("x" * 3000))
    These facts (3,000 characters) are too long for the page's address (1,000 at most): a reload or a shared link opens the page without them. Keep them elsewhere to paste them again.
    """
    if not facts or len(facts) <= LINKED_FACTS:
        return None
    return (f"These facts ({len(facts):,} characters) are too long for the page's address ({LINKED_FACTS:,} at "
            "most): a reload or a shared link opens the page without them. Keep them elsewhere to paste them again.")


def write_link(params: MutableMapping[str, Any], wanted: Mapping[str, Any], owned: Sequence[str]) -> None:
    """Make the URL's query parameters (``params``: ``st.query_params``) hold ``wanted``, removing
    the ``owned`` ones it does not want and writing only what changed (each write updates the
    browser's address); parameters of others (the Audit page's) are left as they are.

    >>> params = {"limit": "2200", "facts": "old", "chat": "kept"}
    >>> write_link(params, {"limit": "3000", "stable": "1"}, LINK_KEYS); params
    {'limit': '3000', 'chat': 'kept', 'stable': '1'}
    """
    for key in owned:
        if key not in wanted and key in params:
            del params[key]
    for key, value in wanted.items():
        if params.get(key) != value:
            params[key] = value


# -- making the settings whole and valid ----------------------------------------------------


def default_reserve(limit: int, suggested: int) -> int:
    """A reserve that fits under ``limit``: the suggested one, at most a quarter of the limit.

    >>> default_reserve(8000, 16384), default_reserve(1, 400), default_reserve(200_000, 16384)
    (2000, 0, 16384)
    """
    return max(0, min(suggested, limit // 4, limit - 1))


def reserve_max(limit: int) -> int:
    """The largest reserve the widget accepts under ``limit``: the prompt keeps at least one token.

    >>> reserve_max(8000), reserve_max(1)
    (7999, 0)
    """
    return max(0, int(limit) - 1)


_LOWERED = "settings.lowered_reserve"  # (the reserve the user had, the one it was lowered to)


def keep_reserve_below(state: MutableMapping[str, Any], suggested: Callable[[], int]) -> str | None:
    """Lower a reserve at or above the limit (the engine refuses it: nothing would be left for the
    prompt) to :func:`default_reserve`, remembering the reserve it lowered: once the limit leaves
    room for it again, and while the user has not chosen another, it comes back (setting the limit
    to 1 lowered the reserve to 0, and putting the limit back left it there, unsaid).
    ``suggested()``: the reserve to lower to. Returns the note to show, if any.

    >>> state = {"limit": 1, "reserve": 400}
    >>> keep_reserve_below(state, lambda: 400), state["reserve"]
    ('Response reserve lowered from 400 to 0: it must stay below the context limit (1), or nothing is left for the prompt. Raise the limit for a bigger reserve.', 0)
    >>> state["limit"] = 2200
    >>> keep_reserve_below(state, lambda: 400), state["reserve"]
    ('Response reserve back to 400: it fits below the context limit (2,200) again.', 400)
    """
    limit, reserve = int(state[LIMIT]), int(state[RESERVE])
    wanted, lowered_to = state.get(_LOWERED) or (None, None)
    if wanted is not None and reserve != lowered_to:  # the user chose another reserve since
        wanted = None
        state.pop(_LOWERED, None)
    if wanted is not None and wanted < limit:
        state[RESERVE] = wanted
        state.pop(_LOWERED, None)
        return f"Response reserve back to {wanted:,}: it fits below the context limit ({limit:,}) again."
    if reserve < limit:
        return None
    fixed = default_reserve(limit, suggested())
    state[_LOWERED] = (reserve if wanted is None else wanted, fixed)  # lowered twice: the first reserve comes back
    state[RESERVE] = fixed
    return (f"Response reserve lowered from {reserve:,} to {fixed:,}: it must stay below the context limit "
            f"({limit:,}), or nothing is left for the prompt. Raise the limit for a bigger reserve.")


def decision(state: Mapping[str, Any]) -> tuple[str, int]:
    """The priority and the conversations a day chosen, by :func:`settle`'s rules (their defaults
    before the sidebar draws them).

    >>> decision({}), decision({PRIORITY: "cost", PER_DAY: 250}), decision({PRIORITY: "speed", PER_DAY: 10**12})
    (('retention', 1000), ('cost', 250), ('retention', 1000000000))
    """
    priority = state.get(PRIORITY)
    return (priority if priority in PRIORITIES else RETENTION,
            _whole_in(state.get(PER_DAY), 1, MAX_PER_DAY, DEFAULT_CONVERSATIONS_PER_DAY))


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
    conversation: Any,
    suggest: Callable[[str | None], Any],
    models: Sequence[str],
    names: Sequence[str],
    facts: str = "",
    query: Mapping[str, Any] | None = None,
) -> list[str]:
    """Make the session's settings whole and valid before the widgets are drawn.

    ``conversation`` changes exactly when the conversation does (its source's key);
    ``suggest(model)`` gives its defaults for a model (``None``: its own), an object
    with ``model``, ``context_limit`` and ``response_reserve``
    (:func:`~contextfit.dashboard.setup.suggested_setup`); ``facts`` are the facts it
    declares, as the facts box's lines. ``query`` is read once per session. Returns
    notes to show, one line each.

    >>> from types import SimpleNamespace as S
    >>> suggest = lambda model: S(model=model or "gpt-4o", context_limit=128000, response_reserve=16384)
    >>> state = {}
    >>> settle(state, conversation=1, suggest=suggest, models=["gpt-4o"], names=["truncate"], query={"limit": "x"})
    ["Ignored limit='x' from the link: a whole number of tokens from 1 is expected."]
    >>> state["model"], state["limit"], state["reserve"], state["strategies"]
    ('gpt-4o', 128000, 16384, ['truncate'])
    >>> state["limit"] = 8000  # typed in the widget
    >>> settle(state, conversation=1, suggest=suggest, models=["gpt-4o"], names=["truncate"])
    ['Response reserve lowered from 16,384 to 2,000: it must stay below the context limit (8,000), or nothing is left for the prompt. Raise the limit for a bigger reserve.']
    >>> state["limit"] = None  # the box emptied
    >>> settle(state, conversation=1, suggest=suggest, models=["gpt-4o"], names=["truncate"])
    ["The context limit box was emptied: back to 128,000, this conversation's suggestion.", 'Response reserve back to 16,384: it fits below the context limit (128,000) again.']
    """
    notes: list[str] = []
    if _LINK_READ not in state:  # a new browser session: the link says what to open
        state[_LINK_READ] = True
        link = read_link(query or {}, models, names)
        notes.extend(link.notes)
        state[_PENDING] = link
    pending: Link | None = state.get(_PENDING)
    if state.get(_CONVERSATION) != conversation:  # a new conversation: its model, facts and last turn, no edits
        state[_CONVERSATION] = conversation
        state[OVERRIDES] = {}
        state[EDITOR_VERSION] = state.get(EDITOR_VERSION, 0) + 1
        state[MUST_SURVIVE] = {"off": [], "added": []}
        state[FACTS_VERSION] = state.get(FACTS_VERSION, 0) + 1
        state[FACTS] = facts
        state.pop(TURN, None)
        state[MODEL] = pending.model if pending is not None and pending.model else suggest(None).model
    if pending is not None:  # the link's choices, for the first conversation of the session
        for key, value in ((STABLE, pending.stable), (FACTS, pending.facts), (TURN, pending.turn),
                           (PRIORITY, pending.priority), (PER_DAY, pending.per_day), (PRESENTATION, pending.present)):
            if value is not None:
                state[key] = value
        if pending.unfollow is not None or pending.follow is not None:
            state[MUST_SURVIVE] = {"off": list(pending.unfollow or ()), "added": list(pending.follow or ())}
    if state.get(MODEL) not in models:
        state[MODEL] = suggest(None).model if suggest(None).model in models else models[0]
    chosen = state.get(STRATEGIES)
    if chosen is None:
        chosen = list(pending.strategies) if pending is not None and pending.strategies is not None else [
            name for name in names if name in BUILTIN_STRATEGIES]
    state[STRATEGIES] = [name for name in dict.fromkeys(chosen) if name in names]
    notes.extend(_options(state))
    model = state[MODEL]
    suggested = None
    if state.get(_LIMITS_FOR) != (conversation, model) or LIMIT not in state or RESERVE not in state:
        state[_LIMITS_FOR] = (conversation, model)  # a new conversation or model: its own limits
        suggested = suggest(model)
        state[LIMIT], state[RESERVE] = int(suggested.context_limit), int(suggested.response_reserve)
        state.pop(_LOWERED, None)  # a reserve lowered for another conversation or model does not come back
        if pending is not None:
            state[LIMIT] = pending.limit or state[LIMIT]
            state[RESERVE] = pending.reserve if pending.reserve is not None else state[RESERVE]
            if pending.limit is not None and pending.reserve is None:
                state[RESERVE] = default_reserve(state[LIMIT], state[RESERVE])
    state[_PENDING] = None
    if state[LIMIT] is None or state[RESERVE] is None:  # a box emptied (its clear button): the suggestion
        suggested = suggested or suggest(model)
        notes.extend(refill(state, {LIMIT: ("context limit", int(suggested.context_limit)),
                                    RESERVE: ("response reserve", int(suggested.response_reserve))}))
    state[LIMIT] = _whole_in(state[LIMIT], 1, MAX_LIMIT, 1)
    state[RESERVE] = _whole_in(state[RESERVE], 0, MAX_LIMIT, 0)
    lowered = keep_reserve_below(state, lambda: int((suggested or suggest(model)).response_reserve))
    if lowered:
        notes.append(lowered)
    return notes


def _options(state: MutableMapping[str, Any]) -> list[str]:
    """The pages' own settings within their widgets' bounds (an emptied box: its default)."""
    for key, value in DEFAULTS.items():
        if state.get(key) is None:
            state[key] = value
    state[SUMMARY_TOKENS] = _whole_in(state[SUMMARY_TOKENS], 0, MAX_SUMMARY_TOKENS, 0)
    state[RELEVANCE_WINDOW] = _whole_in(state[RELEVANCE_WINDOW], 1, MAX_RELEVANCE_WINDOW, 6)
    state[TOOL_RESULT_CAP] = _whole_in(state[TOOL_RESULT_CAP], 0, MAX_SUMMARY_TOKENS, 0)
    name = str(state[USER_NAME])[:MAX_USER_NAME]
    notes = []
    if replace_lone_surrogates(name) != name:  # no UTF-8 text can carry it: the engine would refuse the whole run
        name = replace_lone_surrogates(name)
        notes.append("A broken character (a lone surrogate) in the user name was replaced by \ufffd.")
    state[USER_NAME] = name
    state[STABLE] = bool(state[STABLE])
    if state[PRIORITY] not in PRIORITIES:
        state[PRIORITY] = RETENTION
    state[PER_DAY] = _whole_in(state[PER_DAY], 1, MAX_PER_DAY, DEFAULT_CONVERSATIONS_PER_DAY)
    state[FACTS] = str(state.get(FACTS) or "")
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


def turn_choice(state: MutableMapping[str, Any], turns: int) -> None:
    """Keep the chosen turn (a link's, or the one shown before a page switch) within a
    replay of ``turns`` turns, the last one when none was chosen.

    >>> state = {"replay_turn": 16}
    >>> turn_choice(state, 21), state["replay_turn"], turn_choice(state, 12), state["replay_turn"]
    (None, 16, None, 12)
    """
    chosen = state.get(TURN)
    # set every time, in range: a slider whose range changed (another conversation) is a new widget
    # to Streamlit, which started it at its lowest value unless the state says otherwise
    state[TURN] = turns if type(chosen) is not int or chosen > turns else max(chosen, 1)
