"""Effective context: the prompt length up to which a model was measured to use what it is given.

A model's context limit says how much it accepts; long-context benchmarks
measure how much of that it can use. The catalog (``contextfit/data/models.toml``)
carries, for the models a benchmark published a figure for, that figure and its
source, in one compact key per model::

    [models."llama-3.1-70b-instruct"]
    effective_context = [{ benchmark = "NoLiMa", tokens = 2000, source = "https://github.com/adobe-research/NoLiMa" },
                         { benchmark = "RULER", tokens = 65536, source = "https://github.com/NVIDIA/RULER" }]

``below = true`` says the benchmark found less than ``tokens`` (NoLiMa's "<1K").
A user's catalog file replaces the whole list (``effective_context = []``
removes it), as it replaces any other field.

The benchmarks measure different things:

* **NoLiMa** (Modarressi et al., ICML 2025, arXiv 2502.05167): one fact in a
  long text, asked about in words the fact does not share; the effective length
  is the longest prompt at which the model keeps 85% of its own short-prompt
  score (tested at 1K, 2K, 4K, 8K, 16K and 32K = 1,000 … 32,000 tokens).
* **RULER** (Hsieh et al., COLM 2024, arXiv 2404.06654): 13 synthetic tasks —
  needle retrieval with literal matches, variable tracing, aggregation,
  question answering; the effective length is the longest prompt at which the
  model's mean stays above Llama 2 7B's score at 4K (85.6%), tested at
  4,096 … 131,072 tokens.

**Which figure the note uses**: the lowest one the catalog holds for the model.
A must-survive fact is a value a later turn asks about, often in other words
than the fact's own — what NoLiMa measures; its figures are the lower ones
wherever both benchmarks measured a model, so the note warns at the first
length where a published measurement saw recall drop. The other figures are
carried beside it (:attr:`EffectiveContext.figures`).

>>> lengths = effective_lengths([{"benchmark": "RULER", "tokens": 65536, "source": "r"},
...                              {"benchmark": "NoLiMa", "tokens": 2000, "source": "n"}])
>>> note = EffectiveContext("llama-3.1-70b-instruct", lengths, prompt_tokens=5400)
>>> note.figure.benchmark, note.tokens, note.exceeded
('NoLiMa', 2000, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["EffectiveContext", "EffectiveLength", "effective_lengths", "lengths_problem"]

#: The keys of one ``effective_context`` entry.
LENGTH_FIELDS = ("benchmark", "tokens", "source", "below")

#: What each benchmark's figure means, in words (a figure from another benchmark is named only).
MEASURES = {
    "nolima": "the longest prompt at which it kept 85% of its short-prompt score at finding a fact asked about "
              "in other words than the fact's own",
    "ruler": "the longest prompt at which it stayed above Llama 2 7B's 4K score over 13 synthetic retrieval, "
             "tracing, aggregation and question-answering tasks",
}


@dataclass(frozen=True, slots=True)
class EffectiveLength:
    """One published effective length: the benchmark, its figure in tokens, and where it is published."""

    benchmark: str
    tokens: int
    source: str = ""
    #: ``True``: the benchmark found less than ``tokens`` (it reports "<1K")
    below: bool = False

    @property
    def text(self) -> str:
        """``8,000 tokens``, or ``under 1,000 tokens``.

        >>> EffectiveLength("NoLiMa", 1000, below=True).text
        'under 1,000 tokens'
        """
        return f"{'under ' if self.below else ''}{self.tokens:,} tokens"

    def exceeded_by(self, prompt_tokens: int) -> bool:
        """Whether a prompt of ``prompt_tokens`` is longer than this length.

        >>> EffectiveLength("NoLiMa", 8000).exceeded_by(8000), EffectiveLength("NoLiMa", 1000, below=True).exceeded_by(1000)
        (False, True)
        """
        return prompt_tokens >= self.tokens if self.below else prompt_tokens > self.tokens

    def to_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "tokens": self.tokens, "below": self.below, "source": self.source}


def lengths_problem(value: Any) -> str | None:
    """What is wrong with an ``effective_context`` value, or ``None`` (shared by code and catalog files).

    >>> lengths_problem([{"benchmark": "NoLiMa", "tokens": 8000}]) is None
    True
    >>> lengths_problem([{"benchmark": "NoLiMa", "tokens": "8K"}])
    "[0].tokens must be a positive whole number of tokens; got '8K'"
    """
    if not isinstance(value, (list, tuple)):
        return f"must be a list of tables such as {{ benchmark = \"NoLiMa\", tokens = 8000, source = \"…\" }}; got {value!r}"
    for position, entry in enumerate(value):
        if isinstance(entry, EffectiveLength):
            entry = entry.to_dict()
        if not isinstance(entry, Mapping):
            return f"[{position}] must be a table with {', '.join(LENGTH_FIELDS)}; got {entry!r}"
        unknown = [str(key) for key in entry if key not in LENGTH_FIELDS]
        if unknown:
            return f"[{position}] has unknown key(s) {', '.join(unknown)}; use {', '.join(LENGTH_FIELDS)}"
        benchmark, tokens = entry.get("benchmark"), entry.get("tokens")
        if not isinstance(benchmark, str) or not benchmark.strip():
            return f"[{position}].benchmark must name the benchmark (a non-empty string); got {benchmark!r}"
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0:
            return f"[{position}].tokens must be a positive whole number of tokens; got {tokens!r}"
        if not isinstance(entry.get("source", ""), str):
            return f"[{position}].source must be a string (the page the figure is published on); got {entry['source']!r}"
        if not isinstance(entry.get("below", False), bool):
            return f"[{position}].below must be true or false; got {entry['below']!r}"
    return None


def effective_lengths(value: Sequence[Any]) -> tuple[EffectiveLength, ...]:
    """``value`` (tables or :class:`EffectiveLength` values, checked by :func:`lengths_problem`) as a tuple."""
    return tuple(entry if isinstance(entry, EffectiveLength) else EffectiveLength(**entry) for entry in value)


def lowest(lengths: Sequence[EffectiveLength]) -> EffectiveLength | None:
    """The lowest published length (a "below" figure under an equal plain one), the first on a tie."""
    if not lengths:
        return None
    return min(lengths, key=lambda length: (length.tokens, not length.below))


@dataclass(frozen=True, slots=True)
class EffectiveContext:
    """A plan against its model's published effective lengths: the one the note uses
    (:func:`lowest`), all of them, and the prompt's length."""

    model: str
    figures: tuple[EffectiveLength, ...]
    prompt_tokens: int

    @property
    def figure(self) -> EffectiveLength:
        """The figure the note uses: the lowest."""
        found = lowest(self.figures)
        if found is None:
            raise ValueError("an EffectiveContext needs at least one figure")
        return found

    @property
    def tokens(self) -> int:
        return self.figure.tokens

    @property
    def exceeded(self) -> bool:
        """Whether the prompt is longer than the figure the note uses."""
        return self.figure.exceeded_by(self.prompt_tokens)

    @property
    def measure(self) -> str | None:
        """What the figure the note uses measures, in words (``None`` for a benchmark not described here)."""
        return MEASURES.get(self.figure.benchmark.strip().lower())

    def message(self) -> str:
        """The note, in words (said whether or not the prompt exceeds the figure).

        >>> figure = EffectiveLength("NoLiMa", 8000, "https://github.com/adobe-research/NoLiMa")
        >>> print(EffectiveContext("gpt-4o", (figure,), 9120).message())
        This prompt is 9,120 tokens, past gpt-4o's published effective context of 8,000 tokens (NoLiMa, https://github.com/adobe-research/NoLiMa): a fact in its middle is the likeliest to be missed.
        >>> print(EffectiveContext("gpt-4o", (figure,), 800).message())
        This prompt is 800 tokens, within gpt-4o's published effective context of 8,000 tokens (NoLiMa, https://github.com/adobe-research/NoLiMa).
        """
        figure = self.figure
        cited = ", ".join(part for part in (figure.benchmark, figure.source) if part)
        if not self.exceeded:
            return (f"This prompt is {self.prompt_tokens:,} tokens, within {self.model}'s published effective context "
                    f"of {figure.text} ({cited}).")
        return (f"This prompt is {self.prompt_tokens:,} tokens, past {self.model}'s published effective context of "
                f"{figure.text} ({cited}): a fact in its middle is the likeliest to be missed.")

    def to_dict(self) -> dict[str, Any]:
        """The plan's ``effectiveContext`` JSON."""
        return {**self.figure.to_dict(), "measures": self.measure, "exceeded": self.exceeded,
                "figures": [figure.to_dict() for figure in self.figures]}


def effective_context(model: str, figures: Sequence[EffectiveLength], prompt_tokens: int) -> EffectiveContext | None:
    """The plan's :class:`EffectiveContext`, or ``None`` when no figure is published for ``model``.

    >>> effective_context("my-model", (), 50_000) is None
    True
    """
    return EffectiveContext(model, tuple(figures), prompt_tokens) if figures else None
