"""Calibration from real usage: the provider's numbers against contextfit's, per model.

Every completed generation records the prompt tokens the provider reported
(``providerPromptTokens``, from the reply's ``usage``) next to contextfit's
count (``promptTokens``, and its point estimate ``promptTokensEstimate``);
with native counting on, the provider's token-count endpoint answer is there
too (``providerCount``). :func:`calibration` reads the stored audits (the
latest of each chat) and gives, per model and source, how the provider's
numbers compare: ``contextfit calibrate`` prints it, the Models page shows it.

A ratio above 1 means contextfit counted low. For an exact profile it should
be 1.0 (a little above when the provider adds tokens contextfit cannot see,
such as a hidden system preamble); for an approximate one the ratio to
``promptTokens`` should stay at or below 1, and the ratio to the point
estimate says how good the estimate is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..serving.audit import PromptContextAudit
from ..serving.store import Store
from ..serving.audits import _store, list_audited_chats, load_audit

__all__ = ["Calibration", "calibration", "calibration_lines", "calibration_of"]

USAGE = "usage"
COUNT_ENDPOINT = "count endpoint"


@dataclass(frozen=True, slots=True)
class Calibration:
    """The provider's numbers against contextfit's for one model and one source (``usage`` or ``count endpoint``)."""

    model: str
    profile: str
    approximate: bool
    source: str
    audits: int
    ours: int
    ours_estimate: int
    provider: int
    lowest: float
    highest: float

    @property
    def ratio(self) -> float:
        """The provider's tokens over contextfit's count (the fit's number), over every audit."""
        return self.provider / self.ours if self.ours else float("nan")

    @property
    def ratio_to_estimate(self) -> float:
        """The provider's tokens over contextfit's point estimate."""
        return self.provider / self.ours_estimate if self.ours_estimate else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "profile": self.profile, "approximate": self.approximate, "source": self.source,
            "audits": self.audits, "promptTokens": self.ours, "promptTokensEstimate": self.ours_estimate,
            "providerTokens": self.provider, "ratio": round(self.ratio, 4),
            "ratioToEstimate": round(self.ratio_to_estimate, 4), "lowest": round(self.lowest, 4),
            "highest": round(self.highest, 4),
        }


def _pairs(audit: PromptContextAudit) -> Iterable[tuple[str, int]]:
    if audit.provider_prompt_tokens is not None:
        yield USAGE, audit.provider_prompt_tokens
    counted = audit.provider_count or {}
    if isinstance(counted.get("tokens"), int):
        yield COUNT_ENDPOINT, counted["tokens"]


def calibration_of(audits: Iterable[PromptContextAudit]) -> list[Calibration]:
    """Per model and source, the provider's numbers against contextfit's, over ``audits``.

    >>> from contextfit.pipeline.plan import TokenizerInfo
    >>> audit = PromptContextAudit("g", "c", "anthropic", "claude-sonnet-4", "completed", (), 1000, 100, 900, 135,
    ...                            TokenizerInfo("anthropic", True), "truncate", prompt_tokens_estimate=116,
    ...                            provider_prompt_tokens=120)
    >>> [row.to_dict()["ratio"] for row in calibration_of([audit])]
    [0.8889]
    """
    found: dict[tuple[str, str], list[Any]] = {}
    for audit in audits:
        if not audit.prompt_tokens:
            continue
        for source, tokens in _pairs(audit):
            row = found.setdefault((audit.model, source), [audit.tokenizer, 0, 0, 0, 0, []])
            row[1] += 1
            row[2] += audit.prompt_tokens
            row[3] += audit.prompt_tokens_estimate or audit.prompt_tokens
            row[4] += tokens
            row[5].append(tokens / audit.prompt_tokens)
    return [
        Calibration(model, tokenizer.profile, tokenizer.approximate, source, audits, ours, estimate, provider,
                    min(ratios), max(ratios))
        for (model, source), (tokenizer, audits, ours, estimate, provider, ratios) in sorted(found.items())
    ]


def calibration(store: Store | str | None = None) -> list[Calibration]:
    """:func:`calibration_of` every stored audit (the latest of each chat) of ``store``
    (a :class:`~contextfit.serving.store.Store`, a path or URL, or ``None`` for the default database)."""
    opened = _store(store)
    return calibration_of(load_audit(chat.id, opened) for chat in list_audited_chats(opened))


def calibration_lines(rows: list[Calibration]) -> list[str]:
    """The rows as a text table, for the command line.

    >>> calibration_lines([])[0]
    'No stored audit has a provider-reported count yet: generate with a real provider (or native counting on).'
    """
    if not rows:
        return ["No stored audit has a provider-reported count yet: generate with a real provider (or native counting on)."]
    lines = [f"{'model':<30} {'profile':<16} {'source':<15} {'audits':>6} {'ours':>10} {'provider':>10} "
             f"{'ratio':>6} {'to est.':>7}  range"]
    for row in rows:
        profile = row.profile + ("~" if row.approximate else "")
        lines.append(
            f"{row.model[:30]:<30} {profile[:16]:<16} {row.source:<15} {row.audits:>6} {row.ours:>10,} {row.provider:>10,} "
            f"{row.ratio:>6.3f} {row.ratio_to_estimate:>7.3f}  {row.lowest:.3f}-{row.highest:.3f}"
        )
    lines.append("ratio: the provider's tokens / contextfit's (the fit's count); to est.: / the point estimate; "
                 "~: approximate profile. Above 1: contextfit counted low.")
    return lines
