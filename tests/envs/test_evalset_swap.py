"""The environment reads exactly the evalset bytes that were checked (issue 28): every evalset
file is read once through a confined open, and what is parsed, validated and remembered are
those bytes. A file (or folder) swapped for a link out after the workspace's link check is
refused by name, never followed; a file rewritten while the environment parses it cannot
get its values remembered under the key of other bytes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evolve import _confine
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.envs.persona_world import _yaml as yaml_module
from evolve.errors import PathRefused
from evolve.evaluate import _run
from evolve.workspace import Workspace

EVALSET = Path(__file__).resolve().parents[2] / "evalset"


def _three_dev(text: str) -> str:
    splits = yaml.safe_load(text)
    splits["dev"] = splits["dev"][:3]
    return yaml.safe_dump(splits, sort_keys=False)


def _swap_for_link(root: Path, rel: str, outside: Path) -> None:
    """`root/rel` replaced by a link to a copy of it outside the workspace (a copy whose
    splits hold 3 dev tasks)."""
    path = root / rel
    copy = outside / rel.replace("/", "-")
    if path.is_dir():
        shutil.copytree(path, copy)
        splits = copy / "splits.yaml"
        if splits.exists():
            splits.write_text(_three_dev(splits.read_text("utf-8")), encoding="utf-8")
        shutil.rmtree(path)
    else:
        text = path.read_text("utf-8")
        copy.write_text(_three_dev(text) if rel.endswith("splits.yaml") else text, "utf-8")
        path.unlink()
    path.symlink_to(copy, target_is_directory=copy.is_dir())


@pytest.mark.parametrize(
    "rel",
    [
        "evalset/splits.yaml",
        "evalset/tasks.yaml",
        "evalset/personas/alex.yaml",
        "evalset/personas",
        "evalset",
    ],
)
def test_a_file_swapped_for_a_link_after_the_check_is_refused(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    real_check = _confine.check_tree
    checked: list[str] = []

    def check_then_swap(root: Path | str, folder: str) -> None:
        real_check(root, folder)  # the check passes on the committed evalset ...
        checked.append(folder)
        _swap_for_link(Path(root), rel, outside)  # ... then the file becomes a link out

    monkeypatch.setattr(_confine, "check_tree", check_then_swap)

    with pytest.raises(PathRefused) as refused:
        _run.open_env(workspace)

    assert checked == ["evalset"]
    assert str(refused.value).startswith(f"refusing {rel}: it is a symbolic link to ")
    assert "outside the workspace" in str(refused.value)


def test_the_cache_never_remembers_values_of_other_bytes_than_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """splits.yaml is rewritten (3 dev tasks) while the environment parses it, and put back
    before it remembers what it validated: the values remembered, and those read back from
    the cache by the next environment, are the original file's."""
    evalset = tmp_path / "ws" / "evalset"
    shutil.copytree(EVALSET, evalset)
    cache = str(tmp_path / "evalset.cache")
    splits = evalset / "splits.yaml"
    original = splits.read_text("utf-8")
    dev = len(yaml.safe_load(original)["dev"])
    assert dev > 3
    real = yaml_module.load_yaml
    swaps: list[str] = []

    def load_during_a_swap(path: Path, *args: Any) -> Any:
        if path.name != "splits.yaml":
            return real(path, *args)
        splits.write_text(_three_dev(original), encoding="utf-8")
        swaps.append(str(path))
        try:
            return real(path, *args)
        finally:
            splits.write_text(original, encoding="utf-8")

    monkeypatch.setattr(yaml_module, "load_yaml", load_during_a_swap)
    first = PersonaWorldEnv(evalset, remember=cache)
    monkeypatch.undo()
    assert swaps  # the swap happened while the file was parsed
    assert len(first.tasks("dev")) == dev  # what was parsed: the bytes read once, not the swap
    second = PersonaWorldEnv(evalset, remember=cache)  # from the cache
    assert len(second.tasks("dev")) == dev
