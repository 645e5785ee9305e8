"""Prices in the model catalog and the cost of a request (issue 17's prices, issue 14's verdict)."""

import datetime

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


# -- the built-in catalog's prices --------------------------------------------------------

#: Where each provider publishes its prices: a built-in price must cite the provider's own page.
PRICE_PAGES = {
    "openai": ("https://platform.openai.com/docs/pricing", "https://developers.openai.com/api/docs/pricing"),
    "anthropic": ("https://platform.claude.com/docs/en/about-claude/pricing",),
    "google": ("https://ai.google.dev/gemini-api/docs/pricing",),
    "mistral": ("https://mistral.ai/pricing",),
    "deepseek": ("https://api-docs.deepseek.com/quick_start/pricing",),
}

#: Built-in models of those providers left without prices, on purpose (models.toml's section
#: comments say the same). A new model of these providers needs prices or a line here.
UNPRICED = {
    # Google: shut down on the Gemini API on 2026-06-01.
    "gemini-2.0-flash": "shut down",
    # Google: no longer on the pricing page (replaced by gemini-3.1-pro).
    "gemini-3-pro-preview": "not on the pricing page",
    # Mistral: La Plateforme's page lists its current models, not these snapshots, and its
    # figures could not be read from the provider (third-party copies disagree).
    "mistral-large-2411": "snapshot not priced by the provider page",
    "mistral-medium-2505": "deprecated 2026-05-22",
    "mistral-small-2506": "snapshot not priced by the provider page",
    "codestral-2501": "snapshot not priced by the provider page",
    "open-mistral-nemo": "snapshot not priced by the provider page",
    # DeepSeek: the deepseek-chat / deepseek-reasoner API ids were retired on 2026-07-24.
    "deepseek-chat": "API id retired",
    "deepseek-reasoner": "API id retired",
}


def built_in_models():
    models.reload_models()  # the package's catalog only, whatever a test loaded before
    return [info for info in models.list_models()]


def test_every_built_in_price_cites_its_providers_page_and_a_real_date():
    priced = [info for info in built_in_models() if info.prices is not None]
    assert len(priced) >= 30
    for info in priced:
        assert info.prices.source in PRICE_PAGES[info.provider], (info.id, info.prices.source)
        assert datetime.date.fromisoformat(info.prices.date) <= datetime.date(2026, 12, 4), info.id


def test_every_model_of_a_pricing_provider_has_prices_or_is_knowingly_unpriced():
    catalog = {info.id: info for info in built_in_models()}
    missing = [model_id for model_id, info in catalog.items()
               if info.provider in PRICE_PAGES and info.prices is None and model_id not in UNPRICED]
    assert missing == [], f"price these models or list them in UNPRICED with the reason: {missing}"
    stale = [model_id for model_id in UNPRICED if model_id not in catalog or catalog[model_id].prices is not None]
    assert stale == [], f"UNPRICED lists models that are gone or now priced: {stale}"


@pytest.mark.parametrize("model_id, field, dollars", [
    ("gpt-4.1", "input", 2.00),
    ("gpt-4.1-nano", "cached_input", 0.025),
    ("o4-mini", "cached_input", 0.275),
    ("gpt-5.5", "output", 30.00),
    ("claude-opus-4-1", "cache_write", 18.75),
    ("claude-sonnet-5-5", "cached_input", 0.10),  # cut from 0.20 on 2026-10-07
    ("claude-opus-5-5", "cache_write", 5.00),
    ("claude-haiku-5-5", "input", 0.10),
    ("gemini-2.5-pro", "cached_input", 0.125),
    ("gemini-2.5-flash", "output", 2.50),
    ("gemini-3.1-pro-preview", "long_input", 4.00),
    ("gemini-3.8-flash", "cached_input", 0.075),
    ("gpt-6.1-terra", "cache_write", 1.25),
    ("gpt-6.1-terra", "long_output", 7.50),
    ("gpt-6-luna", "cached_input", 0.01),
    ("claude-sonnet-5-5", "cache_write_1h", 4.00),
    ("deepseek-flash", "cached_input", 0.006),
    ("deepseek-v4-pro", "input", 1.32),
])
def test_spot_checks_against_the_providers_figures(model_id, field, dollars):
    prices = {info.id: info.prices for info in built_in_models()}[model_id]
    assert getattr(prices, field) == pytest.approx(dollars)


#: The OpenAI models that bill cache writes (GPT-5.6 and later: 1.25x input, a 30-minute cache).
OPENAI_WRITES = ("gpt-6.1-sol", "gpt-6.1-terra", "gpt-6-luna")


