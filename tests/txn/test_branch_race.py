"""A writer on a detached HEAD, or racing a person's `git commit`, writes nothing that stays.

Before its first file a write checks that HEAD is a branch; before committing it checks that
nobody else committed on it since the write began. A person's commit is reported as what it
was, the write is rolled back at once (no journal is left for the next command, which would
then wrongly say it "had been committed"). A commit made between two episodes is no race: the
next episode reads memory after it (tests/train/test_memory_between_episodes.py).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from conftest import GitRunner, cli_json, one_sentence, run_cli, workspace_state
from evolve.txn import Transaction
from evolve.workspace import Workspace

_REAL_COMMIT = Transaction.commit


def _journals(ws: Workspace) -> list[str]:
    return sorted(p.name for p in ws.store.git_dir.glob("evolve-*.json"))


def test_train_on_a_detached_head_writes_nothing(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    cli_json(capsys, "train", "--episodes", "2")
    run_git(ws.root, "checkout", "-q", "--detach")
    before = workspace_state(ws.root, run_git)
    code, _out, err = run_cli(capsys, "train", "--episodes", "8")
    assert code == 1
    assert "HEAD is detached" in one_sentence(err) and "nothing was written" in err
    assert _journals(ws) == []
    assert workspace_state(ws.root, run_git)[:3] == before[:3]
    run_git(ws.root, "checkout", "-q", "main")
    code, _out, err = run_cli(capsys, "train", "--episodes", "8")
    assert code == 0 and "rolled back" not in err and "had been committed" not in err, err


def _person_commits(
    monkeypatch: pytest.MonkeyPatch, root: Any, run_git: GitRunner, at: int
) -> list[str]:
    """Make a person's `git commit` (of a hand note) land just before evolve's commit number
    `at` of this process (counted from 1); returns the person's commit once it is made."""
    real: Callable[..., Any] = Transaction.commit
    made: list[str] = []
    calls = [0]

    def commit(self: Transaction, paths: Any, subject: str, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == at and not made:
            note = root / "memory" / "person.md"
            note.write_text("a note a person committed by hand\n", encoding="utf-8")
            subprocess.run(["git", "add", "memory/person.md"], cwd=root, check=True)
            subprocess.run(["git", "commit", "-q", "-m", "my own note"], cwd=root, check=True)
            made.append(run_git(root, "rev-parse", "HEAD").strip())
        return real(self, paths, subject, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit)
    return made


@pytest.mark.parametrize("at", [1, 2])
def test_a_person_committing_during_train_is_reported_and_the_write_rolled_back(
    ws: Workspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_git: GitRunner,
    at: int,
) -> None:
    cli_json(capsys, "train", "--episodes", "2")
    made = _person_commits(monkeypatch, ws.root, run_git, at)
    code, _out, err = run_cli(capsys, "train", "--episodes", "12")
    assert made, "the person's commit was never made (no evolve commit to race)"
    assert code == 1, err
    line = one_sentence(err)
    assert "someone committed on the branch" in line and made[0][:7] in line
    assert "my own note" in line
    assert _journals(ws) == []  # rolled back now, not left for the next command
    assert run_git(ws.root, "rev-parse", "HEAD").strip() == made[0]
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""
    monkeypatch.setattr(Transaction, "commit", _REAL_COMMIT)  # (not undo(): it drops the chdir)
    code, _out, err = run_cli(capsys, "train", "--episodes", "12")
    assert code == 0, err
    assert "had been committed" not in err and "rolled back" not in err


def test_recovery_does_not_call_a_write_committed_because_a_person_committed(
    workspace: Workspace, run_git: GitRunner
) -> None:
    """A journal left by a killed writer, and a person's commit since: the write was not
    committed, and recovery says it was rolled back (it used to say "had been committed")."""
    from evolve import txn

    ws = workspace
    with txn.lock(ws, "evolve train"):
        tx = txn.Transaction(ws)
        tx.write({"memory/alex/half.md": b"half-written\n"})
    (ws.root / "README.person").write_text("mine\n", encoding="utf-8")
    run_git(ws.root, "add", "README.person")
    run_git(ws.root, "commit", "-q", "-m", "a person's commit")
    with txn.writer(ws, "evolve train") as tx:
        said = tx.recovery.message()
    assert said is not None and said.startswith("an interrupted evolve write was rolled back")
    assert not (ws.root / "memory" / "alex" / "half.md").exists()
