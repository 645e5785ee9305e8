"""The Replay page's replay and tables, without Streamlit.

The page takes the sidebar's conversation, model and strategies; :func:`run`
replays it (:func:`contextfit.replay`), and the functions here turn the result
into the verdict table, the notes and the plans of one turn (the Compare view
of that request). The line charts are in
:mod:`contextfit.dashboard.replay_charts`, the facts box's rules in
:mod:`contextfit.dashboard.facts_box`, the downloads in
:mod:`contextfit.dashboard.exports`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

from ..errors import ContextfitError, TokenBudgetExceeded
from ..pipeline.plan import PromptPlan, plan_prompt
from ..pipeline.settings import PlanSettings, settings_for
from ..replays.recommend import REQUEST, RETENTION, Recommendation, decide
from ..replays.run import Replay, replay, variants
from ..tokens.models import get_model
from ..tokens.tokenizers import get_tokenizer
from .markdown import common_failure, error_text
from .progress import PercentSteps
from .setup import ReplaySetup, Setup
from .state import compare_settings
from .verdict import BEST_STYLE, replay_verdict, rules_text
from ..amounts import money as dollars


def conversation_input(conversation: Any, setup: ReplaySetup) -> tuple[list[dict], PlanSettings]:
    """The messages and settings of a conversation (its card, lorebook... included) under the setup."""
    messages, settings = settings_for(conversation, setup.settings)
    return list(messages), settings


def setup_of(chosen: Setup, state: Mapping[str, Any], stable_prefix: bool, facts: Sequence[Any]) -> ReplaySetup:
    """The replay's setup: the sidebar's model, limits and strategies with the plan settings
    Compare adds (its strategy options and hand edits, :func:`~contextfit.dashboard.state.compare_settings`),
    so the latest request is Compare's plan; ``stable_prefix`` and ``facts`` are Replay's own.

    >>> chosen = Setup.of("gpt-4o", 8000, 1000, ("truncate",))
    >>> setup = setup_of(chosen, {"summary_tokens": 300, "overrides": {"m1": {"pinned": True}}}, False, ("ORD-7",))
    >>> setup.settings
    PlanSettings(model='gpt-4o', context_limit=8000, response_reserve=1000, user_name='User', overrides={'m1': {'pinned': True}}, options={'summary_tokens': 300, 'relevance_window': 6})
    >>> setup.strategies, setup.stable_prefix, setup.facts
    (('truncate',), False, ('ORD-7',))
    """
    return ReplaySetup(chosen.replace(**compare_settings(state)).settings, chosen.strategies, stable_prefix,
                       tuple(facts))


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


def answer(result: Replay, strategies: Sequence[str], priority: str = RETENTION) -> Recommendation:
    """Compare's answer, from the replay's evidence: the latest request of the conversation as it
    stands, under ``priority``, among the ``strategies`` Compare shows (the ``stable_prefix`` variants
    are lines of the replay, not columns of Compare). For the same conversation and settings it is
    :func:`~contextfit.replays.answer.recommendation_for`'s, sentence for sentence."""
    return decide([outcome for outcome in result.outcomes if outcome.label in strategies], priority, REQUEST)


def money(value: float | None) -> str:
    """Dollars for a cell (:func:`contextfit.amounts.money`), "—" for no price.

    >>> money(0.0123456), money(None), money(12.5), money(2.5e-05), money(0.0456)
    ('$0.01235', '—', '$12.50', '$0.00002500', '$0.04560')
    """
    return dollars(value, "—")


#: The verdict table's columns: a short header each (at 1280 pixels the long ones pushed the last
#: columns out of view) and what it means, shown on hover.
TOTALS_HEADERS = {
    "total cost": ("total", "Every turn's request at the catalog's prices, the real reply as output."),
    "mean cost / turn": ("mean / turn", "The total over the turns that were fitted."),
    "cache hit rate": ("cache hits", "Prompt tokens read from the provider's cache, over prompt tokens sent."),
    "tokens sent": ("tokens sent", "Prompt tokens of every request."),
    "retention": ("retention", "Facts still sent, over facts in force, all turns."),
    "first loss (turn)": ("first loss", "The first turn that did not send a fact in force."),
    "first drop (turn)": ("first drop", "The first turn that dropped, summarized or compressed something."),
    "failed turns": ("failed", "Turns the strategy could not fit (no prompt)."),
}
#: The verdict table's columns of whole numbers (with separators; "—" where there is none).
WHOLE_COLUMNS = ("tokens sent", "first loss (turn)", "first drop (turn)", "failed turns")


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


