"""The retention protocol's headline as a page cites it: the stored figures are the ones measured now."""

from __future__ import annotations

import json

from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from contextfit.retention import headline


def test_the_stored_headline_is_what_the_protocol_measures_now():
    stored = headline.headline()
    measured = headline.measure()
    assert set(stored) == set(measured) == set(BUILTIN_STRATEGIES)
    assert stored == measured  # after a change that moves a figure: python -m contextfit.retention.headline


def test_a_citation_quotes_the_figure_and_sets_it_against_truncate(tmp_path, monkeypatch):
    figures = {"truncate": headline.Figure("truncate", 0.15, 10, 0.1, 0.1, 0.1, 100.0),
               "fact-ledger": headline.Figure("fact-ledger", 0.15, 10, 0.9996, 1.0, 0.9, 101.0)}
    path = tmp_path / "headline.json"
    path.write_text(json.dumps({name: figure.to_dict() for name, figure in figures.items()}))
    monkeypatch.setattr(headline, "HEADLINE_FILE", path)
    headline.headline.cache_clear()
    try:
        assert headline.citation("fact-ledger") == (
            "On the standard retention protocol (synthetic agent chats of 50 to 1,000 turns, a budget of 15% of their "
            "tokens), fact-ledger keeps 99% of the facts (truncate: 10%).")  # 99.96% is not all of them
        # a strategy far behind on the protocol: the citation names the one that keeps the most there
        assert headline.citation("truncate").endswith("truncate keeps 10% of the facts; on such long chats "
                                                      "fact-ledger keeps 99%.")
        assert headline.citation(None) is None and headline.citation("summarize") is None
    finally:
        headline.headline.cache_clear()
