"""`evolve._lazy`: the PEP 562 exports every lazy package installs (one helper, not a copy per
package)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from evolve._lazy import lazy_exports

PACKAGES = [
    "evolve.applier",
    "evolve.episode",
    "evolve.evaluate",
    "evolve.history",
    "evolve.skills",
    "evolve.workspace",
    "evolve.sim",
    "evolve.llm",
    "evolve.envs.persona_world",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_resolves_and_is_listed(name: str) -> None:
    package = importlib.import_module(name)
    listed = dir(package)
    for export in package.__all__:
        assert export in listed, f"{name}.{export} missing from dir()"
        assert getattr(package, export) is not None
        assert export in vars(package), f"{name}.{export} not kept after first use"
    with pytest.raises(AttributeError, match=rf"module '{name}' has no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018
    assert not hasattr(package, "no_such_name")


def test_names_load_on_first_use_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lazy_probe_target.py").write_text("LOADS = []\nVALUE = object()\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_probe_target", raising=False)
    seen: list[str] = []
    namespace: dict[str, object] = {"eager": 1}
    getattr_, dir_ = lazy_exports(
        "probe", namespace, {"lazy_probe_target": ["VALUE", "LOADS"]}, before=seen.append
    )

    assert dir_() == ["LOADS", "VALUE", "eager"]
    assert "lazy_probe_target" not in sys.modules
    value = getattr_("VALUE")
    assert "lazy_probe_target" in sys.modules
    assert value is sys.modules["lazy_probe_target"].VALUE
    assert namespace["VALUE"] is value
    assert seen == ["VALUE"]
    with pytest.raises(AttributeError, match="module 'probe' has no attribute 'eager_not'"):
        getattr_("eager_not")
    assert seen == ["VALUE"]


def test_a_name_under_two_modules_is_refused() -> None:
    with pytest.raises(ValueError, match="'X' listed under a and b"):
        lazy_exports("probe", {}, {"a": ["X"], "b": ["Y", "X"]})
