"""What a rolled-back generation removes and keeps; temp copies; recovery edge cases.

"The generation's untracked files" (see `evolve.txn._generation`): every untracked,
not-ignored file (the tree was clean at the base), and ignored files that appeared under
`memory/`, `prompts/` or a protected path. Kept: ignored files that existed at the base, and
`generations/` (run logs and records).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _gen_helpers import assert_rolled_back, evolve_cli, head, leftovers, make_workspace

import evolve.generations._loop as loop
from evolve._faults import ENV
from evolve.errors import EvolveError
from evolve.gate import sweep, temp_copy
from evolve.gate._tempdirs import MARKER
from evolve.generations import evolve, load_records
from evolve.txn._generation import journal_path
from evolve.workspace import Workspace

# Slow end to end: `-m "not slow"` leaves it out of a quick local run (CI runs it).
pytestmark = pytest.mark.slow

RunGit = Callable[..., str]


@pytest.fixture
def tmpdir_(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.fixture
def ws(tmp_path: Path, run_git: RunGit, tmpdir_: Path) -> Workspace:
    return make_workspace(tmp_path, run_git)


def test_the_generations_untracked_files_go_and_the_users_ignored_files_stay(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = ws.root
    with (root / ".gitignore").open("a", encoding="utf-8") as handle:
        handle.write("*.local\n*.bak\n")
    run_git(root, "commit", "-q", "-am", "ignore *.local and *.bak")
    base = head(root, run_git)
    existing = {
        "generations/runs/old.jsonl": "an old run log\n",
        "notes.local": "the user's own notes\n",
        "memory/keep.bak": "the user's backup\n",
        "evalset/scratch.local": "the user's evalset scratch file\n",
    }
    for rel, text in existing.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    made = {
        "prompts/stray.md": "untracked, not ignored",
        "memory/alex/stray.md": "untracked, not ignored",
        "tests/health/test_sneak.py": "untracked, protected",
        "memory/new.bak": "ignored, new, under memory/",
        "evalset/new.local": "ignored, new, under a protected path",
        "other.local": "ignored, new, elsewhere: not the judge's or the agent's input",
        "generations/runs/new.jsonl": "a run log of the generation",
    }

    def propose(self: object, *args: object, **kwargs: object) -> object:
        for rel, text in made.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        raise RuntimeError("the reflector broke")

    monkeypatch.setattr(loop.Reflector, "propose", propose)
    with pytest.raises(EvolveError, match="RuntimeError during the reflector: the reflector broke"):
        evolve(ws, generations=1)

    assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase="the reflector")
    for rel, text in existing.items():
        assert (root / rel).read_text(encoding="utf-8") == text, rel
    gone = [r for r in made if not (root / r).exists()]
    assert sorted(gone) == sorted(
        [
            "prompts/stray.md",
            "memory/alex/stray.md",
            "tests/health/test_sneak.py",
            "memory/new.bak",
            "evalset/new.local",
        ]
    )


def test_temp_copies_carry_their_owner_and_are_removed_on_an_exception(tmpdir_: Path) -> None:
    with pytest.raises(RuntimeError), temp_copy("gate") as path:
        assert path.parent == tmpdir_
        assert path.name.startswith(f"evolve-gate-{os.getpid()}-")
        owner = json.loads((path / MARKER).read_text(encoding="utf-8"))
        assert owner["pid"] == os.getpid() and owner["host"] == socket.gethostname()
        (path / "ws").mkdir()
        raise RuntimeError("boom")
    assert leftovers(tmpdir_) == []


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_sweep_removes_only_copies_whose_owner_is_gone(tmpdir_: Path) -> None:
    def copy(name: str, owner: dict[str, object] | None, age: float = 0) -> Path:
        path = tmpdir_ / name
        (path / "ws").mkdir(parents=True)
        if owner is not None:
            (path / MARKER).write_text(json.dumps(owner), encoding="utf-8")
        if age:
            old = time.time() - age
            os.utime(path, (old, old))
        return path

    host = socket.gethostname()
    dead = _dead_pid()
    gone = [
        copy(f"evolve-gate-{dead}-a", {"pid": dead, "host": host, "start": None}),
        copy(f"evolve-score-{dead}-b", {"pid": dead, "host": host}),
        copy(f"evolve-dry-run-{dead}-c", {"pid": dead, "host": host}),
        copy("evolve-gate-oldstyle", None, age=2 * 86400),  # made by an older version
        # a live pid whose process started at another time: the pid was reused
        copy(f"evolve-gate-{os.getppid()}-d", {"pid": os.getppid(), "host": host, "start": "1"}),
    ]
    kept = [
        copy(f"evolve-gate-{os.getpid()}-e", {"pid": os.getpid(), "host": host}),  # ours
        copy(f"evolve-gate-{dead}-f", {"pid": dead, "host": "another-host"}),
        copy("evolve-gate-recent", None),  # unmarked and young: maybe a running old version
        copy("evolve-other-thing", {"pid": dead, "host": host}),  # not one of ours
    ]

    removed = sweep()

    assert sorted(removed) == sorted(gone)
    assert [p for p in gone if p.exists()] == []
    assert [p for p in kept if not p.exists()] == []


def test_a_stale_copy_is_swept_when_evolve_starts(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = _dead_pid()
    stale = tmpdir_ / f"evolve-gate-{dead}-xyz"
    (stale / "ws").mkdir(parents=True)
    (stale / MARKER).write_text(
        json.dumps({"pid": dead, "host": socket.gethostname()}), encoding="utf-8"
    )
    monkeypatch.setenv(ENV, "start:raise")  # the run itself stops at once

    with pytest.raises(EvolveError):
        evolve(ws, generations=1)

    assert not stale.exists()


@pytest.mark.parametrize(
    ("kind", "code", "said"),
    [
        (
            "raise",
            1,
            "error: generation 1 InjectedFault during scoring: injected fault at step scoring;",
        ),
        ("sigterm", 143, "interrupted: generation 1 stopped by SIGTERM during scoring;"),
    ],
)
def test_a_dry_run_that_fails_leaves_the_workspace_and_tmp_as_they_were(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, kind: str, code: int, said: str
) -> None:
    root = ws.root
    base = head(root, run_git)
    refs = run_git(root, "for-each-ref")
    done = evolve_cli(
        root, "evolve", "--dry-run", "--generations", "1",
        env={ENV: f"scoring:{kind}", "TMPDIR": str(tmpdir_)},
    )  # fmt: skip

    assert done.returncode == code
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(said), last
    assert head(root, run_git) == base and run_git(root, "for-each-ref") == refs
    assert run_git(root, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""
    assert not journal_path(ws.store).exists() and load_records(ws) == []
    assert leftovers(tmpdir_) == []


def test_a_generation_killed_after_its_record_is_not_recorded_twice(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    """A journal left after the record was written (killed in between): the recovery keeps
    the recorded outcome, an accepted generation stays, and no second record is written."""
    [record] = evolve(ws, generations=1).records
    assert record.verdict == "accepted", record.reason
    journal = {
        "number": 1, "base": record.base, "branch": "refs/heads/main",
        "protected_hash": record.protected_hash, "pid": _dead_pid(), "phase": "the record",
    }  # fmt: skip
    journal_path(ws.store).write_text(json.dumps(journal), encoding="utf-8")

    done = evolve_cli(ws.root, "log", env={"TMPDIR": str(tmpdir_)})

    assert done.returncode == 0, done.stderr
    assert head(ws.root, run_git) == record.final
    assert load_records(ws) == [record]
    assert not journal_path(ws.store).exists()


def test_a_generation_interrupted_on_another_branch_is_not_reset_here(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    base = head(ws.root, run_git)
    journal = {
        "number": 1, "base": base, "branch": "refs/heads/main",
        "protected_hash": "", "pid": _dead_pid(), "phase": "scoring",
    }  # fmt: skip
    journal_path(ws.store).write_text(json.dumps(journal), encoding="utf-8")
    run_git(ws.root, "checkout", "-q", "-b", "elsewhere")

    done = evolve_cli(ws.root, "revert", "HEAD", env={"TMPDIR": str(tmpdir_)})

    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: generation 1 was interrupted on branch main, but HEAD is now elsewhere; check "
        "out main and run the command again to finish its rollback."
    )
    assert journal_path(ws.store).exists() and load_records(ws) == []
    run_git(ws.root, "checkout", "-q", "main")
    done = evolve_cli(ws.root, "log", env={"TMPDIR": str(tmpdir_)})
    assert done.returncode == 0 and "recovered: generation 1" in done.stderr
    [record] = load_records(ws)
    assert record.phase == "scoring" and record.final == base


def test_a_running_generation_is_left_alone_by_a_reading_command(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    """`evolve log` while a generation runs: the journal belongs to a live writer."""
    env = {**os.environ, ENV: "scoring:hang", "TMPDIR": str(tmpdir_)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evolve", "evolve", "--generations", "1"],
        cwd=ws.root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "hanging at step scoring" in line:
                break
        candidate = head(ws.root, run_git)
        done = evolve_cli(ws.root, "log", env={"TMPDIR": str(tmpdir_)})
        assert done.returncode == 0 and "recovered" not in done.stderr
        assert head(ws.root, run_git) == candidate
        assert journal_path(ws.store).exists()
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_numbers_are_not_reused_when_the_records_ref_is_missing(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clone does not fetch refs/evolve/records: the commits' trailers and the kept tips of
    aborted generations still hold the numbers used."""
    [first] = evolve(ws, generations=1).records
    assert first.verdict == "accepted", first.reason
    monkeypatch.setenv(ENV, "verdict:raise")
    with pytest.raises(EvolveError, match="^generation 2 "):
        evolve(ws, generations=1)
    monkeypatch.delenv(ENV)
    assert run_git(ws.root, "rev-parse", "refs/evolve/aborted/gen-0002").strip()
    run_git(ws.root, "update-ref", "-d", "refs/evolve/records")
    assert load_records(ws) == []

    [third] = evolve(ws, generations=1).records

    assert third.number == 3


def test_an_unreadable_generation_journal_stops_writers_with_one_sentence(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    journal_path(ws.store).write_text("[1, 2", encoding="utf-8")
    base = head(ws.root, run_git)

    with pytest.raises(EvolveError) as info:
        evolve(ws, generations=1)

    message = str(info.value)
    assert message.startswith(f"the generation journal {journal_path(ws.store)} is unreadable")
    assert "\n" not in message and message.endswith("delete it.")
    assert head(ws.root, run_git) == base and load_records(ws) == []


def test_signals_ignored_by_the_caller_stay_ignored() -> None:
    import signal

    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with loop._signals_raise():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN  # nohup keeps working
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
