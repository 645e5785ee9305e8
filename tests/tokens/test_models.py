"""The model catalog: coverage, sources, lookup, and user files that add or override models."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import tiktoken.model

from contextfit.errors import ContextfitError, InvalidModelFile, UnknownModel
from contextfit.tokens.models import (
    ENV_VAR,
    PROVIDERS,
    ModelInfo,
    get_model,
    list_models,
    load_models_file,
    register_model,
    reload_models,
)
from contextfit.tokens.chat_counter import token_counter
from contextfit.tokens.tokenizers import PROFILES

REQUIRED_SHORT_IDS = (
    "gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4", "gpt-3.5-turbo", "o3",
    "claude-sonnet-4", "claude-opus-4", "claude-3-5-haiku",
    "gemini-2.5-pro", "gemini-2.5-flash",
    "llama-3.1-8b", "llama-3.1-70b", "mistral-large", "qwen2.5-72b", "deepseek-v3",
)  # fmt: skip


@pytest.fixture(autouse=True)
def fresh_catalog(monkeypatch, tmp_path):
    """Each test starts from the built-in catalog, with no user file and no registrations."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # never read the developer's own ~/.config
    reload_models()
    yield
    reload_models()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------- built-in data


def test_catalog_covers_the_current_families() -> None:
    catalog = list_models()
    assert len(catalog) >= 30
    assert {info.provider for info in catalog} == set(PROVIDERS)
    for provider in PROVIDERS:
        assert sum(info.provider == provider for info in catalog) >= 2, provider


@pytest.mark.parametrize("model_id", REQUIRED_SHORT_IDS)
def test_required_short_ids_resolve(model_id: str) -> None:
    info = get_model(model_id)
    assert info.context_limit > info.response_reserve > 0
    assert token_counter(model_id).profile == info.tokenizer


def test_every_entry_is_sourced_and_consistent() -> None:
    names: list[str] = []
    for info in list_models():
        assert info.source.startswith("https://"), info.id
        assert info.tokenizer in PROFILES, info.id
        assert 0 < info.max_output < info.context_limit, info.id
        assert info.response_reserve == info.max_output
        assert info.provider in PROVIDERS
        names += [info.id.lower(), *(alias.lower() for alias in info.aliases)]
    assert len(names) == len(set(names)), "an id or alias names two models"


#: OpenAI models tiktoken does not map yet (0.14): OpenAI has published no other vocabulary for the
#: GPT-6 generation, so they are counted with GPT-5's o200k_base, and their catalog notes say so.
ASSUMED_O200K = ("gpt-6.1-sol", "gpt-6.1-terra", "gpt-6-luna")


def test_openai_models_use_the_encoding_tiktoken_maps_them_to() -> None:
    for info in list_models():
        if info.provider == "openai" and info.id in ASSUMED_O200K:
            assert info.tokenizer == "o200k_base" and "assumed o200k_base" in info.notes, info.id
        elif info.provider == "openai":
            assert tiktoken.model.encoding_name_for_model(info.id) == info.tokenizer, info.id
            assert not PROFILES[info.tokenizer].approximate
        elif info.provider in ("anthropic", "google"):  # private tokenizers
            assert PROFILES[info.tokenizer].approximate, info.id
        else:  # open weights: exact vocabularies (issue 16)
            assert not PROFILES[info.tokenizer].approximate, info.id


def test_list_order_is_stable() -> None:
    first = [info.id for info in list_models()]
    reload_models()
    assert [info.id for info in list_models()] == first
    assert first[0] == "gpt-4o"


# ------------------------------------------------------------------------ resolution


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("GPT-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-2024-05-13", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4-0314", "gpt-4"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),
        ("openai/gpt-4.1", "gpt-4.1"),
        ("models/gemini-2.5-flash", "gemini-2.5-flash"),
        ("gemini-2.5-pro-preview-05-06", "gemini-2.5-pro"),
        ("mistral-large-latest", "mistral-large-2411"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b-instruct"),
        ("deepseek-chat", "deepseek-chat"),
    ],
)
def test_ids_aliases_and_snapshots_resolve_to_their_family(given: str, expected: str) -> None:
    assert get_model(given).id == expected


