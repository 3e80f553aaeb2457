"""The reading commands (`evolve memory`, `log`, `show`), fast path and full, print what is
committed: a replace ref (`git replace`) of a unit's blob or of a commit, and a graft, change
nothing they print (issue 28: a workspace's `.git/` is someone else's input)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.memory import dump_unit
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
UNIT = "ace-7e1f00aa01"
COMMITTED = "Ask before paying anyone."
FAKE = "PLANTED-BY-A-REPLACE-REF"


def _commit_unit(ws: Workspace, run_git: RunGit) -> str:
    rel = f"memory/alex/{UNIT}.md"
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_unit(memory_unit(id=UNIT, text=COMMITTED)), encoding="utf-8")
    run_git(ws.root, "add", rel)
    run_git(ws.root, "commit", "-qm", "ace · alex · episode 1 (task-1): add 1")
    return rel


def _replace_blob(ws: Workspace, run_git: RunGit, rel: str) -> None:
    blob = run_git(ws.root, "rev-parse", f"HEAD:{rel}").strip()
    fake = (ws.root / rel).read_text(encoding="utf-8").replace(COMMITTED, FAKE)
    fake_path = ws.root.parent / "fake.md"
    fake_path.write_text(fake, encoding="utf-8")
    fake_blob = run_git(ws.root, "hash-object", "-w", str(fake_path)).strip()
    run_git(ws.root, "replace", blob, fake_blob)


def _replace_commit(ws: Workspace, run_git: RunGit, rel: str) -> None:
    """HEAD replaced by a commit with another message and the unit's text changed."""
    head = run_git(ws.root, "rev-parse", "HEAD").strip()
    fake = (ws.root / rel).read_text(encoding="utf-8").replace(COMMITTED, FAKE)
    fake_blob = run_git(ws.root, "hash-object", "-w", "--stdin", input_text=fake).strip()
    # a tree like HEAD's with the unit's blob swapped, through a throwaway index
    env_index = ws.root.parent / "fake-index"
    run_git(ws.root, "read-tree", "HEAD", env={"GIT_INDEX_FILE": str(env_index)})
    run_git(
        ws.root, "update-index", "--cacheinfo", f"100644,{fake_blob},{rel}",
        env={"GIT_INDEX_FILE": str(env_index)},
    )  # fmt: skip
    tree = run_git(ws.root, "write-tree", env={"GIT_INDEX_FILE": str(env_index)}).strip()
    parent = run_git(ws.root, "rev-parse", "HEAD~1").strip()
    fake_commit = run_git(
        ws.root, "commit-tree", tree, "-p", parent, "-m", f"{FAKE}: episode 1", input_text=""
    ).strip()
    run_git(ws.root, "replace", head, fake_commit)


@pytest.fixture
def git(run_git: RunGit) -> RunGit:
    """`run_git` with stdin text and extra environment."""
    import os
    import subprocess

    def run(
        cwd: Path, *args: str, input_text: str | None = None, env: dict[str, str] | None = None
    ) -> str:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, input=input_text,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


COMMANDS = [
    ["memory", "--as-of", "HEAD"],
    ["memory", "--as-of", "HEAD", "--json"],
    ["log"],
    ["log", "--json"],
    ["show", UNIT],
    ["show", UNIT, "--json"],
]


@pytest.mark.parametrize("how", ["blob", "commit"])
@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_reading_commands_print_the_committed_content(
    ws: Workspace, git: RunGit, capsys: pytest.CaptureFixture[str], how: str, argv: list[str]
) -> None:
    rel = _commit_unit(ws, git)
    (_replace_blob if how == "blob" else _replace_commit)(ws, git, rel)
    shown = git(ws.root, "show", f"HEAD:{rel}")
    assert FAKE in shown  # git itself now shows the replacement
    for cache in ("evolve-log.cache", "evolve-config.cache", "evolve-units.cache"):
        (ws.store.git_dir / cache).unlink(missing_ok=True)
    capsys.readouterr()
    assert _fast.run(argv) == 0, f"the fast path did not answer evolve {' '.join(argv)}"
    fast = capsys.readouterr()
    assert run_click(argv) == 0
    full = capsys.readouterr()
    for out in (fast, full):
        assert FAKE not in out.out + out.err
    if argv[0] != "log":
        assert COMMITTED in fast.out and COMMITTED in full.out
    assert fast.out == full.out
