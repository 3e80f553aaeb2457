"""Two branches of one stream trained apart, merged (issue 25): every unit kept, distinct ids
(one id never names two texts), caps held, no text rendered twice, counters added up, and
all of it still true 40 episodes later; and `evolve revert` takes the merge back."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import run_cli
from evolve.applier._caps import overflows
from evolve.history import revert
from evolve.memory import MemoryUnit, load_units, load_units_at, parse_counters
from evolve.memory._similarity import normalize
from evolve.merge import merge_branch
from evolve.train import train
from evolve.workspace import Workspace, init_workspace

RunGit = Callable[..., str]
SPLIT_AT = 6
APART = 25


def _units_at(ws: Workspace, rev: str) -> dict[str, MemoryUnit]:
    return {u.id: u for u in load_units_at(ws.store, rev)}


def _first_teaching(ws: Workspace, run_git: RunGit) -> str:
    """A commit that taught a unit (its revert makes the two learners' memories differ)."""
    out = run_git(ws.root, "log", "--format=%H %(trailers:key=Evolve-Ops,valueonly,unfold)")
    shas = [line.split()[0] for line in out.splitlines() if " add=" in f" {line}"]
    assert shas, out
    return shas[-1]


def _no_text_twice(units: list[MemoryUnit]) -> None:
    seen: set[tuple[str, str]] = set()
    for u in units:
        if u.status != "active":
            continue
        key = (u.scope, normalize(u.text))
        assert key not in seen, f"{u.text!r} is rendered twice"
        seen.add(key)


def _sidecar(ws: Workspace, rev: str) -> dict[str, dict[str, float | int]]:
    raw = ws.store.read(rev, "memory/alex/_counters.yaml")
    return parse_counters("memory/alex/_counters.yaml", raw.decode("utf-8")) if raw else {}


@pytest.mark.parametrize("recipe", ["ace", "topl"])
def test_two_learners_of_one_stream_merge_without_loss(
    tmp_path: Path, run_git: RunGit, recipe: str
) -> None:
    mine = init_workspace(tmp_path / "mine", persona="alex")
    train(mine, recipe=recipe, episodes=SPLIT_AT)
    base = mine.store.head()
    assert base is not None
    # The second learner: a copy of the workspace, as on another machine.
    shutil.copytree(mine.root, tmp_path / "theirs", symlinks=True)
    theirs = Workspace(tmp_path / "theirs")
    # They diverge: this learner takes one lesson back, and both continue the same stream.
    revert(mine, _first_teaching(mine, run_git))
    train(mine, recipe=recipe, episodes=APART)
    train(theirs, recipe=recipe, episodes=APART)
    run_git(mine.root, "fetch", "-q", str(theirs.root), "main:refs/remotes/theirs/main")
    ours_sha, theirs_sha = mine.store.head(), run_git(mine.root, "rev-parse", "theirs/main").strip()
    assert ours_sha is not None
    ours_units, theirs_units = _units_at(mine, ours_sha), _units_at(mine, theirs_sha)
    made_apart = [i for i in {*ours_units, *theirs_units} if i not in _units_at(mine, base)]
    assert made_apart, "the learners learned nothing apart: the test proves nothing"

    result = merge_branch(mine, "theirs/main")

    assert result.status == "merged" and result.commit is not None
    assert run_git(mine.root, "status", "--porcelain") == ""
    parents = run_git(mine.root, "log", "-1", "--format=%P").split()
    assert parents == [ours_sha, theirs_sha]  # one merge commit
    # Distinct ids: an id both learners made names one text.
    for ident in set(ours_units) & set(theirs_units):
        assert normalize(ours_units[ident].text) == normalize(theirs_units[ident].text), ident
    # Every unit of either side is kept, unless the merge evicted it for a cap (named).
    evicted = {ident for op, ident in result.ops if op == "evict"}
    merged = {u.id: u for u in load_units(mine.root)}
    assert set(ours_units) | set(theirs_units) <= set(merged) | evicted
    assert overflows(mine, list(merged.values())) == []
    _no_text_twice(list(merged.values()))
    # Counters are the sum of both learners' moves.
    b, o, t, m = (_sidecar(mine, rev) for rev in (base, ours_sha, theirs_sha, result.commit))
    for ident in {*o, *t} - evicted:
        for name in {*o.get(ident, {}), *t.get(ident, {})}:
            if name in ("helpful", "harmful"):
                want = sum(side.get(ident, {}).get(name, 0) for side in (o, t))
                want -= b.get(ident, {}).get(name, 0)
                assert m.get(ident, {}).get(name, 0) == max(0, want), (ident, name)

    # 40 episodes later, the merged memory still holds every rule.
    train(mine, recipe=recipe, episodes=APART + 40)
    later = load_units(mine.root)
    assert overflows(mine, later) == []
    _no_text_twice(later)
    assert len({u.id for u in later}) == len(later)


def test_revert_of_a_merge_takes_back_what_it_brought(
    tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = init_workspace(tmp_path / "mine", persona="alex")
    train(mine, episodes=SPLIT_AT)
    shutil.copytree(mine.root, tmp_path / "theirs", symlinks=True)
    theirs = Workspace(tmp_path / "theirs")
    revert(mine, _first_teaching(mine, run_git))
    train(theirs, episodes=APART)
    before = mine.store.head()
    assert before is not None
    active_before = sorted(u.id for u in load_units(mine.root) if u.status == "active")
    run_git(mine.root, "fetch", "-q", str(theirs.root), "main:refs/remotes/theirs/main")
    result = merge_branch(mine, "theirs/main")
    assert result.commit is not None
    trailers = run_git(mine.root, "log", "-1", "--format=%(trailers:only,unfold)")
    assert "Evolve-Kind: merge" in trailers and "Evolve-Merged: " in trailers

    # `evolve log` and `evolve show` read the merge commit.
    code, shown, err = run_cli(capsys, "log", "-C", str(mine.root), "-n", "3")
    assert code == 0, err
    assert "evolve: merge theirs/main" in shown
    brought = sorted({u.id for u in load_units(mine.root)} - set(_units_at(mine, before)))
    assert brought, "the other learner brought nothing: the test proves nothing"
    code, shown, err = run_cli(capsys, "show", "-C", str(mine.root), brought[0])
    assert code == 0 and brought[0] in shown, err

    done = revert(mine, result.commit)
    assert done.commit
    active_after = sorted(u.id for u in load_units(mine.root) if u.status == "active")
    assert active_after == active_before
    assert run_git(mine.root, "status", "--porcelain") == ""
