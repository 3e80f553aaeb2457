"""Judge what was judged (issue 9, item 2).

Protected files are checked (their tree, their bytes on disk and the index flags that can hide
an edit from `git status`) at the base, before the candidate is tested and scored, after it
was scored and right before the verdict is applied; the accepted tree is the scored one. Each
tamper below is tried while a generation that the gate would otherwise accept is running; each
must end rejected with a reason, with the workspace back at its base.
"""

from __future__ import annotations

import errno
import pathlib
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from _gen_helpers import head, leftovers, make_workspace

import evolve.generations._loop as loop
from evolve.evaluate import SplitReport
from evolve.gate import Gate, GateEvidence, Verdict
from evolve.generations import evolve, load_records
from evolve.workspace import Workspace

# Slow end to end: `-m "not slow"` leaves it out of a quick local run (CI runs it).
pytestmark = pytest.mark.slow

RunGit = Callable[..., str]
PERSONA = "evalset/personas/alex.yaml"
SPLITS = "evalset/splits.yaml"


@pytest.fixture
def tmpdir_(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def ws(tmp_path: Path, run_git: RunGit, tmpdir_: Path) -> Workspace:
    return make_workspace(tmp_path, run_git)


def _during_candidate_scoring(
    monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]
) -> list[str]:
    """Run `action` when the candidate's dev split is about to be scored; returns the commits
    scored, in order."""
    original = loop._Scorer.__call__
    seen: list[str] = []

    def wrapped(self: loop._Scorer, split: str, commit: str) -> SplitReport:
        seen.append(commit)
        if len(set(seen)) == 2 and split == "dev":
            action()
        return original(self, split, commit)  # type: ignore[arg-type]

    monkeypatch.setattr(loop._Scorer, "__call__", wrapped)
    return seen


def _assert_back_at_base(
    ws: Workspace, run_git: RunGit, base: str, tmpdir_: Path, originals: dict[str, bytes]
) -> None:
    assert head(ws.root, run_git) == base
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert [
        e for e in run_git(ws.root, "ls-files", "-v").splitlines() if not e.startswith("H ")
    ] == []
    for rel, data in originals.items():
        assert (ws.root / rel).read_bytes() == data, rel
    assert not (ws.store.git_dir / "evolve-generation.json").exists()
    assert leftovers(tmpdir_) == []


def _originals(ws: Workspace, *paths: str) -> dict[str, bytes]:
    return {p: (ws.root / p).read_bytes() for p in paths}


