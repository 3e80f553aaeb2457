"""A writer stopped between the applier's file writes and its commit leaves nothing half-written.

Ctrl-C (a KeyboardInterrupt) and SIGTERM undo the write in flight before the process exits (or
find it committed), and say so in one line; a reading command that finds the journal of a
killed writer rolls it back instead of advising to commit the half-written files, and one that
runs while a writer is mid-write says that writer is running. Real git, real processes, real
signals: the child pauses inside `GitStore.commit` (before or after the real commit) and the
test signals it there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evolve.train import train
from evolve.txn._journal import journal_path
from evolve.workspace import Workspace, init_workspace

RunGit = Callable[..., str]

# The child: `evolve ARGS` (default: train), with GitStore.commit paused while the apply journal exists (the
# applier has written its files), before or after the real commit.
CHILD = """
import sys, time
from evolve.txn._journal import journal_path
from evolve.cli._group import run
from evolve.store import GitStore

real = GitStore.commit
where = sys.argv[1]

def paused(self, *args, **kwargs):
    if where == "after":
        sha = real(self, *args, **kwargs)
    if journal_path(self).exists():
        print("paused", flush=True)
        time.sleep(30)
    return sha if where == "after" else real(self, *args, **kwargs)

GitStore.commit = paused
sys.exit(run(sys.argv[2:] or ["train", "--episodes", "12"]))
"""


@pytest.fixture
def trained(tmp_path: Path, run_git: RunGit) -> Workspace:
    """A skills workspace trained for 8 episodes (so that the next batch writes skill files)."""
    ws = init_workspace(tmp_path / "ws", skills=True)
    train(ws, episodes=8)
    assert run_git(ws.root, "status", "--porcelain") == ""
    return Workspace(ws.root)


def _head(root: Path, run_git: RunGit) -> str:
    return run_git(root, "rev-parse", "HEAD").strip()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("EVOLVE_WORKSPACE", None)
    return env


def _stop_in_commit(
    root: Path, where: str, sig: signal.Signals, *args: str
) -> subprocess.Popen[str]:
    """Start the child, wait until it pauses in the commit, send `sig`, wait for it to end."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, where, *args],
        cwd=root,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "paused", proc.communicate(timeout=30)
    assert journal_path_at(root).exists()
    proc.send_signal(sig)
    proc.wait(timeout=30)
    return proc


def journal_path_at(root: Path) -> Path:
    return root / ".git" / "evolve-journal.json"


def _assert_clean(root: Path, run_git: RunGit) -> None:
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not journal_path_at(root).exists()


@pytest.mark.parametrize(
    ("sig", "code", "said"),
    [(signal.SIGINT, 130, "Ctrl-C (SIGINT)"), (signal.SIGTERM, 143, "SIGTERM")],
)
def test_a_signal_between_the_writes_and_the_commit_undoes_the_write(
    trained: Workspace, run_git: RunGit, sig: signal.Signals, code: int, said: str
) -> None:
    before = _head(trained.root, run_git)
    proc = _stop_in_commit(trained.root, "before", sig)
    _, err = proc.communicate()

    assert proc.returncode == code, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: stopped by {said}; the half-done write of ")
    assert last.endswith(f"was rolled back to HEAD {before[:10]}; nothing is half-written.")
    assert _head(trained.root, run_git) == before
    _assert_clean(trained.root, run_git)


def test_a_signal_after_the_commit_keeps_it_and_ends_the_journal(
    trained: Workspace, run_git: RunGit
) -> None:
    before = _head(trained.root, run_git)
    proc = _stop_in_commit(trained.root, "after", signal.SIGTERM)
    _, err = proc.communicate()

    assert proc.returncode == 143, err
    now = _head(trained.root, run_git)
    assert run_git(trained.root, "rev-parse", f"{now}~1").strip() == before
    assert err.strip().splitlines()[-1] == (
        f"interrupted: stopped by SIGTERM; the write in progress had been committed "
        f"({now[:10]}); nothing is half-written."
    )
    _assert_clean(trained.root, run_git)


