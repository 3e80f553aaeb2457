"""Helpers of the generation reliability tests (no fixtures that change global behaviour)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from evolve.generations import RECORDS_REF, GenerationRecord, load_records
from evolve.txn import lock as txn_lock
from evolve.workspace import CONFIG_NAME, Workspace, init_workspace

RunGit = Callable[..., str]


def make_workspace(tmp_path: Path, run_git: RunGit, **gate: Any) -> Workspace:
    """A workspace whose generations train 2 episodes with corrective feedback and score 1
    run per task (about a second each with the sim); `gate` overrides more keys. Corrective:
    instance complaints teach the sim little of alex's preferences (docs/sim.md, "What each
    tier can teach"), and a generation that is accepted untampered is the control here."""
    ws = init_workspace(tmp_path / "ws")
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["gate"].update({"train_episodes": 2, "runs": 1, **gate})
    data["train"]["feedback"] = "corrective"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: configure the gate")
    return Workspace(ws.root)


def head(root: Path, run_git: RunGit) -> str:
    return run_git(root, "rev-parse", "HEAD").strip()


def leftovers(tmpdir: Path) -> list[str]:
    """Temporary copies evolve left in `tmpdir`."""
    return sorted(p.name for p in tmpdir.glob("evolve-*"))


def assert_rolled_back(
    ws: Workspace, run_git: RunGit, base: str, tmpdir: Path, *, number: int, phase: str
) -> GenerationRecord:
    """HEAD at the base, a clean tree, no journal, lock or temp copy, and a record
    `rejected (error: ...)` naming the step, in the records ref and in generations/."""
    root = ws.root
    assert head(root, run_git) == base
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert [e for e in run_git(root, "ls-files", "-v").splitlines() if not e.startswith("H ")] == []
    assert not (ws.store.git_dir / "evolve-generation.json").exists()
    assert not (ws.store.git_dir / "evolve-journal.json").exists()
    with txn_lock(Workspace(root), "test: the lock is free"):  # LockHeld if a writer still held it
        pass
    assert leftovers(tmpdir) == [], leftovers(tmpdir)
    records = {r.number: r for r in load_records(Workspace(root))}
    record = records[number]
    assert record.verdict == "rejected"
    assert record.reason.startswith("error: "), record.reason
    assert record.error and record.outcome() == f"rejected ({record.reason})"
    assert record.phase == phase, (record.phase, record.reason)
    assert record.base == base and record.final == base
    on_disk = json.loads((root / "generations" / f"gen-{number:04d}.json").read_text("utf-8"))
    assert on_disk == record.model_dump(mode="json")
    subject = run_git(root, "log", "-1", "--format=%s", RECORDS_REF).strip()
    assert subject == f"generation {number}: rejected ({record.reason})"
    return record


def evolve_cli(
    root: Path, *args: str, env: Mapping[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `evolve ARGS` in a subprocess in `root` with `env` added to the environment."""
    full = {**os.environ, **env}
    full.pop("EVOLVE_WORKSPACE", None)
    return subprocess.run(
        [sys.executable, "-m", "evolve", *args],
        cwd=root,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
