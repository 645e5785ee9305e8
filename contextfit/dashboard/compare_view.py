"""What the Compare page says about each strategy's plan, without Streamlit: the page only draws.

:func:`column` is one strategy's column (its numbers, captions and notes, or
its error); :func:`fits_view` what the page says when every block fits, with
the window "Squeeze" offers (:mod:`.alike`, which also says why strategies
that send one prompt do); :func:`each_strategy` keeps a failing run from
taking the page with it. Charts are in :mod:`contextfit.dashboard.charts`,
the verdict in :mod:`contextfit.dashboard.verdict`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ContextfitError
from ..fitting import results
from ..inputs.formats import Conversation
from ..inputs.messages import HISTORY, kind_of, role_of
from ..pipeline.plan import PromptPlan
from .alike import Squeeze, alike, squeeze
from .bands import band_text
from .charts import block_keys
from .markdown import common_failure, error_words, plain
from .setup import Setup

#: Diagnostics a column does not repeat (the charts and the relevance column show them).
QUIET_DIAGNOSTICS = ("RELEVANCE", "ORPHAN_TOOL_RESULT")


def headline(plan: PromptPlan) -> dict[str, Any]:
    """The numbers shown above a strategy's charts.

    >>> from contextfit import plan_prompt
    >>> headline(plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o"))["prompt_tokens"]
    8
    """
    dropped = [block for block in plan.blocks if not block.included]
    return {
        "prompt_tokens": plan.prompt_tokens,
        "budget": plan.budget,
        "context_limit": plan.context_limit,
        "response_reserve": plan.response_reserve,
        "used_percent": round(100 * plan.prompt_tokens / plan.budget, 1) if plan.budget else 100.0,
        "sent": sum(1 for block in plan.blocks if block.included),
        "dropped": len(dropped),
        "dropped_tokens": sum(block.tokens or 0 for block in dropped),
        "tokenizer": plan.tokenizer.profile,
        "approximate": plan.tokenizer.approximate,
        "band": band_text(plan),  # "about N tokens (approximate, up to M)" or "N tokens, exact"
    }


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A plan's diagnostic as people read it: its sentence first; its ``code`` kept for the curious."""

    code: str
    text: str

    @property
    def help(self) -> str:
        """What hovering the note shows: its code (what the JSON, the CLI and the docs call it)."""
        return f"Diagnostic code: {self.code}"


def diagnostics(plan: PromptPlan) -> tuple[Diagnostic, ...]:
    r"""The plan's diagnostics a column says (not :data:`QUIET_DIAGNOSTICS`), each as its sentence;
    one without a message reads as its code in words.

    >>> diagnostics(type("P", (), {"diagnostics": [{"code": "SUMMARY_SKIPPED"}, {"code": "RELEVANCE"},
    ...                                            {"code": "X_Y", "message": "Said *so*."}]})())
    (Diagnostic(code='SUMMARY_SKIPPED', text='Summary skipped.'), Diagnostic(code='X_Y', text='Said \\*so\\*.'))
    """
    return tuple(Diagnostic(note["code"], plain(note.get("message") or "") or _words(note["code"]))
                 for note in plan.diagnostics if note["code"] not in QUIET_DIAGNOSTICS)


def _words(code: str) -> str:
    """A code as a sentence: ``SUMMARY_SKIPPED`` → "Summary skipped."."""
    return code.replace("_", " ").capitalize() + "."


def split_diagnostics(columns: Mapping[str, Column]) -> tuple[tuple[Diagnostic, ...], dict[str, tuple[Diagnostic, ...]]]:
    """The diagnostics every planned column carries alike (said once, above the columns; none when a
    single strategy planned, whose column says its own), and each column's others.

    >>> same, other = Diagnostic("A", "Same."), Diagnostic("B", "Only here.")
    >>> split_diagnostics({"x": Column("x", None, notes=(same, other)), "y": Column("y", None, notes=(same,)),
    ...                    "z": Column("z", None, error="failed")})
    ((Diagnostic(code='A', text='Same.'),), {'x': (Diagnostic(code='B', text='Only here.'),), 'y': ()})
    """
    planned = {name: shown.notes for name, shown in columns.items() if shown.error is None}
    notes = list(planned.values())
    alike = tuple(note for note in notes[0] if all(note in other for other in notes[1:])) if len(notes) > 1 else ()
    return alike, {name: tuple(note for note in own if note not in alike) for name, own in planned.items()}


@dataclass(frozen=True, slots=True)
class Column:
    """One strategy's column: what its headline says, or the error it failed with."""

    name: str
    plan: PromptPlan | None
    error: str | None = None
    tokens: str = ""
    budget: str = ""
    tokenizer: str = ""
    dropped: str = ""
    dropped_lines: str = ""
    notes: tuple[Diagnostic, ...] = ()


def column(name: str, plan: PromptPlan | ContextfitError) -> Column:
    """What the page shows for one strategy.

    >>> from contextfit import plan_prompt
    >>> shown = column("truncate", plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o", context_limit=1000,
    ...                                       response_reserve=200))
    >>> shown.tokens, shown.budget, shown.tokenizer, shown.dropped
    ('8', '8 tokens of a 800-token budget (1.0%) · context 1,000 · reserve 200', 'tokenizer o200k_base · exact', 'Excluded or summarized: 0 blocks, 0 tokens')
    >>> from contextfit.errors import TokenBudgetExceeded
    >>> column("manual", TokenBudgetExceeded(294, 1, "Too big.")).error
    'Too big. (TOKEN_BUDGET_EXCEEDED)'
    """
    if isinstance(plan, ContextfitError):
        return Column(name, None, error=error_words(plan))
    numbers = headline(plan)
    return Column(
        name, plan,
        tokens=f"{numbers['prompt_tokens']:,}",
        budget=(f"{numbers['prompt_tokens']:,} tokens of a {numbers['budget']:,}-token budget ({numbers['used_percent']}%)"
                f" · context {numbers['context_limit']:,} · reserve {numbers['response_reserve']:,}"),
        # an approximate profile's count is a band: "about E tokens (approximate, up to N)"; the metric is N
        tokenizer=f"tokenizer {numbers['tokenizer']} · " + (numbers["band"] if numbers["approximate"] else "exact"),
        dropped=f"Excluded or summarized: {numbers['dropped']} blocks, {numbers['dropped_tokens']:,} tokens",
        dropped_lines="\n".join(dropped_lines(plan)) or "Nothing: every block is sent.",
        notes=diagnostics(plan),
    )


def dropped_lines(plan: PromptPlan, limit: int = 200) -> list[str]:
    """What was excluded or summarized, one short line each (at most ``limit``)."""
    lines, more = [], 0
    for key, block in zip(block_keys(plan), plan.blocks):  # blocks are named by id, as on every chart
        if block.included:
            continue
        if len(lines) == limit:
            more += 1
            continue
        text = " ".join(block.content[:240].split())
        lines.append(f"{key} {block.role or block.kind} ({block.tokens or 0} tokens, {block.reason}): {text[:120]}")
    if more:
        lines.append(f"… and {more} more")
    return lines


def fitted(plans: Mapping[str, PromptPlan | ContextfitError]) -> dict[str, PromptPlan]:
    """The plans that could be made, by strategy."""
    return {name: plan for name, plan in plans.items() if isinstance(plan, PromptPlan)}


def everything_fits(plans: Mapping[str, Any]) -> bool:
    """Whether every strategy that could plan sends every block but those
    excluded by hand: nothing gave way for room, so the strategies look alike."""
    made = list(fitted(plans).values())
    return bool(made) and all(block.included or block.reason == results.MANUAL for plan in made for block in plan.blocks)


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
    made = list(fitted(plans).values())
    whole = max(made, key=lambda plan: plan.prompt_tokens)
    by_hand = max(sum(block.reason == results.MANUAL for block in plan.blocks) for plan in made)
    sends = f"every strategy sends all {len(whole.blocks)} blocks"
    budget = f"the {whole.budget:,}-token budget"
    if not by_hand:
        return f"Everything fits: {sends} ({whole.prompt_tokens:,} tokens of {budget}), so the strategies have nothing to do and look alike."
    blocks = "block" if by_hand == 1 else "blocks"
    return (f"Everything fits: {sends} (at most {whole.prompt_tokens:,} tokens of {budget}) but manual, which leaves out the "
            f"{by_hand} {blocks} marked by hand for exclusion; nothing gives way for room, so the strategies look alike.")


def replanner(session: Any, setup: Setup) -> Callable[[int, int], dict[str, PromptPlan | ContextfitError]]:
    """``replan(limit, reserve)``: the plans of every strategy of ``setup`` at another window, through
    the conversation's ``session`` (a :class:`~contextfit.FitSession`), for "Squeeze"."""
    def replan(limit: int, reserve: int) -> dict[str, PromptPlan | ContextfitError]:
        settings = setup.settings.replace(context_limit=limit, response_reserve=reserve)
        return dict(each_strategy(session.plans(settings, strategies=setup.strategies), setup.strategies))

    return replan


def alike_reasons(plans: Mapping[str, PromptPlan]) -> dict[str, str]:
    """For each strategy that sends another's prompt, the line under its column saying so and why.

    >>> from contextfit import plan_prompt
    >>> chat = [{"role": "user", "content": "hello " * 40}, {"role": "assistant", "content": "hi " * 40},
    ...         {"role": "user", "content": "And now?"}]
    >>> plans = {name: plan_prompt(chat, model="gpt-4o", context_limit=120, response_reserve=20, context_strategy=name)
    ...          for name in ("truncate", "manual")}
    >>> alike_reasons(plans)
    {'manual': 'Same prompt as truncate: nothing is marked by hand for exclusion.'}
    """
    return {name: f"Same prompt as {group.first}: {group.reasons[name]}."
            for group in alike(plans) for name in group.others}


def fits_view(plans: Mapping[str, Any], replan: Callable[[int, int], Mapping[str, Any]] | None = None
              ) -> tuple[str, Squeeze | None] | None:
    """When :func:`everything_fits`: what the page says, and the window "Squeeze" offers
    (:func:`~contextfit.dashboard.alike.squeeze`, with ``replan(limit, reserve)`` making the plans
    of another window; ``None`` without it, or when nothing could ever be dropped); else ``None``."""
    if not everything_fits(plans):
        return None
    first = next(iter(fitted(plans).values()))
    return fits_note(plans), None if replan is None else squeeze(first, replan)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the page says above the columns once every plan is made: ``notes`` (``("error", why no
    strategy fits)`` said once, or ``("info", everything fits)``), the limit "Squeeze" offers, and
    whether every column failed alike (each then only points above)."""

    notes: tuple[tuple[str, str], ...] = ()
    squeeze: Squeeze | None = None
    failed_alike: bool = False


def outcome(plans: Mapping[str, PromptPlan | ContextfitError],
            replan: Callable[[int, int], Mapping[str, Any]] | None = None) -> Outcome:
    """The :class:`Outcome` of the comparison (``replan``: as :func:`fits_view` takes it).

    >>> from contextfit import plan_prompt
    >>> chat = [{"role": "user", "content": "Hi"}]
    >>> outcome({"truncate": plan_prompt(chat, model="gpt-4o")}).notes[0][1][:40]
    'Everything fits: every strategy sends al'
    >>> from contextfit.errors import TokenBudgetExceeded
    >>> refused = TokenBudgetExceeded(294, 1, "Too big.")
    >>> outcome({"truncate": refused, "manual": refused})
    Outcome(notes=(('error', 'No strategy can fit this conversation: Too big. (TOKEN_BUDGET_EXCEEDED)'),), squeeze=None, failed_alike=True)
    """
    if (common := common_failure(plans, error_words)) is not None:
        return Outcome((("error", f"No strategy can fit this conversation: {common}"),), failed_alike=True)
    if (fits := fits_view(plans, replan)) is None:
        return Outcome()
    return Outcome((("info", fits[0]),), fits[1])


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


def report_settings(setup: Setup) -> dict[str, str]:
    """The settings the HTML report lists, as the sidebar shows them.

    >>> report_settings(Setup.of("gpt-4o", 8000, 1000, ("truncate", "manual"), user_name="Ann"))
    {'model': 'gpt-4o', 'context limit': '8,000', 'response reserve': '1,000', 'strategies': 'truncate, manual', 'user name': 'Ann'}
    """
    return {"model": setup.model, "context limit": f"{setup.context_limit:,}",
            "response reserve": f"{setup.response_reserve:,}", "strategies": ", ".join(setup.strategies),
            "user name": "User" if setup.settings.user_name is None else setup.settings.user_name}
