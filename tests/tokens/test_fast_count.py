"""The fast counting engine counts exactly what tiktoken counts, or tiktoken counts (issue 19).

Differential tests: the guarded engine against tiktoken on the jtokkit vectors,
every string of every shared fixture, code points in context, hypothesis text
(long white space, repeated characters) and the chat-format totals; then the
hostile paths: a wrong engine is caught by the self-check, a missing, wrong or
failing one leaves tiktoken counting.
"""

from __future__ import annotations

import csv
import json
import warnings
from dataclasses import replace

import pytest
from support.paths import REPO, shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

import contextfit
from contextfit.tokens.chat_counter import TokenCounter
from contextfit.tokens.profiles import PROFILES
from contextfit.tokens.tokenizers import Tokenizer, get_tokenizer
from contextfit.tokens.vocabularies import _read_ranks, vocabulary_path
from contextfit.tokens import fast
from contextfit.inputs.formats import load_conversation_file

VOCABULARIES = ("o200k_base", "cl100k_base")


def _loaded(vocabulary: str, **options) -> fast.FastCounter:
    pytest.importorskip(fast.ENGINE_PACKAGE)
    counter = fast.FastCounter(vocabulary, get_tokenizer(vocabulary).encoding, enabled=True, **options)
    counter.load()
    assert counter.state == "fast", counter.reason
    return counter


@pytest.fixture(scope="module", params=VOCABULARIES)
def counter(request) -> fast.FastCounter:
    return _loaded(request.param)


def assert_exact(counter: fast.FastCounter, texts) -> None:
    """Every text counts as tiktoken counts it, and the fast engine is still the one counting."""
    wrong = [(text[:60], counter.count(text), counter.count_reference(text)) for text in texts
             if counter.count(text) != counter.count_reference(text)]
    assert not wrong, wrong[:5]
    assert counter.state == "fast", counter.reason  # a self-check never had to step in


# -- the engine and its vocabulary ------------------------------------------------------


@pytest.mark.parametrize("vocabulary", VOCABULARIES)
def test_the_pinned_engine_has_the_sha_verified_ranks(vocabulary):
    """toktok's private per-text counter exists in the pinned version, and its ranks
    are exactly the bpe-openai ranks tiktoken's SHA-256 vouches for."""
    toktok = pytest.importorskip(fast.ENGINE_PACKAGE)
    assert toktok.__version__ == fast.ENGINE_VERSION
    engine = toktok._encoding(vocabulary)
    assert callable(engine.count) and engine.count("Hello world!") == 3
    expected_hash = {"o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                     "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"}[vocabulary]
    ranks = _read_ranks(vocabulary_path(vocabulary), vocabulary, expected_hash)
    by_rank = sorted(ranks, key=ranks.__getitem__)
    assert [ranks[token] for token in by_rank] == list(range(len(by_rank)))
    assert engine.token_byte_values() == by_rank
    assert fast.vocabulary_sha256(by_rank) == fast.VOCABULARY_SHA256[vocabulary]


def test_the_tokenizers_count_with_the_fast_engine_once_it_is_loaded():
    pytest.importorskip(fast.ENGINE_PACKAGE)
    tokenizer = get_tokenizer("o200k_base")
    assert tokenizer.fast is fast.counter_for("o200k_base", tokenizer.encoding)
    assert get_tokenizer("anthropic").fast is get_tokenizer("cl100k_base").fast  # one per vocabulary
    assert tokenizer.fast.wait(120), tokenizer.fast.reason
    assert tokenizer.fast.engine == f"toktok-rs {fast.ENGINE_VERSION}"
    assert {status["vocabulary"]: status["engine"] for status in fast.statuses()}["o200k_base"] == tokenizer.fast.engine
    assert tokenizer.count("Hello world! fast now") == 5
    assert get_tokenizer("anthropic").count("Hello world!") == 7  # max(ceil(3 x 1.35) + 1, 3 + 4), the fast count scaled


# -- differential: exactness ------------------------------------------------------------


@pytest.mark.parametrize("vocabulary, rows", [("o200k_base", 421), ("cl100k_base", 423)])
def test_jtokkit_vectors(vocabulary, rows):
    counter = _loaded(vocabulary)
    with shared_path("jtokkit", f"{vocabulary}_encodings.csv").open(newline="", encoding="utf-8") as handle:
        vectors = [(row["input"], len(json.loads(row["output"]))) for row in csv.DictReader(handle)]
    assert len(vectors) == rows
    assert [counter.count(text) for text, _ in vectors] == [tokens for _, tokens in vectors]
    assert counter.state == "fast"


def _strings(value, out: set[str]) -> None:
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            out.add(str(key))
            _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)


