"""`tests/` mirrors `src/evolve/`: every test folder is named after the package it tests, and
test modules have unique names (pytest imports them by basename: no `__init__.py`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src" / "evolve"
# Not packages: the scenarios that cross packages, and the workspace health probes that
# `evolve init` copies into every workspace (the gate runs them there).
NOT_PACKAGES = {"e2e", "health"}


def test_every_test_folder_is_a_package_of_evolve() -> None:
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    strays = sorted(folders - packages - NOT_PACKAGES)
    assert not strays, f"tests/{strays[0]}/ names no package under src/evolve/; name it after one"


def test_test_module_names_are_unique() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert not [n for n, c in names.items() if c > 1]
