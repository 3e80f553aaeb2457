"""A skill's counters live in its shelf folder's sidecar (for the scoreboard), apart from its file."""

from __future__ import annotations

from evolve.applier import MemoryApplier
from evolve.history import revert
from evolve.memory import dump_unit, load_units, load_units_at
from evolve.ops import Op
from evolve.workspace import Workspace
from factories import skill


def test_a_count_op_on_a_skill_writes_its_shelf_sidecar_and_reverts(workspace: Workspace) -> None:
    unit = skill("sk-1", "Read the payment back before completing the task.", topic="venmo")
    general = skill("sk-2", "Read the changed item back before completing the task.")
    for u in (unit, general):
        path = workspace.root / str(u.path())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(u), encoding="utf-8")
    store = workspace.store
    store.commit([str(unit.path()), str(general.path())], "hand: two skills")
    units = load_units(workspace.root)
    applier = MemoryApplier(workspace, "global")
    result = applier.apply(
        [Op(op="count", unit=unit.with_(helpful=2)), Op(op="count", unit=general.with_(harmful=1))],
        units,
    )
    assert result.paths == [
        "memory/skills/general/_counters.yaml",
        "memory/skills/topics/venmo/_counters.yaml",
    ]
    sha = store.commit(result.paths, "count")
    applier.done()
    assert sha is not None
    now = {u.id: u for u in load_units(workspace.root)}
    assert now["sk-1"].helpful == 2 and now["sk-2"].harmful == 1
    at = {u.id: u for u in load_units_at(store, sha)}
    assert at["sk-1"].helpful == 2 and at["sk-2"].harmful == 1
    # the unit files did not change; a revert takes the evidence back
    assert store.read(sha, str(unit.path())) == dump_unit(unit).encode("utf-8")
    done = revert(workspace, sha)
    assert sorted(ident for ident, *_ in done.counters) == ["sk-1", "sk-2"]
    back = {u.id: u for u in load_units(workspace.root)}
    assert not back["sk-1"].helpful and not back["sk-2"].harmful
