"""``vector-recall``: least relevant lorebook and memory blocks go first."""

from __future__ import annotations

from typing import Any

from ...inputs.messages import HISTORY
from .. import results
from ..analysis import FitView
from ..relevance import DEFAULT_SCORER, EmbeddingRelevance, LexicalRelevance, RelevanceScorer, joined_bag
from .base import BuiltinStrategy, Proposal, fill_newest, room_left, start_reasons
from .carried_walk import Walk, carried_walk, kept_total

DEFAULT_WINDOW = 6


def recent_indices(view: FitView, window: int) -> list[int]:
    """The last ``window`` chat messages, oldest first."""
    picked: list[int] = []
    kinds = view.analysis.kinds
    for index in range(view.n - 1, -1, -1):
        if len(picked) >= window:
            break
        if kinds[index] == HISTORY:
            picked.append(index)
    picked.reverse()
    return picked


def _scorer_from(options: dict[str, Any]) -> RelevanceScorer:
    scorer = options.get("scorer")
    if scorer is not None:
        return scorer
    embed = options.get("embed")
    if embed is not None:
        return EmbeddingRelevance(embed)
    return DEFAULT_SCORER


def _walk_past(view: FitView, budget: int, dropped: list[int]) -> Walk | None:
    """In a session, ``truncate``'s walk carried from the last fit when it is
    what :func:`fill_newest` keeps around the dropped blocks: they are all
    older than the newest unit that does not fit, where the walk stops (it
    would skip a dropped unit and go on); else ``None``."""
    if view.walks is None or view.analysis.counted_total is None:
        return None
    walk = carried_walk(view, budget, view.walks)
    if walk.cut == 0 or (dropped and max(dropped) >= walk.roots[walk.cut - 1]):
        return None
    return walk


class VectorRecall(BuiltinStrategy):
    """Drops unprotected lorebook and memory blocks in rising order of relevance
    to the recent conversation, then the oldest history like truncate.

    Options: ``relevance_window`` (how many recent chat messages form the
    query, default 6), ``query`` (use this text instead), ``scorer`` (a
    :class:`~contextfit.fitting.relevance.RelevanceScorer`) or ``embed`` (an
    ``embed(texts) -> vectors`` function). ``meta.relevance`` on a block
    overrides the computed score.
    """

    name = "vector-recall"
    description = (
        "Drops unprotected lorebook and memory blocks in rising order of relevance to the recent "
        "conversation (computed locally, or meta.relevance), then the oldest history like truncate."
    )

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:
        counted = view.count_all()
        protect, tokens = view.protect, view.analysis.tokens
        candidates = [i for i in view.analysis.recall if protect[i] is None]
        scores = self.relevance(view, candidates, options)
        total = view.base_tokens + counted
        dropped: list[int] = []
        assembled = None
        for index in sorted(candidates, key=lambda i: (scores[i][0], i)):
            if total <= budget:
                break
            for member in view.group_members(index):
                if member not in dropped:
                    dropped.append(member)
                    total -= tokens[member]  # type: ignore[operator]
        if total <= budget:
            reasons: list[str | None] = [None] * view.n
            for index in dropped:
                reasons[index] = results.LOW_RELEVANCE
        else:
            walk = _walk_past(view, budget, dropped)
            if walk is None:
                reasons = start_reasons(view)
                for index in dropped:
                    reasons[index] = results.LOW_RELEVANCE
                fill_newest(view, reasons, room_left(view, budget))
            else:
                reasons = list(walk.reasons)
                for index in dropped:
                    reasons[index] = results.LOW_RELEVANCE
                assembled = (kept_total(view, walk), walk.kept, walk.excluded)
        diagnostics = []
        if candidates:
            diagnostics.append(
                {
                    "code": results.RELEVANCE,
                    "scorer": getattr(_scorer_from(options), "name", "custom"),
                    "scores": [
                        {"index": i, "relevance": round(scores[i][0], 4), "source": scores[i][1]} for i in candidates
                    ],
                }
            )
        return Proposal(reasons, diagnostics=diagnostics, assembled=assembled)

    def relevance(self, view: FitView, candidates: list[int], options: dict[str, Any]) -> dict[int, tuple[float, str]]:
        """Score per candidate and where it came from (``meta`` or the scorer)."""
        given = view.analysis.relevance
        scores: dict[int, tuple[float, str]] = {i: (given[i], "meta") for i in candidates if i in given}
        to_score = [i for i in candidates if i not in given]
        if to_score:
            query = options.get("query")
            scorer = _scorer_from(options)
            documents = [view.text(i) for i in to_score]
            if isinstance(query, str):
                computed = scorer.score(query, documents)
            else:
                window = options.get("relevance_window", DEFAULT_WINDOW)
                recent = recent_indices(view, window if isinstance(window, int) and window > 0 else DEFAULT_WINDOW)
                if type(scorer) is LexicalRelevance:  # the recent messages' word counts are cached: no join to split
                    computed = scorer.score_words(joined_bag([view.text(i) for i in recent]), documents)
                else:
                    computed = scorer.score("\n".join(view.text(i) for i in recent), documents)
            for index, value in zip(to_score, computed):
                value = float(value)
                scores[index] = (min(1.0, max(0.0, value if value == value else 0.0)), "computed")
        return scores
