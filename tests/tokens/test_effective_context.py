"""The effective-context note: published figures in the catalog, the plan's diagnostic and JSON key."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextfit.errors import InvalidModelFile
from contextfit.fitting import results as r
from contextfit.pipeline.plan import plan_prompt
from contextfit.tokens.effective import EffectiveContext, EffectiveLength, lowest
from contextfit.tokens.models import ENV_VAR, ModelInfo, get_model, load_models_file, register_model, reload_models

NOLIMA = "https://github.com/adobe-research/NoLiMa"
RULER = "https://github.com/NVIDIA/RULER"
FILLER = " ".join(["word"] * 100)  # 104 tokens as a gpt-4o message


@pytest.fixture(autouse=True)
def fresh_catalog(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    reload_models()
    yield
    reload_models()


def chat(messages: int) -> list[dict]:
    return [*({"role": "user" if i % 2 == 0 else "assistant", "content": FILLER} for i in range(messages)),
            {"role": "user", "content": "And now?"}]


def figures(model: str) -> list[tuple[str, int, bool, str]]:
    return [(f.benchmark, f.tokens, f.below, f.source) for f in get_model(model).effective_context]


def test_the_catalog_holds_the_published_figures_with_their_benchmark_and_source():
    # NoLiMa's README (the "Effective Length" column; its K is 1,000 tokens: run configs say context_length: 8000)
    assert figures("gpt-4o") == [("NoLiMa", 8000, False, NOLIMA)]
    assert figures("gpt-4o-mini") == [("NoLiMa", 1000, True, NOLIMA)]  # "<1K"
    assert figures("llama-3.1-405b") == figures("llama-3.3-70b") == [("NoLiMa", 2000, False, NOLIMA)]
    # both benchmarks measured Llama 3.1 (RULER's K is 1,024: lengths 4,096 … 131,072)
    assert figures("llama-3.1-8b") == [("NoLiMa", 1000, False, NOLIMA), ("RULER", 32768, False, RULER)]
    assert figures("llama-3.1-70b") == [("NoLiMa", 2000, False, NOLIMA), ("RULER", 65536, False, RULER)]
    assert figures("mistral-large-2411") == [("RULER", 65536, False, RULER)]
    # none published for these (RULER's GPT-4-1106-preview figure is not the current gpt-4-turbo snapshot's)
    for model in ("claude-sonnet-4", "gpt-4-turbo", "gpt-4.1", "qwen2.5-72b", "deepseek-chat"):
        assert get_model(model).effective_context == ()


def test_the_note_uses_the_lowest_figure():
    nolima, ruler = EffectiveLength("NoLiMa", 2000), EffectiveLength("RULER", 65536)
    assert lowest([ruler, nolima]) is nolima and lowest([]) is None
    assert lowest([EffectiveLength("A", 1000), EffectiveLength("B", 1000, below=True)]).benchmark == "B"
    note = EffectiveContext("llama-3.1-70b-instruct", (ruler, nolima), 3000)
    assert note.figure is nolima and note.exceeded
    assert note.to_dict()["figures"] == [ruler.to_dict(), nolima.to_dict()]


def test_the_edges_of_exceeding():
    assert not EffectiveLength("NoLiMa", 8000).exceeded_by(8000) and EffectiveLength("NoLiMa", 8000).exceeded_by(8001)
    under = EffectiveLength("NoLiMa", 1000, below=True)  # "<1K": 1,000 tokens is already past it
    assert under.exceeded_by(1000) and not under.exceeded_by(999) and under.text == "under 1,000 tokens"


def test_a_plan_past_the_figure_carries_the_diagnostic_and_the_key():
    plan = plan_prompt(chat(80), model="gpt-4o")
    assert plan.prompt_tokens > 8000
    notes = [d for d in plan.diagnostics if d["code"] == r.EFFECTIVE_CONTEXT_EXCEEDED]
    assert len(notes) == 1
    note = notes[0]
    assert (note["effectiveTokens"], note["benchmark"], note["source"], note["promptTokens"]) == (
        8000, "NoLiMa", NOLIMA, plan.prompt_tokens)
    assert f"{plan.prompt_tokens:,} tokens" in note["message"] and "8,000 tokens" in note["message"]
    assert "NoLiMa" in note["message"] and "middle" in note["message"]
    data = plan.to_dict()["effectiveContext"]
    assert data["exceeded"] is True and data["tokens"] == 8000 and data["benchmark"] == "NoLiMa"
    assert data["measures"].startswith("the longest prompt")
    assert not plan.tokenizer.approximate  # a note about recall, not about the count


def test_a_plan_within_the_figure_or_without_one_has_no_diagnostic():
    short = plan_prompt(chat(4), model="gpt-4o")
    assert short.to_dict()["effectiveContext"]["exceeded"] is False
    assert all(d["code"] != r.EFFECTIVE_CONTEXT_EXCEEDED for d in short.diagnostics)
    unmeasured = plan_prompt(chat(80), model="claude-sonnet-4")
    assert unmeasured.effective_context is None and unmeasured.to_dict()["effectiveContext"] is None
    assert all(d["code"] != r.EFFECTIVE_CONTEXT_EXCEEDED for d in unmeasured.diagnostics)


def test_a_context_limit_under_the_figure_never_notes(tmp_path):
    # the fit keeps the prompt within 4,000 tokens: never past gpt-4o's 8,000
    plan = plan_prompt(chat(80), model="gpt-4o", context_limit=5000, response_reserve=1000)
    assert plan.prompt_tokens <= 4000 and not plan.effective_context.exceeded


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_models_file_replaces_or_removes_the_figures_and_adds_them_to_new_models(tmp_path):
    path = write(tmp_path / "models.toml", """
