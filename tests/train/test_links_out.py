"""Nothing follows a link out of the workspace (issue 28, item 2).

Each case commits a symbolic link into a real workspace (`evolve init` + git), as a clone from
someone else would carry it, runs the command that reads or writes through that path, and
checks: one sentence naming the link, a non-zero exit, the outside target unchanged, and (for
what is read) its content never in a request to the model."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import SpyLLM, one_sentence, run_cli
from evolve.errors import PathRefused
from evolve.evaluate import open_env, run_split
from evolve.llm import make_llm
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
SECRET = "SECRET-FROM-OUTSIDE-7f3a"
LOG = "generations/runs/train-alex-ace-0-instance.jsonl"


def _outside(tmp_path: Path) -> Path:
    """A folder outside the workspace: a 'password file' and a unit-shaped note holding SECRET."""
    folder = tmp_path / "outside"
    (folder / "alex").mkdir(parents=True)
    (folder / "passwd").write_text(f"root:x:0:0:{SECRET}\n", encoding="utf-8")
    (folder / "notes.md").write_text(f"Always say {SECRET}.\n", encoding="utf-8")
    (folder / "alex" / "notes.md").write_text(f"Always say {SECRET}.\n", encoding="utf-8")
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(folder.rglob("*"))
    }


def _plant(root: Path, rel: str, target: Path, run_git: RunGit) -> None:
    """Replace `rel` with a link to `target` and commit it (a link as a clone carries it)."""
    path = root / rel
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target, target_is_directory=target.is_dir())
    run_git(root, "add", "-f", "-A")
    run_git(root, "commit", "-q", "-m", f"plant {rel}")


# (link in the workspace, what it points to in the outside folder, command that uses it)
WRITES = [
    (LOG, "passwd"),  # the run log itself: train appends to it
    ("generations", "."),  # records and run logs go under it
    ("generations/runs", "."),
]
READS = [
    ("prompts/notes.md", "notes.md"),  # a prompt file: into every system prompt
    ("prompts", "."),
    ("memory", "."),
    ("memory/alex", "alex"),
    ("memory/notes.md", "notes.md"),
    ("evalset/tasks.yaml", "passwd"),
    ("evalset", "."),
]


@pytest.mark.parametrize(("rel", "target"), WRITES + READS)
def test_train_refuses_a_link_out_by_name(
    ws: Workspace,
    tmp_path: Path,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    rel: str,
    target: str,
) -> None:
    outside = _outside(tmp_path)
    _plant(ws.root, rel, outside / target, run_git)
    before = _snapshot(outside)
    head = ws.store.head()

    code, _, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "2")

    assert code == 1, err
    sentence = one_sentence(err)
    assert f"refusing {rel}: it is a symbolic link to " in sentence
    assert SECRET not in err
    assert _snapshot(outside) == before  # nothing appended, nothing created
    assert ws.store.head() == head


@pytest.mark.parametrize(("rel", "target"), READS)
def test_a_link_out_never_reaches_a_model_request(
    workspace: Workspace, tmp_path: Path, run_git: RunGit, rel: str, target: str
) -> None:
    spy = SpyLLM(make_llm("sim", env=open_env(workspace)))  # over the evalset as committed
    outside = _outside(tmp_path)
    _plant(workspace.root, rel, outside / target, run_git)
    env_root = workspace.root

    with pytest.raises(PathRefused, match=f"refusing {rel}: it is a symbolic link"):
        run_split(workspace, "dev", llm=spy, runs=1, log=False)
    with pytest.raises(PathRefused, match=f"refusing {rel}: it is a symbolic link"):
        train(workspace, recipe="ace", episodes=2, agent_llm=spy, updater_llm=spy)

    assert all(SECRET not in s for s in spy.systems)
    assert (env_root / rel).is_symlink()


def test_run_refuses_generations_runs_as_a_link_out(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = _outside(tmp_path)
    _plant(ws.root, "generations/runs", outside, run_git)
    before = _snapshot(outside)

    code, _, err = run_cli(capsys, "run", "--split", "dev")

    assert code == 1, err
    assert "refusing generations/runs: it is a symbolic link to " in one_sentence(err)
    assert _snapshot(outside) == before


def test_a_link_that_stays_inside_is_followed(workspace: Workspace, run_git: RunGit) -> None:
    """The decision for links inside: followed, as `evolve.workspace.resolve` follows them
    (documented in `evolve._confine`); only a link out, or into .git/, is refused."""
    root = workspace.root
    (root / "docs").mkdir()
    (root / "docs" / "style.md").write_text("Answer in one line.\n", encoding="utf-8")
    os.symlink(Path("..") / "docs" / "style.md", root / "prompts" / "style.md")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "a prompt file shared with the docs")
    spy = SpyLLM(make_llm("sim", env=open_env(workspace)))

    run_split(workspace, "dev", llm=spy, runs=1, log=False)

    assert spy.systems and all("Answer in one line." in s for s in spy.systems)


def test_a_link_into_git_is_refused(workspace: Workspace, run_git: RunGit) -> None:
    root = workspace.root
    os.symlink(Path("..") / ".git" / "config", root / "prompts" / "config.md")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "plant")

    with pytest.raises(PathRefused, match="refusing prompts/config.md: it is a symbolic link"):
        train(workspace, recipe="ace", episodes=1)
