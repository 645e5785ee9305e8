"""The word and sentence tools behind summaries and relevance."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextfit import text


def _reference_words(value: str) -> list[str]:
    """words() without its cache: the definition it must keep."""
    return [
        text.fold(match)
        for match in text._WORD.findall(value.lower())
        if match not in text.STOP_WORDS and (len(match) > 1 or not match.isascii())
    ]


@given(st.text(max_size=300), st.booleans())
def test_words_are_the_same_with_or_without_the_cache(value, cold):
    if cold:
        text.clear_caches()
    assert text.words(value) == _reference_words(value)
    assert text.words(value) == _reference_words(value)  # now from the cache


def test_stop_words_and_single_letters_are_not_content_words():
    assert text.words("The a I x é forests") == ["é", "forest"]


_SENTENCE_TEXT = st.text(alphabet="aZ xy'’.!?…\"')]\n\t_9ΣσΑé。", max_size=60)


@given(_SENTENCE_TEXT)
def test_sentences_with_words_are_each_sentence_and_its_words(value):
    # ASCII texts take the one-pass path; the rest (Greek sigma, CJK stops) the per-sentence one.
    assert text.sentences_with_words(value) == [(s, text.words(s)) for s in text.sentences(value)]


@given(st.text(alphabet="aZ xy'.!?\"')]\n\t_9", max_size=60))
def test_the_one_pass_path_gives_the_sentences_words(value):
    assert value.isascii()
    assert text.sentences_with_words(value) == [(s, text.words(s)) for s in text.sentences(value)]
