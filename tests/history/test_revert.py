"""`evolve revert REV --reason TEXT`: a new commit, exact files, tombstones, refusals after."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import one_sentence as _one_sentence
from conftest import run_cli as _cli
from conftest import workspace_state as _state
from evolve.applier import MemoryApplier, Op
from evolve.errors import EvolveError
from evolve.evaluate import agent_memory, open_env
from evolve.history import memory_as_of, revert
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import MemoryUnit, load_units, parse_unit
from evolve.memory._similarity import normalize
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
ALEX = "user:alex"
FRIENDS = "Set my Venmo payments to friends-only visibility."
PUBLIC = "Keep all my Venmo payments public."
REASON = "I never said that"


class Updater:
    """A scripted ACE updater: proposes `text` (if any) and may tag the oldest bullet helpful."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.modify_to: str | None = None
        self.tag = False

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        ops: list[dict[str, str]] = [{"op": "add", "text": self.text}] if self.text else []
        if self.modify_to:
            shown = re.findall(r"^\[(ace-[0-9a-f]{10})\]", messages[-1].content, re.M)
            ops += [{"op": "modify", "id": shown[0], "text": self.modify_to}] if shown else []
        tags = []
        ids = re.findall(r"^\[(ace-[0-9a-f]{10})\]", messages[-1].content, re.M)
        if self.tag:
            tags = [{"id": ids[0], "tag": "helpful"}] if ids else []
        return json.dumps({"operations": ops, "bullet_tags": tags})


@dataclass
class Taught:
    updater: Updater
    llm: MockLLM
    friends_commit: str
    public_commit: str
    public_id: str


def _teach(ws: Workspace) -> Taught:
    """Episode 0 learns the right visibility; a later episode learns a wrong one."""
    updater = Updater()
    llm = MockLLM(updater)
    updater.text = FRIENDS
    first = train(ws, recipe="ace", episodes=2, updater_llm=llm)
    assert len(first.commits) == 1, "the same bullet again is a duplicate: no second commit"
    updater.text = PUBLIC
    second = train(ws, recipe="ace", episodes=5, updater_llm=llm)
    assert len(second.commits) == 1
    public_id = next(u.id for u in load_units(ws.root) if u.text == PUBLIC)
    return Taught(updater, llm, first.commits[0], second.commits[0], public_id)


def _trailers(root: Path, run_git: RunGit, rev: str) -> dict[str, str]:
    block = run_git(root, "log", "-1", "--format=%(trailers:only=true,unfold=true)", rev)
    return {k: v.strip() for k, _, v in (line.partition(": ") for line in block.splitlines()) if v}


def _unit_at(root: Path, run_git: RunGit, rev: str, path: str) -> MemoryUnit:
    return parse_unit(path, run_git(root, "show", f"{rev}:{path}"))


def _bodies(root: Path, run_git: RunGit, revs: str) -> list[str]:
    return [b for b in run_git(root, "log", "--format=%B%x1e", revs).split("\x1e") if b.strip()]


# --- what a revert does ---------------------------------------------------------------------


