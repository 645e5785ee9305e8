"""The README and docs/ point at things that exist.

Every relative link of ``README.md``, ``CHANGELOG.md`` and ``docs/*.md``
resolves to a file of the repository, and every ``#anchor`` to a heading of
the page it names (GitHub's rule for heading ids); every ``contextfit.…``
name in backticks imports and resolves; every repository path in backticks
(``contextfit/…``, ``tests/…``, ``bench/…``, ``pages/…``, ``widgets/…``,
``docs/…``…) exists.
So a page moved, a heading renamed, a module renamed or a file deleted fails
here, not in a reader's hands.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import unicodedata
import warnings
from pathlib import Path

import pytest
from support.paths import REPO

PAGES = sorted([REPO / "README.md", REPO / "CHANGELOG.md", *(REPO / "docs").glob("*.md")])
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"(?<![\w./~-])contextfit(?:\.[A-Za-z_]\w*)+")
#: The repository's folders, and one that was renamed away (a doc still naming it is stale).
PATH = re.compile(r"(?<![\w./~-])((?:contextfit|tests|bench|pages|docs|widgets|frame|\.streamlit|\.ci)/[\w./-]*)")
#: Names in backticks that look like modules but are not: files, an entry-point group.
NOT_MODULES = {"contextfit.db", "contextfit.plugins"}
#: What a run writes, not what the repository holds.
WRITTEN = ("bench/results",)


def slug(heading: str) -> str:
    """GitHub's id for a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> slug("Fitting a list of messages: `shift_context`")
    'fitting-a-list-of-messages-shift_context'
    >>> slug("Models & tokenizers")
    'models--tokenizers'
    """
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading id of a Markdown page (a repeated heading gets -1, -2 …, as on GitHub)."""
    found: set[str] = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if (match := re.match(r"#{1,6} (.+)", line)):
            base = slug(match.group(1))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def prose(page: Path) -> str:
    """The page without its fenced code (a shell example's path is not a claim)."""
    return FENCE.sub("", page.read_text(encoding="utf-8"))


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(prose(page)) if not re.match(r"[a-z]+:", target)]


def test_the_pages_exist():
    names = {page.relative_to(REPO).as_posix() for page in PAGES}
    assert {"README.md", "CHANGELOG.md", "docs/dashboard.md", "docs/strategies.md", "docs/formats.md",
            "docs/python.md", "docs/api.md", "docs/operations.md", "docs/performance.md",
            "docs/tokenizers.md", "docs/retention.md", "docs/contributing.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(REPO)}")
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_every_name_and_path_cited_exists(page):
    missing = []
    for span in CODE_SPAN.findall(prose(page)):
        for name in DOTTED.findall(span):
            if name not in NOT_MODULES and not resolves(name):
                missing.append(name)
        for path in PATH.findall(span):
            if not path.startswith(WRITTEN) and not (REPO / path.rstrip("/.")).exists():
                missing.append(path)
    assert missing == []


#: Internal history has no place where users read: no issue numbers, no "before the fix".
HISTORY = re.compile(r"(?i)\bissues? #?\d+|\bbefore the fix\b")


def test_no_issue_numbers_or_fix_history_where_users_read():
    import ast

    found = [f"{page.relative_to(REPO)}: {match.group(0)}" for page in [*PAGES, REPO / "bench" / "README.md"]
             for match in HISTORY.finditer(page.read_text(encoding="utf-8"))]
    sources = [*(REPO / "contextfit").rglob("*.py"), *(REPO / "pages").glob("*.py"), *(REPO / "bench").glob("*.py"),
               REPO / "app.py", REPO / "app_server.py"]
    for path in sources:  # every string: help texts, page captions, printed headings, docstrings (help())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and HISTORY.search(node.value):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {HISTORY.search(node.value).group(0)}")
    assert found == []


def resolves(name: str) -> bool:
    """``contextfit.a.b.c``: the longest importable module, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module_name) is None:
                continue
        except ModuleNotFoundError:
            continue
        value = importlib.import_module(module_name)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # a name the docs give must be its home
            try:
                for attribute in parts[cut:]:
                    value = getattr(value, attribute)
            except (AttributeError, DeprecationWarning):
                return False
        return True
    return False


def test_the_checks_catch_what_they_are_for(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n## Its `part`: here\n\n[ok](#its-part-here) [bad](#nowhere) "
                    "[gone](missing.md) [out](https://example.com)\n", encoding="utf-8")
    assert anchors(page) == {"a-page", "its-part-here"}
    assert links(page) == ["#its-part-here", "#nowhere", "missing.md"]
    assert resolves("contextfit.pipeline.settings.PlanSettings")
    assert not resolves("contextfit.pipeline.settings.NoSuchName")
    assert not resolves("contextfit.engine.session")
    assert not resolves("contextfit.clear_caches")  # resolves, but only with a DeprecationWarning
    assert HISTORY.search("as issue 19 asked") and HISTORY.search("Before the fix it took 3 s")
    assert not HISTORY.search("a known issue where the radio restarts")