def test_sigterm_in_a_revert_undoes_its_write(trained: Workspace, run_git: RunGit) -> None:
    """Every writer, not only train: `evolve revert` stopped between its writes and its commit."""
    before = _head(trained.root, run_git)
    target = run_git(trained.root, "log", "-1", "--format=%H", "--", "memory").strip()
    proc = _stop_in_commit(trained.root, "before", signal.SIGTERM, "revert", target)
    _, err = proc.communicate()

    assert proc.returncode == 143, err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("interrupted: stopped by SIGTERM; the half-done write of ")
    )
    assert _head(trained.root, run_git) == before
    _assert_clean(trained.root, run_git)


def _leave_a_killed_write(ws: Workspace, run_git: RunGit) -> str:
    """What SIGKILL between the writes and the commit leaves: the journal and a changed file."""
    rel = "memory/skills/_staging.yaml"
    journal_path(ws.store).write_text(
        json.dumps({"head": _head(ws.root, run_git), "paths": [rel]}), encoding="utf-8"
    )
    with (ws.root / rel).open("a", encoding="utf-8") as f:
        f.write("# half of a batch\n")
    assert run_git(ws.root, "status", "--porcelain").strip() == f"M {rel}"
    return rel


def _evolve(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evolve", *args],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("command", [("run", "--split", "dev"), ("skills",), ("memory",)])
def test_a_reading_command_rolls_back_a_killed_write_instead_of_advising_a_commit(
    trained: Workspace, run_git: RunGit, command: tuple[str, ...]
) -> None:
    before = _head(trained.root, run_git)
    rel = _leave_a_killed_write(trained, run_git)

    done = _evolve(trained.root, *command)

    assert done.returncode == 0, done.stderr
    assert "Commit them" not in done.stderr
    assert done.stderr.splitlines()[0] == (
        f"recovered: an interrupted evolve write was rolled back: 1 file ({rel}) restored to "
        "HEAD (nothing of it had been committed, so nothing is lost)."
    )
    assert _head(trained.root, run_git) == before
    _assert_clean(trained.root, run_git)


# A live writer: another process holds the writer lock (as `evolve train` does) while its
# write is in flight.
HOLDER = """
import sys, time
from pathlib import Path
from typing import Any
from evolve.txn import WriterLock
lock = WriterLock(Path(".git/evolve-writer.lock"), "evolve train").acquire()
print("held", flush=True)
time.sleep(30)
"""


@pytest.mark.slow
def test_a_reading_command_during_a_live_write_names_the_writer(
    trained: Workspace, run_git: RunGit
) -> None:
    rel = _leave_a_killed_write(trained, run_git)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER], cwd=trained.root, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        ran = _evolve(trained.root, "run", "--split", "dev")
        listed = _evolve(trained.root, "skills")
        shown = _evolve(trained.root, "memory")
    finally:
        holder.kill()
        holder.wait()

    assert ran.returncode == 0, ran.stderr
    assert "Commit them" not in ran.stderr
    assert ran.stderr.splitlines()[0] == (
        f"warning: `evolve train` (pid {holder.pid}) is writing this workspace now ({rel} "
        "mid-update); this run scores files that may match no commit: run it again when that "
        "command ends, and do not commit these files."
    )
    note = (
        f"note: `evolve train` (pid {holder.pid}) is writing this workspace now; this command "
        "reads memory/ mid-update, so what it shows may match no commit until that one ends."
    )
    for reader in (listed, shown):
        assert reader.returncode == 0, reader.stderr
        assert reader.stderr.splitlines() == [note]  # and no advice to commit
    # The writer's files are its own: a reader left them alone.
    assert journal_path_at(trained.root).exists()
    assert run_git(trained.root, "status", "--porcelain").strip() == f"M {rel}"


def test_ctrl_c_in_process_undoes_the_write_and_is_a_keyboard_interrupt(
    trained: Workspace, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library's `train` too: the KeyboardInterrupt comes out after the undo."""
    from evolve.store import GitStore

    before = _head(trained.root, run_git)

    real = GitStore.commit

    def interrupted(self: GitStore, *args: Any, **kwargs: Any) -> str | None:
        if journal_path(self).exists():  # the applier has written its files
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GitStore, "commit", interrupted)
    with pytest.raises(KeyboardInterrupt, match="^stopped by Ctrl-C"):
        train(trained, episodes=12)
    assert _head(trained.root, run_git) == before
    _assert_clean(trained.root, run_git)
