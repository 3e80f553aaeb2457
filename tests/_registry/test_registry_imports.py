"""A registry imports evolve's built-in modules one at a time, until one registers the name
asked for: a command imports the built-in it uses, not its siblings (`evolve._registry`)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from evolve._builtins import PLACES

_MODULE = """
    from {package} import things

    @things.register({name!r})
    class Thing:
        pass
"""


def _package(root: Path, package: str, modules: dict[str, str]) -> None:
    """`package` under `root`: a registry `things` (group `evolve.test_<package>`), and one
    module per entry of `modules` (module -> the name it registers)."""
    folder = root / package
    folder.mkdir()
    (folder / "__init__.py").write_text(
        "from evolve._registry import Registry\n\n"
        f"things = Registry('thing', 'evolve.test_{package}')\n",
        encoding="utf-8",
    )
    for module, name in modules.items():
        text = textwrap.dedent(_MODULE.format(package=package, name=name))
        (folder / f"{module}.py").write_text(text, encoding="utf-8")


@pytest.fixture
def scanned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A package place (`pkg.*`) of three modules: `_alpha` registers `alpha`, `_beta` the
    name `zeta`, `_gamma` the name `gamma`; none imported yet."""
    _package(tmp_path, "lazyscan", {"_alpha": "alpha", "_beta": "zeta", "_gamma": "gamma"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(PLACES, "evolve.test_lazyscan", ("lazyscan.*",))
    for name in [m for m in sys.modules if m.startswith("lazyscan")]:
        monkeypatch.delitem(sys.modules, name)
    import lazyscan  # type: ignore[import-not-found]

    assert isinstance(lazyscan, ModuleType)
    return lazyscan


def _imported() -> list[str]:
    return sorted(m.removeprefix("lazyscan.") for m in sys.modules if m.startswith("lazyscan."))


def test_a_name_imports_the_module_named_after_it_and_no_other(scanned: ModuleType) -> None:
    assert scanned.things.lookup("gamma").__module__ == "lazyscan._gamma"
    assert _imported() == ["_gamma"]
    assert "alpha" not in scanned.things._objects  # its module was never imported


def test_a_name_no_module_is_named_after_is_found_in_order(scanned: ModuleType) -> None:
    assert scanned.things.lookup("zeta").__module__ == "lazyscan._beta"
    assert _imported() == ["_alpha", "_beta"]  # in order, up to the one that registers it


def test_then_a_miss_or_a_listing_imports_every_module(scanned: ModuleType) -> None:
    assert scanned.things.find("gamma") is not None
    assert _imported() == ["_gamma"]
    assert scanned.things.find("nothing") is None
    assert _imported() == ["_alpha", "_beta", "_gamma"]
    assert sorted(scanned.things) == ["alpha", "gamma", "zeta"]
