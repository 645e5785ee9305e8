"""The package's layers import downward only, and no two modules import each other.

Every ``import`` statement in ``contextfit/`` counts — at module level, inside
functions, under ``if TYPE_CHECKING`` — with relative imports resolved, so a
function-level import cannot hide a cycle. The layer order lives here, once;
docs/contributing.md ("Layers") describes it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "contextfit"

#: Lowest first. A module may import its own layer and the layers before it.
#: The package root (``contextfit/__init__.py``, ``__main__``) is the facade
#: above all of them; ``contextfit.data`` holds files only.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "contextfit.errors",
            "contextfit.environment",
            "contextfit.caches",
            "contextfit.memo",
            "contextfit.text",
            "contextfit.amounts",
            "contextfit.limits",
            "contextfit.jsonpath",
            "contextfit.data",
        ),
    ),
    ("inputs", ("contextfit.inputs",)),
    ("tokens", ("contextfit.tokens",)),
    ("fitting", ("contextfit.fitting",)),
    ("pipeline", ("contextfit.pipeline",)),
    ("replays", ("contextfit.replays",)),
    ("retention", ("contextfit.retention",)),
    ("serving", ("contextfit.serving",)),
    ("dashboard", ("contextfit.dashboard",)),
    ("cli", ("contextfit.cli",)),
    ("facade", ("contextfit", "contextfit.__main__")),
)


def module_names(package: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name → (file, is a package ``__init__``)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def imports_of(name: str, path: Path, is_package: bool, modules: dict) -> set[str]:
    """The package modules ``name`` imports anywhere in its file (relative ones resolved)."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # ``from pkg import mod`` imports the module; ``from mod import name`` the module
            candidates = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin for alias in node.names]
        else:
            continue
        for target in candidates:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
    return targets


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = module_names(package)
    return {name: imports_of(name, path, is_pkg, modules) for name, (path, is_pkg) in modules.items()}


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + ".") and prefix != "contextfit":
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return None if best is None else best[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module)
        for target in sorted(targets):
            there = layer_of(target)
            if here is not None and there is not None and there > here:
                problems.append(f"{module} ({LAYERS[here][0]}) imports {target} ({LAYERS[there][0]})")
    return problems


def test_every_module_belongs_to_a_layer():
    unplaced = sorted(name for name in import_graph() if layer_of(name) is None)
    assert unplaced == [], f"modules outside every layer of tests/test_imports.py: {unplaced}"


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_layers_import_downward_only():
    assert upward_imports(import_graph()) == []


# ------------------------------------------------------------------ the checker itself


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "contextfit" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "contextfit"


def test_checker_sees_a_cycle_hidden_in_a_function(tmp_path):
    package = _write(
        tmp_path,
        {
            "__init__.py": "",
            "fitting/__init__.py": "",
            "fitting/a.py": "from . import b\n",
            "fitting/b.py": "def late():\n    from .a import thing\n",
        },
    )
    assert cycles(import_graph(package)) == [["contextfit.fitting.a", "contextfit.fitting.b"]]


def test_checker_sees_an_upward_import(tmp_path):
    package = _write(
        tmp_path,
        {
            "__init__.py": "",
            "tokens/__init__.py": "",
            "tokens/count.py": "import typing\nif typing.TYPE_CHECKING:\n    from ..dashboard.charts import Figure\n",
            "dashboard/__init__.py": "",
            "dashboard/charts.py": "from contextfit.tokens import count\n",
        },
    )
    graph = import_graph(package)
    assert graph["contextfit.dashboard.charts"] == {"contextfit.tokens.count"}
    assert upward_imports(graph) == ["contextfit.tokens.count (tokens) imports contextfit.dashboard.charts (dashboard)"]


@pytest.mark.parametrize("module", ["contextfit", "contextfit.__main__"])
def test_the_facade_is_the_top_layer(module):
    assert layer_of(module) == len(LAYERS) - 1


# ------------------------------------------------------------------ the facade


def test_the_facade_has_at_most_fifteen_names_and_each_resolves():
    import contextfit

    assert len(contextfit.__all__) <= 15
    assert sorted(name for name in dir(contextfit) if not name.startswith("_")) == sorted(contextfit.__all__)
    for name in contextfit.__all__:
        assert getattr(contextfit, name) is not None


def test_importing_contextfit_loads_no_engine_module():
    """``import contextfit`` loads the facade alone; a name loads its module on first use."""
    import subprocess
    import sys

    code = ("import sys, contextfit; before = sorted(m for m in sys.modules if m.startswith('contextfit'));"
            "contextfit.plan_prompt; after = [m for m in sys.modules if m.startswith('contextfit')];"
            "print(before, 'contextfit.pipeline.plan' in after)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["['contextfit']", "True"]


def test_names_the_facade_used_to_export_still_resolve_with_a_warning():
    import contextfit
    from contextfit.tokens.models import get_model

    with pytest.warns(DeprecationWarning, match=r"contextfit\.tokens\.models\.get_model"):
        assert contextfit.get_model is get_model
    with pytest.raises(AttributeError):
        contextfit.no_such_name  # noqa: B018


def test_spec_names_outside_the_fifteen_resolve_without_a_warning(recwarn):
    import contextfit
    from contextfit.errors import InvalidConversation

    assert contextfit.InvalidConversation is InvalidConversation
    assert contextfit.errors.InvalidSettings.code == "INVALID_SETTINGS"
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_builtin_strategies_register_first_on_first_use():
    from contextfit.fitting.registry import ContextStrategyRegistry, _builtin_strategies

    fresh = ContextStrategyRegistry(builtins=_builtin_strategies)
    undo = fresh.register("mine", lambda messages, count_tokens, budget, **options: list(messages))
    assert fresh.names() == ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger", "mine"]
    assert [entry.origin for entry in fresh.entries()][:6] == ["built-in"] * 6
    undo()


def streamlit_imports(package: Path = PACKAGE) -> list[str]:
    """Every place a module of the package imports Streamlit (a statement, or a module name given to
    ``import_module`` / ``__import__``), as ``path:line``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if not node.level else []
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "import_module", "__import__"):
                names = [arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            else:
                continue
            if any(name == "streamlit" or name.startswith("streamlit.") for name in names):
                found.append(f"{path.relative_to(package.parent).as_posix()}:{node.lineno}")
    return found


def test_the_package_never_imports_streamlit():
    # the widgets are drawn by app.py, pages/ and widgets/ beside the package; contextfit/ holds what they show
    assert streamlit_imports() == []


def test_a_streamlit_import_would_be_found(tmp_path):
    package = tmp_path / "contextfit"
    (package / "views").mkdir(parents=True)
    (package / "views" / "a.py").write_text("import os\nimport streamlit as st\n")
    (package / "views" / "b.py").write_text("def f():\n    from streamlit.runtime import x\n")
    (package / "c.py").write_text("import importlib\nimportlib.import_module('streamlit')\nimport streamlit_extras\n")
    assert streamlit_imports(package) == ["contextfit/c.py:2", "contextfit/views/a.py:2", "contextfit/views/b.py:2"]
