"""The Replay page's logic and figures (never imports streamlit).

The page picks a conversation (a sample, the Compare page's, or a stored
chat), a model and strategies; :func:`run` replays it
(:func:`contextfit.replay`), and the functions here turn the result into the
verdict table, per-turn lines (prompt tokens, cumulative cost, cache hits,
retention with a marker where a fact was lost) and the plans of one turn.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import re
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import plotly.graph_objects as go

from ..pipeline.plan import BUILTIN_STRATEGIES, PromptPlan, plan_prompt
from ..pipeline.settings import PlanSettings, settings_for
from ..replays.run import DECLARED, Replay, pin_refusal, replay, variants
from ..replays.facts import declared_facts, fact_from_line, facts_that_check, message_ids, pinned_position
from ..errors import ContextfitError, InvalidSettings, TokenBudgetExceeded
from ..serving.generation import preview_input
from ..serving.store import Store
from ..tokens.models import get_model
from ..tokens.tokenizers import get_tokenizer
from .charts import _figure
from .compare_state import CURRENT, CURRENT_KEY, MAX_LIMIT, kept, lowered_key, query_value, read_query, refill
from .page_data import common_failure, error_text, file_stem, setup_for, spreadsheet_cell
from .progress import PercentSteps
from .verdict import BEST_STYLE, replay_verdict, rules_text
from ..amounts import csv_dollars, money as dollars

#: The Replay page's widgets whose values outlive a visit to another page (Streamlit drops a widget's value
#: when a run does not draw it), the turn slider's among them.
KEPT = ("replay_source", "replay_sample", "replay_chat_choice", "replay_model", "replay_limit", "replay_reserve",
        "replay_strategies", "replay_stable", "replay_facts", "replay_turn")
#: The strategies whose ``stable_prefix`` variant the page adds.
STABLE_CAPABLE = ("truncate", "summarize", "clear-tool-results")
#: Okabe–Ito colours, one per strategy line: the built-ins' first, in their order (truncate's blue and
#: clear-tool-results' sky blue read alike: black instead; vermillion is the bars' reserve), then the rest.
LINE_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#000000", "#56B4E9", "#D55E00", "#F0E442")


@dataclass(frozen=True, slots=True)
class ReplaySetup:
    """What the user chose on the Replay page."""

    model: str
    context_limit: int
    response_reserve: int
    strategies: tuple[str, ...] = BUILTIN_STRATEGIES
    stable_prefix: bool = True
    facts: tuple[str, ...] = ()
    #: Compare's hand edits (block id → ``pinned`` / ``manualExcluded`` / ``relevance``,
    #: :func:`~contextfit.dashboard.page_data.merge_overrides`): the replay fits with them, so
    #: its latest request is Compare's plan.
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def strategy_entries(self) -> list[Any]:
        """The replay's strategies: each chosen one, then the ``stable_prefix`` variants.

        >>> ReplaySetup("gpt-4o", 8000, 1000, ("truncate", "manual")).strategy_entries()
        ['truncate', 'manual', {'strategy': 'truncate', 'options': {'stable_prefix': True}}]
        """
        entries: list[Any] = list(self.strategies)
        if self.stable_prefix:
            entries += [{"strategy": name, "options": {"stable_prefix": True}} for name in self.strategies
                        if name in STABLE_CAPABLE]
        return entries

    def keywords(self) -> dict[str, Any]:
        """The planning keywords: the model, the limits, and Compare's hand edits when there are any.

        >>> ReplaySetup("gpt-4o", 900, 100, overrides={"m3": {"pinned": True}}).keywords()["overrides"]
        {'m3': {'pinned': True}}
        """
        chosen = {"model": self.model, "context_limit": self.context_limit, "response_reserve": self.response_reserve}
        if self.overrides:
            chosen["overrides"] = {ident: dict(edit) for ident, edit in self.overrides.items()}
        return chosen


def facts_from_text(text: str | None) -> tuple[Any, ...]:
    """One fact per non-blank line: text, ``/pattern/flags`` for a regular expression, or a
    JSON object such as ``{"text": "ORD-7731", "message": 3}`` (a fact pinned to a message).

    >>> facts_from_text('ORD-7731\\n\\n /zenith/i \\n{"message": 2}\\n{not json}')
    ('ORD-7731', '/zenith/i', {'message': 2}, '{not json}')
    """
    return tuple(fact_from_line(line.strip()) for line in (text or "").splitlines() if line.strip())


def usable_facts(facts: Sequence[Any]) -> tuple[tuple[Any, ...], list[InvalidSettings]]:
    """The facts a replay can follow, and an error for each one it cannot, named as
    ``facts[i]`` of ``facts`` (:func:`facts_error_text` names its line): a fact that
    does not check (a /regex/ that does not compile, an unknown key) or repeats an
    earlier one is left out (:func:`~contextfit.replays.facts.facts_that_check`),
    so one bad line does not take the whole replay away.

    >>> kept, errors = usable_facts(["ORD-7731", "/([a-z/", "ORD-7731", "courier"])
    >>> kept, [str(error)[:53] for error in errors]
    (('ORD-7731', 'courier'), ['facts[1] is written as a /regex/ but does not compile', 'facts[2] repeats facts[0]; give each fact once.'])
    """
    positions, errors = facts_that_check(facts)
    return tuple(facts[position] for position in positions), errors


def held_pins(setup: ReplaySetup, messages: Sequence[dict]) -> tuple[ReplaySetup, list[InvalidSettings]]:
    """``setup`` without the facts pinned to a message ``messages`` does not hold, and an error
    for each, named as ``facts[i]`` (a replay refuses such a pin whole, and the page lost its replay).

    >>> setup = ReplaySetup("gpt-4o", 8000, 1000, facts=("AX55", {"text": "AX55", "message": 9}, {"message": 0}))
    >>> kept, errors = held_pins(setup, [{"role": "user", "content": "AX55"}])
    >>> kept.facts, [str(error)[:40] for error in errors]
    (('AX55', {'message': 0}), ['facts[1] is pinned to message 9, which t'])
    """
    ids = message_ids(list(messages))
    kept, errors = [], []
    for position, fact in enumerate(setup.facts):
        pinned = fact.get("message") if isinstance(fact, Mapping) else None
        if pinned is not None and pinned_position(declared_facts([fact])[0], ids) is None:
            errors.append(pin_refusal(position, pinned, len(ids)))
            continue
        kept.append(fact)
    return (replace(setup, facts=tuple(kept)) if errors else setup), errors


def json_line_notes(text: str | None) -> list[str]:
    """A note for each line of the facts box written like a JSON object that does not parse
    (it is looked for as text, which was silent).

    >>> lines = ["ORD-7731", "{'text': 'x'}", '{"text": "Mara"', "{{char}}"]
    >>> for note in json_line_notes(chr(10).join(lines)):
    ...     print(note)
    Line 2 of the facts is written like a JSON object but is not valid JSON (keys and strings take double quotes, and it ends with }), so it is looked for as text.
    Line 3 of the facts is written like a JSON object but is not valid JSON (keys and strings take double quotes, and it ends with }), so it is looked for as text.
    """
    notes = []
    for number, line in enumerate((text or "").splitlines(), 1):
        line = line.strip()
        # ends like an object, or starts with a key (one cut short: '{"text": "Mara"'); "{{char}}" is text
        shaped = line.startswith("{") and (line.endswith("}") and not line.startswith("{{") or _KEY_FIRST.match(line))
        if shaped and isinstance(fact_from_line(line), str):
            notes.append(f"Line {number} of the facts is written like a JSON object but is not valid JSON (keys and "
                         "strings take double quotes, and it ends with }), so it is looked for as text.")
    return notes


_KEY_FIRST = re.compile(r'\{\s*"')


def facts_error_text(error: ContextfitError, facts_text: str | None) -> str:
    """An error for the page, each fact it names (``facts[i]``: the i-th non-blank line, from 0)
    named by its line in the facts box, as the person who typed them counts.

    >>> from contextfit.errors import InvalidSettings
    >>> facts_error_text(InvalidSettings("facts[1] repeats facts[0]; give each fact once."), "a\\n\\na")
    'INVALID_SETTINGS: line 3 of the facts repeats line 1 of the facts; give each fact once.'
    >>> facts_error_text(InvalidSettings("facts[0].text must be a non-empty string, got 5."), '{"text": 5}')
    'INVALID_SETTINGS: line 1 of the facts: its text must be a non-empty string, got 5.'
    """
    lines = [number for number, line in enumerate((facts_text or "").splitlines(), 1) if line.strip()]

    def line_of(match: re.Match[str]) -> str:
        index = int(match[1])
        if index >= len(lines):  # not the box's (a chat's settings, say): as the engine said it
            return match[0]
        return f"line {lines[index]} of the facts" + (f": its {match[2]}" if match[2] else "")

    return error_text(error, re.sub(r"facts\[(\d+)\](?:\.(\w+))?", line_of, str(error)))


def facts_to_text(facts: Any) -> str:
    """The text area's lines for declared facts (a chat's ``settings.facts``): what
    :func:`facts_from_text` reads back; a fact that is not one plain line is written as JSON.

    >>> facts_to_text(["ORD-7731", {"message": 2}, "two\\nlines", "{braces}"])
    'ORD-7731\\n{"message": 2}\\n{"text": "two\\\\nlines"}\\n{"text": "{braces}"}'
    >>> facts_from_text(facts_to_text(["ORD-7731", {"message": 2}, "{braces}"]))
    ('ORD-7731', {'message': 2}, {'text': '{braces}'})
    """
    if not isinstance(facts, (list, tuple)):
        return ""
    lines = []
    for fact in facts:
        if isinstance(fact, str) and fact.strip() == fact and "\n" not in fact and not fact.startswith("{"):
            lines.append(fact)
        else:
            lines.append(json.dumps(fact if isinstance(fact, dict) else {"text": fact}, ensure_ascii=False))
    return "\n".join(lines)


def stored_setup(store: Store, chat_id: str) -> tuple[ReplaySetup, str]:
    """A stored chat's own model, limit and reserve (its settings', else its model's; gpt-4o
    for a chat without a known model) and its declared facts as the text area's lines."""
    chat = store.get_chat(chat_id)
    try:
        setup = setup_for(chat.model or "gpt-4o", chat.settings)
    except ContextfitError:  # a model the catalog no longer has
        setup = setup_for("gpt-4o", chat.settings)
    return ReplaySetup(setup.model, setup.context_limit, setup.response_reserve), facts_to_text(chat.settings.get("facts"))


