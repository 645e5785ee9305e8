"""The README's Markdown tables, as the tests that hold the docs to the code read them."""

from __future__ import annotations

from support.paths import REPO

README = (REPO / "README.md").read_text()


def table(heading: str) -> list[list[str]]:
    """Rows of the first Markdown table under ``## heading`` (backticks stripped)."""
    section = README.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    return [[cell.strip().strip("`") for cell in row.strip("|").split("|")] for row in rows]
