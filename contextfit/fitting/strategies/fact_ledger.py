"""``fact-ledger``: the facts of the dropped history, kept as one compact ledger block.

Like truncate, the oldest unprotected groups go until the prompt fits; what
they said that a conversation depends on — names, numbers with their units,
identifiers, dates, quoted strings, decisions and settings
(:mod:`.ledger_facts`) — goes into one ledger block where ``summarize``
puts its summary (just before the current user input). No model is called;
the same chat gives the same ledger in every process.

* Each ledger line quotes its sentence verbatim (white space folded) and
  names its source message: ``- [m12] Important: the billing port is 5433.``
* A value set again supersedes the old one: the ledger shows the newest
  setting of each fact and names the message it replaced
  (``(replaces m5)``); a fact whose newest setting is still sent is left out
  of the ledger, so an old value never follows a newer one.
* The ledger holds at most ``ledger_tokens`` tokens (default a quarter of
  the budget, at least 64) and only what it needs: the room it leaves goes
  back to recent history. Lines are chosen by priority (markers such as
  "important" and decisions first, a user's words before logs), printed in
  source order. What does not fit is named in a last line (the messages
  that hold it; a chat keeps every message) and in a ``LEDGER_INCOMPLETE``
  diagnostic.
* Dropped messages with a line in the ledger are ``summarized``; the others
  stay ``over_budget``. The ledger block is a ``summary`` block
  (``meta.kind: "summary"``, ``meta.method: "fact-ledger"``) whose
  ``meta.sources`` maps each line to its message.

Which lines are facts, which are boilerplate and which supersede which is
read from the whole history, and carried from one fit of a growing chat to
the next (:mod:`.ledger_entries`): a refit after an appended message reads
that message's lines, not the history again. What each fit still does in
proportion to the history is the ledger itself (up to ``ledger_tokens``), the
list of dropped facts it does not show and, when the new message adds an
entry, asking the carried supersession checks again (the rarity weights of
every key word change with it), which on a long chat is most of a refit's
time, though far less than a fit from scratch (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...inputs.messages import SUMMARY
from .. import results
from ..analysis import FitView
from ..results import InsertedBlock
from .base import BuiltinStrategy, Proposal, fill_newest, room_left, start_reasons
from .ledger_entries import Entry, held_entries
from .summarize import summary_position

MIN_LEDGER_TOKENS = 24
#: How many message ids the "not shown" line names at most.
POINTERS = 12


def default_ledger_tokens(budget: int) -> int:
    """Default ledger size: a quarter of the budget, at least 64 tokens.

    >>> default_ledger_tokens(10_000), default_ledger_tokens(100)
    (2500, 64)
    """
    return max(64, budget // 4)


class FactLedger(BuiltinStrategy):
    """Like truncate, but the facts of the dropped history go into one ledger block (module docstring).

    Option: ``ledger_tokens`` (the ledger's maximum size; default a quarter of the budget, at least 64).
    """

    name = "fact-ledger"
    description = (
        "Like truncate, but the facts the dropped history carries (names, numbers with units, identifiers, dates, "
        "quoted strings, decisions and settings) go into one compact ledger block before the current input; each "
        "line quotes its message verbatim and names it, and a value set again supersedes the old one."
    )

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:
        room = room_left(view, budget)
        counted = view.analysis.counted_total
        if counted is None and None not in view.analysis.tokens:
            counted = view.count_all()
        if counted is not None and view.base_tokens + counted <= budget:
            return Proposal([None] * view.n)  # everything fits: no ledger
        size = options.get("ledger_tokens")
        size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else default_ledger_tokens(budget)
        reserve = min(size, room)

        def plain(why: str | None = None) -> Proposal:
            reasons = start_reasons(view)
            fill_newest(view, reasons, room)
            notes = [_incomplete(f"No fact ledger: {why}; the dropped history is excluded as over_budget.")] \
                if why and results.OVER_BUDGET in reasons else []
            return Proposal(reasons, diagnostics=notes)

        if reserve < MIN_LEDGER_TOKENS:
            return plain(f"only {room} tokens are free for a ledger")
        reasons = start_reasons(view)
        space = fill_newest(view, reasons, room - reserve) + reserve
        if results.OVER_BUDGET not in reasons:
            return Proposal(reasons)
        with held_entries(view) as entries:  # carried from the last fit (ledger_entries.py)
            built = self.build(view, entries.ranked, reasons, min(space, size))
            if built is None:  # nothing dropped states a fact, or not one line fits: truncate with the whole room
                wanted = any(reasons[entry.index] == results.OVER_BUDGET for entry in entries.entries)
                return plain(f"not one fact line fits in {min(space, size)} tokens" if wanted else None)
            # The ledger costs what it holds, not its reserve: give the rest back to recent history.
            reasons = start_reasons(view)
            space = fill_newest(view, reasons, room - built[1])
            built = self.build(view, entries.ranked, reasons, min(space + built[1], size))
        if built is None:  # pragma: no cover - the refill only keeps more, and the ledger's lines still fit
            return plain()
        message, tokens, sources, left_out = built
        for index in sources:
            reasons[index] = results.SUMMARIZED
        notes = []
        if left_out:
            notes.append(_incomplete(
                f"The fact ledger holds {len(message['meta']['sources'])} facts; {len(left_out)} more from the dropped "
                f"history did not fit its {min(space + tokens, size)} tokens (in {_ids(view, left_out)}).",
                message["meta"]["notShown"]))
        return Proposal(reasons, [InsertedBlock(message, summary_position(view), results.SUMMARY, tokens, tuple(sources))],
                        notes)

    def build(self, view: FitView, ranked: Sequence[Entry], reasons: Sequence[str | None],
              max_tokens: int) -> tuple[dict, int, list[int], list[int]] | None:
        """The ledger block for the facts of the messages ``reasons`` drops, in at most
        ``max_tokens``: ``(message, tokens, source indices, indices of facts left out)``, or
        ``None`` when no dropped message states a fact (or none fits). ``ranked``: the entries
        in their order of choice (``Entry.rank``). A superseded fact is never wanted: its newest
        setting is in the ledger or still sent."""
        over = results.OVER_BUDGET
        wanted = [entry for entry in ranked if reasons[entry.index] == over and not entry.superseded]
        if not wanted:
            return None
        empty = {"role": "system", "content": "", "meta": {"kind": SUMMARY}}
        empty_cost = view.count_block(empty)
        chosen: list[Entry] = []
        remaining = max_tokens - view.count_block({**empty, "content": _header(1)})
        for entry in wanted:
            cost = entry.cost
            if cost is None:  # a line costs the same in every ledger of this analysis (one counter)
                cost = entry.cost = view.count_block({**empty, "content": "\n" + _line(view, entry)}) - empty_cost
            if cost <= remaining:
                chosen.append(entry)
                remaining -= cost
        taken = set(map(id, chosen))
        left = {e.index for e in wanted if id(e) not in taken}  # messages with a fact not shown
        shown = sorted(chosen, key=lambda e: (e.index, e.line.text))
        while chosen:
            left_out = sorted(left)
            block, parts = _block(view, shown, left_out)
            tokens = view.count_joined(block, parts)  # its lines' cached counts where that is exact
            if tokens <= max_tokens:
                return block, tokens, sorted({e.index for e in chosen}), left_out
            last = chosen.pop()  # the lowest priority goes first
            shown.remove(last)
            left.add(last.index)
        return None


def _header(count: int) -> str:
    return f"Fact ledger, quoted from {count} earlier message{'s' if count != 1 else ''} not shown (newest value of each):"


def _line(view: FitView, entry: Entry) -> str:
    """The entry's ledger line (and its ``meta.sources`` item), made again when the pass runs again."""
    shown = entry.shown
    if shown is None:
        replaced = f" (replaces {view.id_of(entry.replaces)})" if entry.replaces is not None else ""
        shown = entry.shown = f"- [{view.id_of(entry.index)}] {entry.line.text}{replaced}"
        entry.source = {"index": entry.index, "id": view.id_of(entry.index), "text": entry.line.text,
                        **({"replaces": view.id_of(entry.replaces)} if entry.replaces is not None else {})}
    return shown


def _ids(view: FitView, indices: Sequence[int]) -> str:
    shown = ", ".join(view.id_of(i) for i in indices[:POINTERS])
    return shown + (", …" if len(indices) > POINTERS else "")


def _block(view: FitView, chosen: Sequence[Entry], left_out: Sequence[int]) -> tuple[dict, list[str]]:
    """The ledger block, and its content's lines each with its line break (their join)."""
    messages = sorted({entry.index for entry in chosen})
    lines = [_header(len(messages)), *[_line(view, entry) for entry in chosen]]
    if left_out:
        lines.append(f"Not shown: more facts from {len(left_out)} message{'s' if len(left_out) != 1 else ''} "
                     f"({_ids(view, left_out)}); the chat keeps them.")
    sources = [entry.source.copy() for entry in chosen]  # type: ignore[union-attr] # each result its own
    meta = {"kind": SUMMARY, "id": "fact-ledger", "method": "fact-ledger", "summarized": messages,
            "sources": sources, "notShown": [view.id_of(i) for i in left_out]}
    parts = [line + "\n" for line in lines]
    parts[-1] = lines[-1]
    return {"role": "system", "content": "".join(parts), "meta": meta}, parts


def _incomplete(message: str, left_out: Sequence[str] = ()) -> dict:
    found = {"code": results.LEDGER_INCOMPLETE, "message": message}
    if left_out:
        found["notShown"] = list(left_out)
    return found


__all__ = ["FactLedger", "default_ledger_tokens"]