def _fixture_texts() -> list[str]:
    texts: set[str] = set()
    for path in sorted(shared_path().rglob("*")):
        if not path.is_file() or path.suffix == ".png":
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        texts.add(text)
        if path.suffix == ".json":
            _strings(json.loads(text), texts)
        elif path.suffix == ".jsonl":
            for line in text.splitlines():
                if line.strip():
                    _strings(json.loads(line), texts)
        elif path.suffix == ".csv":
            for row in csv.reader(text.splitlines()):
                texts.update(row)
    return sorted(texts)


def test_every_shared_fixture_string(counter):
    texts = _fixture_texts()
    assert len(texts) > 1_000
    assert_exact(counter, texts)


def _in_contexts(char: str) -> str:
    return f"{char} a{char} {char}a  {char}{char} A{char}b'S 1{char}2\n{char} {char}'s Z{char}\r\n{char}x{char}"


def test_code_points_in_context(counter):
    """Every 13th Unicode scalar value, and every one new in Unicode 17 with its
    neighbours, in eleven contexts; those new ones are counted by tiktoken."""
    points = set(range(0, 0x110000, 13))
    for first, last in fast.UNICODE_17_NEW:
        points.update(range(first - 1, last + 2))
    texts = [_in_contexts(chr(point)) for point in sorted(points) if not 0xD800 <= point <= 0xDFFF]
    assert_exact(counter, texts)


def test_the_guard_is_needed_and_routes_unicode_17(counter):
    """The raw engine miscounts text with Unicode 17 letters; the guarded count does not."""
    text = _in_contexts("\U00016EA0")  # Beria Erfe, new in Unicode 17
    assert counter._engine.count(text) != counter.count_reference(text)
    routed = counter.routed
    assert counter.count(text) == counter.count_reference(text)
    assert counter.routed == routed + 1


_BLANKS = " \t\n\r\x0b\x0c\xa0\u2003\u3000"
_WORDS = st.sampled_from(["hello", "Don't", "日本語", "🚀", "123456", "ΣΊΣΥΦΟΣ", "x", "'s", "<|endoftext|>", "ﷺ", "\u0301"])
_blank_runs = st.builds(lambda char, n: char * n, st.sampled_from(_BLANKS), st.integers(1, 5_000))
_repeats = st.builds(lambda char, n: char * n, st.characters(exclude_categories=("Cs",)), st.integers(1, 3_000))


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(
    st.text(max_size=300),
    st.text(st.characters(min_codepoint=0x80, exclude_categories=("Cs",)), max_size=300),
    st.lists(st.one_of(_WORDS, _blank_runs, st.text(max_size=20)), max_size=12).map("".join),
    st.lists(st.one_of(_repeats, _WORDS, st.sampled_from(_BLANKS)), max_size=6).map("".join),
), vocabulary=st.sampled_from(VOCABULARIES))
def test_hypothesis_text(text, vocabulary):
    assert_exact(_cached_counter(vocabulary), [text])


_COUNTERS: dict[str, fast.FastCounter] = {}


def _cached_counter(vocabulary: str) -> fast.FastCounter:
    if vocabulary not in _COUNTERS:
        _COUNTERS[vocabulary] = _loaded(vocabulary)
    return _COUNTERS[vocabulary]


@pytest.mark.parametrize("text", [
    " " * 1_000_000, " " * 1_000_000 + "x", "\t" * 200_000 + "a", "\n" * 100_000, "^" * 100_000,
    "日" * 50_000, "The wolves came down from the hills. " * 20_000, "a\ud800b", "x\ud83d\ude80y",
])
def test_long_and_odd_text(counter, text):
    """Runs tiktoken panics on, long prose, lone and split surrogates (routed to tiktoken)."""
    assert_exact(counter, [text])