def conversation_input(conversation: Any, setup: ReplaySetup) -> tuple[list[dict], PlanSettings]:
    """The messages and settings of a conversation (its card, lorebook... included) under the setup."""
    messages, settings = settings_for(conversation, None, setup.keywords())
    return list(messages), settings


def stored_input(store: Store, chat_id: str, setup: ReplaySetup) -> tuple[list[dict], PlanSettings]:
    """A stored chat's messages and settings (as the preview reads them) under the setup's model and limits."""
    settings: dict[str, Any] = {"contextLimit": setup.context_limit, "responseReserve": setup.response_reserve}
    if setup.overrides:
        settings["overrides"] = {ident: dict(edit) for ident, edit in setup.overrides.items()}
    return preview_input(store, {}, chat_id=chat_id, model=setup.model, settings=settings)


def run(messages: list[dict], settings: PlanSettings, setup: ReplaySetup,
        progress: Callable[[int, int], Any] | None = None) -> Replay:
    """The replay of ``messages`` with the setup's strategies and facts (``progress`` as :func:`contextfit.replay`'s)."""
    return replay(messages, settings=settings, strategies=setup.strategy_entries(), facts=list(setup.facts) or None,
                  progress=progress)


class ProgressBar(PercentSteps):
    """A replay's ``progress`` drawn in a placeholder (``st.empty()``): the bar
    appears with the first report, so a kept replay draws none, and is
    redrawn when its whole percent changes. :meth:`clear` removes it.

    >>> class Slot:
    ...     def progress(self, value, text): print(value, text)
    ...     def empty(self): print("cleared")
    >>> bar = ProgressBar(Slot(), 4)
    >>> bar(0, 1000); bar(5, 1000); bar(10, 1000); bar(1000, 1000); bar.clear()
    0.0 Replaying 1,000 turns under 4 strategies…
    0.01 Replayed 10 of 1,000 turns under 4 strategies…
    1.0 Replayed 1,000 of 1,000 turns under 4 strategies…
    cleared
    """

    def __init__(self, slot: Any, strategies: int) -> None:
        super().__init__()
        self.slot = slot
        self.strategies = f"{strategies} strateg{'y' if strategies == 1 else 'ies'}"

    def draw(self, percent: int, done: int, total: int) -> None:
        turns = f"{total:,} turn{'' if total == 1 else 's'}"
        text = (f"Replaying {turns} under {self.strategies}…" if not done
                else f"Replayed {done:,} of {turns} under {self.strategies}…")
        self.slot.progress(percent / 100, text=text)

    def clear(self) -> None:
        if self.shown is not None:
            self.slot.empty()


