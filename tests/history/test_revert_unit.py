"""Per-unit revert and the dry run (issue 23 items 3 and 4): `evolve revert UNIT_ID` (or
`REV --unit ID`) takes back one unit's change and tombstones only it; `--dry-run` says
exactly what a revert would do and writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from revert_helpers import episode_commit as _episode
from revert_helpers import units_by_id as _units

from conftest import one_sentence as _one_sentence
from conftest import run_cli as _cli
from conftest import workspace_state as _state
from evolve.applier import Op
from evolve.errors import EvolveError
from evolve.history import revert
from evolve.memory import MemoryUnit, load_units
from evolve.workspace import Workspace

RunGit = Callable[..., str]
ALEX = "user:alex"
WRONG = "Pay with the card I used last."
RIGHT_1 = "Set my Venmo payments to friends-only visibility."
RIGHT_2 = "Sign every text message with 'Cheers, Alex'."
PUBLIC = "Keep all my Venmo payments public."


def _bullet(uid: str, text: str, episode: int, **fields: object) -> MemoryUnit:
    data: dict[str, object] = {
        "id": uid,
        "recipe": "ace",
        "kind": "bullet",
        "scope": ALEX,
        "created_episode": episode,
        "updated_episode": episode,
        "text": text,
    }
    data.update(fields)
    return MemoryUnit.model_validate(data)


def _trailers(root: object, run_git: RunGit, rev: str) -> dict[str, str]:
    block = run_git(root, "log", "-1", "--format=%(trailers:only=true,unfold=true)", rev)
    return {k: v.strip() for k, _, v in (line.partition(": ") for line in block.splitlines()) if v}


def _three_in_one(ws: Workspace) -> tuple[str, list[MemoryUnit]]:
    """One episode learns three bullets; a later one counts the first two helpful."""
    units = [
        _bullet("ace-00000000a1", WRONG, 0),
        _bullet("ace-00000000a2", RIGHT_1, 0),
        _bullet("ace-00000000a3", RIGHT_2, 0),
    ]
    sha = _episode(ws, 0, [Op(op="add", unit=u) for u in units])
    tags = [Op(op="tag", unit=u.with_(helpful=1, updated_episode=1)) for u in units[:2]]
    _episode(ws, 1, tags)
    return sha, units


def _active(ws: Workspace) -> dict[str, str]:
    return {u.id: u.text for u in load_units(ws.root) if u.status == "active"}


def test_one_wrong_bullet_is_reverted_alone_and_the_right_ones_stay(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    sha, (wrong, right_1, right_2) = _three_in_one(ws)
    before = _active(ws)
    code, out, err = _cli(capsys, "revert", wrong.id, "--reason", "not my card")
    assert code == 0, err
    assert out.startswith(f"reverted {wrong.id} from {sha[:10]} in ")
    units = _units(ws)
    assert units[wrong.id].status == "tombstoned" and units[wrong.id].reason == "not my card"
    assert _active(ws) == {k: v for k, v in before.items() if k != wrong.id}
    assert units[right_1.id].helpful == 1  # the other units' evidence is left alone
    trailers = _trailers(ws.root, run_git, "HEAD")
    assert trailers["Evolve-Units"] == wrong.id
    assert trailers["Evolve-Ops"] == f"tombstone={wrong.id}"
    assert trailers["Evolve-Reverts"] == sha

    # The rest of the commit can still be reverted; it leaves the unit already taken back.
    result = revert(ws, sha)
    assert {t.id for t in result.tombstones} == {right_1.id, right_2.id}
    assert _active(ws) == {}
    assert _units(ws)[wrong.id].reason == "not my card"


def test_rev_and_unit_take_back_the_units_counters_only(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _, (wrong, right_1, _) = _three_in_one(ws)
    counted = ws.store.head()
    assert counted is not None
    code, out, err = _cli(capsys, "revert", counted, "--unit", right_1.id)
    assert code == 0, err
    units = _units(ws)
    assert (units[right_1.id].helpful or 0) == 0 and units[wrong.id].helpful == 1
    ops = _trailers(ws.root, run_git, "HEAD")["Evolve-Ops"].split()
    assert f"count={right_1.id}" in ops and {o.split("=")[1] for o in ops} == {right_1.id}
    # A unit the commit did not change is refused in one sentence, nothing written.
    before = _state(ws.root, run_git)
    code, out, err = _cli(capsys, "revert", counted, "--unit", "ace-00000000a3")
    assert code != 0 and out == ""
    assert "did not change unit 'ace-00000000a3'" in _one_sentence(err)
    assert _state(ws.root, run_git) == before


def test_a_replacement_reverted_alone_brings_back_what_it_replaced(
    ws: Workspace, run_git: RunGit
) -> None:
    a = _bullet("ace-000000000a", RIGHT_1, 0)
    other = _bullet("ace-000000000c", RIGHT_2, 1)
    _episode(ws, 0, [Op(op="add", unit=a)])
    b = _bullet("ace-000000000b", PUBLIC, 1, supersedes=a.id)
    revoked = a.with_(status="revoked", revoked_by=b.id, revoked_at=1, updated_episode=1)
    sha = _episode(
        ws, 1, [Op(op="revoke", unit=revoked), Op(op="add", unit=b), Op(op="add", unit=other)]
    )
    result = revert(ws, b.id)
    assert result.commits == [sha] and result.units == [a.id, b.id]
    assert [t.id for t in result.tombstones] == [b.id]
    assert _active(ws) == {a.id: RIGHT_1, other.id: RIGHT_2}
    # ... and the per-unit revert is undone like any revert.
    revert(ws, result.commit)
    assert _active(ws) == {b.id: PUBLIC, other.id: RIGHT_2}


def test_a_unit_reverted_twice_is_refused_with_the_command_that_undoes_it(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    sha, (wrong, _, _) = _three_in_one(ws)
    first = revert(ws, sha, unit=wrong.id)
    code, out, err = _cli(capsys, "revert", sha, "--unit", wrong.id)
    assert code != 0
    assert f"`evolve revert {first.commit[:10]}` undoes that revert" in _one_sentence(err)


def test_dry_run_says_exactly_what_the_revert_does_and_writes_nothing(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    sha, (wrong, right_1, right_2) = _three_in_one(ws)
    counted = ws.store.head()
    before = _state(ws.root, run_git)
    code, out, err = _cli(capsys, "revert", sha, "--dry-run", "--json")
    assert code == 0, err
    preview = json.loads(out)
    assert preview["dry_run"] is True and preview["commit"] is None
    assert _state(ws.root, run_git) == before
    code, text, err = _cli(capsys, "revert", sha, "--dry-run")
    assert code == 0, err
    assert text.splitlines()[0] == f"would revert {sha[:10]} (dry run: nothing written)"
    for unit in (wrong, right_1, right_2):
        assert f"would tombstone {unit.id}: {unit.text}" in text
    assert _state(ws.root, run_git) == before

    code, out, err = _cli(capsys, "revert", sha, "--json")
    assert code == 0, err
    done = json.loads(out)
    for key in ("commits", "restored", "removed", "tombstones", "lifted", "counters", "units"):
        assert preview[key] == done[key], key
    assert run_git(ws.root, "rev-parse", "HEAD^").strip() == counted


# --- --cascade on the rewrite document ------------------------------------------------------


def _document(ws: Workspace, k: int, lines: list[str], **fields: object) -> str:
    data: dict[str, object] = {
        "id": "rewrite-document",
        "recipe": "rewrite",
        "kind": "document",
        "scope": ALEX,
        "created_episode": 0,
        "updated_episode": k,
        "text": "\n".join(lines),
    }
    data.update(fields)
    unit = MemoryUnit.model_validate(data)
    op = "add" if k == 0 else "modify"
    return _episode(ws, k, [Op(op=op, unit=unit)])


def test_cascade_on_a_rewrite_takes_back_only_what_blocks_the_line_level_undo(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _document(ws, 0, [RIGHT_1])
    wrong = _document(ws, 1, [RIGHT_1, WRONG])
    _document(ws, 2, [RIGHT_1, WRONG, RIGHT_2])  # a later rewrite of other lines
    _document(ws, 3, [RIGHT_1, RIGHT_2, PUBLIC])  # one that drops the wrong line itself
    code, out, err = _cli(capsys, "revert", wrong, "--cascade", "--dry-run", "--json")
    assert code == 0, err
    preview = json.loads(out)
    assert preview["commits"] == [wrong]  # no later rewrite goes with it
    result = revert(ws, wrong, cascade=True)
    assert result.commits == [wrong]
    assert [t.text for t in result.tombstones] == [WRONG]
    (doc,) = [u for u in load_units(ws.root) if u.status == "active"]
    assert doc.text.splitlines() == [RIGHT_1, RIGHT_2, PUBLIC]


def test_cascade_on_a_rewrite_takes_the_later_status_change_that_blocks_it(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _document(ws, 0, [RIGHT_1])
    wrong = _document(ws, 1, [RIGHT_1, WRONG])
    _document(ws, 2, [RIGHT_1, WRONG, RIGHT_2])
    pending = _document(ws, 3, [RIGHT_1, WRONG, RIGHT_2], status="pending")
    with pytest.raises(EvolveError, match="--cascade"):
        revert(ws, wrong, dry_run=True)
    code, out, err = _cli(capsys, "revert", wrong, "--cascade", "--dry-run")
    assert code == 0, err
    assert out.splitlines()[:2] == [
        f"would revert {wrong[:10]} (dry run: nothing written)",
        f"  would also revert {pending[:10]} (it changed the same units later)",
    ]
    result = revert(ws, wrong, cascade=True)
    assert result.commits == [pending, wrong]
