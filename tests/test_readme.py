"""The README's example and the docs' tables stay true to the code.

The tables of reasons, diagnostics and error codes live in ``docs/python.md``,
the strategies in ``docs/strategies.md``; the README keeps the two set-up
commands and a Python example that runs and prints what it shows.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest
from support.paths import REPO
from support.readme import README, section, table

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
    names = [row[0] for row in table("The strategies", "docs/strategies.md")]
    assert names == ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger"]


def test_the_python_example_runs_fits_and_prints_what_it_shows(capsys):
    part = section("From Python", "README.md")
    code, shown = re.search(r"```python\n(.*?)```\n+```\n(.*?)```", part, re.S).groups()
    assert len(code.strip().splitlines()) <= 12  # a ten-line example, the chat literal included
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    result = scope["result"]
    assert scope["count_tokens"](result.kept) <= result.budget == 120
    assert result.truncated and capsys.readouterr().out == shown  # the output block is what it prints


def test_the_python_example_uses_the_public_names_only():
    code = re.search(r"```python\n(.*?)```", section("From Python", "README.md"), re.S).group(1)
    used = set(re.findall(r"contextfit\.(\w+)", code))
    assert used and used <= set(contextfit.__all__)


def test_the_readme_stays_a_front_door():
    assert len(README.splitlines()) <= 280  # the rest lives in docs/


def test_the_recommendation_quoted_up_front_is_what_the_command_says_today(monkeypatch):
    import io
    import shlex

    from contextfit import cli

    command, quoted = re.search(r"\(`(contextfit fit [^`]+--recommend)`\):\n\n> (.+)\n", README).groups()
    monkeypatch.chdir(REPO)
    out = io.StringIO()
    assert cli.main(shlex.split(command)[1:], out=out) == 0
    assert out.getvalue().splitlines()[0] == quoted  # regenerate the README's sentence when this fails


def test_the_catalog_counts_the_docs_give_are_the_catalogs():
    from contextfit.tokens.models import list_models

    models = list_models()
    page = (REPO / "docs" / "tokenizers.md").read_text(encoding="utf-8")
    assert f"`contextfit/data/models.toml` lists {len(models)} models" in page
    assert f"**The catalog**: {len(models)} models" in page
    assert f"({sum(1 for model in models if model.prices)} in all;" in page


@pytest.mark.parametrize("command", ["make run", "make test"])
def test_the_two_setup_commands_are_documented(command):
    assert command in section("Set-up", "README.md")
