"""Reasons, diagnostic codes and error codes: SPEC's literal lists, plus documented extensions.

SPEC.md (``../shared/SPEC.md`` beside the checkout, or beside the shared
fixtures folder) is parsed, not copied: §3.5 lists the reason strings, and every
upper-case name in backticks is a diagnostic or error code (§3.1, §3.2, §3.4, §5,
§7). Whatever the package can produce must be in those lists or in the tables of
``docs/python.md`` (Reasons, Diagnostics, Error codes), which document the extensions. The
tests skip with one reason when SPEC.md is not there.

What the package can produce is read from its source (every ``code`` class
attribute, ``{"code": ...}`` entry, ``code=`` argument and argument passed to a
``code`` parameter) and from real plans (every reason and diagnostic the
strategies, a hostile plugin strategy and interceptors give).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from support.paths import REPO, SHARED_FIXTURES
from support.readme import table

import contextfit
from contextfit.fitting import results as r

SPEC_PLACES = tuple(dict.fromkeys((REPO.parent / "shared" / "SPEC.md", SHARED_FIXTURES.parent / "SPEC.md")))
SPEC_PATH = next((path for path in SPEC_PLACES if path.is_file()), None)
PACKAGE = Path(contextfit.__file__).resolve().parent
CODE_SHAPE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")


@pytest.fixture(scope="module")
def spec() -> str:
    if SPEC_PATH is None:
        pytest.skip(f"SPEC.md is not at {' or '.join(map(str, SPEC_PLACES))}")
    return SPEC_PATH.read_text(encoding="utf-8")


def spec_reasons(text: str) -> tuple[list[str], list[str]]:
    """§3.5's two lists, in SPEC's order: (included, excluded)."""
    section = text.split("### 3.5", 1)[1].split("\n#", 1)[0]
    included, excluded = section.split("Included:", 1)[1].split("Excluded:", 1)
    names = re.compile(r"\*\*`([a-z_]+)`\*\*")
    return names.findall(included), names.findall(excluded)


def spec_codes(text: str) -> set[str]:
    """Every code SPEC names: upper-case names in backticks (``"QUOTED"`` ones too)."""
    return {name for name in re.findall(r'`"?([A-Z][A-Z0-9_]{3,})"?`', text) if CODE_SHAPE.match(name)}


def test_spec_parses_into_its_lists(spec):
    included, excluded = spec_reasons(spec)
    assert "current_input" in included and "restored" in included and len(included) >= 10
    assert "over_budget" in excluded and "late_overflow" in excluded and len(excluded) >= 5
    codes = spec_codes(spec)
    assert {"TOKEN_BUDGET_EXCEEDED", "STRATEGY_REJECTED", "PROVIDER_TIMEOUT", "INVALID_CONVERSATION", "CANCELLED"} <= codes


# --- reasons ---


def readme_reasons() -> dict[str, bool]:
    return {reason: included == "yes" for reason, included, _ in table("Reasons")}


def declared_reasons() -> set[str]:
    """Every reason string ``contextfit.fitting.results`` defines, listed in its tuples or not."""
    return {value for name, value in vars(r).items() if name.isupper() and isinstance(value, str) and value.islower()}


def test_every_spec_reason_is_kept_on_its_side(spec):
    included, excluded = spec_reasons(spec)
    assert [reason for reason in included if not r.is_included(reason)] == []
    assert set(included) <= set(r.INCLUDED_REASONS) and set(excluded) <= set(r.EXCLUDED_REASONS)


def test_every_reason_is_in_spec_or_a_documented_extension(spec):
    included, excluded = spec_reasons(spec)
    documented = {**{reason: True for reason in included}, **{reason: False for reason in excluded}, **readme_reasons()}
    produced = declared_reasons() | set(r.INCLUDED_REASONS) | set(r.EXCLUDED_REASONS)
    assert sorted(produced - set(documented)) == [], "undocumented reasons: add them to the Reasons table of docs/python.md"
    assert {reason: r.is_included(reason) for reason in produced} == {reason: documented[reason] for reason in produced}


# --- codes the source can produce ---


def _constants(trees: dict[Path, ast.Module]) -> tuple[dict[str, str], dict[Path, dict[str, ast.expr]]]:
    """Module-level string constants of the whole package, and each module's top-level assignments."""
    strings, assigned = {}, {}
    for path, tree in trees.items():
        assigned[path] = {}
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and node.value is not None:
                    assigned[path][target.id] = node.value
                    if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                        strings[target.id] = node.value.value
    return strings, assigned


