"""Scope: two users in one workspace never see or write each other's memory."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

import evolve.train._train as train_module
from conftest import SpyLLM
from conftest import cli_json as _json
from conftest import run_cli as _cli
from evolve.agent import MEMORY_HEADER, section
from evolve.applier import MemoryApplier, Op
from evolve.evaluate import agent_memory, open_env, run_split
from evolve.llm import make_llm
from evolve.memory import MemoryUnit, load_units
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX, BLAIR = "user:alex", "user:blair"
UNIT_ID = re.compile(r"\[(ace-[0-9a-f]{10})\]")


@pytest.fixture
def memories(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """(persona, rendered memory) of every training episode, in order."""
    seen: list[tuple[str, str]] = []
    real = train_module.run_episode  # type: ignore[attr-defined]

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append((args[3].persona, args[3].memory))
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "run_episode", spy)
    yield seen


def _units_of(ws: Workspace, scope: str) -> list[MemoryUnit]:
    return [u for u in load_units(ws.root) if u.scope == scope]


_unit = partial(memory_unit, created_episode=0, helpful=0, harmful=0)


def test_two_personas_learn_into_their_own_folders_and_never_see_each_other(
    ws: Workspace,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    memories: list[tuple[str, str]],
) -> None:
    root = ws.root
    env = open_env(ws)
    alex = _json(capsys, "train", "--persona", "alex", "--episodes", "12")
    alex_memory = _json(capsys, "memory", "--persona", "alex")["memory"]
    blair = _json(capsys, "train", "--persona", "blair", "--episodes", "12")
    assert alex["persona"] == "alex" and blair["persona"] == "blair"
    assert alex["commits"] and blair["commits"]

    # Units land under memory/<persona>/ with that user's scope; nothing else is written.
    for persona, report in (("alex", alex), ("blair", blair)):
        for sha in report["commits"]:
            changed = run_git(root, "show", "--name-only", "--format=", sha).split()
            assert changed and all(p.startswith(f"memory/{persona}/") for p in changed), changed
            assert f"Evolve-Persona: {persona}" in run_git(root, "log", "-1", "--format=%B", sha)
    folders = {p.parent.name for p in (root / "memory").rglob("*.md")}
    assert folders == {"alex", "blair"}
    for path in (root / "memory").rglob("*.md"):
        scope = f"user:{path.parent.name}"
        assert next(u for u in load_units(root) if u.id == path.stem).scope == scope

    alex_ids = {u.id for u in _units_of(ws, ALEX)}
    blair_ids = {u.id for u in _units_of(ws, BLAIR)}
    assert alex_ids and blair_ids and not alex_ids & blair_ids

    # What each user's agent is shown: only their own units.
    for persona, own, other in (("alex", alex_ids, blair_ids), ("blair", blair_ids, alex_ids)):
        shown = _json(capsys, "memory", "--persona", persona)
        assert shown["scope"] == f"user:{persona}"
        assert shown["memory"] == agent_memory(ws, env, persona, "recipe")
        assert _json(capsys, "memory", "--scope", f"user:{persona}") == shown
        ids = set(UNIT_ID.findall(shown["memory"]))
        active = {u.id for u in load_units(root) if u.id in own and u.status == "active"}
        assert ids == active and not ids & other
    # Blair's training changed nothing of what alex is shown.
    assert _json(capsys, "memory", "--persona", "alex")["memory"] == alex_memory

    # Training episodes: each user's prompt held only that user's ids.
    assert {p for p, _ in memories} == {"alex", "blair"}
    for persona, memory in memories:
        other = blair_ids if persona == "alex" else alex_ids
        assert not set(UNIT_ID.findall(memory)) & other

    # An evaluation run for alex: the agent's <memory> has no unit of blair's.
    spy = SpyLLM(make_llm("sim", env=env))
    run_split(ws, "dev", llm=spy, persona="alex", runs=1, log=False)
    assert spy.systems
    for system in spy.systems:
        body = section(system, "memory")
        assert body == f"{MEMORY_HEADER}\n{alex_memory}"
        assert not set(UNIT_ID.findall(body)) & blair_ids


def test_the_applier_refuses_an_op_in_another_users_scope(ws: Workspace) -> None:
    root = ws.root
    applier = MemoryApplier(ws, BLAIR)
    theirs = _unit(
        "ace-00000000b1", "Set my Venmo payments to friends-only visibility.", scope=BLAIR
    )
    result = applier.apply([Op(op="add", unit=theirs)], load_units(root))
    assert result.applied
    ws.store.commit(result.paths, "blair learns", trailers=[("Evolve-Kind", "train")])
    applier.done()

    alex = MemoryApplier(ws, ALEX)
    foreign = _unit("ace-00000000a1", "Keep all my Venmo payments private.", scope=BLAIR)
    revoke = Op(op="revoke", unit=theirs.with_(status="revoked", revoked_by="ace-00000000a1"))
    everywhere = _unit("ace-00000000c1", "Pay with the card I use most often.", scope="global")
    for op in (Op(op="add", unit=foreign), revoke, Op(op="add", unit=everywhere)):
        result = alex.apply([op], load_units(root))
        assert not result.applied and not result.paths
        (refusal,) = result.refused
        assert refusal.reason == f"unit scope {op.unit.scope} is not this run's scope {ALEX}"
    alex.done()
    assert not (root / "memory" / "blair" / "ace-00000000a1.md").exists()
    assert not (root / "memory" / "ace-00000000c1.md").exists()
    assert next(u for u in load_units(root) if u.id == theirs.id).status == "active"
    assert not (root / "memory" / "alex").exists()


def test_a_tombstone_refuses_its_text_only_in_its_own_scope(ws: Workspace) -> None:
    root = ws.root
    text = "Keep all my Venmo payments public."
    stone = _unit(
        "ace-00000000d1", text, scope=BLAIR, status="tombstoned", reason="rejected in review"
    )
    blair = MemoryApplier(ws, BLAIR)
    assert blair.apply([Op(op="add", unit=stone)], load_units(root)).applied
    blair.done()

    again = blair.apply(
        [Op(op="add", unit=_unit("ace-00000000d2", text, scope=BLAIR))], load_units(root)
    )
    blair.done()
    assert not again.applied and "rejected in review" in again.refused[0].reason

    alex = MemoryApplier(ws, ALEX)
    mine = alex.apply(
        [Op(op="add", unit=_unit("ace-00000000d3", text, scope=ALEX))], load_units(root)
    )
    alex.done()
    assert not mine.refused and mine.paths == ["memory/alex/ace-00000000d3.md"]


def test_review_commits_carry_the_units_user(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    _json(capsys, "train", "--persona", "blair", "--review", "--episodes", "8")
    items = _json(capsys, "review", "list")
    assert items and {i["scope"] for i in items} == {BLAIR}
    code, _, err = _cli(capsys, "review", "approve", items[0]["id"])
    assert code == 0, err
    assert run_git(root, "show", "--name-only", "--format=", "HEAD").split() == [
        f"memory/blair/{items[0]['id']}.md"
    ]
    assert "Evolve-Persona: blair" in run_git(root, "log", "-1", "--format=%B")
    assert _json(capsys, "memory", "--persona", "alex")["memory"] == ""
    assert items[0]["text"] in _json(capsys, "memory", "--persona", "blair")["memory"]
