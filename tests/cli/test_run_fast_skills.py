"""Adversarial review (issue 13): `evolve run`'s fast path never serves a selection that is
stale after the scoreboard's record changes, whichever way skills are turned on.

The fast path's caches in `.git/` (settings, rendered memory) are primed with skills off; then
skills are turned on (`skills.enabled`, `train.recipe: skills`, or `render.recipes` holding
skills) and the record is changed twice, each change committed: every run must select by the
record as it is now.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import GitRunner, run_cli
from evolve.skills._strata import STRATA_PATH
from evolve.workspace import Workspace
from factories import WRITE_TRIGGER, skill_file

TRIGGER = WRITE_TRIGGER
IDS = ("a-skip-final-check", "b-lookup", "d-verify-final-state")
D_AHEAD = "a-skip-final-check:\n  t1: [3, 0, 2, 2]\nd-verify-final-state:\n  t1: [3, 3, 2, 0]\n"
A_AHEAD = "a-skip-final-check:\n  t1: [3, 3, 2, 0]\nd-verify-final-state:\n  t1: [3, 0, 2, 2]\n"


def _config(root: Path, way: str | None) -> None:
    config = yaml.safe_load((root / "evolve.yaml").read_text(encoding="utf-8"))
    config["skills"].update(max_injected=1, enabled=way == "enabled")
    if way == "train.recipe":
        config["train"]["recipe"] = "skills"
    if way == "render.recipes":
        config["render"]["recipes"] = ["ace", "skills"]
    (root / "evolve.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def _injected(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> set[tuple[str, ...]]:
    """`evolve run --split dev --json` by the dispatching entry point (fast path first): the
    skills its episodes got."""
    runs = ws.root / "generations" / "runs"
    before = set(runs.iterdir()) if runs.exists() else set()
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    json.loads(out)
    (log,) = set(runs.iterdir()) - before
    return {
        tuple(json.loads(line).get("skills_injected", []))
        for path in sorted(log.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }


@pytest.mark.parametrize("way", ["enabled", "train.recipe", "render.recipes"])
def test_a_changed_record_is_never_served_stale(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], way: str
) -> None:
    root = ws.root
    folder = root / "memory" / "skills" / "general"
    folder.mkdir(parents=True)
    for ident in IDS:
        (folder / f"{ident}.md").write_text(
            skill_file(ident, f"Lesson {ident}.", TRIGGER), encoding="utf-8"
        )
    (root / STRATA_PATH).write_text(D_AHEAD, encoding="utf-8")
    _config(root, None)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "a library, skills off")
    assert _injected(ws, capsys) == {()}  # the fast path's caches are primed
    _config(root, way)
    run_git(root, "commit", "-qam", f"skills on by {way}")
    assert _injected(ws, capsys) == {("d-verify-final-state",)}
    (root / STRATA_PATH).write_text(A_AHEAD, encoding="utf-8")
    run_git(root, "commit", "-qam", "the record changes")
    assert _injected(ws, capsys) == {("a-skip-final-check",)}
    (root / STRATA_PATH).write_text(D_AHEAD, encoding="utf-8")  # uncommitted: still read
    assert _injected(ws, capsys) == {("d-verify-final-state",)}
