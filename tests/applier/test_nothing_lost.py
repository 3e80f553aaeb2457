"""Nothing lost as a side effect (issue 8 item 5): a revoke and the op that writes its
replacement are applied together or not at all; active knowledge only shrinks through an
explicit revoke, evict or tombstone that the commit names."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Sequence
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve.applier import MemoryApplier, Op
from evolve.evaluate import agent_memory, open_env
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.train import train
from evolve.workspace import Workspace, init_workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"
FRIENDS = "Set my Venmo payments to friends-only visibility."
EDITED = "Set my Venmo payments to friends only, never public."
PUBLIC = "Keep all my Venmo payments public."


_unit = partial(memory_unit, created_episode=0)


class Modifier:
    """An ACE updater: adds `add` (if set), or modifies the first bullet into `modify_to`."""

    def __init__(self) -> None:
        self.add: str | None = None
        self.modify_to: str | None = None

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        ops: list[dict[str, str]] = []
        if self.add:
            ops.append({"op": "add", "text": self.add})
        ids = re.findall(r"^\[(ace-[0-9a-f]{10})\]", messages[-1].content, re.M)
        if self.modify_to and ids:
            ops.append({"op": "modify", "id": ids[0], "text": self.modify_to})
        return json.dumps({"operations": ops, "bullet_tags": []})


def _dangling(units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
    ids = {u.id for u in units}
    return [u for u in units if u.revoked_by and u.revoked_by not in ids]


def test_hand_edit_then_modify_into_a_tombstoned_text_keeps_the_edited_unit(
    ws: Workspace, run_git: RunGit
) -> None:
    root = ws.root
    updater = Modifier()
    updater.add = FRIENDS
    train(ws, recipe="ace", episodes=1, updater_llm=MockLLM(updater))
    (unit,) = load_units(root)
    # A tombstone refuses PUBLIC (say, a revert long ago) ...
    stone = _unit("ace-00000stone", PUBLIC, status="tombstoned", reason="reverted by hand")
    (root / "memory/alex/ace-00000stone.md").write_text(dump_unit(stone), "utf-8")
    # ... and a person corrects the bullet by hand, committed with git.
    path = root / f"memory/alex/{unit.id}.md"
    path.write_text(path.read_text("utf-8").replace(FRIENDS, EDITED), "utf-8")
    run_git(root, "add", "memory")
    run_git(root, "commit", "-q", "-m", "hand: friends only, never public")

    # The updater modifies the edited bullet into the tombstoned text.
    updater.add, updater.modify_to = None, PUBLIC
    report = train(ws, recipe="ace", episodes=4, updater_llm=MockLLM(updater))
    refused = [line for o in report.outcomes for line in o.refused]
    assert any(line.startswith("refused add") and "tombstoned" in line for line in refused)
    assert any(
        line.startswith(f"refused revoke '{EDITED}'") and "which was refused" in line
        for line in refused
    ), refused
    units = {u.id: u for u in load_units(root)}
    kept = units[unit.id]
    assert kept.status == "active" and kept.text == EDITED and kept.revoked_by is None
    assert not _dangling(list(units.values()))
    assert EDITED in agent_memory(ws, open_env(ws), "alex", "recipe")
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    logged = "".join(p.read_text("utf-8") for p in ws.runs_dir.glob("train-*.jsonl"))
    assert "which was refused" in logged


def test_a_revoke_naming_a_replacement_that_does_not_exist_is_refused(workspace: Workspace) -> None:
    old = _unit("ace-a", FRIENDS)
    applier = MemoryApplier(workspace, ALEX)
    applier.apply([Op(op="add", unit=old)], [])
    applier.done()
    revoke = old.with_(status="revoked", revoked_by="ace-nowhere")
    result = applier.apply([Op(op="revoke", unit=revoke)], load_units(workspace.root))
    applier.done()
    (refusal,) = result.refused
    assert "its replacement ace-nowhere is not in memory" in refusal.reason
    assert load_units(workspace.root)[0].status == "active"


# --- the property ----------------------------------------------------------------------------

TEXTS = [
    FRIENDS,
    PUBLIC,
    "Sign every text with my first name.",
    "Pay with the card I use most often.",
    "Use bulleted lists in notes.",
    "x" * 320,  # over the ace cap of 300 characters per unit
]
STONED = {PUBLIC}
IDS = [f"ace-{c}" for c in "abcdefgh"]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[MemoryUnit], list[Op]]:
    """Starting units (some active, revoked and a tombstone) and a random batch of ops."""
    units: dict[str, MemoryUnit] = {"ace-stone": _unit("ace-stone", PUBLIC, status="tombstoned")}
    for uid in draw(st.lists(st.sampled_from(IDS[:5]), unique=True, max_size=5)):
        text = draw(st.sampled_from(TEXTS[2:5] + [FRIENDS]))
        units[uid] = _unit(uid, text, status=draw(st.sampled_from(["active", "revoked"])))
    ops: list[Op] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["add", "modify", "reactivate", "revoke", "evict", "stone"]))
        target = draw(st.sampled_from(IDS))
        text = draw(st.sampled_from(TEXTS))
        scope = draw(st.sampled_from([ALEX, ALEX, ALEX, "user:casey"]))
        current = units.get(target)
        if kind == "add":
            ops.append(Op(op="add", unit=_unit(target, text, scope=scope)))
        elif kind == "modify" and current is not None:
            new = draw(st.sampled_from(IDS))
            ops.append(Op(op="revoke", unit=current.with_(status="revoked", revoked_by=new)))
            ops.append(Op(op="add", unit=_unit(new, text, scope=scope, supersedes=target)))
        elif kind == "reactivate" and current is not None:
            ops.append(Op(op="reactivate", unit=current.with_(status="active", scope=scope)))
            other = draw(st.sampled_from(IDS))
            if other in units:
                ops.append(
                    Op(op="revoke", unit=units[other].with_(status="revoked", revoked_by=target))
                )
        elif kind == "revoke" and current is not None:
            by = draw(st.sampled_from([None, *IDS]))
            ops.append(Op(op="revoke", unit=current.with_(status="revoked", revoked_by=by)))
        elif kind == "evict" and current is not None:
            ops.append(Op(op="evict", unit=current))
        elif kind == "stone" and current is not None:
            ops.append(Op(op="tombstone", unit=current.with_(status="tombstoned")))
    return list(units.values()), draw(st.permutations(ops))


@pytest.fixture(scope="module")
def property_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return init_workspace(tmp_path_factory.mktemp("prop") / "ws")


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=scenarios())
def test_active_knowledge_only_shrinks_through_an_op_the_commit_names(
    property_ws: Workspace, scenario: tuple[list[MemoryUnit], list[Op]]
) -> None:
    ws = property_ws
    units, ops = scenario
    folder = ws.root / "memory" / "alex"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for u in units:
        (ws.root / u.path()).write_text(dump_unit(u), "utf-8")
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(ops, load_units(ws.root))
    applier.done()
    after = {u.id: u for u in load_units(ws.root)}
    before = {u.id: u for u in units}
    named = {(op.op, op.id) for op in result.applied}
    assert len(result.applied) + len(result.refused) == len(ops)

    for uid, u in before.items():
        if u.status != "active":
            continue
        now = after.get(uid)
        if now is not None and now.status == "active":
            continue
        # It went away: an applied op named it, and the op is one that may take knowledge away.
        assert {("revoke", uid), ("evict", uid), ("tombstone", uid)} & named, (uid, result)
    for u in after.values():
        if u.revoked_by and u.status == "revoked" and ("revoke", u.id) in named:
            replacement = after.get(u.revoked_by)
            assert replacement is not None and replacement.status == "active", (u, result)
        if u.status in ("active", "pending"):
            assert u.text not in STONED, u
            assert len(u.text) <= 300 or u.id in before, u
    revoked_now = [u for u in after.values() if ("revoke", u.id) in named]
    assert all(u.revoked_by is None or u.revoked_by in after for u in revoked_now)


def test_a_replacement_refused_by_a_tombstone_leaves_the_original_active(
    workspace: Workspace,
) -> None:
    old = _unit("ace-a", FRIENDS)
    (workspace.root / old.path()).parent.mkdir(parents=True, exist_ok=True)
    (workspace.root / old.path()).write_text(dump_unit(old), "utf-8")
    stone = _unit("ace-stone", PUBLIC, status="tombstoned")
    (workspace.root / stone.path()).write_text(dump_unit(stone), "utf-8")
    ops = [
        Op(op="revoke", unit=old.with_(status="revoked", revoked_by="ace-b")),
        Op(op="add", unit=_unit("ace-b", PUBLIC)),
    ]
    applier = MemoryApplier(workspace, ALEX)
    result = applier.apply(ops, load_units(workspace.root))
    applier.done()
    assert [r.op for r in result.refused] == ["revoke", "add"]
    assert {u.id: u.status for u in load_units(workspace.root)}["ace-a"] == "active"
