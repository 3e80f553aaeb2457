"""Review of skills: a proposed change to a skill that itself awaits review, a full shelf,
and a MERGE that only adds evidence (no proposal, so the scoreboard's record is kept)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from evolve.applier._shelves import occupancy
from evolve.errors import EvolveError
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.ops import Op
from evolve.review import approve
from evolve.review._pending import as_pending
from evolve.workspace import Workspace
from factories import skill


def _skill(
    ident: str, status: str = "pending", supersedes: str | None = None, **kw: object
) -> MemoryUnit:
    """A venmo skill written by a batch (pending unless told): no evidence, no start date."""
    fields: dict[str, Any] = {"evidence": None, "valid_from": None, **kw}
    return skill(
        ident, f"Lesson of {ident}.", "venmo", trigger="paying on venmo", status=status,
        supersedes=supersedes, **fields,
    )  # fmt: skip


def _commit(ws: Workspace, units: list[MemoryUnit], cap: int = 1) -> Workspace:
    cfg = ws.root / "evolve.yaml"
    text = cfg.read_text(encoding="utf-8")
    assert "caps: {general: 5, per_topic: 5}" in text
    cfg.write_text(
        text.replace(
            "caps: {general: 5, per_topic: 5}", f"caps: {{general: {cap}, per_topic: {cap}}}"
        ),
        encoding="utf-8",
    )
    for unit in units:
        path = ws.root / str(unit.path())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(unit), encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=ws.root, check=True)
    subprocess.run(["git", "commit", "-qm", "hand"], cwd=ws.root, check=True)
    return Workspace(ws.root)


def _status(ws: Workspace) -> dict[str, tuple[str, str | None]]:
    return {u.id: (u.status, u.revoked_by) for u in load_units(ws.root) if u.shelf is not None}


def test_approving_a_change_to_a_pending_skill_closes_the_chain_on_a_full_shelf(
    workspace: Workspace,
) -> None:
    ws = _commit(workspace, [
        _skill("s"), _skill("s-p1", supersedes="s"), _skill("s-p2", supersedes="s"),
        _skill("s-p1-p3", supersedes="s-p1"),
    ])  # fmt: skip
    approve(ws, "s-p1-p3")  # it changes s-p1, which changes s: both pending, both closed
    assert _status(ws) == {
        "s": ("revoked", "s-p1-p3"), "s-p1": ("revoked", "s-p1-p3"),
        "s-p2": ("pending", None), "s-p1-p3": ("active", None),
    }  # fmt: skip
    assert occupancy(load_units(ws.root)) == {"topics/venmo": 1}
    body = ws.store.commit_info("HEAD").body
    assert "s-p1 was still pending" in body and "s was still pending" in body
    approve(ws, "s-p2")  # s was replaced by s-p1-p3 since: that, the unit active now, goes
    assert _status(ws)["s-p1-p3"] == ("revoked", "s-p2") and _status(ws)["s-p2"][0] == "active"
    assert occupancy(load_units(ws.root)) == {"topics/venmo": 1}


def test_a_chain_over_an_active_skill_revokes_it_too(workspace: Workspace) -> None:
    ws = _commit(workspace, [
        _skill("a", status="active"), _skill("a-p1", supersedes="a"),
        _skill("a-p1-p2", supersedes="a-p1"),
    ])  # fmt: skip
    approve(ws, "a-p1-p2")
    assert _status(ws) == {
        "a": ("revoked", "a-p1-p2"), "a-p1": ("revoked", "a-p1-p2"), "a-p1-p2": ("active", None),
    }  # fmt: skip
    assert "a, the unit active now in place of a, is revoked" in ws.store.commit_info("HEAD").body


def test_a_new_skill_on_a_full_shelf_is_refused_with_advice_for_a_person(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    # d was retired after c was proposed as its change: c would take a second slot
    ws = _commit(workspace, [
        _skill("b", status="active"), _skill("d", status="retired"), _skill("c", supersedes="d"),
    ])  # fmt: skip
    head = ws.store.git("rev-parse", "HEAD").strip()
    with pytest.raises(EvolveError, match=r"topics/venmo is full .*reject a pending skill there"):
        approve(ws, "c")
    code, _out, err = run_cli(capsys, "review", "approve", "c", "--workspace", str(ws.root))
    assert code != 0 and "merge, revise or skip" not in err and "Traceback" not in err
    assert ws.store.git("rev-parse", "HEAD").strip() == head
    assert ws.store.git("status", "--porcelain").strip() == ""


def test_a_merge_that_only_adds_evidence_is_not_a_proposal(tmp_path: Path) -> None:
    current = _skill("m", status="active", evidence=["episode 1"], updated_episode=1)
    merged = current.with_(evidence=["episode 1", "episode 9"], updated_episode=9)
    rewritten = current.with_(text="A new lesson.", updated_episode=9)
    retrigger = current.with_(trigger="any venmo task", updated_episode=9)
    out = as_pending([Op(op="modify", unit=merged)], [current])
    assert [(o.op, o.unit.id, o.unit.status) for o in out] == [("modify", "m", "active")]
    for changed in (rewritten, retrigger):
        out = as_pending([Op(op="modify", unit=changed)], [current])
        assert [(o.op, o.unit.id, o.unit.status, o.unit.supersedes) for o in out] == [
            ("add", "m-p9", "pending", "m")
        ]