_RESULT = "replay_result"  # the session's latest replay: (its input's digest, the result)


def cached_run(state: MutableMapping[str, Any], messages: list[dict], settings: PlanSettings,
               setup: ReplaySetup, progress: Callable[[int, int], Any] | None = None) -> Replay:
    """:func:`run`, kept for the session while its input stays the same: a move of the
    turn slider draws another turn of the same replay (a 400-turn chat took 2 s a move).
    The input is read whole (messages, settings, setup), so an edit replays again."""
    digest = hashlib.sha256(json.dumps([messages, repr(settings), repr(setup)], sort_keys=True,
                                       default=repr).encode("utf-8", "surrogatepass")).hexdigest()
    found = state.get(_RESULT)
    if found is not None and found[0] == digest:
        return found[1]
    result = run(messages, settings, setup, progress)
    state[_RESULT] = (digest, result)
    return result


def compare_choices(state: Mapping[str, Any], models: Sequence[str]) -> tuple[str, int, int] | None:
    """The model, context limit and reserve the Compare page shows (what it keeps across pages),
    when it has shown them all and they are usable; else ``None``.

    >>> compare_choices({"kept:model": "gpt-4o", "kept:limit": 900, "kept:reserve": 100}, ["gpt-4o"])
    ('gpt-4o', 900, 100)
    >>> compare_choices({"kept:model": "gpt-4o", "kept:limit": 900}, ["gpt-4o"]) is None
    True
    """
    model, limit, reserve = (state.get(f"kept:{key}") for key in ("model", "limit", "reserve"))
    if model not in models or type(limit) is not int or type(reserve) is not int or not 0 <= reserve < limit:
        return None
    return model, limit, reserve


def follow_compare(state: MutableMapping[str, Any], choices: tuple[str, int, int] | None) -> str | None:
    """Replaying the Compare page's conversation: take Compare's model, limit and reserve when
    they changed since this page last took them (a demo sets them there, then opens Replay),
    and say so; the user's own edits here stay while Compare's stay the same.

    >>> state = {"replay_model": "gpt-4o-mini", "replay_limit": 1100, "replay_reserve": 300}
    >>> follow_compare(state, ("gpt-4o", 900, 100))
    'Model and limits as on Compare strategies: gpt-4o, a 900-token limit, a 100-token reserve.'
    >>> state["replay_limit"] = 2000  # changed here
    >>> follow_compare(state, ("gpt-4o", 900, 100)), state["replay_limit"]
    (None, 2000)
    """
    if choices is None or state.get("replay_compare_seen") == choices:
        return None
    state["replay_compare_seen"] = choices
    model, limit, reserve = choices
    if (state.get("replay_model"), state.get("replay_limit"), state.get("replay_reserve")) == choices:
        return None
    state["replay_model"], state["replay_limit"], state["replay_reserve"] = choices
    return f"Model and limits as on Compare strategies: {model}, a {limit:,}-token limit, a {reserve:,}-token reserve."


def window_note(model: str, limit: int) -> str | None:
    """A note when the chosen context limit passes the model's own window (the replay plans to the
    limit it is given, which the provider would refuse).

    >>> window_note("gpt-4o", 1_000_000)
    'The context limit, 1,000,000 tokens, is more than gpt-4o takes (128,000): the replay plans to it all the same, as a what-if.'
    >>> window_note("gpt-4o", 128_000) is None
    True
    """
    window = get_model(model).context_limit
    if limit <= window:
        return None
    return (f"The context limit, {limit:,} tokens, is more than {model} takes ({window:,}): the replay plans to it "
            "all the same, as a what-if.")


def restore(state: MutableMapping[str, Any]) -> None:
    """Put back the Replay choices Streamlit dropped while another page was shown
    (:func:`keep` copied them under keys no widget owns).

    >>> state = {"kept:replay_limit": 3000}
    >>> restore(state); state["replay_limit"]
    3000
    """
    for key in KEPT:
        if key not in state and kept(key) in state:
            state[key] = state[kept(key)]


def refill_limits(state: MutableMapping[str, Any], suggested: Any) -> list[str]:
    """The limit and reserve boxes the user emptied get the conversation's suggestion
    (``suggested``: its ``context_limit`` and ``response_reserve``), a note each
    (:func:`~contextfit.dashboard.compare_state.refill`).

    >>> from types import SimpleNamespace as S
    >>> state = {"replay_limit": 3000, "replay_reserve": None}
    >>> refill_limits(state, S(context_limit=2200, response_reserve=400)), state["replay_reserve"]
    (["The response reserve box was emptied: back to 400, this conversation's suggestion."], 400)
    """
    return refill(state, {"replay_limit": ("context limit", int(suggested.context_limit)),
                          "replay_reserve": ("response reserve", int(suggested.response_reserve))})


def keep(state: MutableMapping[str, Any]) -> None:
    """Copy the Replay widgets' values under keys no widget owns (run after the widgets are drawn)."""
    for key in KEPT:
        if key in state:
            state[kept(key)] = state[key]


