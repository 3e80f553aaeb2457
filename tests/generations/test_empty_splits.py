"""`evolve evolve` refuses, before any work, a workspace whose dev or holdout split is empty
(a generation there could only be rejected, after training and reflecting for nothing)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from evolve.errors import EvolveError
from evolve.generations import RECORDS_REF, evolve
from evolve.workspace import Workspace

RunGit = Callable[..., str]


@pytest.mark.parametrize("empty", [("dev",), ("dev", "holdout")])
def test_an_empty_dev_or_holdout_split_is_refused_up_front(
    ws: Workspace, run_git: RunGit, empty: tuple[str, ...]
) -> None:
    path = ws.root / "evalset" / "splits.yaml"
    splits = yaml.safe_load(path.read_text(encoding="utf-8"))
    for split in empty:
        splits[split] = []
    path.write_text(yaml.safe_dump(splits, sort_keys=False), encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: empty splits")
    head = run_git(ws.root, "rev-parse", "HEAD")

    with pytest.raises(EvolveError) as info:
        evolve(Workspace(ws.root), generations=1)

    words = " and ".join(empty)
    assert str(info.value).startswith(f"the evalset's {words} split")
    assert "evalset/splits.yaml" in str(info.value)
    assert run_git(ws.root, "rev-parse", "HEAD") == head
    assert run_git(ws.root, "status", "--porcelain") == ""
    assert run_git(ws.root, "for-each-ref", RECORDS_REF) == ""
    assert not list(Path(ws.root, "generations").glob("gen-*"))
