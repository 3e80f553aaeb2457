"""`import evolve` exports exactly the names of `evolve.api` (it lists them itself, to stay
lazy), and each one is the API's own object."""

from __future__ import annotations

import ast
from pathlib import Path

import evolve
import evolve.api


def test_the_package_exports_exactly_the_apis_names() -> None:
    assert set(evolve.__all__) - {"__version__"} == set(evolve.api.__all__)


def test_each_exported_name_is_the_apis_object() -> None:
    for name in evolve.api.__all__:
        assert getattr(evolve, name) is getattr(evolve.api, name), name


def test_the_type_checking_imports_name_the_same_list() -> None:
    """What type checkers see (`if TYPE_CHECKING: from evolve.api import ...`) is the list."""
    tree = ast.parse(Path(evolve.__file__).read_text("utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "evolve.api"
        for alias in node.names
    }
    assert imported == set(evolve.api.__all__)