def follow(state: MutableMapping[str, Any], conversation_key: Any, suggested: Any, models: list[str],
           facts: str = "") -> None:
    """Give the model, limit and facts widgets a new conversation's suggestion (``suggested``:
    its model, ``context_limit`` and ``response_reserve``; ``facts``: the facts it declares, as
    lines); the user's edits stay while the conversation does.

    >>> from types import SimpleNamespace as S
    >>> state = {}
    >>> follow(state, "sample:a", S(model="gpt-4o", context_limit=2200, response_reserve=400), ["gpt-4o"])
    >>> state["replay_limit"], state["replay_facts"] = 3000, "ORD-7731"  # typed in the widgets
    >>> follow(state, "sample:a", S(model="gpt-4o", context_limit=2200, response_reserve=400), ["gpt-4o"])
    >>> state["replay_limit"], state["replay_reserve"], state["replay_facts"]
    (3000, 400, 'ORD-7731')
    >>> follow(state, "chat:b", S(model="gpt-4o", context_limit=1100, response_reserve=300), ["gpt-4o"], "Zenith")
    >>> state["replay_limit"], state["replay_reserve"], state["replay_facts"]
    (1100, 300, 'Zenith')
    """
    fresh = state.get("replay_setup_for") != conversation_key
    if fresh or state.get("replay_model") not in models:
        state["replay_model"] = suggested.model if suggested.model in models else models[0]
    if fresh or "replay_limit" not in state:
        state["replay_limit"] = min(max(int(suggested.context_limit), 1), MAX_LIMIT)
    if fresh or "replay_reserve" not in state:
        state["replay_reserve"] = min(max(int(suggested.response_reserve), 0), MAX_LIMIT)
    if fresh:  # facts belong to a conversation, and so does the turn shown (a new one shows its last)
        state["replay_facts"] = facts
        state.pop("replay_turn", None)
        state.pop(lowered_key("replay_reserve"), None)  # a reserve lowered for another conversation does not come back
    state["replay_setup_for"] = conversation_key


#: The Replay page's query parameters: a reload, a bookmark or a shared link opens the same replay.
LINK_KEYS = ("source", "model", "limit", "reserve", "strategies", "stable", "facts", "turn")
_SOURCES = {"Sample": "sample", "Stored chat": "chat", "Current conversation": "current"}
_LINKED_FACTS = 1000  # characters of facts a link carries (more is left out of it)
MAX_TURN = 10_000_000  # a link's turn above this is no turn number


def turn_choice(state: MutableMapping[str, Any], turns: int) -> None:
    """Keep the chosen turn (a link's, or the one shown before a page switch) within a
    replay of ``turns`` turns, the last one when none was chosen.

    >>> state = {"replay_turn": 16}
    >>> turn_choice(state, 21), state["replay_turn"], turn_choice(state, 12), state["replay_turn"]
    (None, 16, None, 12)
    """
    chosen = state.get("replay_turn")
    # set every time, in range: a slider whose range changed (another conversation) is a new widget
    # to Streamlit, which started it at its lowest value unless the state says otherwise
    state["replay_turn"] = turns if type(chosen) is not int or chosen > turns else max(chosen, 1)


def link_of(state: Mapping[str, Any]) -> dict[str, str]:
    """The query parameters for the page's choices (what :func:`from_link` reads back).

    >>> link_of({"replay_source": "Sample", "replay_sample": "support_chat", "replay_model": "gpt-4o",
    ...          "replay_limit": 1100, "replay_reserve": 300, "replay_strategies": ["truncate"],
    ...          "replay_stable": False, "replay_facts": "ORD-7731", "replay_turn": 4})
    {'source': 'sample:support_chat', 'model': 'gpt-4o', 'limit': '1100', 'reserve': '300', 'strategies': 'truncate', 'stable': '0', 'facts': 'ORD-7731', 'turn': '4'}
    """
    kind = _SOURCES.get(state.get("replay_source"))
    chosen = {"sample": state.get("replay_sample"), "chat": state.get("replay_chat_choice"),
              "current": compare_sample(state)}.get(kind)
    link = {
        "source": kind if chosen is None else f"{kind}:{chosen}",
        "model": state.get("replay_model"),
        "limit": None if state.get("replay_limit") is None else str(int(state["replay_limit"])),
        "reserve": None if state.get("replay_reserve") is None else str(int(state["replay_reserve"])),
        "strategies": ",".join(state.get("replay_strategies") or ()),
        "stable": "1" if state.get("replay_stable", True) else "0",
        "facts": state.get("replay_facts") or None,
        "turn": None if state.get("replay_turn") is None else str(int(state["replay_turn"])),
    }
    if link["facts"] is not None and len(link["facts"]) > _LINKED_FACTS:
        link["facts"] = None
    return {key: value for key, value in link.items() if value}


def compare_sample(state: Mapping[str, Any]) -> str | None:
    """The built-in sample the Compare page shows as it is (not combined with a file), else ``None``:
    a link to "Current conversation" names it, so a reload (a new session, where Compare has
    not run) still opens that conversation.

    >>> compare_sample({CURRENT_KEY: "sample:roleplay"}), compare_sample({CURRENT_KEY: "paste:1f2e:0"})
    ('roleplay', None)
    """
    key = state.get(CURRENT_KEY)
    found = re.fullmatch(r"sample:([\w-]+)", key) if isinstance(key, str) else None
    return found.group(1) if found else None


def unlinked_facts(facts: str | None) -> str | None:
    """What the page says when the facts are too long for its address (:func:`link_of` leaves
    them out): a reload or a shared link would open the replay without them, unsaid.

    >>> unlinked_facts("ORD-7731") is None
    True
    >>> print(unlinked_facts("x" * 3000))
    These facts (3,000 characters) are too long for the page's address (1,000 at most): a reload or a shared link opens the replay without them. Keep them elsewhere to paste them again.
    """
    if not facts or len(facts) <= _LINKED_FACTS:
        return None
    return (f"These facts ({len(facts):,} characters) are too long for the page's address ({_LINKED_FACTS:,} at "
            "most): a reload or a shared link opens the replay without them. Keep them elsewhere to paste them again.")


def write_link(params: MutableMapping[str, Any], state: Mapping[str, Any]) -> None:
    """Make the URL's query parameters (``params``: ``st.query_params``) name the page's
    choices, writing only what changed (each write updates the browser's address).

    >>> params = {"limit": "2200", "facts": "old", "sample": "kept"}
    >>> write_link(params, {"replay_source": "Sample", "replay_sample": "a", "replay_limit": 3000})
    >>> params
    {'limit': '3000', 'sample': 'kept', 'source': 'sample:a', 'stable': '1'}
    """
    link = link_of(state)
    for key in LINK_KEYS:
        if key not in link:
            if key in params:
                del params[key]
        elif params.get(key) != link[key]:
            params[key] = link[key]


