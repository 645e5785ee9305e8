"""The README's tables and example stay true to the code."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest
from support.readme import README, table

import contextfit
from contextfit.fitting import registry as plugins
from contextfit.fitting import results as r

def all_error_codes() -> set[str]:
    for module in pkgutil.walk_packages(contextfit.__path__, "contextfit."):
        if module.name.split(".")[-1] not in {"__main__"}:
            try:
                importlib.import_module(module.name)
            except ImportError as exc:  # optional extras (the API) may be missing
                if "contextfit" in str(exc):
                    raise
    seen, todo = set(), [contextfit.ContextfitError]
    while todo:
        cls = todo.pop()
        seen.add(cls.code)
        todo.extend(cls.__subclasses__())
    # PLUGIN_ERROR is reported (plugin_errors()), never raised, and documented with the others
    return seen - {contextfit.ContextfitError.code} | {plugins.PLUGIN_ERROR}


def test_reason_table_matches_the_code():
    rows = table("Reasons")
    assert [row[0] for row in rows] == [*r.INCLUDED_REASONS, *r.EXCLUDED_REASONS]
    for reason, included, _ in rows:
        assert (included == "yes") == r.is_included(reason)


def test_diagnostics_table_matches_the_code():
    assert sorted(row[0] for row in table("Diagnostics")) == sorted(r.DIAGNOSTIC_CODES)


def test_error_code_table_matches_the_code():
    # Every exception's code is documented; the other rows (codes the HTTP layer sends) are
    # checked against the source by test_spec_lists.
    assert {row[0] for row in table("Error codes")} >= all_error_codes()


def test_strategy_table_names_the_builtins():
    assert [row[0] for row in table("Strategies")] == ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger"]


def test_the_python_example_runs_and_fits(capsys):
    code = re.search(r"## Fitting a conversation from Python\n\n```python\n(.*?)```", README, re.S).group(1)
    assert len(code.strip().splitlines()) <= 20
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    result = scope["result"]
    assert scope["count_tokens"](result.kept) <= result.budget == 120
    assert result.truncated and "summarized" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["make run", "make test"])
def test_the_two_setup_commands_are_documented(command):
    assert command in README.split("## Set-up", 1)[1].split("\n## ", 1)[0]
