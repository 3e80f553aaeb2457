"""Nothing the project ships cites a document outside the repository: no design document, no
issue number, no source ("seed") document a reader cannot open. The code, the docs, the
README, the benchmarks and the examples say what they mean in their own words."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(
    r"DESIGN\.md|SIM\.md|STYLE\.md|\b[Ss]eeds? 00\d|seeds/00\d|\b[Ii]ssues? #?\d+\b"
)
SHIPPED = ("src", "docs", "README.md", "benchmarks", "examples")
SUFFIXES = (".py", ".md", ".yaml", ".mjs", ".toml", ".json")


def _shipped() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", *SHIPPED], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [p for p in out.splitlines() if p.endswith(SUFFIXES)]


def test_nothing_shipped_cites_a_document_outside_the_repository() -> None:
    files = _shipped()
    assert len(files) > 100, "the test must see the project's files"
    hits = [
        f"{path}:{n}: {line.strip()[:100]}"
        for path in files
        for n, line in enumerate((ROOT / path).read_text("utf-8").splitlines(), start=1)
        if CITATION.search(line)
    ]
    assert hits == [], "\n".join(hits)


def test_the_check_finds_a_planted_citation() -> None:
    assert CITATION.search("the gate (DESIGN.md §7) judges")
    assert CITATION.search("# skills (issue 13): batches")
    assert CITATION.search("seed 001's cut")
    assert not CITATION.search("tissue 13 and reissue 4")
