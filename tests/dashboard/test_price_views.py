"""The catalog's prices on the faces: `contextfit models` and the Models page."""

from __future__ import annotations

import io

from support.paths import REPO
from streamlit.testing.v1 import AppTest

from contextfit.tokens import models
from contextfit import cli
from contextfit.dashboard.catalog import dollars, price_row, price_rows


def lines_of_models_command() -> dict[str, str]:
    out = io.StringIO()
    assert cli.main(["models"], out=out) == 0
    return {line.split()[0]: line for line in out.getvalue().splitlines() if line.strip()}


def test_contextfit_models_adds_input_and_output_prices_and_keeps_its_columns():
    lines = lines_of_models_command()
    assert lines["model"].split() == ["model", "provider", "context", "max", "output", "in", "$/M", "out", "$/M",
                                      "tokenizer"]
    assert lines["gpt-4.1"].split() == ["gpt-4.1", "openai", "1,047,576", "32,768", "$2.00", "$8.00", "o200k_base"]
    assert lines["claude-haiku-5-5"].split()[4:6] == ["$0.10", "$0.50"]  # the base band
    assert lines["llama-3.1-8b-instruct"].split()[4:6] == ["—", "—"]  # no first-party price
    assert "US dollars per million tokens" in lines["Prices:"]


def test_a_user_price_reaches_the_command(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('[models."llama-3.1-8b-instruct".prices]\ninput = 0.02\noutput = 0.05\n', encoding="utf-8")
    try:
        models.load_models_file(path)
        assert lines_of_models_command()["llama-3.1-8b-instruct"].split()[4:6] == ["$0.02", "$0.05"]
    finally:
        models.reload_models()


def test_price_cells_keep_the_providers_digits_and_mark_missing_prices():
    assert [dollars(value) for value in (30, 0.275, 0.005, 0.125, None)] == ["$30.00", "$0.275", "$0.005", "$0.125", "—"]
    models.reload_models()
    row = price_row(models.get_model("gpt-4o"))
    assert (row["cached input $/M"], row["cache write $/M"], row["long prompts"]) == ("$1.25", "—", "")
    assert row["source"] == "https://platform.openai.com/docs/pricing" and row["date"] == "2026-12-03"
    assert price_row(models.get_model("deepseek-chat"))["input $/M"] == "—"
    assert price_row(models.get_model("gemini-2.5-pro"))["long prompts"] == (
        "over 200,000 tokens: $2.50 in, $0.25 cached, $15.00 out")
    priced = price_rows(models.list_models())
    assert [row["model"] for row in priced] == [info.id for info in models.list_models() if info.prices is not None]


def test_the_models_page_shows_prices_with_source_and_date():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    at.switch_page("pages/models.py").run()
    assert not at.exception and not at.error
    catalog = next(frame.value for frame in at.dataframe if "tokenizer" in frame.value.columns).set_index("model")
    assert catalog.loc["gpt-5.5", ["input $/M", "output $/M"]].tolist() == ["$5.00", "$30.00"]
    assert catalog.loc["open-mistral-nemo", "input $/M"] == "—"
    prices = next(frame.value for frame in at.dataframe if "cache write $/M" in frame.value.columns).set_index("model")
    assert prices.loc["claude-sonnet-5-5", ["cached input $/M", "cache write $/M"]].tolist() == ["$0.10", "$2.50"]
    # when the cached price starts to apply: the catalog's per-model minimum, else the provider's rule
    assert prices.loc["claude-haiku-4-5", "cached from (tokens)"] == "4,096"
    assert prices.loc["gpt-4o", "cached from (tokens)"] == "1,024"
    assert prices.loc["claude-sonnet-5-5", "source"] == "https://platform.claude.com/docs/en/about-claude/pricing"
    assert prices.loc["claude-sonnet-5-5", "date"] == "2026-12-03"
    assert "llama-3.1-8b-instruct" not in prices.index
    assert any("per million tokens" in caption.value for caption in at.caption)
