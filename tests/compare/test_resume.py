"""`evolve compare` killed with SIGKILL resumes without redoing finished jobs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from compare_helpers import snapshot, write_small

from conftest import GitRunner
from evolve.workspace import init_workspace

pytestmark = pytest.mark.slow


def compare(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evolve", "compare", "experiments/small.yaml", *args],
        cwd=root, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def numbers(doc: dict[str, object]) -> list[object]:
    """The measured part of the results (what a clean run must reproduce)."""
    return [
        {k: v for k, v in row.items() if k != "refs"}
        for row in doc["rows"]  # type: ignore[attr-defined]
    ]


def test_sigkill_then_rerun_keeps_finished_jobs_and_gives_the_clean_results(
    tmp_path: Path, run_git: GitRunner
) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_small(ws.root)
    before = snapshot(ws.root, ws.store.git_dir)
    cells = ws.root / "generations" / "experiments" / "small" / "cells"
    # The parent hangs after recording its first finished job while a second worker goes on;
    # then the whole process group is killed from outside.
    proc = subprocess.Popen(
        [sys.executable, "-m", "evolve", "compare", "experiments/small.yaml", "--jobs", "2"],
        cwd=ws.root, env={**os.environ, "EVOLVE_FAULT": "compare-cell:hang"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "hanging at step compare-cell" in line:
                break
        time.sleep(0.05)  # the other worker is in the middle of its job (jobs take ~0.2 s)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    kept = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in cells.glob("*.json")}
    assert 1 <= len(kept) < 5
    refs = run_git(ws.root, "for-each-ref", "refs/evolve/arms")

    done = compare(ws.root, "--json", "--jobs", "2")

    assert done.returncode == 0, done.stderr
    assert f"resuming: {len(kept)} of 5 jobs are done and kept" in done.stderr
    assert done.stderr.count("] ") == 5 - len(kept)  # one progress line per job run now
    for name, (stamp, data) in kept.items():
        path = cells / name
        assert path.stat().st_mtime_ns == stamp and path.read_bytes() == data
        cell = json.loads(data)
        if cell.get("ref"):
            assert f"{cell['sha']} commit\t{cell['ref']}" in refs
            assert run_git(ws.root, "rev-parse", cell["ref"]).strip() == cell["sha"]
    assert snapshot(ws.root, ws.store.git_dir) == before
    assert not list((ws.store.common_dir / "evolve-compare").glob("*/*"))  # no clone left
    resumed = json.loads(done.stdout)

    # A clean, uninterrupted run of the same experiment measures the same numbers.
    clean = init_workspace(tmp_path / "clean")
    write_small(clean.root)
    fresh = compare(clean.root, "--json", "--jobs", "1")
    assert fresh.returncode == 0, fresh.stderr
    assert numbers(json.loads(fresh.stdout)) == numbers(resumed)


def test_a_stale_clone_and_arm_ref_of_a_killed_job_are_redone(
    tmp_path: Path, run_git: GitRunner
) -> None:
    """A job killed mid-way left its clone and maybe a moved arm ref: the rerun starts it
    again from the base commit."""
    ws = init_workspace(tmp_path / "ws")
    write_small(ws.root)
    done = compare(ws.root, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    cells = ws.root / "generations" / "experiments" / "small" / "cells"
    victim = cells / "train--tepa--blair--instance--1.json"
    cell = json.loads(victim.read_text())
    victim.unlink()
    ref = cell["ref"]
    subjects = run_git(ws.root, "log", "--format=%s", ref)
    run_git(ws.root, "update-ref", ref, f"{ref}~1")  # a half-trained arm
    stale = ws.store.common_dir / "evolve-compare" / "small" / "train--tepa--blair--instance--1"
    stale.mkdir(parents=True)
    (stale / "junk").write_text("left by a killed job")
    again = compare(ws.root, "--jobs", "1")
    assert again.returncode == 0, again.stderr
    assert "resuming: 4 of 5 jobs are done and kept" in again.stderr
    redone = json.loads(victim.read_text())
    assert run_git(ws.root, "rev-parse", ref).strip() == redone["sha"]
    for new, old in zip(redone["results"], cell["results"], strict=True):
        assert new["splits"] == old["splits"]  # the same stream, the same scores
        assert new["memory_chars"] == old["memory_chars"]
    assert not stale.exists()
    assert run_git(ws.root, "log", "--format=%s", ref) == subjects


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_die_with_a_parent_killed_alone(tmp_path: Path) -> None:
    """`kill -9` of the compare process alone (not its group): its worker processes do not
    go on running queued jobs beside a resumed run, nor wait forever for work."""
    ws = init_workspace(tmp_path / "ws")
    write_small(ws.root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "evolve", "compare", "experiments/small.yaml", "--jobs", "2"],
        cwd=ws.root, env={**os.environ, "EVOLVE_FAULT": "compare-cell:hang"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    workers: list[int] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "hanging at step compare-cell" in line:
                break
        workers = _children(proc.pid)
        assert workers
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)]
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
