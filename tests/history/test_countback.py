"""Reverting a scoreboard count commit takes back exactly what it counted, in the pooled
counters (`_counters.yaml`) as in the per-task record (`_strata.yaml`), and keeps every later
count: with `evolve revert` of an older count commit, and with a plain `git revert`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from conftest import GitRunner
from evolve.applier import MemoryApplier
from evolve.history import revert
from evolve.history._gitrevert import tombstone_git_reverts
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.ops import Op
from evolve.skills._strata import Outcome, Strata, load_strata
from evolve.train._scoreboard import settle
from evolve.txn import writer
from evolve.workspace import Workspace
from factories import shelf_skill

FIELDS = ("injected", "injected_pass", "held_out", "held_out_pass")


_skill = shelf_skill


A = _skill("skill-aa", "After paying, read the payment back before you finish.", "venmo")
G = _skill("skill-gg", "Check the final state of what you changed before you finish.")


def _plant(ws: Workspace, run_git: GitRunner) -> str:
    for unit in (A, G):
        path = ws.root / str(unit.path())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(unit), encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "two skills")
    return run_git(ws.root, "rev-parse", "HEAD").strip()


def _count(ws: Workspace, outcomes: Sequence[Outcome], episode: int) -> str:
    with writer(ws, "evolve train"):
        result = settle(ws, outcomes, episodes=str(episode), recipe="skills", confidence=0.95)
    assert result.count_commit is not None and not result.retired
    return result.count_commit


def _pooled(ws: Workspace) -> dict[str, tuple[int, ...]]:
    units = {u.id: u for u in load_units(ws.root)}
    return {i: tuple(int(getattr(units[i], f) or 0) for f in FIELDS) for i in (A.id, G.id)}


def _state(ws: Workspace) -> tuple[dict[str, tuple[int, ...]], Strata]:
    return _pooled(ws), load_strata(ws.root)


# Every outcome's task failed before (the pooled counters count only those; the per-task
# record counts every one): (injected, held out, passed, task, failed before).
FIRST: list[Outcome] = [
    ([A.id, G.id], [], True, "pay_back-1", True),
    ([A.id], [G.id], False, "pay_back-2", True),
    ([], [A.id], True, "pay_back-1", True),
    ([G.id], [], True, "text_update-1", False),  # per task only
]
SECOND: list[Outcome] = [
    ([A.id], [], True, "pay_back-1", True),
    ([G.id], [A.id], True, "pay_back-2", True),
]
THIRD: list[Outcome] = [
    ([A.id, G.id], [], False, "pay_back-1", True),
    ([], [G.id], True, "text_update-1", True),
]


def _alone(
    ws: Workspace, run_git: GitRunner, base: str, *batches: list[Outcome]
) -> tuple[dict[str, tuple[int, ...]], Strata]:
    """The records `batches` alone leave, counted on `base` (then HEAD is put back)."""
    head = run_git(ws.root, "rev-parse", "HEAD").strip()
    run_git(ws.root, "reset", "-q", "--hard", base)
    for i, batch in enumerate(batches):
        _count(ws, batch, 100 + i)
    out = _state(ws)
    run_git(ws.root, "reset", "-q", "--hard", head)
    return out


def test_evolve_revert_of_an_older_count_takes_back_exactly_its_counts(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    base = _plant(ws, run_git)
    old = _count(ws, FIRST, 1)
    _count(ws, SECOND, 2)
    _count(ws, THIRD, 3)
    reverted = revert(ws, old)
    assert _state(ws) == _alone(ws, run_git, base, SECOND, THIRD)
    # And reverting the revert puts the first count back beside the later ones.
    revert(ws, reverted.commit)
    assert _state(ws) == _alone(ws, run_git, base, FIRST, SECOND, THIRD)


def test_a_plain_git_revert_of_an_older_count_is_exact_too(
    workspace: Workspace, run_git: GitRunner
) -> None:
    """git reverts line by line: where the later counts changed other lines (here another
    skill's), it applies cleanly and takes back exactly the older count's figures, pooled and
    per task; where they changed the same lines git stops with a conflict, and `evolve
    revert` (above) is the way."""
    ws = workspace
    base = _plant(ws, run_git)
    start: list[Outcome] = [
        *[([A.id], [], True, f"pay_back-{i}", True) for i in (1, 2, 3)],
        *[([G.id], [], True, f"text_update-{i}", True) for i in (1, 2, 3)],
    ]
    mine: list[Outcome] = [([A.id], [], False, "pay_back-1", True)]
    later: list[Outcome] = [([G.id], [], True, "text_update-3", True)]
    expected = _alone(ws, run_git, base, start, later, later)
    _count(ws, start, 0)
    old = _count(ws, mine, 1)
    _count(ws, later, 2)
    _count(ws, later, 3)
    assert _state(ws) != expected
    run_git(ws.root, "revert", "--no-edit", old)
    assert _state(ws) == expected
    with writer(ws, "evolve train"):
        tombstone_git_reverts(ws, take_lock=False)  # the next writer's answer changes nothing
    assert _state(ws) == expected


def _rewrite(ws: Workspace, unit: MemoryUnit, text: str) -> None:
    """A batch's REVISE of `unit`'s lesson (through the applier; its record restarts)."""
    with writer(ws, "test"):
        units = load_units(ws.root)
        current = {u.id: u for u in units}[unit.id]
        applier = MemoryApplier(ws, "global")
        result = applier.apply([Op(op="modify", unit=current.with_(text=text))], units)
        assert not result.refused
        ws.store.commit(result.paths, f"revise {unit.id}")
        applier.done()


@pytest.mark.parametrize("how", ["rewrite", "evict and add again"])
def test_reverting_a_count_from_before_a_restart_leaves_the_new_lessons_evidence(
    workspace: Workspace, run_git: GitRunner, how: str
) -> None:
    ws = workspace
    base = _plant(ws, run_git)
    old = _count(ws, FIRST, 1)
    if how == "rewrite":
        _rewrite(ws, A, "Before you finish, open the payment and compare it with the task.")
    else:
        with writer(ws, "test"):
            units = load_units(ws.root)
            applier = MemoryApplier(ws, "global")
            current = {u.id: u for u in units}[A.id]
            result = applier.apply([Op(op="evict", unit=current)], units)
            ws.store.commit(result.paths, "evict a")
            applier.done()
            units = load_units(ws.root)
            new = A.with_(text="Before you finish, open the payment and compare it.")
            result = applier.apply([Op(op="add", unit=new)], units)
            ws.store.commit(result.paths, "a new lesson under the old id")
            applier.done()
    assert _pooled(ws)[A.id] == (0, 0, 0, 0) and A.id not in load_strata(ws.root)
    _count(ws, SECOND, 2)
    new_a = _pooled(ws)[A.id], load_strata(ws.root)[A.id]
    revert(ws, old)
    # The old lesson's counts went with it at the restart: nothing of them is taken back
    # from the new lesson's record, pooled or per task; G's are taken back.
    assert (_pooled(ws)[A.id], load_strata(ws.root)[A.id]) == new_a
    expected_g = _alone(ws, run_git, base, SECOND)
    assert _pooled(ws)[G.id] == expected_g[0][G.id]
    assert load_strata(ws.root).get(G.id) == expected_g[1].get(G.id)