def test_revert_is_a_new_commit_that_restores_the_files_and_tombstones_what_was_added(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    taught = _teach(ws)
    target = taught.public_commit
    old_head = run_git(root, "rev-parse", "HEAD").strip()
    old_history = run_git(root, "rev-list", "HEAD").split()
    added = _unit_at(root, run_git, target, f"memory/alex/{taught.public_id}.md")
    assert PUBLIC in agent_memory(ws, open_env(ws), "alex", "recipe")

    code, out, err = _cli(capsys, "revert", target[:12], "--reason", REASON)
    assert code == 0, err
    head = run_git(root, "rev-parse", "HEAD").strip()
    assert f"reverted {target[:10]} in {head[:10]}" in out
    assert f"tombstoned {taught.public_id}: {PUBLIC}" in out

    # A new commit on top: nothing rewritten, the reverted commit is still an ancestor.
    assert run_git(root, "rev-parse", "HEAD^").strip() == old_head
    assert run_git(root, "rev-list", "HEAD").split()[1:] == old_history
    run_git(root, "merge-base", "--is-ancestor", target, "HEAD")
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""

    # The tree is the tree before the commit, plus the tombstone where the unit was.
    path = f"memory/alex/{taught.public_id}.md"
    assert run_git(root, "diff", "--name-only", f"{target}^", "HEAD").split() == [path]
    stone = parse_unit(path, (root / path).read_text("utf-8"))
    assert stone.status == "tombstoned"
    assert stone.text == PUBLIC and stone.key == added.key and stone.id == added.id
    assert stone.reason == REASON and stone.reverted_commit == target
    assert stone.valid_to and stone.scope == ALEX

    trailers = _trailers(root, run_git, "HEAD")
    assert trailers["Evolve-Kind"] == "revert"
    assert trailers["Evolve-Reverts"] == target
    assert trailers["Evolve-Ops"] == f"tombstone={taught.public_id}"
    body = run_git(root, "log", "-1", "--format=%B").strip()
    assert f"Reason: {REASON}" in body and PUBLIC in body

    memory = agent_memory(ws, open_env(ws), "alex", "recipe")
    assert PUBLIC not in memory and FRIENDS in memory
    assert memory == memory_as_of(ws.store, f"{target}^", ALEX)[1]

    code, out, err = _cli(capsys, "log", "--json", "-n", "1")
    assert code == 0, err
    (entry,) = json.loads(out)
    assert entry["commit"] == head and entry["trailers"]["Evolve-Reverts"] == target
    assert entry["ops"] == [{"op": "tombstone", "id": taught.public_id}]


@pytest.mark.slow
def test_revert_restores_a_changed_unit_exactly_and_tombstones_its_new_text(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    path = "memory/alex/rewrite-document.md"

    def lines_added(commit: str) -> bool:
        """Whether the rewrite at `commit` added a line (a lossy rewrite may only drop some)."""
        had = parse_unit(path, run_git(root, "show", f"{commit}^:{path}")).text.splitlines()
        now = parse_unit(path, run_git(root, "show", f"{commit}:{path}")).text.splitlines()
        return bool({normalize(x) for x in now} - {normalize(x) for x in had})

    # Train until the last commit is a rewrite that added a line (12 episodes, then more).
    commits = train(ws, recipe="rewrite", episodes=12).commits
    for episodes in range(13, 40):
        if len(commits) > 1 and lines_added(commits[-1]):
            break
        commits += train(ws, recipe="rewrite", episodes=episodes).commits
    target = commits[-1]
    assert len(commits) > 1 and lines_added(target)
    assert run_git(root, "diff", "--name-only", f"{target}^", target).split() == [path]
    before, after = (
        run_git(root, "show", f"{target}^:{path}"),
        run_git(root, "show", f"{target}:{path}"),
    )
    assert normalize(parse_unit(path, before).text) != normalize(parse_unit(path, after).text)

    code, _, err = _cli(capsys, "revert", target, "--reason", "too long")
    assert code == 0, err
    assert (root / path).read_text("utf-8") == before  # byte for byte
    stone_id = f"rewrite-document-t{target[:7]}"
    stone_path = f"memory/alex/{stone_id}.md"
    # Only the tombstone differs from the tree before the commit.
    assert run_git(root, "diff", "--name-only", f"{target}^", "HEAD").split() == [stone_path]
    assert run_git(root, "show", f"HEAD:{path}") == before
    stone = parse_unit(stone_path, (root / stone_path).read_text("utf-8"))
    # A document's tombstone holds the lines the reverted rewrite added.
    had = {normalize(line) for line in parse_unit(path, before).text.splitlines()}
    added = [
        line for line in parse_unit(path, after).text.splitlines() if normalize(line) not in had
    ]
    assert added and stone.status == "tombstoned" and stone.text == "\n".join(added)
    assert stone.reason == "too long" and stone.reverted_commit == target
    assert _trailers(root, run_git, "HEAD")["Evolve-Ops"].split()[-1] == f"tombstone={stone_id}"
    assert (
        agent_memory(ws, open_env(ws), "alex", "recipe")
        == memory_as_of(ws.store, f"{target}^", ALEX)[1]
    )


def test_revert_tombstones_every_added_unit_with_its_key(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    report = train(ws, recipe="tepa", episodes=1)
    (target,) = report.commits
    added = {u.id: u for u in load_units(root)}
    assert len(added) >= 2 and all(u.key for u in added.values())

    code, out, err = _cli(capsys, "revert", target, "--reason", "start over")
    assert code == 0, err
    stones = {u.id: u for u in load_units(root)}
    assert set(stones) == set(added)
    for uid, stone in stones.items():
        assert stone.status == "tombstoned"
        assert (stone.text, stone.key) == (added[uid].text, added[uid].key)
        assert stone.reason == "start over" and stone.reverted_commit == target
        assert f"tombstoned {uid}" in out
    ops = _trailers(root, run_git, "HEAD")["Evolve-Ops"].split()
    assert sorted(ops) == sorted(f"tombstone={uid}" for uid in added)
    assert agent_memory(ws, open_env(ws), "alex", "recipe") == ""

    # The sim updater proposes the same precedents again: each is refused, none comes back.
    again = train(ws, recipe="tepa", episodes=6)
    refused = [line for o in again.outcomes for line in o.refused]
    assert any(f"tombstoned by {target[:10]} (start over)" in line for line in refused), refused
    texts = {normalize(u.text) for u in added.values()}
    for unit in load_units(root):
        if normalize(unit.text) in texts:
            assert unit.status == "tombstoned", unit


def test_revert_of_a_prompt_commit_restores_the_prompt_file(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    system = root / "prompts" / "system.md"
    original = system.read_bytes()
    system.write_bytes(original + b"\nAnswer in one word.\n")
    run_git(root, "commit", "-q", "-am", "prompts: one word")
    target = run_git(root, "rev-parse", "HEAD").strip()

    code, out, err = _cli(capsys, "revert", target, "--reason", "too terse")
    assert code == 0, err
    assert "tombstoned" not in out
    assert system.read_bytes() == original
    assert run_git(root, "diff", "--name-only", f"{target}^", "HEAD") == ""
    assert run_git(root, "rev-parse", "HEAD^").strip() == target
    trailers = _trailers(root, run_git, "HEAD")
    assert trailers["Evolve-Kind"] == "revert" and trailers["Evolve-Reverts"] == target
    assert "tombstone=" not in trailers.get("Evolve-Ops", "")


def test_the_applier_refuses_a_tombstoned_text(ws: Workspace) -> None:
    taught = _teach(ws)
    revert(ws, taught.public_commit, reason=REASON)
    again = MemoryUnit(
        id="ace-aaaaaaaaaa",
        recipe="ace",
        kind="bullet",
        scope=ALEX,
        text="keep ALL my venmo payments public",
    )
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply([Op(op="add", unit=again)], load_units(ws.root))
    applier.done()
    assert not result.applied and not result.paths
    (refusal,) = result.refused
    assert "tombstoned" in refusal.reason and REASON in refusal.reason
    assert taught.public_commit[:10] in refusal.reason and taught.public_id in refusal.reason
    assert not (ws.root / "memory" / "alex" / "ace-aaaaaaaaaa.md").exists()


@pytest.mark.slow
def test_a_refused_proposal_of_the_reverted_text_is_logged_in_the_next_commit(
    ws: Workspace, run_git: RunGit
) -> None:
    root = ws.root
    taught = _teach(ws)
    result = revert(ws, taught.public_commit, reason=REASON)
    taught.updater.tag = True  # something else changes, so each episode commits
    report = train(ws, recipe="ace", episodes=10, updater_llm=taught.llm)
    assert report.commits, "tagging a bullet makes a commit"
    line = (
        f"- refused add '{PUBLIC}': tombstoned by {taught.public_commit[:10]} ({REASON}): "
        f"{taught.public_id}"
    )
    for outcome in report.outcomes:
        if outcome.commit:
            assert outcome.refused, outcome
            body = run_git(root, "log", "-1", "--format=%B", outcome.commit)
            assert "\nRefused:\n" in body and line in body.splitlines(), body
    bodies = _bodies(root, run_git, f"{result.commit}..HEAD")
    assert len(bodies) == len(report.commits)
    actives = [u for u in load_units(root) if normalize(u.text) == normalize(PUBLIC)]
    assert [u.status for u in actives] == ["tombstoned"]
    assert PUBLIC not in agent_memory(ws, open_env(ws), "alex", "recipe")


def test_a_refusal_alone_is_still_logged(ws: Workspace, run_git: RunGit) -> None:
    root = ws.root
    taught = _teach(ws)
    result = revert(ws, taught.public_commit, reason=REASON)
    report = train(ws, recipe="ace", episodes=8, updater_llm=taught.llm)
    assert any(o.refused for o in report.outcomes)
    logged = "\n".join(_bodies(root, run_git, f"{result.commit}..HEAD"))
    logged += "".join(p.read_text("utf-8") for p in ws.runs_dir.glob("train-*.jsonl"))
    assert f"tombstoned by {taught.public_commit[:10]}" in logged


# --- what a revert refuses ------------------------------------------------------------------


def test_revert_of_a_commit_a_later_commit_depends_on_stops_and_changes_nothing(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    updater = Updater()
    updater.text = FRIENDS
    (first,) = train(ws, recipe="ace", episodes=1, updater_llm=MockLLM(updater)).commits
    friends = next(u for u in load_units(root) if u.text == FRIENDS)
    path = f"memory/alex/{friends.id}.md"
    # A later commit changes the bullet's text in place (a counter move would not block).
    unit_file = root / path
    unit_file.write_text(unit_file.read_text("utf-8").replace(FRIENDS, PUBLIC), "utf-8")
    run_git(root, "commit", "-q", "-am", "hand: payments public")
    later = run_git(root, "rev-parse", "HEAD").strip()

    before = _state(root, run_git)
    code, out, err = _cli(capsys, "revert", first, "--reason", "no")
    assert code == 1 and out == ""
    sentence = _one_sentence(err)
    assert first[:10] in sentence and later[:10] in sentence and path in sentence
    subject = run_git(root, "log", "-1", "--format=%s", later).strip()
    assert subject in sentence
    assert _state(root, run_git) == before
    with pytest.raises(EvolveError, match=later[:10]):
        revert(ws, first)
    assert _state(root, run_git) == before


def _dirty_new(root: Path, run_git: RunGit, taught: Taught) -> str:
    (root / "memory" / "alex" / "scratch.md").write_text("A note I am still writing.\n", "utf-8")
    return taught.friends_commit


def _dirty_edit(root: Path, run_git: RunGit, taught: Taught) -> str:
    path = root / "memory" / "alex" / f"{taught.public_id}.md"
    path.write_text(path.read_text("utf-8").replace(PUBLIC, "Keep my payments public."), "utf-8")
    return taught.public_commit


def _unknown(root: Path, run_git: RunGit, taught: Taught) -> str:
    return "0123456789abcdef0123"


def _init(root: Path, run_git: RunGit, taught: Taught) -> str:
    return run_git(root, "rev-list", "--max-parents=0", "HEAD").strip()


def _reverted_already(root: Path, run_git: RunGit, taught: Taught) -> str:
    return taught.public_commit


def _not_memory(root: Path, run_git: RunGit, taught: Taught) -> str:
    (root / "NOTES.txt").write_text("mine\n", encoding="utf-8")
    run_git(root, "add", "NOTES.txt")
    run_git(root, "commit", "-q", "-m", "notes")
    return "HEAD"


BAD: dict[str, tuple[Callable[[Path, RunGit, Taught], str], str]] = {
    "unknown revision": (_unknown, "is not a commit"),
    "the init commit": (_init, "not a memory or prompt commit"),
    "a commit reverted already": (_reverted_already, "was already reverted by"),
    "a new file in memory/": (_dirty_new, "uncommitted changes"),
    "an edited unit file": (_dirty_edit, "uncommitted changes"),
    "a commit outside memory/": (_not_memory, "changed nothing in memory/"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD))
def test_revert_refuses_bad_input_with_one_sentence_and_changes_nothing(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    root = ws.root
    taught = _teach(ws)
    revert(ws, taught.public_commit, reason=REASON)
    # The undo above leaves the friends bullet alone, so only the case's problem remains.
    setup, expected = BAD[case]
    rev = setup(root, run_git, taught)
    before = _state(root, run_git)
    code, out, err = _cli(capsys, "revert", rev, "--reason", "whatever")
    assert code != 0 and out == ""
    assert expected in _one_sentence(err)
    assert _state(root, run_git) == before


def test_revert_without_a_reason_names_the_commit(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    taught = _teach(ws)
    code, out, err = _cli(capsys, "revert", taught.public_commit, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    assert data["reverted"] == taught.public_commit and data["commit"] == ws.store.head()
    assert data["tombstones"] == [{"id": taught.public_id, "text": PUBLIC}]
    stone = next(u for u in load_units(ws.root) if u.id == taught.public_id)
    assert stone.reason == f"reverted {taught.public_commit[:10]}"
