"""pattern_units: a regex key's compiled size, estimated from its text before it is compiled.

The estimate must be an upper bound of what the ``regex`` package builds
(``sys.getsizeof`` of the compiled pattern, and the peak while compiling,
measured with ``tracemalloc``), for every construct a key may use: counted
repeats (nested, lazy, possessive, verbose ``{1 000}``), alternations, classes,
lookarounds, named groups, backreferences, group calls, inline flags and
fuzzy constraints. Random patterns from a grammar check it beyond the examples.
"""

from __future__ import annotations

import sys
import tracemalloc

import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.depth import examples

from contextfit.inputs.lorebook.matching import RegexLimits
from contextfit.inputs.lorebook.pattern_size import BYTES_PER_UNIT, pattern_units, without_captures

#: What a compiled pattern costs before its first node (measured: 710 bytes for "a").
BASE_BYTES = 1024
#: The peak while compiling, per unit (measured: up to 490 for tiny patterns, 250-380 for large ones).
PEAK_BYTES_PER_UNIT = 600
#: ... and a constant for its working tables (measured: up to 19 KB for "(?fi)aa").
PEAK_BASE_BYTES = 64 * 1024
LIMIT = RegexLimits().max_pattern_units


def compiled_cost(pattern: str) -> tuple[int, int] | None:
    """(compiled size, peak bytes while compiling), or None when ``regex`` refuses the pattern.

    Compiled twice: the first time may fill the package's one-time tables (case folding)."""
    try:
        regex.compile(pattern, regex.VERSION0, cache_pattern=False)
    except (regex.error, OverflowError, RecursionError, ValueError):
        return None
    tracemalloc.start()
    try:
        compiled = regex.compile(pattern, regex.VERSION0, cache_pattern=False)
    except (regex.error, OverflowError, RecursionError, ValueError):
        return None
    else:
        return sys.getsizeof(compiled), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_bounded(pattern: str) -> None:
    cost = compiled_cost(pattern)
    if cost is None:
        return
    size, peak = cost
    units = pattern_units(pattern)
    assert size <= BASE_BYTES + BYTES_PER_UNIT * units, (pattern, size, units)
    assert peak <= PEAK_BASE_BYTES + PEAK_BYTES_PER_UNIT * units, (pattern, peak, units)


EXAMPLES = [
    r"shadow ?fangs?", r"\d{4}-\d{2}-\d{2}", r"\b(?:wolf|wolves)\b", r"(?i)\bdrag(?:on|ons)\b", "a{1000}",
    "(?:a{100}){10}", "(?:(?:a{10}){10}){10}", "(?:a|bc|def){300}", "(?:(a)){300}", "(?:(?P<n>a)){300}",
    "(?x)a {1000}", "(?x)a{1 0 0 0}", "(?x)a{10#c\n00}", "(?x)(?:a{10} ){10}", "(?fi)ß{1000}", "(?fi)[a-zß]{300}",
    r"\X{300}", "(?|(a)|(b)){300}", "(?:(?1)(a)){300}", "(?:(?R)?a){50}", "(?:(?&n)(?P<n>a)){100}",
    r"(?:\g<1>(a)){100}", "(?<=a{1000})b", "(?<=(?:ab){300})c", "x(?<=[ab]{1000})", "(?:(?=a)){300}",
    "[a-zA-Z0-9_\u00c0-\uffff]{300}", r"[\w\s\d]{300}", r"[\p{L}\p{N}]{300}", r"[[:alpha:]]{300}", "[]]{300}",
    "[^]]{300}", r"\N{BULLET}{300}", r"\p{L}{300}", "(?:a*+){300}", "(?:a++){300}", "(?:a{2,5}){300}",
    "(?:a{1,1000}){300}", r"(?:(a)\1){300}", "(?:a{e<=1}){300}", "(?:[a-z]{e<=2}){300}", "(?:(?(1)a|b)(a)){100}",
    "(?>a{300})", "(?r)a{300}", "(?s).{300}", "(?m)^a{300}$", "((((((a))))))", "(?:x*){300}", "a{1000,}",
    "a{1000}?", "(?:a|b|c|d|e|f|g){300}", "(?i)(?:ß|ss){300}", r"\u00e9{500}", "(?:\\(a\\)){300}",
]


@pytest.mark.parametrize("pattern", EXAMPLES)
def test_the_estimate_bounds_what_regex_builds(pattern: str) -> None:
    assert_bounded(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "(?:a{999999}){999999}",  # the reported key: about 10^12 nodes
        "a{10001}",
        "(?:a{101}){100}",
        "(?:(?:a{22}){22}){22}",
        "(?:a|b|c|d){2000}",
        "(?:(?P<name>a)(?P=name)){2000}",
        "(?<=(?:ab){5000})c",
        "(?x)a{1 0 0 0 1}",
        "(?x)(?:a{100} ){1 0 1}",
        "(?fi)ß{3400}",
        "[a-z0-9]{1500}",
        r"\X{850}",
        "(?:(?1)(a)){1200}",
        "(?i)(?:a{100}){101}",
        "(?:a{100}){101}?",
        "(?:a{100}){101,}",
        "(?:a{4294967295})",
    ],
)
def test_explosive_patterns_are_over_the_limit(pattern: str) -> None:
    assert pattern_units(pattern) > LIMIT