def _fixture_chats() -> list[list[dict]]:
    chats = []
    for path in sorted(shared_path().rglob("*")):
        if path.suffix not in (".json", ".jsonl", ".png") or "jtokkit" in path.parts:
            continue
        try:
            chats.append(load_conversation_file(path).messages)
        except contextfit.ContextfitError:
            continue  # a card or lorebook alone
    return chats


@pytest.mark.parametrize("profile", ["o200k_base", "cl100k_base", "anthropic", "gemini"])
def test_chat_format_overhead_is_unchanged(profile):
    """TokenCounter totals and per-message counts, fast engine against tiktoken alone."""
    from support.synthetic import synthetic

    info = PROFILES[profile]
    base = get_tokenizer(profile)
    counted_fast = TokenCounter(Tokenizer(info, base.encoding, fast=_loaded(info.encoding)))
    counted_tiktoken = TokenCounter(Tokenizer(info, base.encoding))
    chats = _fixture_chats() + [synthetic(2_000, 6).messages]
    assert len(chats) > 20
    for messages in chats:
        assert counted_fast(messages) == counted_tiktoken(messages)
        assert list(map(counted_fast.count_message, messages)) == list(map(counted_tiktoken.count_message, messages))
    assert counted_fast.tokenizer.fast.state == "fast"


# -- hostile: wrong, failing, missing engines -------------------------------------------


def _fake(count, name="fake 1.0"):
    return lambda vocabulary: fast.Engine(name, count)


def _reference():
    return get_tokenizer("o200k_base").encoding


def test_a_disagreement_found_by_the_self_check_switches_to_tiktoken():
    reference = _reference()
    exact = lambda text: len(reference.encode_ordinary(text))  # noqa: E731
    wrong = lambda text: exact(text) + ("drift" in text)  # noqa: E731 - wrong on some texts only
    counter = fast.FastCounter("o200k_base", reference, loader=_fake(wrong), sample_every=3, enabled=True)
    counter.load()
    assert counter.state == "fast"
    tokenizer = Tokenizer(PROFILES["o200k_base"], reference, fast=counter)
    assert tokenizer.count("drift one") == exact("drift one") + 1  # not sampled: the wrong count goes out
    assert tokenizer.count("drift two") == exact("drift two") + 1
    with pytest.warns(RuntimeWarning, match="FAST_COUNT_DISAGREED"):
        assert tokenizer.count("drift three") == exact("drift three")  # sampled: caught, corrected
    assert counter.state == "tiktoken" and counter.engine == "tiktoken"
    assert counter.diagnostic == "FAST_COUNT_DISAGREED" and "drift" not in counter.reason  # no user text in logs
    assert tokenizer.count("drift four") == exact("drift four")
    assert counter.checked == 1


def test_an_agreeing_engine_is_checked_one_text_in_a_thousand():
    reference = _reference()
    counter = fast.FastCounter("o200k_base", reference, loader=_fake(lambda t: len(reference.encode_ordinary(t))),
                               enabled=True)
    counter.load()
    for index in range(2_500):
        counter.count(f"text {index}")
    assert counter.checked == 2 and counter.state == "fast"


class _Panic(BaseException):
    """Like pyo3's PanicException: not an Exception."""


@pytest.mark.parametrize("error", [RuntimeError("boom"), _Panic("rust panic")])
def test_an_engine_that_raises_is_dropped_for_tiktoken(error):
    reference = _reference()

    def count(text):
        if "bad" in text:
            raise error
        return len(reference.encode_ordinary(text))

    counter = fast.FastCounter("o200k_base", reference, loader=_fake(count), enabled=True)
    counter.load()
    with pytest.warns(RuntimeWarning, match="FAST_COUNT_FAILED"):
        assert counter.count("a bad text") == len(reference.encode_ordinary("a bad text"))
    assert counter.state == "tiktoken" and counter.diagnostic == "FAST_COUNT_FAILED"


