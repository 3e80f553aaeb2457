"""Reverting any update (issue 8 item 4): counter moves never block a revert, `--cascade`
reverts the later commits that changed the same units, reactivations are tombstoned, a plain
`git revert` gets its tombstones, and a revert can itself be reverted."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from revert_helpers import episode_commit as _episode
from revert_helpers import units_by_id as _units

from conftest import one_sentence as _one_sentence
from conftest import run_cli as _cli
from conftest import workspace_state as _state
from evolve.applier import Op
from evolve.history import revert
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import MemoryUnit, load_units, load_units_at
from evolve.memory._similarity import normalize
from evolve.train import train
from evolve.updaters import RECIPES, render_for
from evolve.workspace import Workspace

RunGit = Callable[..., str]
ALEX = "user:alex"
FRIENDS = "Set my Venmo payments to friends-only visibility."
PUBLIC = "Keep all my Venmo payments public."
SIGNOFF = "Sign every text message with 'Cheers, Alex'."
GIT_REVERT = "Evolve-Git-Revert"


def _bullet(uid: str, text: str, episode: int, **fields: object) -> MemoryUnit:
    data: dict[str, object] = {
        "id": uid,
        "recipe": "ace",
        "kind": "bullet",
        "scope": ALEX,
        "created_episode": episode,
        "updated_episode": episode,
        "helpful": 0,
        "harmful": 0,
        "text": text,
    }
    data.update(fields)
    return MemoryUnit.model_validate(data)


def _memory(ws: Workspace) -> str:
    """Rendered memory with every recipe's units (the workspace renders only `train.recipe`)."""
    return render_for(load_units(ws.root), ALEX, RECIPES)


def _trailers(root: Path, run_git: RunGit, rev: str) -> dict[str, str]:
    block = run_git(root, "log", "-1", "--format=%(trailers:only=true,unfold=true)", rev)
    return {k: v.strip() for k, _, v in (line.partition(": ") for line in block.splitlines()) if v}