@pytest.mark.parametrize(
    "pattern",
    [r"\b(?:wolf|wolves|werewolf)\b", r"(?i)shadow[- ]?fangs?", r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}", "a{5000}",
     r"[A-Z]{2}\d{6}", "(?:word ){1000}", r"(?<!\w)(?:Eldoria|the forest)(?!\w)", "(?:" + "|".join(f"name{i}" for i in range(60)) + ")"],
)
def test_patterns_people_write_are_far_under_it(pattern: str) -> None:
    assert pattern_units(pattern) <= LIMIT


# -- random patterns ------------------------------------------------------------------

_ATOMS = st.sampled_from(["a", "b", ".", r"\d", r"\w", r"\s", r"\b", r"\X", "^", "$", "[a-z]", "[^ab]", "[a-zA-Z0-9_]",
                          r"[\p{L}\p{N}]", "ß", "é", r"\p{Lu}", r"\N{BULLET}", r"\\", r"\(", r"\{", "{", "}", "]"])
_QUANTIFIERS = st.sampled_from(["", "*", "+", "?", "*?", "+?", "??", "*+", "{3}", "{0,4}", "{2,}", "{,3}", "{12}",
                                "{20}?", "{7}+", "{e<=1}", "{1 0}"])
_GROUPS = st.sampled_from(["(?:{})", "({})", "(?P<g>{})", "(?={})", "(?!{})", "(?<={})", "(?<!{})", "(?>{})",
                           "(?i:{})", "(?|{})", "(?x:{})", "(?f:{})", "(?<h>{})", "[(]{}"])


def _patterns(depth: int = 3) -> st.SearchStrategy[str]:
    item = st.builds(lambda atom, quantifier: atom + quantifier, _ATOMS, _QUANTIFIERS)
    if depth > 0:
        group = st.builds(lambda shape, inner, quantifier: shape.format(inner) + quantifier,
                          _GROUPS, st.deferred(lambda: _patterns(depth - 1)), _QUANTIFIERS)
        item = st.one_of(item, group)
    sequence = st.lists(item, min_size=1, max_size=4).map("".join)
    return st.lists(sequence, min_size=1, max_size=3).map("|".join)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_patterns(), prefix=st.sampled_from(["", "(?i)", "(?x)", "(?fi)", "(?s)"]))
def test_any_pattern_compiles_within_its_estimate(pattern: str, prefix: str) -> None:
    assume(pattern_units(prefix + pattern) <= 20_000)  # larger ones are refused, and slow to compile here
    assert_bounded(prefix + pattern)


# -- groups that need not capture -------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("(wolf|wolves)", "(?:wolf|wolves)"),
        ("(?P<name>a)(?<other>b)(?'third'c)", "(?:a)(?:b)(?:c)"),
        (r"\(a\)[(](?:b)(?=c)(?<=d)(?<!e)", r"\(a\)[(](?:b)(?=c)(?<=d)(?<!e)"),
        (r"(a)\1", r"(a)\1"),
        ("(?P<n>a)(?P=n)", "(?P<n>a)(?P=n)"),
        ("(a)(?(1)b|c)", "(a)(?(1)b|c)"),
        ("(a)(?1)", "(a)(?1)"),
        (r"(a)\g<1>", r"(a)\g<1>"),
        ("[[:alpha:](](b)", "[[:alpha:](](?:b)"),
    ],
)
def test_groups_nothing_reads_back_stop_capturing(pattern: str, expected: str) -> None:
    assert without_captures(pattern) == expected


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_patterns(2), prefix=st.sampled_from(["", "(?i)", "(?x)", "(?s)"]),
       text=st.text(alphabet="ab(){}[]ß\n é1_", max_size=30))
def test_a_pattern_without_captures_matches_where_the_pattern_does(pattern: str, prefix: str, text: str) -> None:
    pattern = prefix + pattern
    assume(pattern_units(pattern) <= 2_000)
    try:
        original = regex.compile(pattern, regex.VERSION0, cache_pattern=False)
    except (regex.error, OverflowError, RecursionError, ValueError):
        assume(False)
    rewritten = regex.compile(without_captures(pattern), regex.VERSION0, cache_pattern=False)
    assert rewritten.groups == 0 or rewritten.pattern == pattern
    for find in ("search", "match"):
        try:
            found, again = getattr(original, find)(text, timeout=1), getattr(rewritten, find)(text, timeout=1)
        except (TimeoutError, MemoryError):  # a fuzzy pattern that runs away (in either form): nothing to compare
            continue
        assert (found and found.span()) == (again and again.span()), (pattern, text)
