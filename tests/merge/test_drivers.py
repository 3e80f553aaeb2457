"""The counter sidecars' merge drivers (issue 25): plain `git merge` and `git pull` add up both
sides' counts, with no evolve command in the merge; a malformed side is a conflict said in one
sentence, never a crash or a silent loss."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.memory import parse_counters
from evolve.merge._drivers import merge_counters, merge_failed, merge_strata
from evolve.skills._failed import parse_failed
from evolve.skills._staging import parse_staging
from evolve.skills._strata import parse_strata
from evolve.workspace import Workspace, init_workspace
from evolve.workspace._drivers import drivers_installed, install_merge_drivers

RunGit = Callable[..., str]
COUNTERS = "memory/alex/_counters.yaml"
STRATA = "memory/skills/_strata.yaml"
FAILED = "memory/skills/_failed_tasks.yaml"
STAGING = "memory/skills/_staging.yaml"


def _counters(helpful: int, harmful: int, alpha: float) -> str:
    return (
        f"ace-0000000001:\n  harmful: {harmful}\n  helpful: {helpful}\n"
        f"topl-000000001:\n  alpha: {alpha}\n  beta: 2.0\n"
    )


def _strata(a: int, b: int) -> str:
    return f"skill-000001:\n  task-1: [{a}, {b}, 1, 0]\n"


def _failed(n: int, m: int) -> str:
    return f"task-1: {n}\ntask-2: {m}\n" if m else f"task-1: {n}\n"


def _staging(n: int, evidence: str) -> str:
    return f"verify-final:\n  evidence: [{evidence}]\n  topics: {{gmail: {n}}}\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _commit(root: Path, run_git: RunGit, files: dict[str, str], message: str) -> None:
    _write(root, files)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", message)


def _branches(ws: Workspace, run_git: RunGit, ours: dict[str, str], theirs: dict[str, str], base: dict[str, str]) -> None:  # fmt: skip
    root = ws.root
    _commit(root, run_git, base, "base sidecars")
    run_git(root, "checkout", "-q", "-b", "other")
    _commit(root, run_git, theirs, "their counts")
    run_git(root, "checkout", "-q", "main")
    _commit(root, run_git, ours, "our counts")


def test_plain_git_merge_adds_up_every_sidecar(workspace: Workspace, run_git: RunGit) -> None:
    base = {
        COUNTERS: _counters(1, 2, 1.5),
        STRATA: _strata(2, 1),
        FAILED: _failed(1, 0),
        STAGING: _staging(1, "episode 1"),
    }
    ours = {
        COUNTERS: _counters(4, 2, 2.5),
        STRATA: _strata(5, 3),
        FAILED: _failed(2, 0),
        STAGING: _staging(2, "episode 1, episode 5"),
    }
    theirs = {
        COUNTERS: _counters(1, 5, 3.5),
        STRATA: _strata(4, 1),
        FAILED: _failed(1, 3),
        STAGING: _staging(3, "episode 1, episode 6"),
    }
    _branches(workspace, run_git, ours, theirs, base)
    root = workspace.root
    # No evolve command: git alone, with what `evolve init` registered.
    done = subprocess.run(
        ["git", "merge", "--no-edit", "other"], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert run_git(root, "status", "--porcelain") == ""
    merged = parse_counters(COUNTERS, (root / COUNTERS).read_text("utf-8"))
    assert merged["ace-0000000001"] == {"helpful": 4, "harmful": 5}  # 1 + 3 + 0, 2 + 0 + 3
    assert merged["topl-000000001"] == {"alpha": 4.5, "beta": 2.0}  # 1.5 + 1.0 + 2.0
    assert parse_strata((root / STRATA).read_text("utf-8")) == {
        "skill-000001": {"task-1": (7, 3, 1, 0)}
    }
    assert parse_failed((root / FAILED).read_text("utf-8")) == {"task-1": 2, "task-2": 3}
    staged = parse_staging((root / STAGING).read_text("utf-8"))["verify-final"]
    assert staged.by_topic == {"gmail": 4}
    assert staged.evidence == ["episode 1", "episode 5", "episode 6"]


def test_a_malformed_side_is_a_conflict_in_one_sentence(
    workspace: Workspace, run_git: RunGit
) -> None:
    ours_text = _counters(4, 2, 2.5)
    _branches(
        workspace,
        run_git,
        {COUNTERS: ours_text},
        {COUNTERS: "ace-0000000001: [helpful\n"},
        {COUNTERS: _counters(1, 2, 1.5)},
    )
    root = workspace.root
    done = subprocess.run(
        ["git", "merge", "--no-edit", "other"], cwd=root, capture_output=True, text=True
    )
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if COUNTERS in line and "not merged" in line]
    assert len(said) == 1, done.stderr
    assert "their side" in said[0] and said[0].endswith(".")
    assert "Traceback" not in done.stderr
    # Nothing lost: our side is left as it was, marked unmerged for the person.
    assert (root / COUNTERS).read_text("utf-8") == ours_text
    assert COUNTERS in run_git(root, "diff", "--name-only", "--diff-filter=U")


@pytest.mark.parametrize(
    ("merge", "base", "ours", "theirs", "want"),
    [
        # a count taken back on one side (a revert) stays taken back; never below zero
        (merge_failed, "a: 3\n", "a: 1\n", "a: 4\n", "a: 2\n"),
        (merge_failed, "a: 3\n", "", "a: 1\n", ""),
        # passes never exceed episodes
        (merge_strata, _strata(4, 4), _strata(2, 2), _strata(5, 5), "skill-000001:\n  task-1: [3, 3, 1, 0]\n"),
        # alpha never below its prior
        (merge_counters, "t-1:\n  alpha: 5.0\n", "", "t-1:\n  alpha: 2.0\n", ""),
    ],
)  # fmt: skip
def test_three_way_rules(
    merge: Callable[[str, str, str, str], str], base: str, ours: str, theirs: str, want: str
) -> None:
    assert merge("memory/x", base, ours, theirs) == want


def test_the_driver_command_says_its_usage_and_refuses_an_unknown_kind(tmp_path: Path) -> None:
    from evolve.cli import main

    assert main(["merge-driver", "nonsense", "a", "b", "c"]) == 2
    assert main(["merge-driver", "counters"]) == 2


def test_install_in_a_repository_without_the_attributes_keeps_the_tree_clean(
    tmp_path: Path, run_git: RunGit
) -> None:
    ws = init_workspace(tmp_path / "ws")
    root = ws.root
    (root / ".gitattributes").unlink()
    run_git(root, "commit", "-q", "-am", "drop the attributes")
    for key in ("counters", "strata", "failed", "staging"):
        run_git(root, "config", "--unset", f"merge.evolve-{key}.driver")
    assert not drivers_installed(root)
    install_merge_drivers(root)
    install_merge_drivers(root)  # idempotent
    assert drivers_installed(root)
    assert run_git(root, "status", "--porcelain") == ""
    info = (root / ".git" / "info" / "attributes").read_text("utf-8")
    assert info.count("merge=evolve-counters") == 1


def test_git_s_call_loads_neither_click_nor_pydantic_nor_the_store(tmp_path: Path) -> None:
    import sys

    files = []
    for name, text in (
        ("b", _counters(1, 2, 1.5)),
        ("o", _counters(2, 2, 1.5)),
        ("t", _counters(1, 3, 1.5)),
    ):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    probe = (
        "import sys; from evolve.cli import main; code = main(['merge-driver', 'counters', "
        f"*{files!r}, {COUNTERS!r}]); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'pydantic', 'git') "
        "or m.startswith(('evolve.store', 'evolve.memory')))); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    merged = parse_counters(COUNTERS, (tmp_path / "o").read_text("utf-8"))
    assert merged["ace-0000000001"] == {"helpful": 2, "harmful": 3}
