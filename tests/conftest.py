"""Shared fixtures: a fixed git identity, a git CLI helper and a fresh workspace."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.workspace import Workspace, init_workspace

GitRunner = Callable[..., str]

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Evolve Test",
    "GIT_AUTHOR_EMAIL": "test@evolve.invalid",
    "GIT_COMMITTER_NAME": "Evolve Test",
    "GIT_COMMITTER_EMAIL": "test@evolve.invalid",
}


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never depend on the machine's git configuration."""
    for key, value in GIT_IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")


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
