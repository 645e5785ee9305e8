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
Older dropped messages keep the reason ``over_budget``.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from functools import lru_cache
from itertools import chain
from typing import Any

from .. import messages as msg
from .. import results as r
from ..analysis import FitView
from ..results import InsertedBlock
from ..text import sentences, words
from .base import BuiltinStrategy, Proposal, fill_newest, room_left, start_reasons
from .recall import recent_query

DEFAULT_SCAN_CHARS = 20_000
MIN_SUMMARY_TOKENS = 24
MIN_SENTENCE_WORDS = 3
TOOL_LINES = ("called ", "result: ")
_QUERY_BONUS = 0.5
_REDUNDANCY = 0.7

_CACHE_SIZE = 50_000


def default_summary_tokens(budget: int) -> int:
    """Default summary size: a tenth of the budget, between 64 and 1,000 tokens."""
    return min(1000, max(64, budget // 10))


def _speaker(message: dict, role: str) -> str:
    name = message.get("name") or msg.meta_of(message).get("speaker")
    if isinstance(name, str) and name.strip():
        return name.strip()
    return {"user": "User", "assistant": "Assistant", "tool": "Tool", "function": "Tool"}.get(role, role.title() or "Message")


#: A summary candidate: its text, its content words, and the same as a set.
Unit = tuple[str, tuple[str, ...], frozenset[str]]


def _unit(line: str, line_words: tuple[str, ...]) -> Unit:
    return line, line_words, frozenset(line_words)


@lru_cache(maxsize=_CACHE_SIZE)
def _text_units(text: str) -> tuple[Unit, ...]:
    """Sentences of a text with their content words (cached by text, so a
    refit after one more message reads the rest from the cache)."""
    return tuple(_unit(sentence, tuple(words(sentence))) for sentence in sentences(text))


@lru_cache(maxsize=_CACHE_SIZE)
def _line_unit(line: str, source: str) -> Unit:
    """A one-line tool call or result with the content words of ``source`` (cached)."""
    return _unit(line, tuple(words(source)))


def _message_units(message: dict, role: str) -> list[Unit]:
    """The summary candidates of one message: sentences, or one line per tool call/result."""
    lines = [msg.call_line(call["name"], call["arguments"]) for call in msg.tool_calls_of(message)]
    content = message.get("content")
    if isinstance(content, list):
        texts = []
        for part in content:
            part_type = part.get("type") if isinstance(part, dict) else None
            if isinstance(part_type, str) and part_type.endswith("tool_use"):
                lines.append(msg.call_line(str(part.get("name", "tool")), part.get("input")))
            elif isinstance(part_type, str) and part_type.endswith("tool_result"):
                lines.append("result: " + _one_line(msg.part_text(part)))
            elif part_type not in ("thinking", "redacted_thinking"):
                texts.append(msg.part_text(part))
        text = "\n".join(t for t in texts if t)
    else:
        text = content if isinstance(content, str) else ""
    if role in msg.TOOL_RESULT_ROLES:
        return [_line_unit("result: " + _one_line(text), text[:400])] if text.strip() else []
    units = [_line_unit("called " + line, line) for line in lines]
    return [*_text_units(text), *units] if text else units


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Summarize(BuiltinStrategy):
    """Like truncate, but the dropped history becomes one local extractive
    summary placed just before the current user input.

    Options: ``summary_tokens`` (the summary's maximum size; default a tenth
    of the budget between 64 and 1,000) and ``summary_scan_chars`` (how much
    of the most recent dropped history is read; default 20,000 characters).
    """

    name = "summarize"
    description = (
        "Like truncate, but the dropped history becomes one local extractive summary (verbatim "
        "sentences chosen by salience, each traceable to its message) placed before the current input."
    )

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:
        room = room_left(view, budget)
        tokens = view.facts.tokens
        if None not in tokens and view.base_tokens + sum(tokens) <= budget:  # type: ignore[arg-type]
            return Proposal([None] * view.n)  # everything fits: nothing to summarize

        def plain(why: str | None = None) -> Proposal:
            reasons = start_reasons(view)
            fill_newest(view, reasons, room)
            return Proposal(reasons, diagnostics=[_skipped(why)] if why and r.OVER_BUDGET in reasons else [])

        size = options.get("summary_tokens")
        size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else default_summary_tokens(budget)
        scan_chars = options.get("summary_scan_chars", DEFAULT_SCAN_CHARS)
        reserve = min(size, room)
        if reserve < MIN_SUMMARY_TOKENS:
            return plain(f"only {room} tokens are free for a summary")
        reasons = start_reasons(view)
        space = fill_newest(view, reasons, room - reserve) + reserve
        if r.OVER_BUDGET not in reasons:
            return Proposal(reasons)
        # The most recent dropped history, newest first, up to the scan limit.
        scanned, chars, kinds, limited = [], 0, view.facts.kinds, False
        for index in range(view.n - 1, -1, -1):
            if reasons[index] != r.OVER_BUDGET or kinds[index] != msg.HISTORY:
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
        block = self.build(view, scanned, min(space, size), recent_query(view, 4))
        if block is None:
            return plain("no sentence of the dropped history fits the summary size")
        for index in scanned:
            reasons[index] = r.SUMMARIZED
        before = view.current_input if view.current_input is not None else view.n
        diagnostics = []
        left_out = reasons.count(r.OVER_BUDGET)
        if limited:
            diagnostics.append(
                {
                    "code": r.SUMMARY_SCAN_LIMITED,
                    "scanned": len(scanned),
                    "message": f"The summary reads the {len(scanned)} most recent dropped messages ({chars} "
                    f"characters); {left_out} older ones stay excluded as over_budget.",
                }
            )
        message, tokens, sources = block
        return Proposal(reasons, [InsertedBlock(message, before, r.SUMMARY, tokens, tuple(sources))], diagnostics)

    def build(self, view: FitView, indices: list[int], max_tokens: int, query: str) -> tuple[dict, int, list[int]] | None:
        """The summary block for messages ``indices`` in at most ``max_tokens``."""
        lines: list[tuple[int, str]] = []  # (message index, "Speaker: sentence")
        line_words: list[frozenset[str]] = []
        lengths: list[int] = []
        tool_line: list[bool] = []
        every_word: list[tuple[str, ...]] = []  # for the term frequencies
        message_words: list[set[str]] = []  # for the document frequencies
        for index in indices:
            message = view.messages[index]
            speaker = _speaker(message, view.facts.roles[index])
            seen: set[str] = set()
            for sentence, sentence_words, unique_words in _message_units(message, view.facts.roles[index]):
                lines.append((index, f"{speaker}: {sentence}"))
                line_words.append(unique_words)
                lengths.append(len(sentence_words))
                tool_line.append(sentence.startswith(TOOL_LINES))
                every_word.append(sentence_words)
                seen.update(sentence_words)
            message_words.append(seen)
        # Counting whole iterables at once runs in C (Counter.update per word does not).
        term_frequency = Counter(chain.from_iterable(every_word))
        document_frequency = Counter(chain.from_iterable(message_words))
        total_docs = len(indices)
        weight = {
            word: (1.0 + math.log(tf)) * (math.log((1 + total_docs) / (1 + document_frequency[word])) + 1.0)
            for word, tf in term_frequency.items()
        }
        query_words = set(words(query))
        heap: list[tuple[float, int]] = []
        salience_of: dict[int, float] = {}
        for position, unique in enumerate(line_words):
            # Pleasantries ("Sorry to hear that.") say nothing a summary needs;
            # tool lines are always candidates.
            if not unique or (len(unique) < MIN_SENTENCE_WORDS and not tool_line[position]):
                continue
            salience = sum(map(weight.__getitem__, unique)) / math.sqrt(lengths[position])
            salience *= 1.0 + _QUERY_BONUS * len(unique & query_words) / len(unique)
            salience_of[position] = salience
            heap.append((-salience, position))
        heapq.heapify(heap)
        empty = {"role": "system", "content": "", "meta": {"kind": msg.SUMMARY}}
        header = f"Summary of {len(indices)} earlier messages (sentences quoted from them):"
        empty_cost = view.count_block(empty)
        remaining = max_tokens - view.count_block({**empty, "content": header})
        covered: set[str] = set()
        picked: list[int] = []  # in the order they were picked
        picked_lines: set[str] = set()
        misses = 0
        while heap and remaining > 0 and misses < 50:
            negative, position = heapq.heappop(heap)
            unique = line_words[position]
            if unique <= covered and not tool_line[position] or lines[position][1] in picked_lines:
                continue  # says nothing the summary does not already say
            adjusted = salience_of[position] * (1.0 - _REDUNDANCY * len(unique & covered) / len(unique))
            if heap and adjusted < -heap[0][0]:
                heapq.heappush(heap, (-adjusted, position))  # lazy greedy: re-rank with the penalty
                continue
            cost = view.count_block({**empty, "content": "\n- " + lines[position][1]}) - empty_cost
            if cost > remaining:
                misses += 1
                continue
            picked.append(position)
            picked_lines.add(lines[position][1])
            covered |= unique
            remaining -= cost
        while picked:
            chosen = sorted(picked)
            sources = [{"index": lines[p][0], "id": view.id_of(lines[p][0]), "text": lines[p][1]} for p in chosen]
            message = {
                "role": "system",
                "content": "\n".join([header] + ["- " + lines[p][1] for p in chosen]),
                "meta": {
                    "kind": msg.SUMMARY,
                    "id": "summary",
                    "method": "extractive",
                    "summarized": list(indices),
                    "sources": sources,
                },
            }
            tokens = view.count_block(message)
            if tokens <= max_tokens:
                return message, tokens, list(indices)
            picked.pop()  # joined lines can cost a token more than apart: give up the last pick
        return None


def _skipped(why: str) -> dict:
    return {"code": r.SUMMARY_SKIPPED, "message": f"No summary: {why}; the dropped history is excluded as over_budget."}
