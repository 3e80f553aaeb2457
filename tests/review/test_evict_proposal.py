"""Under `--review`, a new unit and the evict that makes room for it are one proposal (issue 23
item 1): the evict waits with the unit; approving it evicts by the recipe's own rule in the
approval's commit (`review list` says what it would evict); rejecting it evicts nothing. An
approval over a cap that no eviction meets is refused with the cap and what resolves it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial

import pytest

from evolve.applier import Op, overflows
from evolve.errors import EvolveError
from evolve.llm import MockLLM
from evolve.memory import MemoryUnit, load_units
from evolve.review import approve, as_pending, list_pending, reject
from evolve.txn import writer
from evolve.updaters import EpisodeView, RecipeContext, get_recipe
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"
_refl = partial(memory_unit, recipe="reflexion", kind="reflection", created_episode=0)


def _r(i: int) -> MemoryUnit:
    return _refl(
        f"reflexion-r{i}",
        f"Reflection number {i} about a different preference.",
        valid_from=f"2026-01-01T00:00:{i:02d}.000000+00:00",
    )


def _commit_units(ws: Workspace, units: Sequence[MemoryUnit], subject: str) -> None:
    with writer(ws, "test") as tx:
        result = tx.apply([Op(op="add", unit=u) for u in units], load_units(ws.root), scope=ALEX)
        assert not result.refused
        tx.commit(result.paths, subject)


def _train_under_review(ws: Workspace, text: str, episode: int) -> str:
    """One reflexion episode as `evolve train --review` runs it; the pending unit's id."""
    units = load_units(ws.root)
    ctx = RecipeContext(
        units=units,
        scope=ALEX,
        episode=EpisodeView(episode, "pay_back-1", "Pay Sam back.", "", "A complaint.", False),
        llm=MockLLM([json.dumps({"reflection": text})]),
        seed=0,
        now="2026-04-04T00:00:00+00:00",
    )
    update = get_recipe("reflexion").observe(ctx)
    assert any(op.op == "evict" for op in update.ops)  # the recipe made room ...
    with writer(ws, "evolve train") as tx:
        result = tx.apply(as_pending(update.ops, units), units, scope=ALEX)
        assert not result.refused, result.refused
        tx.commit(result.paths, f"reflexion: episode {episode}")
    (pending,) = [op.id for op in result.applied if op.unit.status == "pending"]
    return pending


def _active(ws: Workspace) -> set[str]:
    return {u.id for u in load_units(ws.root) if u.status == "active"}


def test_the_evict_waits_with_its_unit_and_the_approval_evicts_by_the_rule(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = workspace
    _commit_units(ws, [_r(0), _r(1), _r(2)], "three reflections")
    first = _train_under_review(ws, "Pay back with the usual card.", 10)
    # ... but nothing a person has not seen is taken away: the window is as it was.
    assert _active(ws) == {"reflexion-r0", "reflexion-r1", "reflexion-r2"}
    second = _train_under_review(ws, "Sign texts with my first name.", 11)
    assert _active(ws) == {"reflexion-r0", "reflexion-r1", "reflexion-r2"}

    items = {i.unit.id: i for i in list_pending(ws)}
    assert [e for e, _ in items[first].evicts] == ["reflexion-r0"]
    assert "keep the last 3" in items[first].evicts[0][1]

    sha = approve(ws, first)
    assert _active(ws) == {"reflexion-r1", "reflexion-r2", first}
    body = run_git(ws.root, "log", "-1", "--format=%B", sha)
    assert "reflexion-r0 is evicted to make room" in body
    assert "evict=reflexion-r0" in body
    # The later approval is not refused by the cap: it makes its own room.
    approve(ws, second)
    assert _active(ws) == {"reflexion-r2", first, second}
    assert overflows(ws, load_units(ws.root)) == []


def test_rejecting_the_unit_evicts_nothing(workspace: Workspace) -> None:
    ws = workspace
    _commit_units(ws, [_r(0), _r(1), _r(2)], "three reflections")
    pending = _train_under_review(ws, "Pay back with the usual card.", 10)
    reject(ws, pending)
    assert _active(ws) == {"reflexion-r0", "reflexion-r1", "reflexion-r2"}


def test_an_approval_over_a_cap_no_rule_meets_names_the_cap_and_the_way_out(
    workspace: Workspace, run_git: RunGit
) -> None:
    root = workspace.root
    config = root / "evolve.yaml"
    config.write_text(
        config.read_text("utf-8").replace("  tepa: {chars: 300}", "  tepa: {units: 1, chars: 300}"),
        "utf-8",
    )
    run_git(root, "commit", "-qam", "caps: one precedent")
    ws = Workspace(root)
    tepa = partial(memory_unit, recipe="tepa", kind="precedent", created_episode=0)
    _commit_units(ws, [tepa("tepa-card", "Pay with the usual card.", key="payment.card")], "one")
    _commit_units(
        ws,
        [tepa("tepa-note", "Put the total in the note.", key="payment.note", status="pending")],
        "pending",
    )
    with pytest.raises(EvolveError) as err:
        approve(ws, "tepa-note")
    message = str(err.value)
    assert message.startswith("could not approve tepa-note: approving it would leave user:alex")
    assert "caps.tepa.units" in message and "`evolve revert`" in message
    assert _active(ws) == {"tepa-card"}
    assert run_git(root, "status", "--porcelain") == ""
