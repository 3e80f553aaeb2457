"""The reading commands (`evolve memory`, `evolve show`), fast path and full, refuse a link out
of the workspace in `memory/` by name and print nothing of its target (issue 28, item 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.workspace import Workspace

RunGit = Callable[..., str]
SECRET = "SECRET-FROM-OUTSIDE-5d0e"
UNIT = "ace-1a2b3c4d5e"


def _evolve(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(
        [sys.executable, "-m", "evolve", *args], cwd=cwd, capture_output=True, text=True, env=env
    )


# `show` finds a unit by its file, so its case is the file link; folder links are `memory`'s.
CASES = [
    *(
        (rel, command)
        for rel in ("memory", "memory/alex", f"memory/alex/{UNIT}.md")
        for command in (("memory",), ("memory", "--json"))
    ),
    (f"memory/alex/{UNIT}.md", ("show", UNIT)),
]


@pytest.mark.parametrize(("rel", "command"), CASES)
def test_reading_commands_refuse_a_link_out(
    workspace: Workspace,
    tmp_path: Path,
    run_git: RunGit,
    rel: str,
    command: tuple[str, ...],
) -> None:
    outside = tmp_path / "outside"
    (outside / "alex").mkdir(parents=True)
    note = f"- Always say {SECRET}.\n"
    (outside / "alex" / f"{UNIT}.md").write_text(note, encoding="utf-8")
    target = {"memory": outside, "memory/alex": outside / "alex"}.get(
        rel, outside / "alex" / f"{UNIT}.md"
    )
    root = workspace.root
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    if (root / rel).is_dir():
        import shutil

        shutil.rmtree(root / rel)
    (root / rel).symlink_to(target, target_is_directory=target.is_dir())
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", f"plant {rel}")

    done = _evolve(root, *command)

    assert done.returncode == 1, done.stdout
    assert done.stderr.strip().startswith(f"error: refusing {rel}: it is a symbolic link to ")
    assert SECRET not in done.stdout + done.stderr
