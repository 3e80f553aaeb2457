"""Adversarial: random sequences of counts, rewrites, evictions, re-adds and reverts (of
counts, of rewrites, of reverts) with real git. After every step, for every skill, the pooled
counters (`_counters.yaml`) equal its per-task record (`_strata.yaml`) summed over tasks
(every outcome here is of a task that failed before, so both count the same episodes), and a
skill off its shelf has no record at all.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Sequence

import pytest

from conftest import GitRunner
from evolve.applier import MemoryApplier
from evolve.errors import EvolveError
from evolve.history import revert
from evolve.history._gitrevert import tombstone_git_reverts
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.ops import Op
from evolve.skills._strata import Outcome, load_strata
from evolve.train._scoreboard import settle
from evolve.txn import writer
from evolve.workspace import Workspace
from factories import shelf_skill

FIELDS = ("injected", "injected_pass", "held_out", "held_out_pass")
TASKS = ("pay_back-1", "pay_back-2", "text_update-1")


_skill = shelf_skill


SKILLS = (
    _skill("skill-aa", "After paying, read the payment back before you finish.", "venmo"),
    _skill("skill-bb", "Look the contact up before you send the money.", "venmo"),
    _skill("skill-gg", "Check the final state of what you changed before you finish."),
)


def _plant(ws: Workspace, run_git: GitRunner) -> None:
    for unit in SKILLS:
        path = ws.root / str(unit.path())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(unit), encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "three skills")


def _apply(ws: Workspace, ops: Sequence[Op], subject: str) -> str:
    with writer(ws, "test"):
        applier = MemoryApplier(ws, "global")
        result = applier.apply(ops, load_units(ws.root))
        assert not result.refused, result.refused
        sha = ws.store.commit(result.paths, subject)
        applier.done()
    assert sha is not None
    return sha


def _units(ws: Workspace) -> dict[str, MemoryUnit]:
    return {u.id: u for u in load_units(ws.root) if u.kind == "skill"}


def _check(ws: Workspace, what: str) -> None:
    strata = load_strata(ws.root)
    units = _units(ws)
    for ident in {s.id for s in SKILLS}:
        unit = units.get(ident)
        pooled = tuple(int(getattr(unit, f) or 0) for f in FIELDS) if unit else (0, 0, 0, 0)
        cells = strata.get(ident, {}).values()
        summed = tuple(sum(c[i] for c in cells) for i in range(4))
        assert pooled == summed, f"{what}: {ident} pooled {pooled} != per task {summed}"
        if unit is None or unit.status in ("tombstoned", "revoked"):
            assert pooled == (0, 0, 0, 0) and not cells, f"{what}: {ident} off shelf has a record"


def _step(ws: Workspace, rng: random.Random, made: list[str], n: int) -> str:
    units = _units(ws)
    live = [i for i, u in units.items() if u.status == "active"]
    kind = rng.choice(
        [
            "count",
            "count",
            "rewrite",
            "evict",
            "readd",
            "revert",
            "revert",
            "git",
            "cascade",
            "retire",
        ]
    )
    if kind == "git" and made:  # a plain git revert, then the answer an evolve writer gives it
        target = rng.choice(made)
        done = subprocess.run(
            ["git", "revert", "--no-edit", target], cwd=ws.root, capture_output=True, check=False
        )
        if done.returncode:
            subprocess.run(["git", "revert", "--abort"], cwd=ws.root, capture_output=True)
            return f"git revert {target[:8]}: conflict"
        made.append(ws.store.head() or "")
        with writer(ws, "evolve train"):
            made.extend(tombstone_git_reverts(ws, take_lock=False))
        return f"git revert {target[:8]} ({ws.store.commit_info(target).subject})"
    if kind == "cascade" and made:
        target = rng.choice(made)
        head = ws.store.head()
        try:
            made.append(revert(ws, target, cascade=True).commit)
        except EvolveError as exc:
            assert ws.store.head() == head, "a refused revert moved HEAD"
            return f"cascade {target[:8]} refused: {exc}"
        return f"cascade {target[:8]} ({ws.store.commit_info(target).subject})"
    if kind == "retire" and live:
        ident = rng.choice(live)
        retired = units[ident].with_(status="retired", reason="scoreboard: harmful")
        made.append(_apply(ws, [Op(op="revoke", unit=retired, reason="scoreboard")], f"rt {ident}"))
        return f"retire {ident}"
    if kind == "count" and live:
        outcomes: list[Outcome] = []
        for _ in range(rng.randint(1, 4)):
            ids = rng.sample(live, rng.randint(1, len(live)))
            cut = rng.randint(0, len(ids))
            outcomes.append((ids[:cut], ids[cut:], rng.random() < 0.5, rng.choice(TASKS), True))
        with writer(ws, "evolve train"):
            result = settle(ws, outcomes, episodes=str(n), recipe="skills", confidence=0.999)
        if result.count_commit:
            made.append(result.count_commit)
        return f"count {outcomes}"
    if kind == "rewrite" and live:
        ident = rng.choice(live)
        unit = units[ident].with_(text=f"{units[ident].text.rstrip('.')} (take {n}).")
        made.append(_apply(ws, [Op(op="rewrite", unit=unit, reason="revise")], f"rw {ident}"))
        return f"rewrite {ident}"
    if kind == "evict" and live:
        ident = rng.choice(live)
        made.append(_apply(ws, [Op(op="evict", unit=units[ident])], f"evict {ident}"))
        return f"evict {ident}"
    if kind == "readd":
        gone = [s for s in SKILLS if s.id not in units]
        if gone:
            unit = rng.choice(gone).with_(text=f"A new lesson number {n} for this shelf.")
            made.append(_apply(ws, [Op(op="add", unit=unit)], f"readd {unit.id}"))
            return f"readd {unit.id}"
    if kind == "revert" and made:
        target = rng.choice(made)
        head = ws.store.head()
        try:
            reverted = revert(ws, target)
        except EvolveError as exc:
            assert ws.store.head() == head, "a refused revert moved HEAD"
            return f"revert {target[:8]} refused: {exc}"
        made.append(reverted.commit)
        return f"revert {target[:8]} ({ws.store.commit_info(target).subject})"
    return "nothing"


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 7, 100])
def test_random_sequences_keep_pooled_and_per_task_records_equal(
    workspace: Workspace, run_git: GitRunner, seed: int
) -> None:
    ws = workspace
    _plant(ws, run_git)
    rng = random.Random(seed)
    made: list[str] = []
    steps: list[str] = []
    for n in range(1, 31):
        steps.append(_step(ws, rng, made, n))
        _check(ws, " | ".join(steps[-6:]))
        assert not run_git(ws.root, "status", "--porcelain").strip()


# --- a record restarts even when it was empty (its counts reverted) --------------------------

A = SKILLS[0]


def _count_a(ws: Workspace) -> str:
    with writer(ws, "evolve train"):
        result = settle(
            ws,
            [([A.id], [], True, "pay_back-1", True)],
            episodes="1",
            recipe="skills",
            confidence=0.999,
        )
    assert result.count_commit is not None
    return result.count_commit


def _revert_or_nothing_left(ws: Workspace, sha: str) -> None:
    """Revert `sha`; a refusal that says nothing is left to revert is an answer too."""
    try:
        revert(ws, sha)
    except EvolveError as exc:
        assert "nothing left to revert" in str(exc)


def test_an_evicted_skill_gets_no_record_back_from_a_revert_of_a_revert(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    _plant(ws, run_git)
    counted = _count_a(ws)
    undone = revert(ws, counted).commit
    assert A.id not in load_strata(ws.root)
    _apply(ws, [Op(op="evict", unit=_units(ws)[A.id])], "evict a (its record is empty)")
    _revert_or_nothing_left(ws, undone)  # the count comes back: not for a skill that is gone
    assert A.id not in load_strata(ws.root)
    _check(ws, "evicted")


def test_a_rewritten_lesson_gets_no_counts_of_the_old_one_from_a_revert_of_a_revert(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    _plant(ws, run_git)
    counted = _count_a(ws)
    undone = revert(ws, counted).commit
    new = _units(ws)[A.id].with_(text="Open the payment again and compare the amount.")
    _apply(ws, [Op(op="rewrite", unit=new, reason="revise")], "rewrite a (record empty)")
    _revert_or_nothing_left(ws, undone)
    assert A.id not in load_strata(ws.root)
    unit = _units(ws)[A.id]
    assert not unit.injected and not unit.injected_pass
    _check(ws, "rewritten")


def test_a_count_of_a_rewritten_lesson_is_not_taken_from_the_restored_old_one(
    workspace: Workspace, run_git: GitRunner
) -> None:
    """Count the lesson, rewrite it, count the new lesson, revert the rewrite (the old lesson
    comes back with its own record), then revert the new lesson's count: its counts went with
    the new lesson, so the old lesson's record stays whole."""
    ws = workspace
    _plant(ws, run_git)
    with writer(ws, "evolve train"):
        settle(
            ws,
            [([A.id], [], True, "pay_back-1", True), ([], [A.id], False, "pay_back-1", True)],
            episodes="1",
            recipe="skills",
            confidence=0.999,
        )
    old = load_strata(ws.root)
    new = _units(ws)[A.id].with_(text="Open the payment again and compare the amount.")
    rewrite = _apply(ws, [Op(op="rewrite", unit=new, reason="revise")], "rewrite a")
    later = _count_a(ws)
    revert(ws, rewrite)
    assert load_strata(ws.root) == old
    _revert_or_nothing_left(ws, later)
    assert load_strata(ws.root) == old
    _check(ws, "restored")


@pytest.mark.parametrize("since", ["evict", "rewrite"])
def test_a_plain_git_revert_of_a_count_revert_gives_nothing_to_a_restarted_skill(
    workspace: Workspace, run_git: GitRunner, since: str
) -> None:
    ws = workspace
    _plant(ws, run_git)
    undone = revert(ws, _count_a(ws)).commit
    unit = _units(ws)[A.id]
    if since == "evict":
        _apply(ws, [Op(op="evict", unit=unit)], "evict a (its record is empty)")
    else:
        new = unit.with_(text="Open the payment again and compare the amount.")
        _apply(ws, [Op(op="rewrite", unit=new, reason="revise")], "rewrite a")
    run_git(ws.root, "revert", "--no-edit", undone)
    with writer(ws, "evolve train"):
        tombstone_git_reverts(ws, take_lock=False)
    assert A.id not in load_strata(ws.root)
    _check(ws, since)