def in_rows(items: Sequence[Any], per_row: int) -> list[list[Any]]:
    """``items`` in rows of ``per_row`` (the "One turn" view: each row of plans gets columns of its
    own, so a long caption in one cell does not push the next row's out of line).

    >>> in_rows(["a", "b", "c", "d"], 3)
    [['a', 'b', 'c'], ['d']]
    """
    return [list(items[start:start + per_row]) for start in range(0, len(items), per_row)]


def turn_summary(result: Replay, label: str, turn: int) -> dict[str, Any]:
    """The numbers of one strategy at one turn, for the metrics above its plan."""
    row = result.turns[label][turn - 1]
    return {
        "prompt_tokens": row.prompt_tokens,
        "cached": row.cache_read,
        "cost": cost_text(row),
        "lost": row.lost,
        "lost_text": names_text(row.lost),
        "counts": counts_text(row),
    }


def cost_text(row: Any) -> str:
    """A request's cost as the "One turn" view says it: with its reply, or the prompt alone when the
    conversation holds no reply to it (the latest request, most often: the answer above prices it
    with the mean reply).

    >>> from types import SimpleNamespace as S
    >>> cost_text(S(cost=S(total=0.0051), output_tokens=72)), cost_text(S(cost=S(total=0.0044), output_tokens=0))
    ('cost $0.005100 with its 72-token reply', 'cost $0.004400, prompt only (no reply yet)')
    >>> cost_text(S(cost=None, output_tokens=3))
    'no catalog price'
    """
    if row.cost is None:
        return "no catalog price"
    if row.output_tokens:
        return f"cost {money(row.cost.total)} with its {row.output_tokens:,}-token reply"
    return f"cost {money(row.cost.total)}, prompt only (no reply yet)"


def counts_text(row: Any) -> str:
    """What a request dropped, summarized and compressed, in the words and the one count of Compare's verdict.

    >>> from types import SimpleNamespace as S
    >>> counts_text(S(dropped=1_204, summarized=0, compressed=2, error=None)), counts_text(S(error="X"))
    ('dropped 1,204 · summarized 0 · compressed 2', '—')
    """
    if row.error is not None:
        return "—"
    return f"dropped {row.dropped:,} · summarized {row.summarized:,} · compressed {row.compressed:,}"


def replay_caption(result: Replay) -> str:
    """The line under the verdict: turns, model, budget, the cache and fact rules, the prices' source.

    >>> from contextfit.replays.run import replay
    >>> print(replay_caption(replay([{"role": "user", "content": "Hi"}], model="gpt-4o", context_limit=10,
    ...                             response_reserve=9, strategies=["truncate"])))
    1 turn · gpt-4o · budget 1 token · prompt cache: automatic prefix caching · facts: the default rule (entities the latest message repeats) · prices from ...
    """
    turns, budget = len(result.requests), result.budget
    return (f"{turns:,} turn{'s' if turns != 1 else ''} · {result.model} · budget {budget:,} "
            f"token{'s' if budget != 1 else ''} · {rules_text(result)}"
            + (f" · prices from {result.prices.get('source', 'the catalog')}" if result.prices else ""))


def verdict_text(result: Replay) -> str:
    """The verdict sentence (:func:`contextfit.dashboard.verdict.replay_verdict`), as the page says it.

    >>> from contextfit.replays.run import replay
    >>> verdict_text(replay([{"role": "user", "content": "Hi"}], model="gpt-4o", strategies=["truncate"]))
    'Only truncate was replayed: choose more strategies in the sidebar to compare it with others.'
    """
    return replay_verdict(result, "choose more strategies in the sidebar")


__all__ = [
    "TOTALS_HEADERS", "WHOLE_COLUMNS", "ProgressBar", "answer", "approximate_note", "cached_run", "conversation_input", "cost_text", "counts_text", "fact_notes",
    "in_rows", "money", "names_text", "replay_caption", "setup_of",
    "rules_text", "run", "totals_rows", "totals_styles", "turn_errors", "turn_plans", "turn_summary", "verdict_text",
]
