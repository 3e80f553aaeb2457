"""Repositories with commit hooks or signing get git's own commit path; others the fast one.

A hook that changes the message changes the commit; a hook that refuses leaves HEAD, the
index and the working tree as they were, with one clear error; `commit.gpgsign` gives
commits that `git verify-commit` accepts (with a key made for the test).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from evolve.errors import EvolveError
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.store import GitStore
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]


@pytest.fixture
def store(tmp_path: Path, run_git: RunGit) -> GitStore:
    root = tmp_path / "repo"
    root.mkdir()
    s = GitStore.init(root)
    _write(root, "README.md", "hello\n")
    _write(root, "memory/a.md", "alpha\n")
    assert s.commit(["README.md", "memory/a.md"], "initial") is not None
    return s


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def _hook(folder: Path, name: str, body: str, *, executable: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _state(root: Path, run_git: RunGit) -> tuple[str, ...]:
    """HEAD, the index (staged diff), the status and the bytes of the working tree."""
    files = sorted(
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    )
    return (
        run_git(root, "rev-parse", "HEAD"),
        run_git(root, "diff", "--cached", "HEAD"),
        run_git(root, "ls-files", "-s"),
        run_git(root, "status", "--porcelain", "--untracked-files=all"),
        repr(files),
    )


def test_no_hooks_no_signing_keeps_the_fast_path(store: GitStore) -> None:
    assert store.commit_hooks() == []
    assert not store.uses_git_commit()
    _hook(store.git_dir / "hooks", "commit-msg", "exit 1", executable=False)  # git ignores it
    assert not GitStore(store.root).uses_git_commit()


def test_commit_msg_hook_appends_its_line(store: GitStore, run_git: RunGit) -> None:
    _hook(store.git_dir / "hooks", "commit-msg", 'echo "Hooked-By: commit-msg" >> "$1"')
    store = GitStore(store.root)
    assert store.commit_hooks() == ["commit-msg"] and store.uses_git_commit()
    # something else staged stays staged and out of the commit, as on the fast path
    _write(store.root, "staged.txt", "staged\n")
    run_git(store.root, "add", "staged.txt")
    _write(store.root, "memory/a.md", "changed\n")
    _write(store.root, "memory/new/b.md", "new\n")
    (store.root / "README.md").unlink()
    sha = store.commit(
        ["memory/a.md", "memory/new/b.md", "README.md", "never/existed.md"],
        "learn: through git",
        body="Complaint:\n  # not a comment",
        trailers={"Evolve-Kind": "train", "Evolve-Episode": "4"},
    )
    assert sha is not None and run_git(store.root, "rev-parse", "HEAD").strip() == sha
    message = run_git(store.root, "log", "-1", "--format=%B")
    assert "Hooked-By: commit-msg" in message
    assert "  # not a comment" in message  # verbatim: no comment stripping
    info = next(store.log())
    assert info.sha == sha and info.subject == "learn: through git"
    assert info.trailers == {
        "Evolve-Kind": "train",
        "Evolve-Episode": "4",
        "Hooked-By": "commit-msg",
    }
    tree = run_git(store.root, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert tree == ["memory/a.md", "memory/new/b.md"]
    assert run_git(store.root, "diff", "--cached", "--name-status", "HEAD").split() == [
        "A",
        "staged.txt",
    ]
    assert run_git(store.root, "status", "--porcelain") == "A  staged.txt\n"
    # nothing changed: no commit, as on the fast path; an empty marker still commits
    assert store.commit(["memory/a.md"], "no change") is None
    marker = store.commit([], "marker", allow_empty=True, trailers={"Evolve-Kind": "marker"})
    assert marker is not None and next(store.log()).trailers["Hooked-By"] == "commit-msg"
    assert run_git(store.root, "rev-parse", "HEAD^{tree}") == run_git(
        store.root, "rev-parse", "HEAD^^{tree}"
    )


def test_a_plain_line_appended_by_a_hook_does_not_hide_the_trailers(
    store: GitStore, run_git: RunGit
) -> None:
    _hook(store.git_dir / "hooks", "commit-msg", 'echo "checked by the CI hook" >> "$1"')
    store = GitStore(store.root)
    _write(store.root, "memory/a.md", "changed\n")
    store.commit(["memory/a.md"], "s", trailers={"Evolve-Kind": "train", "Evolve-Task": "t-1"})
    assert next(store.log()).trailers == {"Evolve-Kind": "train", "Evolve-Task": "t-1"}


def test_hooks_path_is_honoured(store: GitStore, run_git: RunGit) -> None:
    run_git(store.root, "config", "core.hooksPath", "githooks")
    marker = store.root.parent / "pre-commit-ran"
    _hook(store.root / "githooks", "pre-commit", f'touch "{marker}"')
    run_git(store.root, "add", "githooks")
    run_git(store.root, "commit", "-q", "--no-verify", "-m", "hooks")
    marker.unlink(missing_ok=True)
    store = GitStore(store.root)
    assert store.hooks_dir() == store.root / "githooks"
    assert store.commit_hooks() == ["pre-commit"]
    _write(store.root, "memory/a.md", "changed\n")
    assert store.commit(["memory/a.md"], "through the hooks path") is not None
    assert marker.exists()


@pytest.mark.parametrize("hook", ["pre-commit", "commit-msg"])
def test_a_refusing_hook_leaves_everything_as_it_was(
    store: GitStore, run_git: RunGit, hook: str
) -> None:
    _hook(store.git_dir / "hooks", hook, 'echo "policy: no commits today" >&2; exit 1')
    store = GitStore(store.root)
    _write(store.root, "staged.txt", "staged\n")
    run_git(store.root, "add", "staged.txt")
    _write(store.root, "memory/a.md", "refused change\n")
    _write(store.root, "memory/new.md", "new\n")
    before = _state(store.root, run_git)
    with pytest.raises(EvolveError) as info:
        store.commit(["memory/a.md", "memory/new.md"], "refused")
    message = str(info.value)
    assert "git commit refused the commit" in message
    assert "policy: no commits today" in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence
    assert _state(store.root, run_git) == before
    assert not (store.git_dir / "index.lock").exists()


@pytest.fixture
def gnupg_home() -> Iterator[Path]:
    """A throw-away GnuPG home with one signing key and no passphrase (short path: sockets)."""
    if shutil.which("gpg") is None:
        pytest.skip("gpg is not installed")
    home = Path(tempfile.mkdtemp(prefix="gpg", dir="/tmp"))
    home.chmod(0o700)
    env = {**os.environ, "GNUPGHOME": str(home)}
    try:
        subprocess.run(
            ["gpg", "--batch", "--passphrase", "", "--quick-gen-key",
             "Evolve Test <test@evolve.invalid>", "ed25519", "sign", "never"],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        yield home
    finally:
        subprocess.run(["gpgconf", "--kill", "all"], env=env, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def test_signing_is_applied_when_the_repository_asks(
    store: GitStore, run_git: RunGit, gnupg_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GNUPGHOME", str(gnupg_home))
    run_git(store.root, "config", "commit.gpgsign", "true")
    run_git(store.root, "config", "user.signingkey", "test@evolve.invalid")
    store = GitStore(store.root)
    assert store.uses_git_commit() and store.commit_hooks() == []
    _write(store.root, "memory/a.md", "signed\n")
    sha = store.commit(["memory/a.md"], "signed commit", trailers={"Evolve-Kind": "train"})
    assert sha is not None
    run_git(store.root, "verify-commit", "HEAD")  # raises unless the signature is good
    assert "gpgsig" in run_git(store.root, "cat-file", "commit", "HEAD")
    info = next(store.log())  # the signature header does not disturb the log
    assert info.sha == sha and info.trailers == {"Evolve-Kind": "train"}
    assert run_git(store.root, "status", "--porcelain") == ""


def test_signing_without_a_usable_key_is_one_clear_error(
    store: GitStore, run_git: RunGit, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GNUPGHOME", str(tmp_path / "no-such-gnupg-home"))
    run_git(store.root, "config", "commit.gpgsign", "true")
    run_git(store.root, "config", "gpg.program", "false")  # a signer that always fails
    store = GitStore(store.root)
    _write(store.root, "memory/a.md", "unsigned\n")
    before = _state(store.root, run_git)
    with pytest.raises(EvolveError, match="git commit refused the commit"):
        store.commit(["memory/a.md"], "cannot sign")
    assert _state(store.root, run_git) == before


class _Updater:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        self.n += 1
        text = f"Remember preference number {self.n} about payments."
        return json.dumps({"operations": [{"op": "add", "text": text}], "bullet_tags": []})


def test_training_in_a_repository_with_a_commit_msg_hook(
    workspace: Workspace, run_git: RunGit
) -> None:
    _hook(workspace.store.git_dir / "hooks", "commit-msg", 'echo "Reviewed-By: hook" >> "$1"')
    ws = Workspace(workspace.root)
    report = train(ws, recipe="ace", episodes=2, updater_llm=MockLLM(_Updater()))
    assert report.commits
    for sha in report.commits:
        info = ws.store.commit_info(sha)
        assert info.trailers["Reviewed-By"] == "hook"
        assert "Evolve-Episode" in info.trailers
    assert run_git(ws.root, "status", "--porcelain") == ""
