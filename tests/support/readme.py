"""The README and the docs' Markdown pages, as the tests that hold them to the code read them."""

from __future__ import annotations

from support.paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def section(heading: str, page: str = "docs/python.md") -> str:
    """The text under ``## heading`` of a page, up to the next ``## `` heading."""
    text = (REPO / page).read_text(encoding="utf-8")
    assert f"## {heading}\n" in text, f"{page} has no '## {heading}' section"
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def table(heading: str, page: str = "docs/python.md") -> list[list[str]]:
    """Rows of the first Markdown table under ``## heading`` of a page (backticks stripped)."""
    lines = section(heading, page).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return [[cell.strip().strip("`") for cell in row.strip("|").split("|")] for row in rows]