class Proposer:
    """A scripted ACE updater: adds `text` (if set), may modify the first bullet into
    `modify_to`, and may tag the first bullet helpful."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.modify_to: str | None = None
        self.tag = False

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        ids = re.findall(r"^\[(ace-[0-9a-f]+)\]", messages[-1].content, re.M)
        ops: list[dict[str, str]] = []
        if self.text:
            ops.append({"op": "add", "text": self.text})
        if self.modify_to and ids:
            ops.append({"op": "modify", "id": ids[0], "text": self.modify_to})
        tags = [{"id": ids[0], "tag": "helpful"}] if self.tag and ids else []
        return json.dumps({"operations": ops, "bullet_tags": tags})


# --- counter moves never block a revert -----------------------------------------------------


def test_an_old_ace_commit_reverts_after_later_counter_only_commits(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    proposer = Proposer()
    proposer.text, proposer.tag = FRIENDS, True
    report = train(ws, recipe="ace", episodes=6, updater_llm=MockLLM(proposer))
    first, *later = report.commits
    assert len(later) >= 2, "each later episode only tags the bullet"
    friends = next(u for u in load_units(root) if u.text == FRIENDS)
    for sha in later:  # the later commits move counters in the sidecar, never the unit file
        changed = run_git(root, "show", "--name-only", "--format=", sha).split()
        assert changed == ["memory/alex/_counters.yaml"], f"{friends.id} rewritten"
    assert (_units(ws)[friends.id].helpful or 0) >= 2

    code, out, err = _cli(capsys, "revert", first, "--reason", "not what I said")
    assert code == 0, err
    stone = _units(ws)[friends.id]
    assert stone.status == "tombstoned" and stone.reverted_commit == first
    assert FRIENDS not in _memory(ws)
    assert _trailers(root, run_git, "HEAD")["Evolve-Ops"] == f"tombstone={friends.id}"

    # The same text proposed again is refused and never renders.
    proposer.tag = False
    again = train(ws, recipe="ace", episodes=12, updater_llm=MockLLM(proposer))
    assert any("tombstoned" in line for o in again.outcomes for line in o.refused)
    assert FRIENDS not in _memory(ws)


def test_a_commit_that_only_moved_counters_reverts_by_moving_them_back(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    proposer = Proposer()
    proposer.text, proposer.tag = FRIENDS, True
    report = train(ws, recipe="ace", episodes=4, updater_llm=MockLLM(proposer))
    counter_only = report.commits[-1]
    friends = next(u for u in load_units(ws.root) if u.text == FRIENDS)
    helpful = _units(ws)[friends.id].helpful or 0
    code, out, err = _cli(capsys, "revert", counter_only)
    assert code == 0, err
    assert (_units(ws)[friends.id].helpful or 0) == helpful - 1
    assert _units(ws)[friends.id].status == "active" and FRIENDS in _memory(ws)
    assert _trailers(ws.root, run_git, "HEAD")["Evolve-Ops"] == f"count={friends.id}"


# --- a later change of text or status: refusal, then --cascade ------------------------------


def _modified_later(ws: Workspace) -> tuple[str, str, str]:
    """Episode 0 adds FRIENDS; episode 1 rewrites that bullet into PUBLIC in place; episode 2
    only tags it."""
    a = _bullet("ace-000000000a", FRIENDS, 0)
    first = _episode(ws, 0, [Op(op="add", unit=a)])
    changed = a.with_(text=PUBLIC, updated_episode=1)
    second = _episode(ws, 1, [Op(op="modify", unit=changed)])
    _episode(ws, 2, [Op(op="tag", unit=changed.with_(helpful=1, updated_episode=2))])
    return first, second, a.id


def test_a_later_text_change_is_named_and_cascade_reverts_both_in_one_commit(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    first, second, unit_id = _modified_later(ws)
    before = _state(root, run_git)
    code, out, err = _cli(capsys, "revert", first, "--reason", "wrong")
    assert code == 1 and out == ""
    sentence = _one_sentence(err)
    assert second[:10] in sentence and "memory/alex/ace-000000000a.md" in sentence
    assert f"evolve revert {first[:10]} --cascade" in sentence
    assert "1 later commit" in sentence
    assert _state(root, run_git) == before
    old_head = run_git(root, "rev-parse", "HEAD").strip()

    code, out, err = _cli(capsys, "revert", first, "--cascade", "--reason", "wrong", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["commits"] == [second, first]
    assert run_git(root, "rev-parse", "HEAD^").strip() == old_head  # one new commit
    trailers = _trailers(root, run_git, "HEAD")
    assert trailers["Evolve-Kind"] == "cascade revert"
    assert trailers["Evolve-Reverts"] == f"{second} {first}"
    units = _units(ws)
    assert {u.status for u in units.values()} == {"tombstoned"}
    assert {normalize(u.text) for u in units.values()} == {normalize(FRIENDS), normalize(PUBLIC)}
    assert units[f"{unit_id}-t{second[:7]}"].reverted_commit == second
    assert units[f"{unit_id}-t{second[:7]}"].text == PUBLIC
    assert units[unit_id].reverted_commit == first and units[unit_id].text == FRIENDS
    memory = _memory(ws)
    assert FRIENDS not in memory and PUBLIC not in memory
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""


def test_an_update_replaced_since_reverts_alone_and_keeps_the_correction(
    ws: Workspace, run_git: RunGit
) -> None:
    """A later modify retired the bullet (revoked it for a new one): undoing the add needs
    nothing from that later commit, so it reverts alone and the correction stays."""
    a = _bullet("ace-000000000a", FRIENDS, 0)
    first = _episode(ws, 0, [Op(op="add", unit=a)])
    b = _bullet("ace-000000000b", PUBLIC, 1, supersedes=a.id)
    revoked = a.with_(status="revoked", revoked_by=b.id, revoked_at=1, updated_episode=1)
    _episode(ws, 1, [Op(op="revoke", unit=revoked), Op(op="add", unit=b)])
    result = revert(ws, first, reason="never said it")
    assert result.commits == [first]
    units = _units(ws)
    assert units[a.id].status == "tombstoned" and units[a.id].text == FRIENDS
    assert units[b.id].status == "active"
    assert PUBLIC in _memory(ws) and FRIENDS not in _memory(ws)


def test_tepa_episode_0_reverts_alone_and_is_not_relearned(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    report = train(ws, recipe="tepa", episodes=30)
    by_episode = {
        int(_trailers(root, run_git, sha)["Evolve-Episode"]): sha for sha in report.commits
    }
    first = by_episode[0]
    taught = {
        normalize(u.text)
        for u in load_units_at(ws.store, first)
        if u.status == "active" and u.recipe == "tepa"
    }
    # A later episode revoked episode 0's precedent and a later one reactivated it: it means
    # again what episode 0 left, so episode 0 reverts alone (no --cascade needed).
    touched = run_git(root, "log", "--format=%H", f"{first}..HEAD", "--", "memory/alex").split()
    assert len(touched) >= 2
    result = revert(ws, first, reason="start over")
    assert result.commits == [first]
    memory = _memory(ws)
    for u in load_units(root):
        if normalize(u.text) in taught:
            assert u.status != "active", u
            assert u.text not in memory
    stoned = {normalize(u.text) for u in load_units(root) if u.status == "tombstoned"}
    assert taught <= stoned

    # The next 20 episodes propose those precedents again: all refused, none comes back.
    train(ws, recipe="tepa", episodes=50)
    for u in load_units(root):
        if normalize(u.text) in taught:
            assert u.status in ("tombstoned", "revoked"), u


# --- reactivations, git revert, revert of a revert ------------------------------------------


def test_a_revert_of_a_reactivation_tombstones_it(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _bullet("ace-000000000a", FRIENDS, 0)
    _episode(ws, 0, [Op(op="add", unit=a)])
    b = _bullet("ace-000000000b", PUBLIC, 1, supersedes=a.id)
    revoked_a = a.with_(status="revoked", revoked_by=b.id, revoked_at=1, updated_episode=1)
    _episode(ws, 1, [Op(op="revoke", unit=revoked_a), Op(op="add", unit=b)])
    back = a.with_(updated_episode=2)
    revoked_b = b.with_(status="revoked", revoked_by=a.id, revoked_at=2, updated_episode=2)
    third = _episode(ws, 2, [Op(op="reactivate", unit=back), Op(op="revoke", unit=revoked_b)])
    assert FRIENDS in _memory(ws) and PUBLIC not in _memory(ws)

    result = revert(ws, third, reason="keep it public")
    (stone,) = result.tombstones
    assert stone.text == FRIENDS and stone.id != a.id and stone.reverted_commit == third
    units = _units(ws)
    assert units[a.id].status == "revoked" and units[b.id].status == "active"
    assert PUBLIC in _memory(ws) and FRIENDS not in _memory(ws)

    # The ACE recipe re-adds FRIENDS: it would reactivate it and revoke PUBLIC. The tombstone
    # refuses the reactivation, and the revoke that goes with it: PUBLIC stays.
    proposer = Proposer()
    proposer.text = FRIENDS
    report = train(ws, recipe="ace", episodes=4, updater_llm=MockLLM(proposer))
    refused = [line for o in report.outcomes for line in o.refused]
    assert any("reactivate" in line and "tombstoned" in line for line in refused), refused
    assert any(line.startswith("refused revoke") for line in refused), refused
    units = _units(ws)
    assert units[a.id].status == "revoked" and units[b.id].status == "active"
    assert PUBLIC in _memory(ws) and FRIENDS not in _memory(ws)


def test_a_plain_git_revert_is_recognised_and_gets_its_tombstones(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    proposer = Proposer()
    proposer.text = PUBLIC
    report = train(ws, recipe="ace", episodes=2, updater_llm=MockLLM(proposer))
    (taught,) = report.commits
    public_id = next(u.id for u in load_units(root) if u.text == PUBLIC)
    run_git(root, "revert", "--no-edit", taught)
    git_commit = run_git(root, "rev-parse", "HEAD").strip()
    assert public_id not in _units(ws)

    # The next training run adds the tombstones before its first episode, then refuses the text.
    again = train(ws, recipe="ace", episodes=6, updater_llm=MockLLM(proposer))
    shas = run_git(root, "log", "--format=%H", f"{git_commit}..HEAD").split()
    marked = [s for s in shas if _trailers(root, run_git, s).get(GIT_REVERT) == git_commit]
    assert len(marked) == 1
    trailers = _trailers(root, run_git, marked[0])
    assert trailers["Evolve-Reverts"] == taught and trailers["Evolve-Kind"] == "revert"
    assert trailers["Evolve-Ops"] == f"tombstone={public_id}"
    assert "git revert" in run_git(root, "log", "-1", "--format=%B", marked[0])
    stone = _units(ws)[public_id]
    assert stone.status == "tombstoned" and stone.reverted_commit == taught
    assert any("tombstoned" in line for o in again.outcomes for line in o.refused)
    assert PUBLIC not in _memory(ws)

    # Once is enough: the marker keeps a second run from adding them again.
    train(ws, recipe="ace", episodes=8, updater_llm=MockLLM(proposer))
    assert len(run_git(root, "log", "--format=%H", f"--grep={GIT_REVERT}").split()) == 1

    # `evolve revert` of the same commit says it is already reverted, and by what.
    code, out, err = _cli(capsys, "revert", taught)
    assert code == 1 and f"already reverted by {marked[0][:10]}" in _one_sentence(err)


def test_a_revert_of_a_revert_lifts_its_tombstones_and_restores_the_units(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    proposer = Proposer()
    proposer.text = PUBLIC
    (taught,) = train(ws, recipe="ace", episodes=2, updater_llm=MockLLM(proposer)).commits
    public_id = next(u.id for u in load_units(root) if u.text == PUBLIC)
    path = f"memory/alex/{public_id}.md"
    first = revert(ws, taught, reason="oops")
    assert _units(ws)[public_id].status == "tombstoned"

    code, out, err = _cli(capsys, "revert", first.commit, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["lifted"] == [public_id] and data["tombstones"] == []
    assert (root / path).read_text("utf-8") == run_git(root, "show", f"{taught}:{path}")
    assert PUBLIC in _memory(ws)
    assert not [u for u in load_units(root) if u.status == "tombstoned"]
    assert _trailers(root, run_git, "HEAD")["Evolve-Ops"] == f"lift={public_id}"

    # The update is live again, so it can be reverted again.
    again = revert(ws, taught, reason="really")
    assert [t.id for t in again.tombstones] == [public_id]
    assert PUBLIC not in _memory(ws)


# --- the rewrite document: a line-level undo ------------------------------------------------


def _lines(text: str) -> set[str]:
    return {normalize(line) for line in text.splitlines() if line.strip()}


@pytest.mark.slow
def test_an_old_rewrite_reverts_alone_by_its_lines_and_they_are_not_relearned(
    ws: Workspace, run_git: RunGit
) -> None:
    root = ws.root
    path = "memory/alex/rewrite-document.md"
    report = train(ws, recipe="rewrite", episodes=30)
    assert len(report.commits) >= 4
    # An older rewrite that added a line, with later rewrites on top of it.
    target, added = "", set()
    for sha in report.commits[1:-2]:
        before = _lines(run_git(root, "show", f"{sha}^:{path}").split("---\n", 2)[2])
        after = _lines(run_git(root, "show", f"{sha}:{path}").split("---\n", 2)[2])
        if after - before:
            target, added = sha, after - before
            break
    assert target, "a rewrite that added a line"
    result = revert(ws, target, reason="not me")
    assert result.commits == [target]
    (stone,) = result.tombstones
    assert _lines(stone.text) == added
    memory = _memory(ws)
    assert not added & _lines(memory)
    assert memory, "the other lines of today's document stay"

    # The rewrite model proposes the document with the line again: the line is refused.
    again = train(ws, recipe="rewrite", episodes=50)
    refused = [line for o in again.outcomes for line in o.refused]
    assert any(r.startswith("refused line") and "tombstoned" in r for r in refused), refused
    assert not added & _lines(_memory(ws))


def test_the_counter_sidecar_is_evidence_never_a_conflict_and_never_restored(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    a = _bullet("ace-000000000a", FRIENDS, 0)
    first = _episode(ws, 0, [Op(op="add", unit=a)])
    sidecar = root / "memory" / "alex" / "_counters.yaml"
    for n in (1, 2):  # later episodes only move counters, in the sidecar
        sidecar.write_text(f"ace-000000000a:\n  harmful: 0\n  helpful: {n}\n", "utf-8")
        run_git(root, "add", "memory")
        run_git(root, "commit", "-q", "-m", f"ace: episode {n}: counters")
    counters_only = run_git(root, "rev-parse", "HEAD").strip()

    assert run_git(root, "rev-parse", "HEAD").strip() == counters_only
    result = revert(ws, first)
    assert [t.id for t in result.tombstones] == [a.id]
    assert sidecar.read_text("utf-8").endswith("helpful: 2\n")  # evidence kept
    assert "_counters.yaml" not in run_git(root, "show", "--name-only", "--format=", "HEAD")