def from_link(state: MutableMapping[str, Any], params: Mapping[str, Any], models: Sequence[str],
              names: Sequence[str], samples: Sequence[str], has_current: bool = True,
              current_sample: str | None = None) -> list[str]:
    """Put a link's choices (:func:`link_of`) into the page's widgets, once per session: the
    values a link may not hold are left out, with a note each. ``has_current``: whether the
    session holds a conversation of the Compare page (a link's ``source=current`` cannot
    bring one: it was pasted in another session); ``current_sample``: the sample it is, if
    one (:func:`compare_sample`).

    A link to Compare's conversation when that was a sample (``source=current:roleplay``)
    opens the sample where this session's Compare shows another conversation, or none yet
    (a reload): the same conversation, nothing to say.

    >>> state = {}
    >>> from_link(state, {"source": "current:roleplay", "limit": "3000"}, ["gpt-4o"], ["truncate"],
    ...           ["roleplay"], has_current=False)
    []
    >>> state["replay_source"], state["replay_sample"], state["replay_limit"]
    ('Sample', 'roleplay', 3000)

    >>> state = {}
    >>> from_link(state, {"source": "sample:support_chat", "limit": "1100", "strategies": "truncate,nope",
    ...                   "stable": "0"}, ["gpt-4o"], ["truncate"], ["support_chat"])
    ["Ignored the unknown strategy 'nope' from the link."]
    >>> state["replay_sample"], state["replay_limit"], state["replay_strategies"], state["replay_stable"]
    ('support_chat', 1100, ['truncate'], False)
    >>> from_link(state, {"source": "sample:gone"}, ["gpt-4o"], ["truncate"], ["support_chat"])
    []

    A link whose conversation is not here (pasted in another session, or a sample
    that does not exist) shows a sample with the link's other choices, and says so:

    >>> state = {}
    >>> notes = from_link(state, {"source": "current", "limit": "3000", "facts": "48213"}, ["gpt-4o"],
    ...                   ["truncate"], ["roleplay", "support_chat"], has_current=False)
    >>> state["replay_source"], state["replay_setup_for"], state["replay_limit"], state["replay_facts"]
    ('Sample', 'sample:roleplay', 3000, '48213')
    """
    if state.get("replay_linked"):
        return []
    state["replay_linked"] = True
    url = read_query(params, models, names)
    notes = list(url.notes)
    source = query_value(params, "source") or ""
    kind, _, chosen = source.partition(":")
    identity: str | None = None
    if kind == "sample" and chosen in samples:
        state["replay_source"], state["replay_sample"] = "Sample", chosen
        identity = f"sample:{chosen}"
    elif kind == "chat" and chosen:
        state["replay_source"], state["replay_chat_choice"] = "Stored chat", chosen
        identity = f"chat:{chosen}"
    elif kind == "current" and chosen and chosen in samples and not (has_current and current_sample == chosen):
        state["replay_source"], state["replay_sample"] = "Sample", chosen  # Compare's sample, Compare not showing it
        identity = f"sample:{chosen}"
    elif kind == "current" and has_current:
        state["replay_source"] = "Current conversation"
    elif kind == "current":  # a reload, or a shared link: the pasted conversation stayed in the old session
        identity = _fallback(state, samples)
        notes.append("The link's conversation was pasted or uploaded on Compare strategies in another session (a "
                     "reload or a shared link starts a new one), so it is not here: paste or upload it there again. "
                     "A sample is shown meanwhile, with the link's other choices.")
    elif source:
        identity = _fallback(state, samples)
        notes.append(f"Ignored source={source[:60]!r} from the link: no such sample. A sample is shown with the "
                     "link's other choices.")
    for key, value in (("replay_model", url.model), ("replay_limit", url.limit), ("replay_reserve", url.reserve)):
        if value is not None:
            state[key] = value
    if url.strategies:
        state["replay_strategies"] = list(url.strategies)
    stable = query_value(params, "stable")
    if stable in ("0", "1"):
        state["replay_stable"] = stable == "1"
    elif stable is not None:
        notes.append(f"Ignored stable={stable[:60]!r} from the link: 0 or 1 is expected.")
    facts = query_value(params, "facts")
    if facts is not None:
        state["replay_facts"] = facts
    turn = query_value(params, "turn")
    if turn is not None:
        if turn.isascii() and turn.isdigit() and 0 < int(turn) <= MAX_TURN:
            state["replay_turn"] = int(turn)  # the page brings it within the replay's turns
        else:
            notes.append(f"Ignored turn={turn[:60]!r} from the link: a turn number from 1 is expected.")
    if identity is not None and (url.model or url.limit or url.reserve or facts is not None or turn is not None):
        state["replay_setup_for"] = identity  # the link's model, limits, facts and turn are this conversation's
    return notes


def _fallback(state: MutableMapping[str, Any], samples: Sequence[str]) -> str | None:
    """The sample the page shows for a link whose conversation is not here (the one the
    session chose before, else the first), as the conversation the link's choices go with."""
    if not samples:
        return None
    if state.get("replay_sample") not in samples:
        state["replay_sample"] = samples[0]
    state["replay_source"] = "Sample"
    return f"sample:{state['replay_sample']}"


def choose_chat(state: MutableMapping[str, Any], ids: Sequence[str], titles: Mapping[str, str]) -> str | None:
    """Make the chat selector's choice a stored chat (``ids``: the chats with an audit), the first
    when the one chosen (by a link, the Audit page or an earlier visit) is not stored: a note
    saying so, else ``None``.

    >>> state = {"replay_chat_choice": "chat_gone"}
    >>> choose_chat(state, ["chat_a"], {"chat_a": "Router"}), state["replay_chat_choice"]
    ("Chat 'chat_gone' is not among the stored chats with an audit (deleted, never generated, or a link to another database): showing “Router” instead.", 'chat_a')
    >>> choose_chat(state, ["chat_a"], {}), choose_chat({}, [], {})
    (None, None)
    """
    chosen = state.get("replay_chat_choice")
    if chosen in ids:
        return None
    if ids:
        state["replay_chat_choice"] = ids[0]
    if chosen is None:
        return None
    instead = f": showing “{titles.get(ids[0]) or ids[0]}” instead" if ids else ""
    return (f"Chat {str(chosen)[:80]!r} is not among the stored chats with an audit (deleted, never generated, or a "
            f"link to another database){instead}.")


