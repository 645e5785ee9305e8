"""Retention evidence: a published, deterministic protocol for how well each
strategy keeps what a conversation depends on.

* :mod:`.protocol` generates the synthetic agent conversations with planted
  facts (explicit and implicit, some later superseded), after the Context
  Decay Benchmark (clawRxiv 2604.01047);
* :mod:`.scoring` scores each fact on the provider messages a plan sends —
  an independent reading of the sent text, never the strategy's own
  bookkeeping;
* :mod:`.runner` fits every conversation with every strategy variant at each
  budget and returns the table rows (:func:`.runner.retention_rows`), which
  ``python -m bench.retention`` prints (the bench also measures the shared
  real chats, ``bench/retention_chats.py``);
* :mod:`.results` keeps what the bench measured in the package data
  (``contextfit/data/retention.json``, written by ``make retention``), which
  the dashboard's Retention view reads back and tabulates with the runner's
  own functions.

This package sits above the engine: it plans through
:func:`contextfit.plan_prompt` and :func:`contextfit.replay`, like any caller.
docs/retention.md describes the protocol, its sources and the figures.
"""

from .protocol import ProtocolConversation, PlantedFact, generate
from .scoring import FactScore, score_plan

__all__ = ["FactScore", "PlantedFact", "ProtocolConversation", "generate", "score_plan"]
