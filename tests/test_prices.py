"""Prices in the model catalog and the cost of a request (issue 17's prices, issue 14's verdict)."""

import pytest

from contextfit.errors import InvalidModelFile
from contextfit.tokens import models
from contextfit.tokens.models import ModelInfo, get_model, load_models_file
from contextfit.tokens.prices import Prices, price_problem


def test_cost_by_kind_of_token_worked_by_hand():
    # Anthropic-style prices: 3 in, 3.75 cache write, 0.30 cache read, 15 out (USD per million).
    prices = Prices(input=3.0, output=15.0, cached_input=0.30, cache_write=3.75)
    cost = prices.cost(input_tokens=12_000, cached_input_tokens=8_000, cache_write_tokens=1_000, output_tokens=400)
    # 3,000 plain x 3 + 8,000 x 0.30 + 1,000 x 3.75 + 400 x 15, all / 1e6
    assert cost.input == pytest.approx(0.009)
    assert cost.cached_input == pytest.approx(0.0024)
    assert cost.cache_write == pytest.approx(0.00375)
    assert cost.output == pytest.approx(0.006)
    assert cost.total == pytest.approx(0.02115)
    assert cost.to_dict()["total"] == pytest.approx(0.02115)


def test_without_cache_prices_cached_and_written_tokens_cost_the_input_price():
    prices = Prices(input=2.0, output=8.0)
    assert prices.cost(1_000, cached_input_tokens=600, cache_write_tokens=400).total == pytest.approx(0.002)


@pytest.mark.parametrize("kwargs", [
    {"input_tokens": -1},
    {"input_tokens": 1.5},
    {"input_tokens": True},
    {"input_tokens": 10, "cached_input_tokens": 11},
    {"input_tokens": 10, "cached_input_tokens": 6, "cache_write_tokens": 5},
])
def test_cost_refuses_impossible_token_counts(kwargs):
    with pytest.raises(ValueError):
        Prices(input=1.0, output=1.0).cost(**kwargs)


@pytest.mark.parametrize("values, fragment", [
    ({"output": 1}, "needs input"),
    ({"input": 1, "output": float("nan")}, "output must be a price"),
    ({"input": 1, "output": 1, "cached_input": -0.1}, "cached_input must be a price"),
    ({"input": "1", "output": 1}, "input must be a price"),
    ({"input": 1, "output": 1, "date": "3 Dec 2026"}, "YYYY-MM-DD"),
    ({"input": 1, "output": 1, "currency": "EUR"}, "unknown field"),
])
def test_price_problems_are_named(values, fragment):
    assert fragment in price_problem(values)
    with pytest.raises(ValueError, match=fragment):
        ModelInfo("m", "meta", context_limit=100, max_output=10, tokenizer="llama3", prices=values)


def test_built_in_prices_have_a_source_and_a_date():
    priced = [info for info in models.list_models() if info.prices is not None]
    assert len(priced) >= 5
    for info in priced:
        assert info.prices.source.startswith("https://"), info.id
        assert len(info.prices.date) == 10, info.id
    assert get_model("gpt-4o").prices.cost(1_000_000, output_tokens=1_000_000).total == pytest.approx(12.5)


def test_a_user_file_overrides_one_price_and_keeps_the_rest(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('[models."gpt-4o".prices]\ninput = 2.0\ndate = 2026-12-01\n', encoding="utf-8")
    try:
        load_models_file(path)
        prices = get_model("gpt-4o").prices
        assert (prices.input, prices.output, prices.cached_input) == (2.0, 10.0, 1.25)
        assert prices.date == "2026-12-01"  # a bare TOML date is read as its ISO text
    finally:
        models.reload_models()


def test_a_new_model_may_bring_prices_and_a_bad_table_is_refused(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('[models."my-llama"]\ncontext_limit = 8192\nmax_output = 1024\ntokenizer = "llama3"\n'
                    '[models."my-llama".prices]\ninput = 0.1\noutput = 0.2\n', encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."gpt-4o".prices]\ninput = -2\n', encoding="utf-8")
    try:
        load_models_file(good)
        assert get_model("my-llama").prices == Prices(input=0.1, output=0.2)
        with pytest.raises(InvalidModelFile, match="input must be a price"):
            load_models_file(bad)
    finally:
        models.reload_models()