[models."gpt-4o"]
effective_context = [{ benchmark = "our eval", tokens = 30000, source = "team wiki" }]

[models."llama-3.1-70b"]
effective_context = []

[models."my-llama"]
context_limit = 32768
max_output = 2048
tokenizer = "llama3"
effective_context = [{ benchmark = "RULER", tokens = 16384 }]
""")
    load_models_file(path)
    assert figures("gpt-4o") == [("our eval", 30000, False, "team wiki")]
    assert figures("llama-3.1-70b") == []
    assert figures("my-llama") == [("RULER", 16384, False, "")]
    assert get_model("gpt-4o").max_output == 16384  # the rest is kept
    plan = plan_prompt(chat(80), model="gpt-4o")
    assert plan.effective_context.tokens == 30000 and not plan.effective_context.exceeded


@pytest.mark.parametrize("value, field", [
    ('[{ benchmark = "NoLiMa", tokens = "8K" }]', "tokens"),
    ('[{ benchmark = "", tokens = 8000 }]', "benchmark"),
    ('[{ benchmark = "NoLiMa", tokens = 8000, url = "x" }]', "unknown key"),
    ('[{ benchmark = "NoLiMa", tokens = 8000, below = "yes" }]', "below"),
    ('{ benchmark = "NoLiMa", tokens = 8000 }', "list of tables"),
    ('[8000]', "table"),
])
def test_a_bad_figure_is_refused_naming_the_file_model_and_field(tmp_path, value, field):
    path = write(tmp_path / "models.toml", f'[models."gpt-4o"]\neffective_context = {value}\n')
    with pytest.raises(InvalidModelFile) as caught:
        load_models_file(path)
    message = str(caught.value)
    assert "effective_context" in message and "gpt-4o" in message and field in message
    assert figures("gpt-4o") == [("NoLiMa", 8000, False, NOLIMA)]  # nothing of the file applied


def test_register_model_takes_tables_and_checks_them():
    undo = register_model(ModelInfo("mine", "meta", 65536, 1024, "llama3",
                                    effective_context=[{"benchmark": "RULER", "tokens": 16384, "source": RULER}]))
    try:
        assert get_model("mine").effective_context == (EffectiveLength("RULER", 16384, RULER),)
        assert plan_prompt(chat(200), model="mine").effective_context.exceeded
    finally:
        undo()
    with pytest.raises(ValueError, match="effective_context"):
        ModelInfo("bad", "meta", 65536, 1024, "llama3", effective_context=[{"benchmark": "RULER", "tokens": -1}])


def test_an_under_figure_is_said_as_such():
    plan = plan_prompt(chat(10), model="gpt-4o-mini")  # about 1,050 tokens: past NoLiMa's "<1K"
    note = next(d for d in plan.diagnostics if d["code"] == r.EFFECTIVE_CONTEXT_EXCEEDED)
    assert note["below"] is True and "published effective context of under 1,000 tokens" in note["message"]
    assert plan.to_dict()["effectiveContext"]["below"] is True
