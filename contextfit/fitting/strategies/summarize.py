"""``summarize``: the dropped history becomes one extractive summary block.

No model is called. Sentences are taken verbatim from the dropped messages
(tool calls and results as one line each) and chosen by salience:

* each content word gets a centroid weight ``(1 + log tf) * idf`` over the
  dropped span (tf across the span, idf across its messages), so words the
  span keeps coming back to weigh most and words in every message little;
* a sentence scores the sum of its distinct words' weights over the square
  root of its length, plus a bonus for words shared with the recent
  conversation (what the user is asking about now);
* sentences are picked greedily with a redundancy penalty (words already
  covered count less), until the summary size is reached;
* the picked sentences are printed in source order, each line naming its
  speaker, and ``meta.sources`` maps every line to the message it came from.

The summary is placed just before the current user input and counted in the
budget. Only the most recent ``summary_scan_chars`` characters of dropped
history are read (default 20,000): a summary of a few hundred tokens cannot
stand for more, and reading megabytes would cost more than the fit itself.
Older dropped messages keep the reason ``over_budget``; of a single message
longer than that, only its last ``summary_scan_chars`` characters are read
(its sentences that start there), and of a recent message only as much for
the query words (a 1 MB message took 1.6 s and 30 MB to split whole).
"""

from __future__ import annotations

import heapq
import math
import sys
from collections import Counter
from itertools import chain, compress, repeat
from operator import add, and_, ge, itemgetter, mul, neg, or_, truediv
from typing import Any

from ...inputs.messages import HISTORY, SUMMARY, TOOL_RESULT_ROLES, call_line, meta_of, part_text, tool_calls_of
from .. import results
from ...caches import register
from ..analysis import FitView
from ...memo import DIGEST_FROM, TextMemo, digest, text_key
from ..relevance import word_counts
from ..results import InsertedBlock
from ...text import SENTENCE_END, sentences_with_words, words
from .base import BuiltinStrategy, Proposal, fill_newest, room_left, stable_budget, stable_prefix_step, start_reasons
from .recall import recent_indices
from .thinking import merge_replacements, thin, thinned_view, with_replacements
from .carried_walk import carried_walk, kept_total

DEFAULT_SCAN_CHARS = 20_000
MIN_SUMMARY_TOKENS = 24
MIN_SENTENCE_WORDS = 3
TOOL_LINES = ("called ", "result: ")
_QUERY_BONUS = 0.5
_REDUNDANCY = 0.7

#: Bytes the sentence candidates cached by text may hold (a refit after one
#: more message reads the earlier ones from here), and the tool lines.
TEXT_UNITS_BYTES = 16 * 1024 * 1024
LINE_UNITS_BYTES = 4 * 1024 * 1024


