"""`evolve show UNIT` is the reviewer's page (issue 23 item 6): text, status, validity,
counters, provenance, and every commit that touched the unit's file or its sidecar entry,
labelled by kind, on the fast path and the full path alike."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from conftest import run_cli as _cli
from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.memory import load_units
from evolve.memory._counters import parse_counters
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
SIDECAR = "memory/alex/_counters.yaml"


def _both(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert _fast.run(argv) == 0
    fast = capsys.readouterr().out
    assert run_click(argv) == 0
    assert capsys.readouterr().out == fast, "the fast path and the full path differ"
    return fast


def _entry(run_git: RunGit, ws: Workspace, rev: str, ident: str) -> dict[str, float] | None:
    try:
        raw = run_git(ws.root, "show", f"{rev}:{SIDECAR}")
    except AssertionError:
        return None  # no sidecar there yet
    entry = parse_counters(SIDECAR, raw).get(ident)
    return {k: float(v) for k, v in entry.items()} if entry is not None else None


def test_show_lists_every_commit_that_touched_the_unit_and_its_counters(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=30, persona="alex", feedback="instance")
    sidecar = parse_counters(SIDECAR, (ws.root / SIDECAR).read_text("utf-8"))
    units = {u.id: u for u in load_units(ws.root) if u.id in sidecar}
    # The unit whose counters moved most often.
    moves: dict[str, list[str]] = {}
    for sha in run_git(ws.root, "log", "--format=%H", "--", SIDECAR).split():
        for ident in units:
            if _entry(run_git, ws, f"{sha}^", ident) != _entry(run_git, ws, sha, ident):
                moves.setdefault(ident, []).append(sha)
    ident = max(sorted(moves), key=lambda i: len(moves[i]))
    unit = units[ident]
    path = unit.path().as_posix()
    file_commits = run_git(ws.root, "log", "--format=%H", "--", path).split()
    assert len(moves[ident]) >= 2

    data = json.loads(_both(capsys, ["show", ident, "--json"]))
    shown = {c["commit"]: c for c in data["commits"]}
    assert set(shown) == set(moves[ident]) | set(file_commits)
    for sha, c in shown.items():
        assert ("file" in c["touched"]) == (sha in file_commits)
        assert ("counters" in c["touched"]) == (sha in moves[ident])
        if sha in moves[ident]:
            before, after = _entry(run_git, ws, f"{sha}^", ident), _entry(run_git, ws, sha, ident)
            got = c["counters"]
            assert {k: float(v) for k, v in (got["after"] or {}).items()} == (after or {})
            assert {k: float(v) for k, v in (got["before"] or {}).items()} == (before or {})
        assert c["kind"]
    order = run_git(ws.root, "log", "--format=%H", "--", path, SIDECAR).split()
    assert [c["commit"] for c in data["commits"]] == [s for s in order if s in shown]
    assert data["counters"] == sidecar[ident]

    text = _both(capsys, ["show", ident])
    counters = ", ".join(f"{k} {v}" for k, v in sidecar[ident].items())
    assert f"  counters: {counters}" in text
    assert unit.complaint and f"learned from task {unit.source_task}: {unit.complaint}" in text
    for sha in moves[ident]:
        block = text.split(f"{sha[:10]} ", 1)[1].split("\n\n", 1)[0]
        assert "\n  counters: " in block or "\n  counters (new entry): " in block, block


def test_a_unit_with_no_counters_shows_none(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="tepa", episodes=6, persona="alex", feedback="instance")
    unit = next(u for u in load_units(ws.root) if u.status == "active")
    data = json.loads(_both(capsys, ["show", unit.id, "--json"]))
    assert data["counters"] == {}
    assert all(c["touched"] == ["file"] and c["counters"] is None for c in data["commits"])
    code, out, err = _cli(capsys, "show", unit.id)
    assert code == 0 and "  counters:" not in out
