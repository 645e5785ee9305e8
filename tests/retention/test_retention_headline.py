"""The retention protocol's figures as a page cites them: the stored results' rows, nothing kept apart."""

from __future__ import annotations

from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from contextfit.retention import headline, results
from contextfit.retention.runner import HEADLINE_SHARE


def test_the_cited_figures_are_the_retention_pages_rows_at_the_headline_budget():
    figures = headline.headline()
    assert set(figures) == set(BUILTIN_STRATEGIES)
    rows = {(row.strategy, row.kind): row for row in results.load().rows() if row.share == HEADLINE_SHARE}
    for name, figure in figures.items():
        assert (figure.facts, figure.retention, figure.mean_tokens) == (
            rows[name, "all"].facts, rows[name, "all"].retention, rows[name, "all"].mean_tokens)
        assert (figure.explicit, figure.implicit) == (rows[name, "explicit"].retention, rows[name, "implicit"].retention)


def test_without_results_there_is_no_citation(monkeypatch):
    def unavailable(*_args):
        raise results.ResultsUnavailable("No retention results: run `make retention`.")

    monkeypatch.setattr(results, "load", unavailable)
    headline.headline.cache_clear()
    try:
        assert headline.headline() == {} and headline.citation("fact-ledger") is None
    finally:
        headline.headline.cache_clear()


def test_a_citation_quotes_the_figure_and_sets_it_against_truncate(monkeypatch):
    figures = {"truncate": headline.Figure("truncate", 0.15, 10, 0.1, 0.1, 0.1, 100.0),
               "fact-ledger": headline.Figure("fact-ledger", 0.15, 10, 0.9996, 1.0, 0.9, 101.0)}
    monkeypatch.setattr(headline, "headline", lambda: figures)
    assert headline.citation("fact-ledger") == (
        "On the standard retention protocol (synthetic agent chats of 50 to 1,000 turns, a budget of 15% of their "
        "tokens), fact-ledger keeps 99% of the facts (truncate: 10%).")  # 99.96% is not all of them
    # a strategy far behind on the protocol: the citation names the one that keeps the most there
    assert headline.citation("truncate").endswith("truncate keeps 10% of the facts; on such long chats "
                                                  "fact-ledger keeps 99%.")
    assert headline.citation(None) is None and headline.citation("summarize") is None