def current_conversation(state: Mapping[str, Any], read: Any) -> Any | None:
    """The Compare page's conversation, read defensively from session state: a
    ``Conversation`` it keeps (under :data:`CURRENT`, or a key it has used), else the
    text it was pasted as, read with ``read``; ``None`` when there is none or
    it cannot be read (the page then offers the samples)."""
    for key in (CURRENT, "conversation", "current_conversation"):
        value = state.get(key)
        if value is not None and isinstance(getattr(value, "messages", None), list):
            return value
    for key in ("raw", "paste"):
        value = state.get(key)
        if isinstance(value, (str, bytes)) and value.strip():
            try:
                return read(value.encode("utf-8") if isinstance(value, str) else value)
            except ContextfitError:
                return None
    return None


def money(value: float | None) -> str:
    """Dollars for a cell (:func:`contextfit.amounts.money`), "—" for no price.

    >>> money(0.0123456), money(None), money(12.5), money(2.5e-05), money(0.0456)
    ('$0.01235', '—', '$12.50', '$0.00002500', '$0.04560')
    """
    return dollars(value, "—")


def totals_rows(result: Replay) -> list[dict[str, Any]]:
    """The verdict table: one row per strategy, marked where it wins."""
    winners = result.winners()  # every strategy tied for the best is marked
    wins = {label: [name for name, key in (("cheapest", "cheapest"), ("best retention", "bestRetention"),
                                           ("best cache", "bestCache")) if label in winners[key]]
            for label in result.totals}
    rows = []
    for label, totals in result.totals.items():
        sent = totals.failed_turns < totals.turns  # a strategy that fitted no turn sent nothing to rate
        rows.append({
            "strategy": label,
            "verdict": ", ".join(wins[label]),
            "total cost": money(totals.total_cost),
            "mean cost / turn": money(totals.mean_cost),
            "cache hit rate": f"{totals.cache_hit_rate:.1%}" if sent else "—",
            "tokens sent": totals.tokens_sent if sent else None,
            "retention": "—" if totals.retention is None or not sent else f"{totals.retention:.1%}",
            "first loss (turn)": totals.first_loss_turn if sent else None,
            "first drop (turn)": totals.first_drop_turn,
            "failed turns": totals.failed_turns,
        })
    return rows


#: The verdict table's cells each win marks (:func:`totals_styles`).
_WIN_CELLS = {"cheapest": ("total cost", "mean cost / turn"), "bestRetention": ("retention",),
              "bestCache": ("cache hit rate",)}


def totals_styles(result: Replay) -> list[dict[str, str]]:
    """CSS per cell of :func:`totals_rows` (same rows, same keys): the cells where a strategy is
    the best, or tied for it, highlighted as Compare highlights its verdict.

    >>> from contextfit.replays.run import replay
    >>> chat = [{"role": "user", "content": "Hi " * 30, "meta": {"manualExcluded": True}},
    ...         {"role": "assistant", "content": "Yes."}, {"role": "user", "content": "And?"}]
    >>> styles = totals_styles(replay(chat, model="gpt-4o", context_limit=1000, response_reserve=5,
    ...                               strategies=["truncate", "manual"]))
    >>> [style["total cost"] for style in styles], styles[1]["strategy"]
    (['', 'background-color: #D8F0E6; font-weight: 600'], '')
    """
    winners = result.winners()
    marked = {label: {cell for key, cells in _WIN_CELLS.items() if label in winners[key] for cell in cells}
              for label in result.totals}
    return [{key: BEST_STYLE if key in marked[row["strategy"]] else "" for key in row} for row in totals_rows(result)]


#: The columns of :func:`turns_csv`, one row per turn and strategy.
TURN_COLUMNS = ("strategy", "turn", "message index", "prompt tokens", "sent blocks", "dropped", "summarized",
                "compressed", "shared tokens", "cache read", "cache write", "output tokens", "input $",
                "cached input $", "cache write $", "output $", "total $", "retention", "lost facts", "error")


def chat_stem(chat_id: str) -> str:
    """What a stored chat's download names say: ``chat-`` and its id, once.

    >>> chat_stem("chat-49c4b56a"), chat_stem("support 7")
    ('chat-49c4b56a', 'chat-support-7')
    """
    stem = file_stem(chat_id, "stored")
    return stem if stem.startswith("chat-") else f"chat-{stem}"


