"""Human review: `evolve train --review`, `evolve review list|approve|reject`, end to end."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import evolve.train._train as train_module
from conftest import cli_json as _json
from conftest import one_sentence as _one_sentence
from conftest import run_cli as _cli
from conftest import workspace_state as _state
from evolve.evaluate import agent_memory, open_env
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import MemoryUnit, load_units
from evolve.memory._similarity import normalize
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
ALEX = "user:alex"
PRIVATE = "Keep all my Venmo payments private."
FRIENDS = "Set my Venmo payments to friends-only visibility."


@pytest.fixture
def memories(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The rendered memory of every training episode, in order."""
    seen: list[str] = []
    real = train_module.run_episode  # type: ignore[attr-defined]

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[3].memory)
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "run_episode", spy)
    yield seen


def _trailers(root: Path, run_git: RunGit, rev: str) -> dict[str, str]:
    block = run_git(root, "log", "-1", "--format=%(trailers:only=true,unfold=true)", rev)
    return {k: v.strip() for k, _, v in (line.partition(": ") for line in block.splitlines()) if v}


def _units(root: Path) -> dict[str, MemoryUnit]:
    return {u.id: u for u in load_units(root)}


def _path(unit_id: str) -> str:
    return f"memory/alex/{unit_id}.md"


def _changed(root: Path, run_git: RunGit, rev: str) -> list[str]:
    return sorted(run_git(root, "show", "--name-only", "--format=", rev).split())


def _train_review(capsys: pytest.CaptureFixture[str], episodes: int) -> dict[str, Any]:
    data: dict[str, Any] = _json(capsys, "train", "--review", "--episodes", str(episodes))
    return data


# --- train --review and review list ---------------------------------------------------------


def test_train_review_writes_pending_units_that_are_never_rendered(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], memories: list[str]
) -> None:
    root = ws.root
    report = _train_review(capsys, 10)
    assert report["commits"] and len(memories) == 10
    units = _units(root)
    assert len(units) >= 3
    assert {u.status for u in units.values()} == {"pending"}
    assert all(u.scope == ALEX and u.supersedes is None for u in units.values())
    # Nothing a person has not approved reached the agent, in training or after.
    assert memories == [""] * 10
    assert _json(capsys, "memory")["memory"] == ""
    assert agent_memory(ws, open_env(ws), "alex", "recipe") == ""
    for sha in report["commits"]:
        ops = _trailers(root, run_git, sha)["Evolve-Ops"].split()
        assert ops and all(op.startswith("add=") for op in ops)
    # Training again re-proposes the same statements: they wait once, not twice.
    _train_review(capsys, 20)
    texts = [normalize(u.text) for u in _units(root).values()]
    assert len(texts) == len(set(texts))
    assert len(memories) > 10 and set(memories) == {""}


