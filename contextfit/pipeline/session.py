"""A chat that grows: :class:`FitSession` refits after one appended message
without reading the others again.

:func:`~contextfit.shift_context` and :func:`~contextfit.plan_prompt` are
handed a list they do not own. Before they reuse what they learnt about a
chat (the cached analysis of a prefix, analysis.py) they compare every earlier
message with a snapshot, which is how they notice a message edited in place,
and which costs time in proportion to the whole chat. A session owns its
messages instead: it keeps copies of what it is given and changes them only
through :meth:`FitSession.append`, :meth:`~FitSession.extend` and
:meth:`~FitSession.edit`, so it knows which messages are new. A refit
analyses and counts only those, and ``truncate`` carries its walk over from
the last fit at the same budget (strategies/carried_walk.py), redoing only the units
the new messages changed.

A session answers exactly what a fresh :func:`~contextfit.shift_context` or
:func:`~contextfit.plan_prompt` on :attr:`FitSession.messages` answers (the
property tests in ``tests/pipeline/test_session.py`` hold it to that, for every
strategy, after appends and edits). It is safe to share between threads:
each call holds the session's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ContextfitError, InvalidMessages, TokenBudgetExceeded, UnsupportedOption
from ..inputs.messages import SYSTEM, check_message, clone, kind_of, message_text, meta_of
from ..tokens import reasoning
from ..fitting.analysis import ChatAnalysis, FitView, Known, analysis_for
from .assembly import Filled, appended_blocks, as_card
from ..fitting.counting import Counting, CountTokens
from ..fitting.host import Analyse, fit_messages
from .plan import BUILTIN_STRATEGIES, Prepared, PromptPlan, plan_prepared, prepare
from .settings import DEFAULT_USER_NAME, PlanSettings, settings_for
from ..fitting.results import FitResult
from ..fitting.strategies.carried_walk import trimmed_walk

#: Analyses kept per counter: the newest, and the one before the last append
#: (an edited or regenerated last message refits from it).
ANALYSES_PER_COUNTER = 2
#: Counters whose analyses a session keeps (least recently used go first).
COUNTERS_KEPT = 4
#: Entries past twice the blocks of a fit that a session's :data:`~contextfit.fitting.analysis.Known` may hold
#: before those of blocks no longer sent are dropped.
KNOWN_SLACK = 4096
#: Settings whose assembled blocks a session keeps (the page's current
#: settings and the one before, e.g. before an edit of the overrides).
PLANS_KEPT = 2


class _Lineage:
    """Analyses of one list that only grows at its end (and is cut at an edit),
    per counter: the session vouches that their prefixes are unchanged, so
    none is compared again."""

    __slots__ = ("_analyses", "_walks", "_known", "_carry")

    def __init__(self, known: dict[Any, Known] | None = None, carry: bool = True) -> None:
        self._analyses: dict[Any, list[ChatAnalysis]] = {}  # CounterState -> analyses, newest first
        # (CounterState, budget) -> truncate's last walk over a prefix (strategies/carried_walk.py)
        self._walks: dict[Any, Any] = {}
        # CounterState -> what the session's analyses learnt of each block (analysis.Known),
        # shared by the lineages of one session: a plan assembled again (a lorebook's, at
        # every turn) is made of the same block dicts, which are not read again
        self._known = {} if known is None else known
        # Whether fits start from the last walk: a lineage made for one turn only (a plan
        # assembled again at the next) walks plainly, from the newest block back to the cut,
        # not over every block to make a walk no later fit carries on.
        self._carry = carry

    def trim(self, n: int) -> None:
        """Keep the analyses and walks of more than the first ``n`` items as those of
        the first ``n``, where what follows is a plain tail that moves (a character
        card's post-history instructions, which a new message goes before); forget
        those it cannot trim, as :meth:`cut` does."""
        self._shorten(n, trim=True)

    def cut(self, n: int) -> None:
        """Forget the analyses of more than the first ``n`` items (item ``n`` changed)."""
        self._shorten(n, trim=False)

    def _shorten(self, n: int, trim: bool) -> None:
        for state, known in list(self._analyses.items()):
            kept: list[ChatAnalysis] = []
            for analysis in known:
                shorter = analysis if analysis.n <= n else analysis.trimmed(n) if trim else None
                if shorter is not None and all(other.n != shorter.n for other in kept):
                    kept.append(shorter)
            if kept:
                self._analyses[state] = kept
            else:
                del self._analyses[state]
        for key, walk in list(self._walks.items()):
            if walk.n > n:
                shorter_walk = trimmed_walk(walk, n) if trim else None
                if shorter_walk is None:
                    del self._walks[key]
                else:
                    self._walks[key] = shorter_walk

    def held(self) -> int:
        """How many analyses are kept."""
        return sum(map(len, self._analyses.values()))

    def walks(self) -> int:
        """How many ``truncate`` walks are kept."""
        return len(self._walks)

    def analyse(self, messages: Sequence[dict], counting: Counting, count_all: bool) -> FitView:
        """The fit's view (the ``analyse`` step of :func:`~contextfit.fitting.host.fit_messages`):
        the longest known analysis extended by the new items, else the
        counter's own cache (which compares)."""
        state = counting.state
        known = self._analyses.pop(state, [])
        n = len(messages)
        base = max((analysis for analysis in known if analysis.n <= n), key=lambda analysis: analysis.n, default=None)
        # Only a plan assembled again at every turn meets its blocks again: an appended-to one
        # analyses each block once, and a memo would cost its first fit (a fifth more) for nothing.
        learnt = None if self._carry else self._learnt(state, messages)
        if base is None:
            analysis = analysis_for(messages, counting, count_all, learnt)  # type: ignore[arg-type]
        elif base.n == n:
            analysis = base
        else:
            analysis = base.extended(messages, counting, count_all, learnt)
        self._analyses[state] = [analysis, *(other for other in known if other is not analysis)][:ANALYSES_PER_COUNTER]
        while len(self._analyses) > COUNTERS_KEPT:
            del self._analyses[next(iter(self._analyses))]
        view = FitView(messages, analysis, counting)  # type: ignore[arg-type]
        # the items are the session's own, unedited before the cut: walks carry over
        view.walks = self._walks if self._carry else None
        if count_all:
            view.count_all()
        return view

    def _learnt(self, state: Any, messages: Sequence[dict]) -> Known:
        """The session's :data:`~contextfit.fitting.analysis.Known` for a counter, rid of the
        entries of blocks no longer sent (old lorebook entries) once it has grown past the slack."""
        learnt = self._known.get(state)
        if learnt is None:
            learnt = self._known[state] = {}
            while len(self._known) > COUNTERS_KEPT:
                del self._known[next(iter(self._known))]
        elif len(learnt) > 2 * len(messages) + KNOWN_SLACK:
            learnt = self._known[state] = {ident: entry for ident, entry in map(_entry_of(learnt), messages)
                                           if entry is not None}
        return learnt


def _entry_of(known: Known) -> Callable[[dict], tuple[int, tuple | None]]:
    """``(id, its entry in known)`` of a block, the entry ``None`` when it is another dict's."""

    def entry_of(block: dict) -> tuple[int, tuple | None]:
        entry = known.get(id(block))
        return id(block), entry if entry is not None and entry[0] is block else None

    return entry_of


@dataclass(slots=True)
class _Planned:
    """The assembled blocks of the session's first ``n`` messages for one settings."""

    settings: PlanSettings
    prepared: Prepared
    n: int
    appendable: bool  # whether a new message only adds its own block, before the tail
    has_history: bool  # whether a visible message that is not a system one came yet
    lineage: _Lineage = field(default_factory=_Lineage)
    tail: int = 0  # blocks after the history (a card's post-history instructions)
    char_name: str | None = None  # what {{char}} stands for in a new message


class FitSession:
    """One chat, fitted again and again as it grows.

    ``messages`` is a list of message dicts or a :class:`~contextfit.Conversation`
    (whose character, persona, lorebook, memory, tools and settings then plan
    with it). The session copies every message it is given: changing the
    caller's dicts afterwards changes nothing here; change the session with
    :meth:`append`, :meth:`extend` and :meth:`edit`. The dicts it hands out
    (:attr:`messages`, a result's ``kept``) are its own: read them, do not edit them.

    >>> import contextfit
    >>> session = contextfit.FitSession([{"role": "system", "content": "Be brief."}])
    >>> session.append({"role": "user", "content": "Hello!"})
    >>> counter = contextfit.token_counter("gpt-4o")
    >>> session.fit(counter, 100).tokens == contextfit.shift_context(session.messages, counter, 100).tokens
    True
    >>> session.edit(1, {"role": "user", "content": "Hi"})
    >>> session.plan("truncate", model="gpt-4o").prompt_tokens
    15
    """

    def __init__(self, messages: Any = ()) -> None:
        conversation = None
        if not isinstance(messages, (list, tuple)) and hasattr(messages, "messages"):
            conversation, messages = messages, messages.messages
        self._conversation = conversation
        self._lock = threading.RLock()
        self._messages: list[dict] = []
        self._known: dict[Any, Known] = {}  # what analyses learnt of each block, per counter (_Lineage)
        self._filled = Filled()  # what assembly made of each message, card and lorebook
        self._lineage = _Lineage(self._known)
        self._plans: list[_Planned] = []
        self._version = 0
        self.extend(messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, index: int) -> dict:
        """Message ``index`` (the session's own dict: read it, do not edit it)."""
        return self._messages[index]

    def __repr__(self) -> str:
        return f"<FitSession of {len(self._messages)} messages, version {self._version}>"

    @property
    def messages(self) -> list[dict]:
        """The session's messages, in order (a new list of the session's own dicts)."""
        return list(self._messages)

    @property
    def version(self) -> int:
        """How many changes the session has seen (each append, extend and edit counts one)."""
        return self._version

    @property
    def lock(self) -> threading.RLock:
        """The session's (reentrant) lock: hold it to make several calls on one state of the chat."""
        return self._lock

    @property
    def conversation(self) -> Any:
        """The :class:`~contextfit.Conversation` it was made from, else ``None``."""
        return self._conversation

    # -- changes ----------------------------------------------------------------
    def append(self, message: dict) -> None:
        """Add one message at the end."""
        self.extend([message])

    def extend(self, messages: Sequence[dict]) -> None:
        """Add messages at the end, in order (all or none: a bad one refuses them all)."""
        if isinstance(messages, (str, bytes, dict)) or not hasattr(messages, "__iter__"):
            raise InvalidMessages(
                f"messages must be a list of message dicts, got {type(messages).__name__}", location="messages"
            )
        with self._lock:
            start = len(self._messages)
            owned = [_own(message, start + number) for number, message in enumerate(messages)]
            if owned:
                # A new list: a result made earlier keeps the list it was fitted on.
                self._messages = [*self._messages, *owned]
                self._version += 1

    def edit(self, index: int, message: dict) -> None:
        """Replace message ``index`` (negative counts from the end: ``-1`` is the last).

        What the session learnt about the messages before ``index`` stays;
        the rest is analysed again at the next fit.
        """
        with self._lock:
            n = len(self._messages)
            if isinstance(index, bool) or not isinstance(index, int) or not -n <= index < n:
                raise InvalidMessages(f"edit needs the index of one of the {n} messages, got {index!r}.",
                                      location=f"messages[{index!r}]")
            index %= n
            owned = _own(message, index)
            messages = list(self._messages)
            messages[index] = owned
            self._messages = messages
            self._lineage.cut(index)
            self._plans = [planned for planned in self._plans if planned.n <= index]
            self._version += 1

    # -- fitting ----------------------------------------------------------------
    def fit(
        self,
        count_tokens: CountTokens,
        budget: int,
        strategy: str | Any = "truncate",
        *,
        interceptors: Sequence[Callable[[list[dict]], list[dict] | None]] | None = None,
        count_excluded: bool = True,
        template: str = "openai",
        **options: Any,
    ) -> FitResult:
        """:func:`~contextfit.shift_context` of the session's messages (same arguments, same result)."""
        with self._lock:
            return fit_messages(self._messages, count_tokens, budget, strategy, interceptors, count_excluded,
                                template, options, self._lineage.analyse)

    def plan(self, strategy: Any = None, settings: PlanSettings | None = None, **keywords: Any) -> PromptPlan:
        """:func:`~contextfit.plan_prompt` of the session's messages with one
        strategy (``strategy``, else the settings'); ``settings`` and
        ``keywords`` as :func:`~contextfit.plan_prompt` takes them."""
        with self._lock:
            settings = self._settings(settings, keywords)
            planned = self._planned(settings)
            return plan_prepared(planned.prepared, settings, strategy, analyse=planned.lineage.analyse)

    def plans(
        self, settings: PlanSettings | None = None, *, strategies: Sequence[Any] = BUILTIN_STRATEGIES, **keywords: Any
    ) -> Iterator[tuple[Any, PromptPlan | ContextfitError]]:
        """``(strategy, plan)`` for each strategy, one at a time, so a page can draw a plan
        while the next one is made: the blocks are assembled and counted once, and every
        strategy fits them (a strategy that cannot fit yields its ``TOKEN_BUDGET_EXCEEDED``,
        one given an option it does not take its ``INVALID_SETTINGS``). Comparing strategies
        on one input is ``dict(FitSession(conversation).plans(settings, strategies=...))``."""
        with self._lock:
            settings = self._settings(settings, keywords)
            planned = self._planned(settings)
            # Every strategy plans these blocks, even if the chat grows meanwhile.
            prepared, analyse = planned.prepared, planned.lineage.analyse
        for name in strategies:
            with self._lock:  # not held across the yield: the caller may append between two plans
                try:
                    plan: PromptPlan | ContextfitError = plan_prepared(prepared, settings, name, analyse=analyse)
                except (TokenBudgetExceeded, UnsupportedOption) as exc:
                    plan = exc
            yield name, plan

    def prepared(self, settings: PlanSettings | None = None, **keywords: Any) -> tuple[Prepared, Analyse]:
        """What :meth:`plan` fits, for a caller that fits it itself: the
        assembled blocks of the session's messages for ``settings`` and the
        analysis step that knows which of them are new. A replay fits them
        with each strategy's options through
        :func:`~contextfit.pipeline.plan.fit_prepared`, without a plan's
        rendering. Use both while holding :attr:`lock`, before the next change."""
        with self._lock:
            planned = self._planned(self._settings(settings, keywords))
            return planned.prepared, planned.lineage.analyse

    def held(self) -> dict[str, int]:
        """What the session keeps besides its messages: analyses, assembled settings and walks (bounded)."""
        with self._lock:
            analyses = self._lineage.held() + sum(planned.lineage.held() for planned in self._plans)
            walks = self._lineage.walks() + sum(planned.lineage.walks() for planned in self._plans)
            return {"messages": len(self._messages), "analyses": analyses, "settings": len(self._plans), "walks": walks}

    # -- planning's assembled blocks ----------------------------------------------
    def _settings(self, settings: PlanSettings | None, keywords: dict[str, Any]) -> PlanSettings:
        source = self._conversation if self._conversation is not None else self._messages
        return settings_for(source, settings, keywords)[1]

    def _planned(self, settings: PlanSettings) -> _Planned:
        """The assembled blocks for ``settings``: kept, extended by the new
        messages' blocks when nothing is placed after the history, else made
        again (:func:`~contextfit.pipeline.plan.prepare`)."""
        messages, n = self._messages, len(self._messages)
        planned = next((p for p in self._plans if p.settings == settings), None)
        previous = None  # a plan made again (a lorebook's, after an append): its blocks met again keep their texts
        if planned is not None and planned.n < n and not self._append_blocks(planned, messages[planned.n:]):
            planned, previous = None, planned.prepared
        if planned is None:
            # A card without a lorebook of its own stands before the history, except its
            # post-history instructions, which stay last: a new message goes before them.
            made = self._filled.blocks
            if len(made) > 2 * n + KNOWN_SLACK:  # blocks of messages edited away
                self._filled.blocks = {id(m): made[id(m)] for m in messages if id(m) in made}
            # its errors first (a bad model, then a bad card). A plan that will be made again after each
            # append (a lorebook's) takes the blocks of messages seen before as made, and keeps them from
            # its first assembly on; one appended to keeps no copies (told before its card is read: after a
            # first assembly, by being made again).
            again = previous is not None or settings.lorebook is not None
            prepared = prepare(messages, settings, self._filled if again else None, previous)
            card = as_card(settings.character) if settings.lorebook is None else None
            appendable = settings.lorebook is None and (card is None or card.character_book is None)
            planned = _Planned(
                settings, prepared, n,
                appendable=appendable,
                has_history=any(not _hidden(m) and kind_of(m) != SYSTEM for m in messages),
                tail=1 if card is not None and card.post_history_instructions.strip() else 0,
                char_name=settings.char_name or (card.name if card is not None else None),
                lineage=_Lineage(self._known, carry=appendable),  # else made for this turn only
            )
        self._plans = [planned, *(p for p in self._plans if p is not planned)][:PLANS_KEPT]
        return planned

    def _append_blocks(self, planned: _Planned, new: list[dict]) -> bool:
        """Add the blocks of ``new`` messages to ``planned``; ``False`` when
        they would not simply go at the end (then the blocks are made again)."""
        if not planned.appendable:
            return False
        has_history = planned.has_history
        for message in new:
            if _hidden(message):  # assembly counts hidden messages in a diagnostic
                return False
            if kind_of(message) == SYSTEM:
                if not has_history:  # still the leading system run, before persona and memory
                    return False
            else:
                has_history = True
        settings = planned.settings
        old = planned.prepared
        blocks, grown = appended_blocks(
            new, planned.n,
            user_name=DEFAULT_USER_NAME if settings.user_name is None else settings.user_name,
            char_name=planned.char_name, overrides=settings.overrides, grown=old.macro_growth,
        )
        end = len(old.blocks) - planned.tail  # the new blocks go here, before the tail
        tail = old.blocks[end:]
        if old.has_reasoning or any(map(reasoning.has_reasoning, blocks)):
            # A new turn strips the reasoning of the one before (pipeline.prepare): the
            # blocks from that turn's start on may change, and analyses past them are cut.
            keep = reasoning.keeps_earlier_reasoning(old.info.id, old.info.provider)
            sent, originals, changed = reasoning.extended_view(old.blocks[:end], old.reasoning_originals,
                                                               [*blocks, *tail], keep)
            texts = [*old.texts[:changed], *map(message_text, sent[changed:])]
            planned.prepared = replace(old, blocks=sent, texts=texts, reasoning_originals=originals, has_reasoning=True,
                                       macro_growth=grown)
        else:
            changed = end
            planned.prepared = replace(old, blocks=[*old.blocks[:end], *blocks, *tail],
                                       texts=[*old.texts[:end], *map(message_text, blocks), *old.texts[end:]],
                                       macro_growth=grown)
        if changed < end:
            planned.lineage.cut(changed)
        elif tail:  # the tail moved: what was learnt of the blocks before it stays
            planned.lineage.trim(end)
        planned.n += len(new)
        planned.has_history = has_history
        return True


def _hidden(message: dict) -> bool:
    return meta_of(message).get("hidden") is True


def _own(message: Any, index: int) -> dict:
    """The session's copy of a message, checked as a fit would check it."""
    check_message(message, index)
    return clone(message)


def compare_strategies(
    messages: Any, settings: PlanSettings | None = None, *, strategies: Sequence[Any] = BUILTIN_STRATEGIES, **keywords: Any
) -> dict[str, PromptPlan | ContextfitError]:
    """Deprecated: ``dict(FitSession(messages).plans(settings, strategies=...))``, which it is.

    Kept for callers of the former facade name ``contextfit.compare_strategies``.
    """
    return dict(FitSession(messages).plans(settings, strategies=strategies, **keywords))