def turns_csv(result: Replay) -> str:
    """Every turn of every strategy as CSV (:data:`TURN_COLUMNS`): the replay's lines as numbers,
    costs in dollars (empty without prices), the lost facts joined by ``; ``."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(TURN_COLUMNS)
    for label, rows in result.turns.items():
        for row in rows:
            cost = row.cost
            money = ["", "", "", "", ""] if cost is None else list(map(csv_dollars, [
                cost.input, cost.cached_input, cost.cache_write, cost.output, cost.total]))
            writer.writerow(map(spreadsheet_cell, [
                label, row.turn, row.message_index, "" if row.prompt_tokens is None else row.prompt_tokens,
                row.sent_blocks, row.dropped, row.summarized, row.compressed, row.shared_tokens, row.cache_read,
                row.cache_write, row.output_tokens, *money, "" if row.retention is None else row.retention,
                "; ".join(row.lost), row.error or "",
            ]))
    return out.getvalue()


def replay_json(result: Replay) -> str:
    """The whole replay as JSON: what ``POST /api/v2/replay`` answers."""
    return json.dumps(result.to_dict(), ensure_ascii=False, indent=2)


def series(result: Replay, label: str) -> dict[str, list[Any]]:
    """Per-turn values of one strategy: prompt tokens, cumulative cost, cache-hit
    share, retention and the facts lost (``None`` where a turn failed or no fact was in force)."""
    out: dict[str, list[Any]] = {"turn": [], "prompt": [], "cost": [], "cache": [], "retention": [], "lost": []}
    spent = 0.0
    priced = result.prices is not None
    for turn in result.turns[label]:
        out["turn"].append(turn.turn)
        out["prompt"].append(turn.prompt_tokens)
        if turn.cost is not None:
            spent += turn.cost.total
        out["cost"].append(spent if priced and turn.error is None else None)  # a failed turn: a gap
        out["cache"].append(turn.cache_read / turn.prompt_tokens if turn.prompt_tokens else None)
        fitted = turn.error is None  # a turn that sent nothing is a gap, not a loss drawn at 0%
        out["retention"].append(turn.retention if fitted else None)
        out["lost"].append(turn.lost if fitted else [])
    return out


#: Titles short enough for a chart of a narrow window (800 pixels with the sidebar: about 30
#: characters), and short units.
_TITLES = {
    "prompt": ("Prompt tokens per turn", "tokens"),
    "cost": ("Cumulative cost", "US dollars"),
    "cache": ("Read from the cache, per turn", "share of the prompt"),
    "retention": ("Facts still sent (× lost)", "share of facts"),
}


#: How the unified hover writes a value of each metric (plotly's d3 formats).
_HOVER = {"prompt": "%{y:,} tokens", "cost": "$%{y:,.6~g}", "cache": "%{y:.1%}", "retention": "%{y:.1%}"}


def line_style(result: Replay, label: str) -> dict[str, Any]:
    """The colour and dash of a strategy's line. A built-in strategy keeps its colour whichever
    others are replayed (removing one recoloured the rest), and its stable_prefix variant takes
    it too, dotted; any other label takes one of the colours left, in the replay's order.

    >>> from types import SimpleNamespace as S
    >>> result = S(turns={"vector-recall": [], "truncate+stable_prefix": [], "mine": []})
    >>> [line_style(result, label)["color"] for label in result.turns] == [
    ...     LINE_COLORS[2], LINE_COLORS[0], LINE_COLORS[len(BUILTIN_STRATEGIES)]]
    True
    """
    base = _built_in(label)
    if base is not None:
        color = LINE_COLORS[BUILTIN_STRATEGIES.index(base)]
    else:
        others = [name for name in result.turns if _built_in(name) is None]
        spare = LINE_COLORS[len(BUILTIN_STRATEGIES):]
        color = spare[others.index(label) % len(spare)]
    return {"color": color, "dash": "dot" if label.endswith("+stable_prefix") else "solid", "width": 2}


def _built_in(label: str) -> str | None:
    """The built-in strategy a label is, alone or with stable_prefix only (the page's labels), else ``None``."""
    base, _, options = label.partition("+")
    return base if base in BUILTIN_STRATEGIES and options in ("", "stable_prefix") else None


def lines_legend_html(result: Replay) -> str:
    """One legend for the four line charts (each repeated eight names, taller than its plot at
    1280 pixels, and plotly's legend under a plot sat on it after the window was widened)."""
    borders = {"solid": "solid", "dot": "dotted"}
    items = []
    for label in result.turns:  # a line drawn as a border: st.html keeps no SVG
        style = line_style(result, label)
        swatch = (f'<span class="line-swatch" style="display:inline-block;width:24px;height:0;vertical-align:middle;'
                  f'border-top:3px {borders[style["dash"]]} {style["color"]};margin:0 0.3em 0 1em"></span>')
        items.append(f'<span style="white-space:nowrap">{swatch}{html.escape(label)}</span> ')
    return ('<div class="contextfit-lines-legend" style="font-size:0.85rem;margin:0 0 0.25rem -1em;line-height:1.8">'
            + "".join(items) + "</div>")


def lines_figure(result: Replay, metric: str, large: bool = False) -> go.Figure:
    """One line per strategy over the turns: ``prompt``, ``cost``, ``cache`` or ``retention``
    (retention marks with an × the turns where a fact was lost, the facts in the hover).

    The hover is unified: a turn's box lists every strategy, so lines that lie on each other
    (strategies that sent the same) are all named. The legend is :func:`lines_legend_html`.
    ``large``: for presentation mode (page CSS cannot enlarge a plotly chart's text)."""
    title, unit = _TITLES[metric]
    data: list[dict[str, Any]] = []
    for label in result.turns:
        values = series(result, label)
        style = line_style(result, label)
        name = html.escape(label)
        data.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": values["turn"],
                     "y": values[metric], "line": style, "marker": {"size": 4},
                     "hovertemplate": f"{name}: {_HOVER[metric]}<extra></extra>"})
        if metric == "retention":
            lost = [(turn, value, names) for turn, value, names in zip(values["turn"], values["retention"], values["lost"])
                    if names]
            if lost:
                data.append({"type": "scatter", "mode": "markers", "name": name + " lost",
                             "x": [t for t, _, _ in lost], "y": [v for _, v, _ in lost],
                             "marker": {"symbol": "x", "size": 9, "color": style["color"]},
                             "text": [html.escape(", ".join(names))[:200] for _, _, names in lost],
                             "hovertemplate": f"× {name} lost %{{text}}<extra></extra>"})
    yaxis: dict[str, Any] = {"title": {"text": unit}}
    if metric in ("cache", "retention"):
        yaxis.update(range=[-0.02, 1.05], tickformat=".0%")
    # whole turns, with separators: two turns were ticked "1, 1.5, 2" and a long chat's last "1000"
    xaxis: dict[str, Any] = {"title": {"text": "turn"}, "tickformat": ",d", "hoverformat": ",d"}
    if len(result.requests) <= 10:
        xaxis["dtick"] = 1
    if large:  # each axis's own sizes: the dashboard's chart theme sets them over the layout's font
        for axis in (xaxis, yaxis):
            axis.update(tickfont={"size": 15})
            axis["title"] = {**axis["title"], "font": {"size": 16}}
    figure = _figure(data, legend=False, xaxis=xaxis, yaxis=yaxis, height=440 if large else 320, hovermode="x unified",
                     title={"text": title, "font": {"size": 20 if large else 14}, "x": 0, "y": 0.98},
                     margin={"l": 10, "r": 10, "t": 44 if large else 36, "b": 10},
                     **({"font": {"family": "Inter, system-ui, sans-serif", "size": 16},
                         "hoverlabel": {"font": {"size": 16}, "align": "left", "namelength": -1}} if large else {}))
    if not any(value is not None for trace in data for value in trace["y"]):  # an empty plot says why
        if all(totals.failed_turns == totals.turns for totals in result.totals.values()):
            empty = _NOTHING_FITTED
        elif metric == "retention" and result.fact_rule != DECLARED:
            empty = _EMPTY_UNDER_THE_RULE
        else:
            empty = _EMPTY.get(metric, ("Nothing to draw.",))
        lines = [html.escape(line.format(model=result.model)) for line in empty]
        figure.add_annotation(text="<br>".join(lines), xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                              font={"size": 13})
        figure.update_xaxes(visible=False)  # axes of nothing (-1 to 4 "US dollars") read as data
        figure.update_yaxes(visible=False)
    return figure


