"""Environment variables are read in one module and listed in one table (docs/operations.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.paths import REPO

from contextfit import environment

PACKAGE = REPO / "contextfit"
NAME = re.compile(r"^(CONTEXTFIT|OPENAI|ANTHROPIC|GEMINI)_[A-Z0-9_]+$")
NOT_VARIABLES = {"CONTEXTFIT_ERROR"}  # the base error code, not a variable


def documented_table() -> set[str]:
    page = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    section = page.split("## Environment variables\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    return {row.strip("|").split("|")[0].strip().strip("`") for row in rows}


def package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_documented_table_lists_exactly_the_variables_read():
    assert documented_table() == set(environment.VARIABLES)


def test_only_the_environment_module_touches_os_environ():
    offenders = []
    for path in package_files():
        if path.name == "environment.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "environb", "putenv"}:
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "os" and {a.name for a in node.names} & {"environ", "getenv"}:
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_every_variable_named_in_the_code_is_declared():
    named = set()
    for path in package_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.match(node.value) and node.value not in NOT_VARIABLES:
                named.add(node.value)
    assert named == set(environment.VARIABLES)  # none undeclared, none declared but unused


def test_an_undeclared_variable_is_refused():
    with pytest.raises(KeyError, match="VARIABLES"):
        environment.read("CONTEXTFIT_SOMETHING_NEW")


def test_reads_go_through_the_module(monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", "elsewhere.db")
    from contextfit.serving.database import default_database

    assert default_database() == "elsewhere.db"
