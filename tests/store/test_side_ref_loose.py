"""A side ref (`refs/evolve/...`) moves without a git process where all `git update-ref`
would do is rewrite its loose file; wherever git would do more (a reflog, a hook, another
ref storage, a lock held, a ref moved meanwhile) git moves it, as before."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evolve.errors import EvolveError
from evolve.store._base import GitBase
from evolve.workspace import Workspace

RunGit = Callable[..., str]
REF = "refs/evolve/records"


@pytest.fixture
def updates(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, ...]]]:
    """The `git update-ref` commands the store runs."""
    seen: list[tuple[str, ...]] = []
    real = GitBase.git

    def spy(self: GitBase, *args: str, **kwargs: Any) -> str:
        if args and args[0] == "update-ref":
            seen.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GitBase, "git", spy)
    yield seen


def _history(ws: Workspace, run_git: RunGit) -> list[str]:
    return run_git(ws.root, "rev-list", REF).split()


def test_a_loose_side_ref_moves_without_git(
    workspace: Workspace, run_git: RunGit, updates: list[tuple[str, ...]]
) -> None:
    ws = workspace
    first = ws.store.write_side_ref(REF, {"a.json": b"{}"}, "record 1")
    assert len(updates) == 1  # a new ref: git creates it
    second = ws.store.write_side_ref(REF, {"b.json": b"[]"}, "record 2")
    third = ws.store.write_side_ref(REF, {"a.json": b"[1]"}, "record 3")
    assert len(updates) == 1  # moved without git
    assert _history(ws, run_git) == [third, second, first]
    assert (ws.store.common_dir / REF).read_text(encoding="ascii") == third + "\n"
    assert ws.store.read_side_ref(REF) == {"a.json": b"[1]", "b.json": b"[]"}
    assert not (ws.store.common_dir / "logs" / REF).exists()  # git keeps none for it either
    assert not list((ws.store.common_dir / "refs" / "evolve").glob("*.lock"))
    assert not list((ws.store.git_dir / "evolve-locks").glob("*.json"))
    run_git(ws.root, "fsck", "--no-progress")


@pytest.mark.parametrize(
    "setup",
    [
        "reflog",
        "log-all",
        "hook",
        "hooks-path",
        "packed-refs-lock",
        "packed",
        "symbolic",
    ],
)
def test_git_moves_it_where_it_would_do_more(
    workspace: Workspace, run_git: RunGit, updates: list[tuple[str, ...]], setup: str
) -> None:
    ws = workspace
    first = ws.store.write_side_ref(REF, {"a.json": b"{}"}, "record 1")
    common = ws.store.common_dir
    if setup == "reflog":
        (common / "logs" / REF).parent.mkdir(parents=True, exist_ok=True)
        (common / "logs" / REF).write_text("", encoding="ascii")
    elif setup == "log-all":
        run_git(ws.root, "config", "core.logAllRefUpdates", "always")
    elif setup == "hook":
        hook = common / "hooks" / "reference-transaction"
        hook.write_text("#!/bin/sh\nexit 0\n", encoding="ascii")
        hook.chmod(0o755)
    elif setup == "hooks-path":
        run_git(ws.root, "config", "core.hooksPath", str(common / "hooks"))
    elif setup == "packed-refs-lock":
        (common / "packed-refs.lock").write_text("", encoding="ascii")
    elif setup == "packed":
        run_git(ws.root, "pack-refs", "--all")
        assert not (common / REF).exists()
    elif setup == "symbolic":
        run_git(ws.root, "update-ref", "refs/evolve/target", first)
        run_git(ws.root, "symbolic-ref", REF, "refs/evolve/target")
    ws = Workspace(ws.root)  # the configuration as it is now
    updates.clear()
    second = ws.store.write_side_ref(REF, {"b.json": b"[]"}, "record 2")
    assert len(updates) == 1  # git moved it
    assert run_git(ws.root, "rev-parse", REF).strip() == second
    if setup in ("reflog", "log-all"):
        assert second in (common / "logs" / REF).read_text(encoding="utf-8")


def test_a_ref_moved_meanwhile_is_refused_as_git_refuses(
    workspace: Workspace, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    first = ws.store.write_side_ref(REF, {"a.json": b"{}"}, "record 1")
    ws.store.write_side_ref(REF, {"b.json": b"{}"}, "record 2")
    real = GitBase._read_ref

    def stale(self: GitBase, ref: str, depth: int = 0) -> str | None:
        return first if ref == REF else real(self, ref, depth)

    monkeypatch.setattr(GitBase, "_read_ref", stale)  # what another writer moved since
    with pytest.raises(EvolveError, match=r"^cannot update refs/evolve/records: .*retry when"):
        ws.store.write_side_ref(REF, {"c.json": b"{}"}, "record 3")
    assert not (ws.store.common_dir / f"{REF}.lock").exists()


def _append(root: str, n: int) -> None:
    ws = Workspace(Path(root))
    for i in range(n):
        while True:
            try:
                ws.store.write_side_ref(REF, {f"{os.getpid()}-{i}.json": b"{}"}, f"r {i}")
                break
            except EvolveError:
                continue  # another writer held the ref or moved it: read it again


def test_concurrent_writers_lose_no_commit(workspace: Workspace, run_git: RunGit) -> None:
    ws = workspace
    ws.store.write_side_ref(REF, {"start.json": b"{}"}, "start")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append, args=(str(ws.root), 15)) for _ in range(3)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    assert len(_history(ws, run_git)) == 1 + 3 * 15
    assert len(ws.store.read_side_ref(REF)) == 1 + 3 * 15
    assert not list((ws.store.common_dir / "refs" / "evolve").glob("*.lock"))