def turn_errors(plans: Mapping[str, Any], turn: int) -> tuple[str | None, dict[str, str]]:
    """What the "One turn" view says of the strategies that could not fit ``turn``: one
    sentence when none could, for the same reason (eight equal boxes said it eight times,
    without the turn), else one per strategy; each names the turn.

    >>> from contextfit.errors import TokenBudgetExceeded
    >>> refused = TokenBudgetExceeded(294, 1, "The protected context alone needs 294 tokens.")
    >>> turn_errors({"truncate": refused, "summarize": refused}, 12)[0]
    'No strategy can fit turn 12: TOKEN_BUDGET_EXCEEDED: The protected context alone needs 294 tokens.'
    >>> turn_errors({"truncate": refused, "manual": object()}, 3)[1]
    {'truncate': 'Turn 3 does not fit: TOKEN_BUDGET_EXCEEDED: The protected context alone needs 294 tokens.'}
    """
    common = common_failure(plans)
    if common is not None:
        return f"No strategy can fit turn {turn:,}: {common}", {}
    return None, {label: f"Turn {turn:,} does not fit: {error_text(plan)}" for label, plan in plans.items()
                  if isinstance(plan, ContextfitError)}


#: What an empty chart says instead, a line each (two columns of a 1280-pixel window are narrow).
_EMPTY = {
    "cost": ("No prices for {model}", "in the catalog: no cost."),
    "retention": ("No fact in force at any turn.",),
}
#: Any chart when no strategy could fit any turn (it said "No prices for gpt-4o" beside a price source).
_NOTHING_FITTED = ("No strategy could fit any turn:", "nothing was sent (see the notes above).")
#: The empty retention chart under the default entity rule: no entity recurred (a chat in a script
#: without capitals, say), so the user's own facts are the way on.
_EMPTY_UNDER_THE_RULE = ("No fact in force at any turn:", "type the facts to follow",
                         "in the sidebar (Must-survive facts).")


def approximate_note(model: str) -> str | None:
    """What the page says when the model's counts are an estimate (Claude, Gemini...).

    >>> approximate_note("gpt-4o") is None, approximate_note("claude-sonnet-4").startswith("Token counts for claude")
    (True, True)
    """
    tokenizer = get_tokenizer(get_model(model).tokenizer)
    if not tokenizer.approximate:
        return None
    return (f"Token counts for {model} are approximate (the Models & tokenizers page says how they are "
            "estimated). Each fit plans to the upper end of the band, so the prompt tokens, cached tokens and "
            "costs here are upper estimates.")


def fact_notes(result: Replay) -> list[str]:
    """A line for each declared fact that no turn checks because no message holds it (the
    replay refuses a ``/regex/`` that does not compile and a pin to a message it does not hold). A regex fact
    its time limit stopped is not said to be absent: the replay's notes say it was stopped."""
    checked = {state.name for rows in result.turns.values() for row in rows for state in row.facts}
    stopped = {diagnostic.get("key") for diagnostic in result.diagnostics}
    absent = [fact.name for fact in result.facts
              if fact.name not in checked and (fact.regex is None or fact.regex not in stopped)]
    if len(absent) <= _NAMED:
        return [f"No message holds “{name}”, so no turn checks it." for name in absent]
    # one line: a facts box of 1,000 lines drew 1,000 warnings before the charts
    return [f"No message holds {len(absent):,} of the declared facts, so no turn checks them: "
            f"{names_text(absent, quoted=True)}."]


_NAMED = 10  # names a line lists before it counts the rest


def names_text(names: Sequence[str], quoted: bool = False) -> str:
    """Names for one line: the first ten, then how many more.

    >>> names_text(["a", "b"]), names_text([str(n) for n in range(12)], quoted=True)
    ('a, b', '“0”, “1”, “2”, “3”, “4”, “5”, “6”, “7”, “8”, “9” and 2 more')
    """
    shown = [f"“{name}”" if quoted else name for name in names[:_NAMED]]
    return ", ".join(shown) + (f" and {len(names) - _NAMED:,} more" if len(names) > _NAMED else "")


def turn_plans(messages: list[dict], settings: PlanSettings, result: Replay, turn: int,
               setup: ReplaySetup) -> dict[str, PromptPlan | ContextfitError]:
    """Each strategy's plan of one turn (1-based): the Compare view of that request."""
    position = result.requests[turn - 1]
    plans: dict[str, PromptPlan | ContextfitError] = {}
    for variant in variants(setup.strategy_entries()):
        try:
            plans[variant.label] = plan_prompt(messages[: position + 1], settings, context_strategy=variant.strategy,
                                               **variant.options)
        except TokenBudgetExceeded as error:
            plans[variant.label] = error
    return plans


def turn_summary(result: Replay, label: str, turn: int) -> dict[str, Any]:
    """The numbers of one strategy at one turn, for the metrics above its plan."""
    row = result.turns[label][turn - 1]
    return {
        "prompt_tokens": row.prompt_tokens,
        "cached": row.cache_read,
        "cost": money(row.cost.total if row.cost is not None else None),
        "lost": row.lost,
        "lost_text": names_text(row.lost),
    }


def verdict_text(result: Replay) -> str:
    """The verdict sentence (:func:`contextfit.dashboard.verdict.replay_verdict`), as the page says it.

    >>> from contextfit.replays.run import replay
    >>> verdict_text(replay([{"role": "user", "content": "Hi"}], model="gpt-4o", strategies=["truncate"]))
    'Only truncate was replayed: choose more strategies in the sidebar to compare it with others.'
    """
    return replay_verdict(result, "choose more strategies in the sidebar")


__all__ = [
    "TURN_COLUMNS", "ProgressBar", "ReplaySetup", "approximate_note", "cached_run", "chat_stem", "choose_chat",
    "compare_choices", "follow_compare", "window_note",
    "csv_dollars", "conversation_input",
    "current_conversation", "fact_notes", "facts_error_text", "facts_from_text", "facts_to_text", "follow",
    "held_pins", "json_line_notes", "usable_facts",
    "from_link", "keep", "line_style", "lines_figure", "lines_legend_html", "link_of", "names_text", "replay_json",
    "restore", "rules_text", "run", "series", "stored_input", "turn_choice", "stored_setup", "totals_rows", "turn_plans", "turn_summary", "turns_csv", "verdict_text", "write_link",
]