def test_unknown_model_suggests_close_ids() -> None:
    with pytest.raises(UnknownModel) as caught:
        get_model("gpt-4o-minii")
    error = caught.value
    assert error.code == "UNKNOWN_MODEL"
    assert "gpt-4o-mini" in error.suggestions and "gpt-4o-mini" in str(error)
    assert ENV_VAR in str(error) and "register_model" in str(error)
    with pytest.raises(UnknownModel):
        get_model("o1-mini")  # a different model from o1: not stripped into it
    with pytest.raises(UnknownModel):
        get_model(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- user catalog files


def test_env_file_overrides_fields_and_adds_models(monkeypatch, tmp_path) -> None:
    path = write(
        tmp_path / "models.toml",
        """
[models."gpt-4o"]
max_output = 4096
aliases = ["house-model"]

[models."my-llama"]
provider = "meta"
context_limit = 32768
max_output = 2048
tokenizer = "llama3"
aliases = ["llama-local"]
""",
    )
    monkeypatch.setenv(ENV_VAR, str(path))
    reload_models()
    gpt4o = get_model("house-model")
    assert (gpt4o.id, gpt4o.max_output, gpt4o.context_limit, gpt4o.tokenizer) == ("gpt-4o", 4096, 128000, "o200k_base")
    assert "gpt-4o-2024-08-06" in gpt4o.aliases  # aliases add up
    mine = get_model("LLAMA-LOCAL")
    assert (mine.id, mine.context_limit, mine.response_reserve) == ("my-llama", 32768, 2048)
    assert token_counter("my-llama").profile == "llama3"
    assert list_models()[-1].id == "my-llama"


def test_default_user_file_is_read_when_present(monkeypatch, tmp_path) -> None:
    config = tmp_path / "home" / ".config" / "contextfit"
    config.mkdir(parents=True)
    write(config / "models.toml", '[models."claude-sonnet-4"]\ncontext_limit = 1000000\n')
    reload_models()
    assert get_model("claude-sonnet-4").context_limit == 1_000_000


def test_bad_toml_names_the_file(monkeypatch, tmp_path) -> None:
    path = write(tmp_path / "broken.toml", '[models."x"\ncontext_limit = 1\n')
    monkeypatch.setenv(ENV_VAR, str(path))
    reload_models()
    with pytest.raises(InvalidModelFile) as caught:
        get_model("gpt-4o")
    assert caught.value.code == "INVALID_MODEL_FILE"
    assert str(path) in str(caught.value) and "not valid TOML" in str(caught.value)
    assert isinstance(caught.value, ContextfitError)


@pytest.mark.parametrize(
    ("body", "model", "field", "words"),
    [
        ('[models."gpt-4o"]\ncontext_limit = "big"\n', "gpt-4o", "context_limit", "positive whole number"),
        ('[models."gpt-4o"]\nmax_output = 200000\n', "gpt-4o", "max_output", "smaller than context_limit"),
        ('[models."gpt-4o"]\ntokenizer = "gpt2"\n', "gpt-4o", "tokenizer", "o200k_base"),
        ('[models."gpt-4o"]\ncontext_window = 1\n', "gpt-4o", "context_window", "not a model field"),
        ('[models."gpt-4o"]\naliases = "gpt4"\n', "gpt-4o", "aliases", "list of non-empty strings"),
        ('[models."gpt-4o"]\ncache_minimum = 0\n', "gpt-4o", "cache_minimum", "positive whole number"),
        ('[models."gpt-4o"]\ncache_minimum = "4k"\n', "gpt-4o", "cache_minimum", "positive whole number"),
        ('[models."new-one"]\ncontext_limit = 8192\n', "new-one", "max_output", "needs max_output, tokenizer"),
        ('[models."new-one"]\nprovider = "Big Co"\ncontext_limit = 8192\nmax_output = 1\ntokenizer = "qwen"\n',
         "new-one", "provider", "lowercase name"),
    ],
)  # fmt: skip
def test_bad_values_name_file_model_and_field(tmp_path, body, model, field, words) -> None:
    path = write(tmp_path / "models.toml", body)
    before = list_models()
    with pytest.raises(InvalidModelFile) as caught:
        load_models_file(path)
    error = caught.value
    assert (error.path, error.model, error.field) == (str(path), model, field)
    assert words in str(error) and str(path) in str(error)
    assert list_models() == before  # nothing half-applied


def test_missing_env_file_is_reported(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere.toml"))
    reload_models()
    with pytest.raises(InvalidModelFile, match="does not exist"):
        list_models()


def test_a_models_file_sets_the_cache_minimum_a_replay_uses(monkeypatch, tmp_path) -> None:
    import contextfit

    # the catalog's own, as Anthropic lists them; a new Claude in the user's file gets its own
    assert (get_model("claude-haiku-4-5").cache_minimum, get_model("gpt-4o").cache_minimum) == (4096, None)
    path = write(tmp_path / "models.toml", '[models."claude-next"]\nprovider = "anthropic"\ncontext_limit = 200000\n'
                 'max_output = 8000\ntokenizer = "anthropic"\ncache_minimum = 512\n')
    monkeypatch.setenv(ENV_VAR, str(path))
    reload_models()
    chat = [{"role": "system", "content": "Policy. " * 300}, {"role": "user", "content": "One?"},
            {"role": "assistant", "content": "Yes."}, {"role": "user", "content": "Two?"}]
    reads = {}
    for model in ("claude-next", "claude-sonnet-4"):  # a prompt of some 600 tokens: over 512, under 1,024
        result = contextfit.replay(chat, model=model, context_limit=200_000, response_reserve=1000, strategies=["truncate"])
        assert all(512 < row.prompt_tokens < 1024 for row in result.turns["truncate"])
        reads[model] = sum(row.cache_read for row in result.turns["truncate"])
    assert reads["claude-next"] > 0 and reads["claude-sonnet-4"] == 0


def test_load_models_file_returns_the_resulting_entries(tmp_path) -> None:
    path = write(tmp_path / "more.toml", '[models."claude-3-5-haiku-20241022"]\nmax_output = 4000\n')
    (entry,) = load_models_file(path)
    assert (entry.id, entry.max_output) == ("claude-3-5-haiku", 4000)
    assert get_model("claude-3-5-haiku").max_output == 4000


# ----------------------------------------------------------------- registration in code


def test_register_model_returns_an_undo_that_restores_exactly() -> None:
    original = get_model("gpt-4o")
    replacement = ModelInfo("gpt-4o", "openai", 64000, 4096, "o200k_base", source="tests")
    undo = register_model(replacement)
    assert get_model("gpt-4o") is replacement
    assert get_model("gpt-4o-2024-08-06") is replacement  # snapshot still resolves by family id
    undo()
    undo()  # harmless
    assert get_model("gpt-4o") == original
    assert list_models()[0].id == "gpt-4o"

    added = register_model(ModelInfo("local-qwen", "qwen", 32768, 1024, "qwen", aliases=("lq",)))
    assert get_model("LQ").id == "local-qwen"
    added()
    with pytest.raises(UnknownModel):
        get_model("lq")


def test_model_info_validates_itself() -> None:
    with pytest.raises(ValueError, match="max_output"):
        ModelInfo("tiny", "meta", context_limit=1000, max_output=1000, tokenizer="llama3")
    with pytest.raises(ValueError, match="tokenizer"):
        ModelInfo("tiny", "meta", context_limit=1000, max_output=10, tokenizer="sentencepiece")
    with pytest.raises(TypeError):
        register_model({"id": "dict-is-not-a-model"})  # type: ignore[arg-type]
    assert ModelInfo("t", "meta", 100, 10, "llama3", aliases=["a"]).aliases == ("a",)


def test_concurrent_registrations_all_land() -> None:
    infos = [ModelInfo(f"thread-model-{i}", "meta", 8192, 512, "llama3") for i in range(16)]
    threads = [threading.Thread(target=register_model, args=(info,)) for info in infos]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(get_model(info.id) is info for info in infos)


def test_import_reads_no_files(tmp_path) -> None:
    env = {**os.environ, ENV_VAR: str(tmp_path / "does-not-exist.toml")}
    code = "import contextfit.tokens.models as m, contextfit.tokens.vocabularies as v; assert m._STATE is None and not v._ENCODINGS"
    result = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr  # a missing $CONTEXTFIT_MODELS file only matters on lookup