def test_review_list_shows_each_pending_unit_with_the_complaint_that_produced_it(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    _train_review(capsys, 10)
    units = _units(root)
    items = _json(capsys, "review", "list")
    assert sorted(i["id"] for i in items) == sorted(units)
    for item in items:
        unit = units[item["id"]]
        assert item["text"] == unit.text and item["scope"] == ALEX and item["supersedes"] is None
        (added,) = run_git(
            root, "log", "--diff-filter=A", "--format=%H", "--", _path(unit.id)
        ).split()
        assert item["commit"] == added
        body = run_git(root, "log", "-1", "--format=%B", added).splitlines()
        complaint = body[body.index("Complaint:") + 1].strip()
        assert item["complaint"] == complaint

    code, out, err = _cli(capsys, "review", "list")
    assert code == 0, err
    for item in items:
        assert f"{item['id']} ({ALEX}) {item['text']}" in out
        assert f"from the complaint: {item['complaint']}" in out


# --- approve ----------------------------------------------------------------------------------


def test_approve_makes_the_unit_active_in_one_commit(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    _train_review(capsys, 10)
    before = _units(root)
    chosen = sorted(before)[0]
    head = run_git(root, "rev-parse", "HEAD").strip()

    code, out, err = _cli(capsys, "review", "approve", chosen)
    assert code == 0, err
    sha = run_git(root, "rev-parse", "HEAD").strip()
    assert out.strip() == f"approved {chosen} in {sha[:10]}"
    assert run_git(root, "rev-parse", "HEAD^").strip() == head
    assert _changed(root, run_git, "HEAD") == [_path(chosen)]
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    t = _trailers(root, run_git, "HEAD")
    assert t["Evolve-Kind"] == "review" and t["Evolve-Ops"] == f"approve={chosen}"
    after = _units(root)
    assert after[chosen] == before[chosen].with_(status="active")
    assert {uid: u for uid, u in after.items() if uid != chosen} == {
        uid: u for uid, u in before.items() if uid != chosen
    }
    memory = _json(capsys, "memory")["memory"]
    assert memory == f"[{chosen}] {before[chosen].text}"
    assert chosen not in {i["id"] for i in _json(capsys, "review", "list")}


def test_approving_a_replacement_revokes_the_unit_it_supersedes(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    script: dict[str, Any] = {"op": "add", "text": PRIVATE}

    def updater(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        proposal = dict(script)
        if proposal["op"] == "modify":
            ids = re.findall(r"^\[(ace-[0-9a-f]{10})\]", messages[-1].content, re.M)
            proposal["id"] = ids[0]
        return json.dumps({"operations": [proposal], "bullet_tags": []})

    llm = MockLLM(updater)
    train(ws, recipe="ace", episodes=2, review=True, updater_llm=llm)
    (old,) = _units(root).values()
    assert old.status == "pending" and old.text == PRIVATE
    code, _, err = _cli(capsys, "review", "approve", old.id)
    assert code == 0, err

    # The correction waits for review; the approved unit stays in force meanwhile.
    script.update(op="modify", text=FRIENDS)
    report = train(ws, recipe="ace", episodes=6, review=True, updater_llm=llm)
    assert len(report.commits) == 1, "the same correction waits once"
    units = _units(root)
    new = next(u for u in units.values() if u.id != old.id)
    assert new.status == "pending" and new.text == FRIENDS and new.supersedes == old.id
    assert units[old.id].status == "active"
    assert _json(capsys, "memory")["memory"] == f"[{old.id}] {PRIVATE}"
    (item,) = _json(capsys, "review", "list")
    assert item["id"] == new.id and item["supersedes"] == old.id
    code, out, _ = _cli(capsys, "review", "list")
    assert code == 0 and f"would replace {old.id}" in out

    head = run_git(root, "rev-parse", "HEAD").strip()
    code, _, err = _cli(capsys, "review", "approve", new.id)
    assert code == 0, err
    assert run_git(root, "rev-parse", "HEAD^").strip() == head  # one commit for both
    assert _changed(root, run_git, "HEAD") == sorted([_path(old.id), _path(new.id)])
    ops = _trailers(root, run_git, "HEAD")["Evolve-Ops"].split()
    assert sorted(ops) == sorted([f"approve={new.id}", f"revoke={old.id}"])
    units = _units(root)
    assert units[new.id].status == "active"
    gone = units[old.id]
    assert gone.status == "revoked" and gone.revoked_by == new.id and gone.valid_to
    assert _json(capsys, "memory")["memory"] == f"[{new.id}] {FRIENDS}"
    assert _json(capsys, "review", "list") == []
    code, out, _ = _cli(capsys, "review", "list")
    assert code == 0 and "nothing is pending review." in out


# --- reject ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_reject_tombstones_the_unit_in_one_commit_and_its_text_is_refused_later(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], memories: list[str]
) -> None:
    root = ws.root
    _train_review(capsys, 10)
    pending = _units(root)
    keep, *others = sorted(pending)
    assert others
    code, _, err = _cli(capsys, "review", "approve", keep)
    assert code == 0, err

    first = others[0]
    head = run_git(root, "rev-parse", "HEAD").strip()
    code, out, err = _cli(capsys, "review", "reject", first)
    assert code == 0, err
    assert out.strip() == f"rejected {first} in {run_git(root, 'rev-parse', 'HEAD').strip()[:10]}"
    assert run_git(root, "rev-parse", "HEAD^").strip() == head
    assert _changed(root, run_git, "HEAD") == [_path(first)]
    t = _trailers(root, run_git, "HEAD")
    assert t["Evolve-Kind"] == "review" and t["Evolve-Ops"] == f"tombstone={first}"
    stone = _units(root)[first]
    assert stone.status == "tombstoned" and stone.reason == "rejected in review" and stone.valid_to
    assert stone.text == pending[first].text
    assert first not in {i["id"] for i in _json(capsys, "review", "list")}
    for uid in others[1:]:
        code, _, err = _cli(capsys, "review", "reject", uid)
        assert code == 0, err

    # The sim updater proposes the rejected statements again; each one is refused.
    report = _train_review(capsys, 40)
    refused = [line for o in report["outcomes"] for line in o["refused"]]
    assert any(f"tombstoned (rejected in review): {uid}" in r for r in refused for uid in others)
    bodies = [run_git(root, "log", "-1", "--format=%B", sha) for sha in report["commits"]]
    assert any("\nRefused:\n" in b and "tombstoned (rejected in review)" in b for b in bodies)
    rejected = {normalize(pending[uid].text) for uid in others}
    for unit in _units(root).values():
        if normalize(unit.text) in rejected:
            assert unit.status == "tombstoned", unit
    assert all(pending[uid].text not in m for m in memories for uid in others)


# --- what review refuses ----------------------------------------------------------------------


def _active(units: dict[str, MemoryUnit]) -> str:
    return next(uid for uid, u in units.items() if u.status == "active")


def _tombstoned(units: dict[str, MemoryUnit]) -> str:
    return next(uid for uid, u in units.items() if u.status == "tombstoned")


CASES: dict[str, tuple[str, Callable[[dict[str, MemoryUnit]], str], str]] = {
    "approve an active unit": ("approve", _active, "is not pending (it is active)"),
    "reject an active unit": ("reject", _active, "is not pending (it is active)"),
    "approve a rejected unit": ("approve", _tombstoned, "is not pending (it is tombstoned)"),
    "reject a rejected unit": ("reject", _tombstoned, "is not pending (it is tombstoned)"),
    "approve an unknown id": ("approve", lambda units: "ace-0000000000", "no unit with id"),
    "reject an unknown id": ("reject", lambda units: "ace-0000000000", "no unit with id"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_review_of_a_unit_that_is_not_pending_is_one_sentence_and_changes_nothing(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    root = ws.root
    _train_review(capsys, 10)
    first, second = sorted(_units(root))[:2]
    assert _cli(capsys, "review", "approve", first)[0] == 0
    assert _cli(capsys, "review", "reject", second)[0] == 0
    verb, pick, expected = CASES[case]
    unit_id = pick(_units(root))
    before = _state(root, run_git)
    code, out, err = _cli(capsys, "review", verb, unit_id)
    assert code != 0 and out == ""
    sentence = _one_sentence(err)
    assert expected in sentence and unit_id in sentence
    assert _state(root, run_git) == before