def _code_parameters(trees: dict[Path, ast.Module]) -> dict[str, set[tuple[int, bool]]]:
    """Functions with a ``code`` parameter: name -> {(its position, whether the first parameter is self/cls)}."""
    found: dict[str, set[tuple[int, bool]]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
                if "code" in names:
                    found.setdefault(node.name, set()).add((names.index("code"), names[0] in ("self", "cls")))
    return found


def emitted_codes(sources: dict[Path, str]) -> dict[str, set[str]]:
    """Every code the given source files can produce -> the files that produce it."""
    trees = {path: ast.parse(text) for path, text in sources.items()}
    strings, assigned = _constants(trees)
    parameters = _code_parameters(trees)
    found: dict[str, set[str]] = {}

    def collect(expr: ast.AST, path: Path, seen: frozenset[str] = frozenset()) -> None:
        for node in ast.walk(expr):
            value = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
            elif isinstance(node, ast.Attribute):
                value = strings.get(node.attr)
            elif isinstance(node, ast.Name):
                if node.id in assigned[path] and node.id not in seen:  # e.g. a table of codes
                    collect(assigned[path][node.id], path, seen | {node.id})
                value = strings.get(node.id)
            if isinstance(value, str) and CODE_SHAPE.match(value) and len(value) > 3:
                found.setdefault(value, set()).add(path.name)

    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    target = statement.targets[0] if isinstance(statement, ast.Assign) else getattr(statement, "target", None)
                    if isinstance(target, ast.Name) and target.id == "code" and statement.value is not None:
                        collect(statement.value, path)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == "code":
                        collect(value, path)
            elif isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == "code":
                        collect(keyword.value, path)
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                method = isinstance(node.func, ast.Attribute)
                for index, bound in parameters.get(callee, ()):  # every function of that name
                    if bound and not method:
                        continue
                    index -= bound
                    if index < len(node.args):
                        collect(node.args[index], path)
    return found


def package_codes() -> dict[str, set[str]]:
    return emitted_codes({path: path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py"))})


def test_the_scan_finds_every_way_a_code_is_produced():
    source = '''
TABLE = {404: "FROM_A_TABLE"}
NAMED = "FROM_A_CONSTANT"
class Oops(Exception):
    code = "FROM_A_CLASS"
class Box:
    def note(self, code, message): return {"code": code, "message": message}
def note(code): return {"code": code}  # the same name, another function
def answer(status, code): return {"error": {"code": code}}
def run(box, status):
    box.note("FROM_A_METHOD_ARGUMENT", "m")
    note("FROM_A_FUNCTION_ARGUMENT")
    answer(500, TABLE.get(status, "FROM_A_DEFAULT"))
    Oops("x", code="FROM_A_KEYWORD")
    return [{"code": "FROM_A_DICT"}, {"code": NAMED}, {"code": 1008}, {"kind": "NOT_A_CODE"}]
'''
    found = emitted_codes({Path("fake.py"): source})
    assert set(found) == {"FROM_A_TABLE", "FROM_A_CLASS", "FROM_A_METHOD_ARGUMENT", "FROM_A_FUNCTION_ARGUMENT", "FROM_A_DEFAULT",
                          "FROM_A_KEYWORD", "FROM_A_DICT", "FROM_A_CONSTANT"}  # fmt: skip


def test_the_scan_sees_the_package_produce_every_spec_code(spec):
    assert sorted(spec_codes(spec) - set(package_codes())) == []  # SPEC's names are kept


def test_every_code_the_package_produces_is_in_spec_or_documented(spec):
    documented = spec_codes(spec) | {row[0] for row in table("Diagnostics")} | {row[0] for row in table("Error codes")}
    undocumented = {code: sorted(files) for code, files in package_codes().items() if code not in documented}
    assert undocumented == {}, "add these to the Diagnostics or Error codes table of docs/python.md"


def test_every_documented_code_is_one_the_package_produces():
    rows = {row[0] for row in table("Diagnostics")} | {row[0] for row in table("Error codes")}
    assert sorted(rows - set(package_codes())) == []  # no row outlives its code


# --- reasons and diagnostics of real plans ---


def _drops_everything(messages, count_tokens, budget, **options):
    return []  # loses the protected blocks too: rejected, and they come back as `restored`


def _drops_plain_replies(messages):
    return [m for m in messages if m.get("role") != "assistant" or m.get("tool_calls")]  # `intercepted`


def _plans():
    samples = sorted((PACKAGE / "data" / "samples").glob("*.json"))
    assert samples, "the package's samples are missing"
    cleanups = [contextfit.registry.register("spec-lists-drop-all", _drops_everything)]
    cleanups.append(contextfit.register_interceptor(_drops_plain_replies, name="spec-lists-drop-replies"))
    cleanups.append(contextfit.register_interceptor(
        lambda messages: [*messages, {"role": "user", "content": "padding " * 400}], name="spec-lists-pad"))
    try:
        for path in samples:
            conversation = contextfit.load_conversation(json.loads(path.read_text(encoding="utf-8")))
            parts = {name: getattr(conversation, name) for name in ("character", "persona", "lorebook", "memory", "tools")}
            for strategy in contextfit.registry.names():
                for limit in (2_000, 6_000, 128_000):
                    try:
                        yield contextfit.plan_prompt(conversation.messages, model="gpt-4o", context_strategy=strategy,
                                                     context_limit=limit, response_reserve=500, **parts)  # fmt: skip
                    except contextfit.TokenBudgetExceeded:
                        continue
    finally:
        for cleanup in cleanups:
            cleanup()


def test_real_plans_give_only_spec_or_documented_reasons_and_codes(spec):
    included, excluded = spec_reasons(spec)
    reasons = set(included) | set(excluded) | set(readme_reasons())
    codes = spec_codes(spec) | {row[0] for row in table("Diagnostics")}
    seen_reasons, seen_codes = set(), set()
    for plan in _plans():
        seen_reasons |= {block.reason for block in plan.blocks}
        seen_codes |= {diagnostic["code"] for diagnostic in plan.diagnostics}
    assert sorted(seen_reasons - reasons) == [] and sorted(seen_codes - codes) == []
    # The corpus reaches the rules it is meant to check: rejections, restorations, interceptors.
    assert {"restored", "intercepted", "over_budget", "current_input"} <= seen_reasons
    assert {"STRATEGY_REJECTED", "INTERCEPTOR_APPLIED"} <= seen_codes
