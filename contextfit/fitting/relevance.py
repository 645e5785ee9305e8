"""How relevant a lorebook or memory block is to the recent conversation.

``vector-recall`` asks a :class:`RelevanceScorer` for one score in [0, 1]
per block. The default, :class:`LexicalRelevance`, is a TF-IDF cosine over
content words computed locally in microseconds with nothing to download.
A real embedding model drops in through :class:`EmbeddingRelevance`::

    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer("all-MiniLM-L6-v2")
    shift_context(chat, count, budget, strategy="vector-recall",
                  scorer=EmbeddingRelevance(model.encode))
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from operator import mul
from typing import Protocol, runtime_checkable

from ..caches import register
from ..memo import TextMemo
from ..text import words

#: Bytes the cached bags of words may hold (lorebook and memory texts repeat
#: from fit to fit; long ones are keyed by a digest).
BAGS_BYTES = 8 * 1024 * 1024


@runtime_checkable
class RelevanceScorer(Protocol):
    """Scores documents against a query; higher is more relevant."""

    name: str

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score in [0, 1] per document."""
        ...


class LexicalRelevance:
    """TF-IDF cosine similarity over content words (the default scorer).

    Term weights are ``1 + log(tf)`` times a smoothed IDF computed over the
    documents and the query together, so words every block shares (the
    character's name, say) count for little and rare shared words for much.

    >>> scorer = LexicalRelevance()
    >>> a, b = scorer.score("Tell me about the Shadowfangs", ["The Shadowfangs are wolves.", "Bread recipe."])
    >>> a > 0.3 and b == 0.0
    True
    """

    name = "lexical-tfidf"

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        return self.score_words(word_counts(query), documents)

    def score_words(self, query_bag: Counter[str], documents: Sequence[str]) -> list[float]:
        """:meth:`score` with the query given as its content-word counts (in
        the order :func:`~contextfit.text.words` finds them): a refit builds
        them from each recent message's cached counts (:func:`joined_bag`)."""
        bags = [word_counts(text) for text in documents]
        if not query_bag:
            return [0.0] * len(documents)
        corpus = [*bags, query_bag]
        document_frequency: Counter[str] = Counter()
        for bag in corpus:
            document_frequency.update(bag.keys())
        total = len(corpus)
        # The factors come from tables over the few distinct counts, and every
        # sum runs in C over the same products in the same order: the same
        # floats as weighing word by word (a refit weighs the same bags again).
        log = math.log
        idf_of = [log((1 + total) / (1 + df)) + 1.0 for df in range(total + 1)]
        idf = dict(zip(document_frequency, map(idf_of.__getitem__, document_frequency.values())))
        tf_factor: dict[int, float] = {}
        for bag in corpus:
            for tf in set(bag.values()).difference(tf_factor):
                tf_factor[tf] = 1.0 + log(tf)
        tf_of, idf_at = tf_factor.__getitem__, idf.__getitem__

        def weigh(bag: Counter[str]) -> dict[str, float]:
            return dict(zip(bag, map(mul, map(tf_of, bag.values()), map(idf_at, bag))))

        query_vector = weigh(query_bag)
        values = query_vector.values()
        query_norm = math.sqrt(sum(map(mul, values, values)))
        query_at = query_vector.__getitem__
        scores = []
        for bag in bags:
            vector = weigh(bag)
            values = vector.values()
            norm = math.sqrt(sum(map(mul, values, values)))
            if not norm:
                scores.append(0.0)
                continue
            shared = [word for word in vector if word in query_vector]
            dot = sum(map(mul, map(vector.__getitem__, shared), map(query_at, shared)))
            scores.append(min(1.0, max(0.0, dot / (norm * query_norm))))
        return scores


def _count_words(text: str) -> Counter[str]:
    return Counter(words(text))


_BAGS: TextMemo[Counter[str]] = register("relevance.bags", TextMemo(BAGS_BYTES))


def word_counts(text: str) -> Counter[str]:
    """Content-word counts of a text (cached: lorebook and memory texts repeat
    from fit to fit, and summarize reads the recent messages' words from here
    after vector-recall or before it; callers only read them)."""
    return _BAGS.memoize(text, _count_words, sys.getsizeof)


def joined_bag(texts: Sequence[str]) -> Counter[str]:
    """The content-word counts of ``"\\n".join(texts)``, from each text's cached
    counts: no word spans a line break, so the join's words are each text's
    words in turn (the same counts, first seen in the same order).

    >>> joined_bag(["Wolves howl.", "The wolves sleep"]) == _count_words("Wolves howl.\\nThe wolves sleep")
    True
    """
    bag: Counter[str] = Counter()
    for text in texts:
        bag.update(word_counts(text))
    return bag


class EmbeddingRelevance:
    """Cosine similarity of embeddings from any ``embed(texts) -> vectors``.

    Negative cosines are clipped to 0 so scores stay in [0, 1].

    >>> fake = lambda texts: [[1.0, 0.0] if "wolf" in t else [0.0, 1.0] for t in texts]
    >>> EmbeddingRelevance(fake).score("a wolf howls", ["wolf pack", "teapot"])
    [1.0, 0.0]
    """

    def __init__(self, embed: Callable[[list[str]], Sequence[Sequence[float]]], name: str = "embedding") -> None:
        self.embed = embed
        self.name = name

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        vectors = [list(map(float, v)) for v in self.embed([query, *documents])]
        query_vector = vectors[0]
        query_norm = math.sqrt(sum(x * x for x in query_vector)) or 1.0
        scores = []
        for vector in vectors[1:]:
            norm = math.sqrt(sum(x * x for x in vector)) or 1.0
            cosine = sum(a * b for a, b in zip(vector, query_vector)) / (norm * query_norm)
            scores.append(min(1.0, max(0.0, cosine)))
        return scores


DEFAULT_SCORER = LexicalRelevance()