def test_untampered_the_generation_is_accepted_and_the_scored_tree_is_the_final_one(
    ws: Workspace, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control for every test below: the same generation, left alone, is accepted."""
    seen = _during_candidate_scoring(monkeypatch, lambda: None)

    [record] = evolve(ws, generations=1).records

    assert record.verdict == "accepted", record.reason
    assert seen[-1] == record.candidate == record.final
    tree = run_git(ws.root, "rev-parse", "HEAD^{tree}").strip()
    assert record.scored_tree == tree


def test_a_persona_file_edited_during_scoring_is_rejected(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = head(ws.root, run_git)
    originals = _originals(ws, PERSONA)

    def tamper() -> None:
        (ws.root / PERSONA).write_bytes(b"# every preference removed\n")

    _during_candidate_scoring(monkeypatch, tamper)
    [record] = evolve(ws, generations=1).records

    assert record.verdict == "rejected"
    assert record.reason == f"protected files changed during scoring ({PERSONA})"
    _assert_back_at_base(ws, run_git, base, tmpdir_, originals)


def test_a_protected_file_committed_during_scoring_is_rejected(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = head(ws.root, run_git)
    originals = _originals(ws, PERSONA)

    def tamper() -> None:
        with (ws.root / PERSONA).open("a", encoding="utf-8") as handle:
            handle.write("# an innocent commit\n")
        run_git(ws.root, "commit", "-q", "-am", "an innocent commit")

    _during_candidate_scoring(monkeypatch, tamper)
    [record] = evolve(ws, generations=1).records

    assert record.verdict == "rejected"
    assert record.reason.startswith(f"protected file {PERSONA} differs from commit ")
    assert "found during scoring" in record.reason
    _assert_back_at_base(ws, run_git, base, tmpdir_, originals)


@pytest.mark.parametrize(
    ("flag", "shown"),
    [("--skip-worktree", "skip-worktree"), ("--assume-unchanged", "assume-unchanged")],
)
def test_an_index_flag_hiding_an_evalset_edit_is_rejected(
    ws: Workspace,
    run_git: RunGit,
    tmpdir_: Path,
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    shown: str,
) -> None:
    base = head(ws.root, run_git)
    originals = _originals(ws, SPLITS)

    def tamper() -> None:
        run_git(ws.root, "update-index", flag, SPLITS)
        (ws.root / SPLITS).write_bytes(originals[SPLITS].replace(b"holdout", b"dev", 1))
        assert run_git(ws.root, "status", "--porcelain") == ""  # hidden from git status

    _during_candidate_scoring(monkeypatch, tamper)
    [record] = evolve(ws, generations=1).records

    assert record.verdict == "rejected"
    assert record.reason.startswith(
        f"protected file {SPLITS} is marked {shown} in the index, found during scoring"
    )
    _assert_back_at_base(ws, run_git, base, tmpdir_, originals)  # flag cleared, bytes back


def test_a_protected_file_deleted_in_the_reflector_is_a_rejection_not_an_exception(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = head(ws.root, run_git)
    originals = _originals(ws, PERSONA)
    original = loop.Reflector.propose

    def propose(self: loop.Reflector, *args: object, **kwargs: object) -> object:
        (ws.root / PERSONA).unlink()
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loop.Reflector, "propose", propose)
    [record] = evolve(ws, generations=1).records

    assert record.verdict == "rejected"
    assert record.reason == f"protected files changed during the generation ({PERSONA})"
    assert record.dev is None  # never scored
    _assert_back_at_base(ws, run_git, base, tmpdir_, originals)


def test_a_protected_file_deleted_during_scoring_is_rejected(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = head(ws.root, run_git)
    originals = _originals(ws, PERSONA)
    _during_candidate_scoring(monkeypatch, lambda: (ws.root / PERSONA).unlink())

    [record] = evolve(ws, generations=1).records

    assert record.verdict == "rejected"
    assert record.reason == f"protected files changed during scoring ({PERSONA})"
    _assert_back_at_base(ws, run_git, base, tmpdir_, originals)


class _TamperingGate(Gate):
    """The real gate, which also does something to the workspace while it decides."""

    def __init__(self, action: Callable[[], object]) -> None:
        self.action = action
        self.verdicts: list[Verdict] = []

    def decide(self, e: GateEvidence) -> Verdict:
        verdict = super().decide(e)
        self.verdicts.append(verdict)
        self.action()
        return verdict


def test_a_protected_edit_after_scoring_is_caught_before_the_verdict_is_applied(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    base = head(ws.root, run_git)
    originals = _originals(ws, PERSONA)
    gate = _TamperingGate(lambda: (ws.root / PERSONA).write_bytes(b"# late edit\n"))

    [record] = evolve(ws, generations=1, gate=gate).records

    assert [v.accepted for v in gate.verdicts] == [True]  # the gate itself said yes
    assert record.verdict == "rejected"
    assert record.reason == f"protected files changed before the verdict was applied ({PERSONA})"
    _assert_back_at_base(ws, run_git, base, tmpdir_, originals)


def test_a_tree_other_than_the_scored_one_is_never_accepted(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    base = head(ws.root, run_git)
    system = ws.root / "prompts" / "system.md"
    originals = _originals(ws, "prompts/system.md")

    def amend() -> None:
        system.write_text(system.read_text(encoding="utf-8") + "\nUnscored advice.\n", "utf-8")
        run_git(ws.root, "commit", "-q", "-am", "a change nobody scored")

    [record] = evolve(ws, generations=1, gate=_TamperingGate(amend)).records

    assert record.verdict == "rejected"
    assert record.reason.startswith("HEAD moved before the verdict was applied (from ")
    _assert_back_at_base(ws, run_git, base, tmpdir_, originals)


def test_an_unreadable_protected_file_is_a_rejection_with_a_reason(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(Simulated: the tests run as root, whom file modes do not stop.)"""
    base = head(ws.root, run_git)
    target = ws.root / "evalset" / "tasks.yaml"
    read_bytes = pathlib.Path.read_bytes

    def unreadable(self: pathlib.Path) -> bytes:
        if self == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", unreadable)
    reflector_calls: list[object] = []
    monkeypatch.setattr(loop.Reflector, "propose", lambda *a, **k: reflector_calls.append(a))

    [record] = evolve(ws, generations=1).records

    assert record.verdict == "rejected"
    assert record.reason == (
        "the generation cannot be judged: protected file evalset/tasks.yaml is unreadable "
        "(Permission denied)"
    )
    assert reflector_calls == [] and record.changes == [] and record.dev_base is None
    assert head(ws.root, run_git) == base
    assert load_records(ws) == [record]


def test_a_protected_file_hidden_and_missing_at_the_base_is_a_rejection(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    base = head(ws.root, run_git)
    run_git(ws.root, "update-index", "--skip-worktree", PERSONA)
    (ws.root / PERSONA).unlink()
    assert run_git(ws.root, "status", "--porcelain") == ""

    [record] = evolve(ws, generations=1).records

    assert record.verdict == "rejected"
    assert record.reason.startswith(
        f"the generation cannot be judged: protected file {PERSONA} is marked skip-worktree"
    )
    assert record.reason.endswith("(and 1 more problem)")  # ... and it is missing
    assert head(ws.root, run_git) == base
    # The flag was the user's, set before evolve ran: it is left as it was.
    assert run_git(ws.root, "ls-files", "-v", PERSONA).startswith("S ")