def test_who_charges_for_cache_writes():
    """Gemini's implicit caching and DeepSeek never; OpenAI from GPT-5.6 on, at 1.25x input;
    Anthropic always: 1.25x input for 5 minutes, 2x for an hour."""
    for info in built_in_models():
        if info.prices is None:
            continue
        if info.provider in ("google", "deepseek") or (info.provider == "openai" and info.id not in OPENAI_WRITES):
            assert info.prices.cache_write is None, info.id
        if info.provider == "openai" and info.id in OPENAI_WRITES:
            assert info.prices.cache_write == pytest.approx(1.25 * info.prices.input), info.id
        if info.provider == "anthropic":
            assert info.prices.cache_write == pytest.approx(1.25 * info.prices.input), info.id
            assert info.prices.cache_write_1h == pytest.approx(2 * info.prices.input), info.id


# -- long-context tiers ------------------------------------------------------------------


def test_a_prompt_over_the_threshold_is_billed_at_the_long_prices_worked_by_hand():
    prices = {info.id: info.prices for info in built_in_models()}["claude-haiku-5-5"]
    # Up to 100,000 prompt tokens: 30,000 plain x 0.10 + 60,000 cached x 0.01 + 10,000 written x 0.125
    # + 2,000 output x 0.50, all / 1e6.
    short = prices.cost(100_000, cached_input_tokens=60_000, cache_write_tokens=10_000, output_tokens=2_000)
    assert (short.input, short.cached_input, short.cache_write, short.output) == pytest.approx(
        (0.003, 0.0006, 0.00125, 0.001))
    # One token more and every token of the request, output included, is billed 5x.
    long = prices.cost(100_001, cached_input_tokens=60_000, cache_write_tokens=10_000, output_tokens=2_000)
    assert (long.input, long.cached_input, long.cache_write, long.output) == pytest.approx(
        (30_001 * 0.5 / 1e6, 0.003, 0.00625, 0.005))
    assert long.total == pytest.approx(0.0292505)
    assert not prices.is_long(100_000) and prices.is_long(100_001)


def test_gemini_pro_long_prompts_and_one_tier_models():
    catalog = {info.id: info.prices for info in built_in_models()}
    assert catalog["gemini-2.5-pro"].rates(200_000) == (1.25, 10.0, 0.125, 1.25)
    assert catalog["gemini-2.5-pro"].rates(200_001) == (2.50, 15.0, 0.25, 2.50)
    assert catalog["gpt-4.1"].rates(1_000_000) == catalog["gpt-4.1"].rates(0)  # no tier: one set of prices


@pytest.mark.parametrize("values, fragment", [
    ({"input": 1, "output": 1, "long_input": 2, "long_output": 2}, "without long_context_threshold"),
    ({"input": 1, "output": 1, "long_context_threshold": 1000}, "no long_input, long_output"),
    ({"input": 1, "output": 1, "cached_input": 0.1, "long_context_threshold": 1000, "long_input": 2,
      "long_output": 2}, "no long_cached_input"),
    ({"input": 1, "output": 1, "cache_write": 1.25, "long_context_threshold": 1000, "long_input": 2,
      "long_output": 2}, "no long_cache_write"),
    ({"input": 1, "output": 1, "long_context_threshold": 0, "long_input": 2, "long_output": 2}, "positive whole"),
    ({"input": 1, "output": 1, "long_context_threshold": True, "long_input": 2, "long_output": 2}, "positive whole"),
    ({"input": 1, "output": 1, "long_context_threshold": 1e5, "long_input": 2, "long_output": 2}, "positive whole"),
    ({"input": 1, "output": 1, "long_context_threshold": 10, "long_input": -2, "long_output": 2}, "long_input must"),
])
def test_a_half_given_tier_is_refused_with_its_name(values, fragment):
    assert fragment in price_problem(values)
    with pytest.raises(ValueError, match=fragment):
        Prices(**values)


def test_a_user_file_can_add_a_tier_and_an_override_keeps_one(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('[models."gpt-5.4".prices]\nlong_context_threshold = 272000\nlong_input = 5.0\n'
                    'long_cached_input = 0.5\nlong_output = 22.5\n'
                    '[models."claude-haiku-5-5".prices]\ninput = 0.08\n', encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."gpt-4.1".prices]\nlong_context_threshold = 100000\nlong_input = 4.0\n', encoding="utf-8")
    try:
        load_models_file(path)
        assert get_model("gpt-5.4").prices.rates(272_001) == (5.0, 22.5, 0.5, 5.0)
        haiku = get_model("claude-haiku-5-5").prices
        assert haiku.input == 0.08 and haiku.rates(100_001) == (0.50, 2.50, 0.05, 0.625)
        with pytest.raises(InvalidModelFile, match="no long_output, long_cached_input"):
            load_models_file(bad)
    finally:
        models.reload_models()
