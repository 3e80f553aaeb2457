"""`evolve compare --executor ray`: the jobs run on a (local) Ray cluster, each in a repository
of its own made from a git bundle of the base commit; the arm refs and records come back
through git; a run interrupted after its first job resumes without redoing it, and measures
what a local run measures.

The Ray test is marked `ray` (and slow): it skips without Ray, except where CI=true or EVOLVE_REQUIRE_RAY=1.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from compare_helpers import snapshot, write_small

from conftest import GitRunner
from evolve.workspace import init_workspace


def _need_ray() -> None:
    try:
        importlib.import_module("ray")
    except ImportError:
        if os.environ.get("CI") == "true" or os.environ.get("EVOLVE_REQUIRE_RAY") == "1":
            pytest.fail("Ray is not installed, but CI=true or EVOLVE_REQUIRE_RAY=1 requires it.")
        pytest.skip("Ray is not installed (pip install 'evolve[ray]')")


def _compare(root: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("RAY_ADDRESS", None)  # a local cluster, started and stopped by the command
    if fault:
        env["EVOLVE_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-m", "evolve", "compare", "experiments/small.yaml", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _numbers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "refs"} for row in doc["rows"]]


@pytest.mark.ray
@pytest.mark.slow
def test_compare_on_ray_brings_the_arms_back_through_git_and_resumes(
    tmp_path: Path, run_git: GitRunner
) -> None:
    _need_ray()
    ws = init_workspace(tmp_path / "ws")
    write_small(ws.root)
    before = snapshot(ws.root, ws.store.git_dir)
    cells = ws.root / "generations" / "experiments" / "small" / "cells"

    # Ctrl-C as the first finished job is recorded: the jobs in flight are cancelled.
    stopped = _compare(ws.root, "--executor", "ray", "--jobs", "2", fault="compare-cell:sigint")
    assert stopped.returncode not in (0, None), stopped.stderr
    kept = {p.name: p.read_bytes() for p in cells.glob("*.json")}
    assert len(kept) == 1, stopped.stderr
    (first,) = [json.loads(data) for data in kept.values()]
    if first.get("ref"):
        assert run_git(ws.root, "rev-parse", first["ref"]).strip() == first["sha"]

    done = _compare(ws.root, "--executor", "ray", "--jobs", "2", "--json")
    assert done.returncode == 0, done.stderr
    assert "resuming: 1 of 5 jobs are done and kept" in done.stderr
    assert done.stderr.count("] ") == 4  # one progress line per job run now
    for name, data in kept.items():
        assert (cells / name).read_bytes() == data
    trained = [json.loads(p.read_text()) for p in cells.glob("*.json")]
    arms = [c for c in trained if c.get("ref")]
    assert len(arms) == 4  # ace and tepa, two orders each
    for cell in arms:
        # the arm's branch came back through git: every commit of it is here, trained on
        # top of the base commit
        assert run_git(ws.root, "rev-parse", cell["ref"]).strip() == cell["sha"]
        assert cell["base"] == run_git(ws.root, "merge-base", cell["ref"], "HEAD").strip()
        assert int(run_git(ws.root, "rev-list", "--count", f"HEAD..{cell['ref']}")) >= 1
        records = cell["ref"].replace("refs/evolve/arms/", "refs/evolve/arm-records/")
        assert run_git(ws.root, "ls-tree", "-r", "--name-only", records).strip()
    assert run_git(ws.root, "fsck", "--strict", "--no-dangling") == ""
    assert run_git(ws.root, "for-each-ref", "refs/evolve-compare-base") == ""
    assert snapshot(ws.root, ws.store.git_dir) == before  # branch, index, files untouched
    assert not list((ws.store.common_dir / "evolve-compare").glob("*/*"))  # no clone left

    # the same experiment run here, uninterrupted, measures the same numbers
    clean = init_workspace(tmp_path / "clean")
    write_small(clean.root)
    local = _compare(clean.root, "--json", "--jobs", "1")
    assert local.returncode == 0, local.stderr
    assert _numbers(json.loads(local.stdout)) == _numbers(json.loads(done.stdout))


def test_an_unknown_executor_is_refused_before_anything_runs(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_small(ws.root)
    done = _compare(ws.root, "--executor", "threads")
    assert done.returncode == 2
    assert "'threads' is not one of 'process', 'ray'" in done.stderr
    assert not (ws.root / "generations" / "experiments" / "small").exists()