def _unavailable(counter: fast.FastCounter, match: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing optional engine is no alarm
        counter.load()
    assert counter.state == "tiktoken" and counter.engine == "tiktoken"
    assert match in counter.reason
    assert counter.count("Hello world!") == 3


def test_a_missing_engine_leaves_tiktoken_counting(monkeypatch):
    monkeypatch.setattr(fast, "ENGINE_PACKAGE", "contextfit_no_such_engine")
    _unavailable(fast.FastCounter("o200k_base", _reference(), enabled=True), "not installed")


def test_another_engine_version_is_not_trusted(monkeypatch):
    pytest.importorskip(fast.ENGINE_PACKAGE)
    monkeypatch.setattr(fast, "ENGINE_VERSION", "0.0.1")
    _unavailable(fast.FastCounter("o200k_base", _reference(), enabled=True), "only 0.0.1 is proven exact")


def test_an_engine_with_other_ranks_is_not_trusted(monkeypatch):
    pytest.importorskip(fast.ENGINE_PACKAGE)
    monkeypatch.setitem(fast.VOCABULARY_SHA256, "o200k_base", "0" * 64)
    _unavailable(fast.FastCounter("o200k_base", _reference(), enabled=True), "failed their SHA-256 check")


def test_an_engine_that_fails_the_probe_is_not_trusted():
    reference = _reference()
    off_by_one = _fake(lambda text: len(reference.encode_ordinary(text)) + 1)
    _unavailable(fast.FastCounter("o200k_base", reference, loader=off_by_one, enabled=True), "probe")


def test_an_engine_that_cannot_load_is_not_trusted():
    def broken(vocabulary):
        raise RuntimeError("cannot open vocab file")

    _unavailable(fast.FastCounter("o200k_base", _reference(), loader=broken, enabled=True), "cannot open vocab file")


def test_the_environment_turns_it_off(monkeypatch):
    monkeypatch.setenv(fast.ENV_VAR, "0")
    counter = fast.FastCounter("o200k_base", _reference())
    assert counter.state == "off" and not counter.wait(0)
    assert counter.count("Hello world!") == 3 and counter.engine == "tiktoken"


def test_it_loads_in_the_background_after_enough_text():
    reference = _reference()
    loads = []

    def loader(vocabulary):
        loads.append(vocabulary)
        return fast.Engine("fake 1.0", lambda text: len(reference.encode_ordinary(text)))

    counter = fast.FastCounter("o200k_base", reference, loader=loader, autoload_chars=20, enabled=True)
    assert counter.count("short") == 1 and counter.state == "waiting" and not loads
    counter.count("long enough to start the load")
    assert counter._ready.wait(30) and counter.state == "fast" and loads == ["o200k_base"]
    assert counter.engine == "fake 1.0"


def test_digit_splitting_profiles_keep_counting_ids_with_tiktoken():
    """gemini splits numbers into digits, which needs the ids: a fast engine is not asked."""
    info = PROFILES["gemini"]
    base = get_tokenizer("gemini")
    never = fast.FastCounter("cl100k_base", base.encoding, loader=_fake(lambda text: 10**6), enabled=True)
    tokenizer = replace(base, fast=never, _cache=type(base._cache)(1 << 20))
    assert tokenizer.count("12345") == Tokenizer(info, base.encoding).count("12345")


def _engines_on_the_models_page():

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    at.switch_page("pages/models.py").run()
    assert not at.exception
    engines = [frame.value for frame in at.dataframe if "counts with" in frame.value.columns]
    assert engines, "no table of counting engines"
    return engines[0].set_index("vocabulary")


def test_the_models_page_names_the_fast_engine_when_it_counts():
    pytest.importorskip(fast.ENGINE_PACKAGE)
    assert get_tokenizer("o200k_base").fast.wait(120)
    table = _engines_on_the_models_page()
    assert table.loc["o200k_base", "counts with"] == f"toktok-rs {fast.ENGINE_VERSION}"
    assert table.loc["o200k_base", "state"] == "fast"


def test_the_models_page_says_tiktoken_counts_and_why(monkeypatch):
    off = fast.FastCounter("o200k_base", _reference(), enabled=False)
    monkeypatch.setitem(fast._COUNTERS, "o200k_base", off)
    table = _engines_on_the_models_page()
    assert table.loc["o200k_base", "counts with"] == "tiktoken"
    assert "turned off" in table.loc["o200k_base", "why tiktoken"]
