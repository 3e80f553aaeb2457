"""Shared fixtures: a fixed git identity, a git CLI helper and a fresh workspace."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from evolve.llm import LLM, Completion, JsonSchema, Message
from evolve.workspace import Workspace, init_workspace


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal delivers it, however the suite was started: a shell runs a
    background command (`cmd &`, `nohup`) with SIGINT ignored, which Python keeps, and the
    tests that interrupt a writer with SIGINT (and the processes they start, which inherit
    it) would see nothing happen. Setting Python's handler here also gives every child the
    default disposition."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


GitRunner = Callable[..., str]

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Evolve Test",
    "GIT_AUTHOR_EMAIL": "test@evolve.invalid",
    "GIT_COMMITTER_NAME": "Evolve Test",
    "GIT_COMMITTER_EMAIL": "test@evolve.invalid",
}


# The identity, and no system or user git configuration.
GIT_ENV = {**GIT_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never depend on the machine's git configuration."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture(autouse=True)
def terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never depend on the terminal's size: a `COLUMNS` in the environment (a shell
    that exports it, or pytest-xdist's workers, which set COLUMNS=80 and LINES=24) makes
    `evolve run` leave its fast path to rich."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def run_git() -> GitRunner:
    """`run_git(cwd, *args)`: run the git CLI, return stdout, raise if it fails."""

    def run(cwd: Path, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    return run


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """A new workspace at `tmp_path / "ws"`, initialized and committed."""
    return init_workspace(tmp_path / "ws")


@pytest.fixture
def ws(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Workspace:
    """The workspace, with the current folder set to it (for the CLI)."""
    monkeypatch.chdir(workspace.root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    capsys.readouterr()
    return workspace


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run `evolve ARGS` in-process: (exit status, stdout, stderr)."""
    from evolve.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    """Run `evolve ARGS --json`, check it succeeded, and parse its one JSON document."""
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def tree_digest(root: Path) -> str:
    """A hash of every file and folder under `root`, `.git/` aside."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git":
            continue
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"<dir>")
    return digest.hexdigest()


def workspace_state(root: Path, run_git: GitRunner) -> tuple[str, ...]:
    """HEAD, status, index and working tree: what "nothing changed" compares."""
    return (
        run_git(root, "rev-parse", "HEAD"),
        run_git(root, "status", "--porcelain", "--untracked-files=all"),
        run_git(root, "ls-files", "-s"),
        tree_digest(root),
    )


def one_sentence(err: str) -> str:
    """The single `error: ...` line a failing command prints (asserting there is just one)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and lines[0].rstrip().endswith("."), lines[0]
    return lines[0]


class SpyLLM:
    """The sim model, recording every system prompt it is given."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.name = inner.name
        self.systems: list[str] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self.systems += [m.content for m in messages if m.role == "system"]
        return self.inner.complete(
            messages,
            json_schema=json_schema,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
        )