def default_summary_tokens(budget: int) -> int:
    """Default summary size: a tenth of the budget, between 64 and 1,000 tokens."""
    return min(1000, max(64, budget // 10))


def _speaker(message: dict, role: str) -> str:
    name = message.get("name") or meta_of(message).get("speaker")
    if isinstance(name, str) and name.strip():
        return name.strip()
    return {"user": "User", "assistant": "Assistant", "tool": "Tool", "function": "Tool"}.get(role, role.title() or "Message")


#: A summary candidate: its text, its content words, and the same as a set.
Unit = tuple[str, tuple[str, ...], frozenset[str]]


def _unit(line: str, line_words: tuple[str, ...]) -> Unit:
    return line, line_words, frozenset(line_words)


def _unit_bytes(unit: Unit) -> int:
    """What a cached unit holds beyond its words (shared with the fold cache)."""
    line, line_words, unique = unit
    return 64 + sys.getsizeof(line) + sys.getsizeof(line_words) + sys.getsizeof(unique)


def _split_units(text: str) -> tuple[Unit, ...]:
    return tuple(_unit(sentence, tuple(sentence_words)) for sentence, sentence_words in sentences_with_words(text))


def _units_bytes(units: tuple[Unit, ...]) -> int:
    return sys.getsizeof(units) + sum(map(_unit_bytes, units))


_TEXT_UNITS: TextMemo[tuple[Unit, ...]] = TextMemo(TEXT_UNITS_BYTES)
_LINE_UNITS: TextMemo[Unit] = TextMemo(LINE_UNITS_BYTES)
register("summarize.text_units", _TEXT_UNITS)
register("summarize.line_units", _LINE_UNITS)


def _text_units(text: str) -> tuple[Unit, ...]:
    """Sentences of a text with their content words (cached by text, so a
    refit after one more message reads the rest from the cache)."""
    return _TEXT_UNITS.memoize(text, _split_units, _units_bytes)


def _line_unit(line: str, source: str) -> Unit:
    """A one-line tool call or result with the content words of ``source`` (cached)."""
    key = text_key(f"{line}\x00{source}")
    unit = _LINE_UNITS.lookup(key)
    if unit is None:
        unit = _unit(line, tuple(words(source)))
        _LINE_UNITS.put_key(key, unit, _unit_bytes(unit))
    return unit


def clear_caches() -> None:
    """Forget the cached candidates (benchmarks use it for a cold start)."""
    _TEXT_UNITS.clear()
    _LINE_UNITS.clear()


def _tail(text: str, limit: int | None) -> str:
    """The last ``limit`` characters of ``text``, from the first sentence that starts in them."""
    if limit is None or len(text) <= limit:
        return text
    tail = text[-limit:]
    boundary = SENTENCE_END.search(tail)  # the first sentence there may have begun before it
    return tail[boundary.end():] if boundary else ""


def _message_units(message: dict, role: str, limit: int | None = None) -> list[Unit]:
    """The summary candidates of one message: sentences, or one line per tool call/result."""
    lines = [call_line(call["name"], call["arguments"]) for call in tool_calls_of(message)]
    content = message.get("content")
    if isinstance(content, list):
        texts = []
        for part in content:
            part_type = part.get("type") if isinstance(part, dict) else None
            if isinstance(part_type, str) and part_type.endswith("tool_use"):
                lines.append(call_line(str(part.get("name", "tool")), part.get("input")))
            elif isinstance(part_type, str) and part_type.endswith("tool_result"):
                lines.append("result: " + _one_line(part_text(part)))
            elif part_type not in ("thinking", "redacted_thinking"):
                texts.append(part_text(part))
        text = "\n".join(t for t in texts if t)
    else:
        text = content if isinstance(content, str) else ""
    if role in TOOL_RESULT_ROLES:
        return [_line_unit("result: " + _one_line(text), text[:400])] if text.strip() else []
    units = [_line_unit("called " + line, line) for line in lines]
    text = _tail(text, limit)
    return [*_text_units(text), *units] if text else units


def _one_line(text: str, limit: int = 160) -> str:
    # Only the start is shown: flatten a growing head of the text, not all of
    # it (a head's flattening is a prefix of the whole text's).
    size = 4 * limit
    while True:
        flat = " ".join(text[:size].split())
        if len(flat) > limit or size >= len(text):
            break
        size *= 8
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _rest_fits(view: FitView, reasons: list[str | None], space: int) -> bool:
    """Whether the messages the walk dropped fit in ``space`` together (the room
    left with the summary's reserve given back). A lazy fit
    (``count_excluded=False``) does not know the chat's total; it counts the
    dropped messages until they pass ``space``, so a chat over budget costs
    at most that many tokens more to count."""
    count, over = view.count, results.OVER_BUDGET
    for index, reason in enumerate(reasons):
        if reason == over:
            space -= count(index)
            if space < 0:
                return False
    return True


def summary_position(view: FitView) -> int:
    """Where the summary goes: just before the current user input; when the
    chat ends on a reply (no input is pending), just before the newest chat
    message's group, so the summary never lands after the newest reply (nor
    between a tool call and its results, nor after post-history blocks).
    With no chat message at all, at the end."""
    if view.current_input is not None:
        return view.current_input
    kinds, analysis = view.analysis.kinds, view.analysis
    for index in range(view.n - 1, -1, -1):
        if kinds[index] == HISTORY:
            root = analysis.group_of.get(index)
            return analysis.members[root][0] if root is not None else index
    return view.n


class Summarize(BuiltinStrategy):
    """Like truncate, but the dropped history becomes one local extractive
    summary placed just before the current user input.

    Options: ``summary_tokens`` (the summary's maximum size; default a tenth
    of the budget between 64 and 1,000), ``summary_scan_chars`` (how much
    of the most recent dropped history is read; default 20,000 characters)
    and ``keep_thinking`` (older turns' reasoning goes first, as in truncate).
    """

    name = "summarize"
    takes_stable_prefix = True
    description = (
        "Like truncate, but the dropped history becomes one local extractive summary (verbatim "
        "sentences chosen by salience, each traceable to its message) placed before the current input."
    )

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:
        thinned = thin(view, budget, options)  # keep_thinking: older turns' reasoning goes first
        if thinned is None:
            return self._propose(view, budget, **options)
        _, replaced, total = thinned
        if total <= budget:
            reasons: list[str | None] = [None] * view.n
            return Proposal(reasons, with_replacements(reasons, replaced))
        # Still over: summarize the history as it stands without that reasoning.
        return merge_replacements(self._propose(thinned_view(view, replaced), budget, **options), replaced)

    def _propose(self, view: FitView, budget: int, **options: Any) -> Proposal:
        room = room_left(view, budget)
        counted = view.analysis.counted_total
        if counted is None and None not in view.analysis.tokens:
            counted = view.count_all()  # only sums: everything is counted
        if counted is not None and view.base_tokens + counted <= budget:
            return Proposal([None] * view.n)  # everything fits: nothing to summarize
        step = stable_prefix_step(budget, options)
        if step:  # stable_prefix: cut in steps, down to the low-water mark
            budget = stable_budget(view.base_tokens + (view.count_all() if counted is None else counted), budget, step)
            room = room_left(view, budget)

        def plain(why: str | None = None) -> Proposal:
            reasons = start_reasons(view)
            fill_newest(view, reasons, room)
            return Proposal(reasons, diagnostics=[_skipped(why)] if why and results.OVER_BUDGET in reasons else [])

        size = options.get("summary_tokens")
        size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else default_summary_tokens(budget)
        scan_chars = options.get("summary_scan_chars", DEFAULT_SCAN_CHARS)
        reserve = min(size, room)
        if reserve < MIN_SUMMARY_TOKENS:
            return plain(f"only {room} tokens are free for a summary")
        if view.walks is not None and view.analysis.counted_total is not None:
            # A session's refit: the walk at the budget less the reserve, carried
            # from its last fit (strategies/carried_walk.py), is what fill_newest keeps.
            walk = carried_walk(view, budget - reserve, view.walks)
            reasons = list(walk.reasons)
            space = room - (walk.cum[-1] - walk.cum[walk.cut])
        else:
            walk = None
            reasons = start_reasons(view)
            space = fill_newest(view, reasons, room - reserve) + reserve
        if results.OVER_BUDGET not in reasons:
            return Proposal(reasons)
        if counted is None and _rest_fits(view, reasons, space):
            return Proposal([None] * view.n)  # a lazy fit: the whole chat fits after all, as when counted
        # The most recent dropped history, newest first, up to the scan limit.
        scanned, chars, kinds, limited = [], 0, view.analysis.kinds, False
        # Start at the newest dropped message, not at the end of the chat.
        newest_dropped = view.n - 1 - reasons[::-1].index(results.OVER_BUDGET)
        for index in range(newest_dropped, -1, -1):
            if reasons[index] != results.OVER_BUDGET or kinds[index] != HISTORY:
                continue
            text_size = len(view.text(index))
            if scanned and isinstance(scan_chars, int) and chars + text_size > scan_chars:
                limited = True
                break
            scanned.append(index)
            chars += text_size
        scanned.reverse()
        if not scanned:  # only lorebook, memory or example blocks were dropped: no history to summarize
            return plain()
        limit = scan_chars if isinstance(scan_chars, int) and scan_chars > 0 else None
        block = self.build(view, scanned, min(space, size), _recent_words(view, 4, limit), limit)
        _forget_old(view, scanned)
        if block is None:
            return plain("no sentence of the dropped history fits the summary size")
        for index in scanned:
            reasons[index] = results.SUMMARIZED
        before = summary_position(view)
        diagnostics = []
        left_out = reasons.count(results.OVER_BUDGET)
        if limited:
            diagnostics.append(
                {
                    "code": results.SUMMARY_SCAN_LIMITED,
                    "scanned": len(scanned),
                    "message": f"The summary reads the {len(scanned)} most recent dropped messages ({chars} "
                    f"characters); {left_out} older ones stay excluded as over_budget.",
                }
            )
        message, tokens, sources = block
        # The walk's kept and excluded messages are the fit's (what it summarized it had
        # excluded): the host need not derive them again (strategies/carried_walk.py).
        assembled = None if walk is None else (kept_total(view, walk) + tokens, walk.kept, walk.excluded)
        return Proposal(reasons, [InsertedBlock(message, before, results.SUMMARY, tokens, tuple(sources))], diagnostics,
                        assembled)

    def build(
        self, view: FitView, indices: list[int], max_tokens: int, query_words: frozenset[str] | set[str],
        limit: int | None = None,
    ) -> tuple[dict, int, list[int]] | None:
        """The summary block for messages ``indices`` in at most ``max_tokens``
        (``query_words``: the content words of the recent conversation; of a
        message longer than ``limit`` characters only its end is read)."""
        records = [_candidates(view, index, limit) for index in indices]
        # One flat row per candidate line, in source order.
        lines = list(chain.from_iterable(record.lines for record in records))
        line_words = list(chain.from_iterable(record.unique for record in records))
        lengths = list(chain.from_iterable(record.lengths for record in records))
        tool_line = list(chain.from_iterable(record.tool for record in records))
        # Counting whole iterables at once runs in C (Counter.update per word does not).
        term_frequency = Counter(chain.from_iterable(record.words for record in records))
        document_frequency = Counter(chain.from_iterable(record.seen for record in records))
        total_docs = len(indices)
        log = math.log
        # (1 + log tf) * (log((1 + docs) / (1 + df)) + 1) per word, in C: each
        # factor from a table over the few distinct counts (the same floats).
        tf_factor = {tf: 1.0 + log(tf) for tf in set(term_frequency.values())}
        idf_factor = [log((1 + total_docs) / (1 + df)) + 1.0 for df in range(total_docs + 1)]
        words_seen = list(term_frequency)
        weight = dict(zip(words_seen, map(
            mul, map(tf_factor.__getitem__, term_frequency.values()),
            map(idf_factor.__getitem__, map(document_frequency.__getitem__, words_seen)))))
        sizes = list(map(len, line_words))
        eligible, salience = _saliences(line_words, sizes, lengths, tool_line, weight, query_words)
        salience_of = dict(zip(eligible, salience))
        heap = list(zip(map(neg, salience), eligible))
        heapq.heapify(heap)
        empty = {"role": "system", "content": "", "meta": {"kind": SUMMARY}}
        header = f"Summary of {len(indices)} earlier messages (sentences quoted from them):"
        empty_cost = view.count_block(empty)
        remaining = max_tokens - view.count_block({**empty, "content": header})
        costs = _line_costs(view)
        covered: set[str] = set()
        picked: list[int] = []  # in the order they were picked
        picked_lines: set[str] = set()
        misses = 0
        heappop, heappush = heapq.heappop, heapq.heappush
        cost_of, digest_from = costs.lookup, DIGEST_FROM
        line_text = list(map(itemgetter(1), lines))
        # Most pops in a long chat are lines whose words are all covered (skipped)
        # or re-ranked: the subset test and the intersection run in C, no set is made
        # for a skip, and a line with nothing covered keeps its key as it is (it was
        # pushed with its salience, and popped first: nothing ranks above it).
        while heap and remaining > 0 and misses < 50:
            position = heappop(heap)[1]
            unique = line_words[position]
            if unique <= covered and not tool_line[position]:
                continue  # says nothing the summary does not already say
            line = line_text[position]
            if line in picked_lines:
                continue
            if covered:
                overlap = len(unique & covered)
                if overlap:  # lazy greedy: re-rank with the penalty when another line now ranks above
                    key = -(salience_of[position] * (1.0 - _REDUNDANCY * overlap / sizes[position]))
                    if heap and key > heap[0][0]:
                        heappush(heap, (key, position))
                        continue
            cost = cost_of(line if len(line) < digest_from else digest(line))
            if cost is None:
                cost = costs.put(line, view.count_block({**empty, "content": "\n- " + line}) - empty_cost)
            if cost > remaining:
                misses += 1
                continue
            picked.append(position)
            picked_lines.add(line)
            covered |= line_words[position]
            remaining -= cost
        while picked:
            chosen = sorted(picked)
            sources = [{"index": lines[p][0], "id": view.id_of(lines[p][0]), "text": lines[p][1]} for p in chosen]
            meta = {"kind": SUMMARY, "id": "summary", "method": "extractive", "summarized": list(indices),
                    "sources": sources}
            # The header and each line up to its line break: the text is their join, and
            # its count the sum of their cached counts where that is exact (tokens/summed_counts.py).
            parts = [header + "\n", *["- " + lines[p][1] + "\n" for p in chosen]]
            parts[-1] = parts[-1][:-1]
            tokens = view.count_joined({"role": "system", "meta": meta}, parts)
            if tokens <= max_tokens:
                return {"role": "system", "content": "".join(parts), "meta": meta}, tokens, list(indices)
            picked.pop()  # joined lines can cost a token more than apart: give up the last pick
        return None


def _saliences(
    line_words: list[frozenset[str]], sizes: list[int], lengths: list[int], tool_line: list[bool],
    weight: dict[str, float], query_words: frozenset[str] | set[str],
) -> tuple[list[int], list[float]]:
    """The candidate lines (their positions) and their saliences: the sum of a
    line's distinct words' weights over the square root of its length, times
    ``1 + bonus * shared / size`` (``shared``: its distinct words the recent
    conversation uses). Pleasantries ("Sorry to hear that.", fewer than
    :data:`MIN_SENTENCE_WORDS` distinct words) say nothing a summary needs;
    tool lines are always candidates; a line without a content word is none.

    Mapped in C, with the float operations of one line at a time in that order.
    A line's distinct words are a set, whose order changes with each process's
    string hashing: fsum's sum is exactly rounded, so it does not depend on that
    order (a plain sum did, in its last bits, and two lines of equal salience
    were picked in either order, so the same chat got another summary in
    another process).

    >>> _saliences([frozenset({"a", "b", "c"}), frozenset({"a"})], [3, 1], [4, 1], [False, False],
    ...            {"a": 1.0, "b": 2.0, "c": 1.0}, {"b"})
    ([0], [2.3333333333333335])
    """
    eligible = list(compress(range(len(sizes)), map(
        or_, map(ge, sizes, repeat(MIN_SENTENCE_WORDS)), map(and_, map(bool, sizes), tool_line))))
    eligible_words = list(map(line_words.__getitem__, eligible))
    sums = map(math.fsum, map(map, repeat(weight.__getitem__), eligible_words))
    shared = map(len, map(query_words.intersection, eligible_words))
    salience = list(map(mul, map(truediv, sums, map(math.sqrt, map(lengths.__getitem__, eligible))),
                        map(add, repeat(1.0), map(truediv, map(mul, repeat(_QUERY_BONUS), shared),
                                                  map(sizes.__getitem__, eligible)))))
    return eligible, salience


class _Candidates:
    """One message's summary candidates, ready to score: kept with the
    conversation's analysis, so a refit reads them instead of re-splitting."""

    __slots__ = ("lines", "unique", "lengths", "tool", "words", "seen", "nbytes")

    def __init__(self, index: int, message: dict, role: str, limit: int | None = None) -> None:
        speaker = _speaker(message, role)
        units = _message_units(message, role, limit)
        self.lines = [(index, f"{speaker}: {sentence}") for sentence, _, _ in units]
        self.unique = [unique for _, _, unique in units]
        self.lengths = [len(sentence_words) for _, sentence_words, _ in units]
        self.tool = [sentence.startswith(TOOL_LINES) for sentence, _, _ in units]
        self.words = list(chain.from_iterable(sentence_words for _, sentence_words, _ in units))
        self.seen = frozenset(self.words)
        size = sys.getsizeof  # about what the record holds, charged to the analysis that keep it
        self.nbytes = (
            size(self.lines) + sum(size(line) + 64 for _, line in self.lines) + size(self.unique)
            + sum(map(size, self.unique)) + size(self.words) + size(self.seen) + 3 * size(self.lengths)
        )


def _candidates(view: FitView, index: int, limit: int | None = None) -> _Candidates:
    analysis = view.analysis
    # A message read in part is filed under its limit too: another limit reads another part.
    key = ("summarize", index) if limit is None or len(view.text(index)) <= limit else ("summarize", index, limit)
    record = analysis.derived.get(key)
    if record is None:
        record = analysis.derived[key] = _Candidates(index, view.messages[index], analysis.roles[index], limit)
        analysis.derived_bytes += record.nbytes
    return record  # type: ignore[return-value]


def _recent_words(view: FitView, window: int, limit: int | None = None) -> frozenset[str]:
    """The content words of the last ``window`` chat messages (what relevance is measured against),
    each message's cached (of a message longer than ``limit``, its end)."""
    derived = view.analysis.derived
    found = []
    for index in recent_indices(view, window):
        text = view.text(index)
        # A message read in part is filed under its limit too (as its candidates are):
        # a replay fits variants with other scan limits on the same analysis.
        key = ("words", index) if limit is None or len(text) <= limit else ("words", index, limit)
        message_words = derived.get(key)
        if message_words is None:
            message_words = derived[key] = frozenset(word_counts(text if limit is None else text[-limit:]))
        found.append(message_words)
    return frozenset().union(*found)


_RECENT_KEPT = 64  # messages at the end of the chat whose query words stay cached
_LEFT = ("summarize-left",)  # how many entries the last clean-up left (other strategies' among them)


def _forget_old(view: FitView, scanned: list[int]) -> None:
    """Drop cached candidates older than the scan window and query words of
    messages no longer recent: each refit copies the cache, so a long-lived
    chat must not grow it without end.

    The cache is cleaned once it has grown by a few scan windows since the last
    clean-up: other strategies' entries stay (clear-tool-results keeps one per
    cleared result), and counting them in the bound made every refit of a long
    chat rebuild the whole cache."""
    analysis = view.analysis
    if len(analysis.derived) <= analysis.derived.get(_LEFT, 0) + 4 * (len(scanned) + _RECENT_KEPT):  # type: ignore[operator]
        return
    oldest = {"summarize": scanned[0], "words": view.n - _RECENT_KEPT}
    # Other strategies' entries stay: a scan carried over the chat, say (a -1 in place of a message).
    kept = {key: value for key, value in analysis.derived.items() if key[0] not in oldest or key[1] >= oldest[key[0]]}
    kept[_LEFT] = len(kept) + 1
    analysis.derived = kept
    analysis.derived_bytes = sum(getattr(value, "nbytes", 0) for value in kept.values())


def _line_costs(view: FitView) -> TextMemo[int]:
    """Tokens each summary line adds, per counter (a line costs the same in any summary)."""
    return view.counting.state.summary_line_costs


def _skipped(why: str) -> dict:
    return {"code": results.SUMMARY_SKIPPED, "message": f"No summary: {why}; the dropped history is excluded as over_budget."}
