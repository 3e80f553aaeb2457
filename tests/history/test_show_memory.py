"""`evolve show UNIT_ID` (a unit and its history) and `evolve memory [--as-of] [--scope]`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from types import SimpleNamespace

import pytest

import evolve.store._git as git_module
from conftest import SpyLLM
from conftest import cli_json as _json
from conftest import one_sentence as _one_sentence
from conftest import run_cli as _cli
from conftest import workspace_state as _state
from evolve.agent import MEMORY_HEADER, section
from evolve.applier import MemoryApplier, Op
from evolve.evaluate import agent_memory, open_env, run_split
from evolve.history import revert
from evolve.llm import make_llm
from evolve.memory import dump_unit, load_units, parse_unit
from evolve.store import format_ops
from evolve.train import train
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"


_unit = partial(memory_unit, created_episode=0, updated_episode=0, helpful=0, harmful=0)


def _apply(ws: Workspace, ops: Sequence[Op], subject: str) -> str:
    """Write `ops` through the applier and commit them, as an episode would."""
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(ops, load_units(ws.root))
    assert not result.refused, result.refused
    sha = ws.store.commit(
        result.paths,
        subject,
        body="Complaint:\n  by hand",
        trailers=[("Evolve-Kind", "train"), ("Evolve-Ops", format_ops((o.op, o.id) for o in ops))],
    )
    applier.done()
    assert sha is not None
    return sha


# --- evolve show ------------------------------------------------------------------------------


def test_show_prints_the_unit_and_every_commit_that_touched_it_with_its_diff(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    train(ws, recipe="ace", episodes=30)
    touched: dict[str, list[str]] = {}
    for path in (root / "memory" / "alex").glob("*.md"):
        rel = path.relative_to(root).as_posix()
        touched[rel] = run_git(root, "log", "--format=%H", "--", rel).split()
    rel = max(sorted(touched), key=lambda p: len(touched[p]))
    commits = touched[rel]
    assert len(commits) >= 2, "a unit changed by several episodes is needed"
    unit = parse_unit(rel, (root / rel).read_text("utf-8"))

    code, out, err = _cli(capsys, "show", unit.id)
    assert code == 0, err
    assert unit.id in out.splitlines()[0] and rel in out.splitlines()[0]
    assert unit.text in out
    assert f"held from {unit.valid_from}" in out and "(still holds)" in out
    positions = []
    for sha in commits:
        patch = run_git(root, "show", "--format=", "--no-color", sha, "--", rel).strip()
        assert patch in out, f"the diff of {sha[:10]} is missing"
        positions.append(out.index(f"{sha[:10]} "))
    assert positions == sorted(positions)  # newest first, like git log

    data = _json(capsys, "show", unit.id)
    assert data["id"] == unit.id and data["path"] == rel
    assert data["unit"]["text"] == unit.text and data["unit"]["status"] == "active"
    assert [c["commit"] for c in data["commits"]] == commits
    for entry in data["commits"]:
        patch = run_git(root, "show", "--format=", "--no-color", entry["commit"], "--", rel)
        assert entry["diff"] == patch.strip()
        assert entry["trailers"]["Evolve-Recipe"] == "ace"


def test_show_tells_when_a_superseded_tepa_precedent_held(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    # alex's payment visibility changes at episode 12: the old precedent gets revoked.
    train(ws, recipe="tepa", episodes=30)
    revoked = [u for u in load_units(ws.root) if u.status == "revoked"]
    assert revoked, "thirty TEPA episodes across the drift revoke a precedent"
    old = revoked[0]
    assert old.valid_from and old.valid_to, old
    assert datetime.fromisoformat(old.valid_to) >= datetime.fromisoformat(old.valid_from)
    assert old.revoked_by and old.key
    new = next(u for u in load_units(ws.root) if u.id == old.revoked_by)
    assert new.status == "active" and new.key == old.key

    code, out, err = _cli(capsys, "show", old.id)
    assert code == 0, err
    assert f"held from {old.valid_from} to {old.valid_to}" in out
    assert f"revoked by {old.revoked_by} at episode {old.revoked_at}" in out
    data = _json(capsys, "show", old.id)
    assert data["unit"]["valid_to"] == old.valid_to and data["unit"]["status"] == "revoked"
    assert len(data["commits"]) >= 2  # learned, then revoked
    assert "+valid_to:" in data["commits"][0]["diff"]
    assert "+status: revoked" in data["commits"][0]["diff"]


def test_show_tells_when_a_hand_built_superseded_unit_held(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    start, end = "2025-01-02T03:04:05+00:00", "2025-02-03T04:05:06+00:00"
    old = _unit("ace-0000000001", "Keep all my Venmo payments private.", valid_from=start)
    _apply(ws, [Op(op="add", unit=old)], "ace: episode 0 (by hand): add 1")
    new = _unit(
        "ace-0000000002",
        "Set my Venmo payments to friends-only visibility.",
        valid_from=end,
        supersedes=old.id,
        created_episode=1,
    )
    gone = old.with_(status="revoked", revoked_by=new.id, revoked_at=1, valid_to=end)
    _apply(ws, [Op(op="add", unit=new), Op(op="revoke", unit=gone)], "ace: episode 1: revoke 1")

    code, out, err = _cli(capsys, "show", old.id)
    assert code == 0, err
    assert f"held from {start} to {end}" in out
    assert f"revoked by {new.id}" in out
    code, out, err = _cli(capsys, "show", new.id)
    assert code == 0, err
    assert f"held from {end} (still holds)" in out


def test_show_finds_an_evicted_unit_in_history(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    unit = _unit("ace-00000000e1", "Pay with the card I use most often.")
    added = _apply(ws, [Op(op="add", unit=unit)], "ace: episode 0: add 1")
    evicted = _apply(ws, [Op(op="evict", unit=unit)], "ace: episode 5: evict 1")
    path = ws.root / "memory" / "alex" / f"{unit.id}.md"
    assert not path.exists()

    before = _state(ws.root, run_git)
    code, out, err = _cli(capsys, "show", unit.id)
    assert code == 0, err
    assert "no longer exists" in out
    assert f"{evicted[:10]} " in out and f"{added[:10]} " in out
    assert f"-{unit.text}" in out and f"+{unit.text}" in out
    data = _json(capsys, "show", unit.id)
    assert data["unit"] is None
    assert data["path"] == f"memory/alex/{unit.id}.md"
    assert [c["commit"] for c in data["commits"]] == [evicted, added]
    assert "deleted file mode" in data["commits"][0]["diff"]
    assert _state(ws.root, run_git) == before


def test_show_marks_a_tombstone(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    unit = _unit("ace-00000000f1", "Keep all my Venmo payments public.")
    added = _apply(ws, [Op(op="add", unit=unit)], "ace: episode 0: add 1")
    revert(ws, added, reason="I never said that")

    code, out, err = _cli(capsys, "show", unit.id)
    assert code == 0, err
    assert unit.text in out
    assert f"tombstone: I never said that (reverted commit {added[:10]})" in out
    data = _json(capsys, "show", unit.id)
    assert data["unit"]["status"] == "tombstoned"
    assert data["unit"]["reason"] == "I never said that"
    assert data["unit"]["reverted_commit"] == added
    assert data["unit"]["valid_to"]
    assert len(data["commits"]) == 2 and "+status: tombstoned" in data["commits"][0]["diff"]


def test_show_header_names_the_units_status(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    unit = _unit("ace-00000000a1", "Pay with the card I use most often.")
    added = _apply(ws, [Op(op="add", unit=unit)], "ace: episode 0: add 1")
    code, out, err = _cli(capsys, "show", unit.id)
    assert code == 0, err
    assert "active" in out.splitlines()[0]
    revert(ws, added, reason="wrong")
    code, out, err = _cli(capsys, "show", unit.id)
    assert code == 0, err
    assert "tombstoned" in out.splitlines()[0]


@pytest.mark.parametrize("unit_id", ["ace-ffffffffff", "../evolve", "memory/alex/x"])
def test_show_of_an_unknown_id_is_one_sentence_and_changes_nothing(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], unit_id: str
) -> None:
    train(ws, recipe="ace", episodes=4)
    before = _state(ws.root, run_git)
    code, out, err = _cli(capsys, "show", unit_id)
    assert code == 1
    assert out == ""
    assert repr(unit_id) in _one_sentence(err)
    assert _state(ws.root, run_git) == before


# --- evolve memory ----------------------------------------------------------------------------


def test_memory_is_exactly_what_the_agent_receives(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=12)
    env = open_env(ws)
    expected = agent_memory(ws, env, "alex", "recipe")
    assert expected.count("\n") >= 2, "the fixture needs a few units"

    data = _json(capsys, "memory")
    assert data["memory"] == expected
    assert data["scope"] == ALEX and data["commit"] == ws.store.head()

    # What the agent is actually given in an evaluation run.
    spy = SpyLLM(make_llm("sim", env=env))
    run_split(ws, "dev", llm=spy, runs=1, log=False)
    assert spy.systems
    for system in spy.systems:
        assert section(system, "memory") == f"{MEMORY_HEADER}\n{data['memory']}"

    code, out, err = _cli(capsys, "memory")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"# memory for {ALEX} at {data['commit'][:10]}")
    assert "\n".join(lines[1:]) == expected


def test_memory_of_an_empty_workspace_is_empty(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _json(capsys, "memory")["memory"] == ""
    code, out, _ = _cli(capsys, "memory")
    assert code == 0 and out.splitlines()[1:] == ["(empty)"]


def test_memory_as_of_an_earlier_commit_is_read_from_git(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    env = open_env(ws)
    snapshots: list[tuple[str, str]] = []
    for episodes in (1, 6, 14):
        train(ws, recipe="ace", episodes=episodes)
        snapshots.append(
            (run_git(root, "rev-parse", "HEAD").strip(), agent_memory(ws, env, "alex", "recipe"))
        )
    assert len({m for _, m in snapshots}) == 3, "each stage must have taught something"
    head = snapshots[-1][0]

    # Change the working tree by hand: the history is what `--as-of` reads.
    for path in sorted((root / "memory" / "alex").glob("*.md"))[:2]:
        path.unlink()
    edited = sorted((root / "memory" / "alex").glob("*.md"))[0]
    edited.write_text(edited.read_text("utf-8").rstrip() + " Always.\n", encoding="utf-8")
    assert agent_memory(ws, env, "alex", "recipe") != snapshots[-1][1]

    for sha, memory in snapshots:
        back = int(run_git(root, "rev-list", "--count", f"{sha}..HEAD").strip())
        for rev in (sha, f"HEAD~{back}", sha[:10]):
            data = _json(capsys, "memory", "--as-of", rev)
            assert data["commit"] == sha and data["memory"] == memory, rev
    init = run_git(root, "rev-list", "--max-parents=0", "HEAD").strip()
    assert _json(capsys, "memory", "--as-of", init)["memory"] == ""
    assert run_git(root, "rev-parse", "HEAD").strip() == head


def test_memory_as_of_a_date_or_time(
    ws: Workspace,
    run_git: RunGit,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = ws.root
    init = run_git(root, "rev-parse", "HEAD").strip()
    born = datetime.fromisoformat(run_git(root, "log", "-1", "--format=%cI").strip())
    # Training happens two hours after the workspace was made.
    later = born + timedelta(hours=2)
    clock = SimpleNamespace(time=lambda: later.timestamp(), strftime=time.strftime)
    with monkeypatch.context() as patch:
        patch.setattr(git_module, "time", clock)
        train(ws, recipe="ace", episodes=8)
    head = ws.store.head()
    assert head != init
    memory = agent_memory(ws, open_env(ws), "alex", "recipe")
    assert memory

    between = (born + timedelta(hours=1)).isoformat()
    data = _json(capsys, "memory", "--as-of", between)
    assert data["commit"] == init and data["memory"] == ""
    after = (later + timedelta(minutes=5)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    data = _json(capsys, "memory", "--as-of", after)
    assert data["commit"] == head and data["memory"] == memory
    next_day = (later + timedelta(days=1)).date().isoformat()
    data = _json(capsys, "memory", "--as-of", next_day)
    assert data["commit"] == head and data["memory"] == memory


@pytest.mark.parametrize("when", ["1999-01-01", "2000-06-15T12:00:00+00:00"])
def test_memory_as_of_a_date_before_the_workspace_is_one_sentence(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], when: str
) -> None:
    before = _state(ws.root, run_git)
    code, out, err = _cli(capsys, "memory", "--as-of", when)
    assert code != 0 and out == ""
    assert when in _one_sentence(err)
    assert _state(ws.root, run_git) == before


@pytest.mark.parametrize("rev", ["no-such-branch", "HEAD~40", "2024-02-30"])
def test_memory_as_of_a_bad_revision_is_one_sentence(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], rev: str
) -> None:
    before = _state(ws.root, run_git)
    code, out, err = _cli(capsys, "memory", "--as-of", rev)
    assert code != 0 and out == ""
    assert rev in _one_sentence(err)
    assert _state(ws.root, run_git) == before


def test_memory_scope_selects_whose_memory(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    _apply(
        ws, [Op(op="add", unit=_unit("ace-00000000b1", "Pay with the card I use most often."))], "a"
    )
    note = root / "memory" / "house-rules.md"
    note.write_text("Never pay anyone more than $500 without asking me.\n", encoding="utf-8")
    run_git(root, "add", "memory/house-rules.md")
    run_git(root, "commit", "-q", "-m", "a note by hand")

    alex = _json(capsys, "memory")["memory"]
    assert alex.splitlines() == [
        "[house-rules] Never pay anyone more than $500 without asking me.",
        "[ace-00000000b1] Pay with the card I use most often.",
    ]
    assert _json(capsys, "memory", "--scope", ALEX)["memory"] == alex
    assert _json(capsys, "memory", "--persona", "alex")["memory"] == alex
    # Another user sees the global note only; the global scope is the note alone.
    for args in (["--persona", "blair"], ["--scope", "user:blair"], ["--scope", "global"]):
        data = _json(capsys, "memory", *args)
        assert (
            data["memory"] == "[house-rules] Never pay anyone more than $500 without asking me."
        ), args
    code, out, err = _cli(capsys, "memory", "--scope", ALEX, "--persona", "alex")
    assert code != 0 and out == ""
    _one_sentence(err)


def test_memory_refuses_a_malformed_scope(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "memory", "--scope", "blair")
    assert code != 0
    assert "user:" in _one_sentence(err)


def test_show_labels_each_commit_by_kind(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    report = train(ws, recipe="ace", episodes=6)
    assert report.commits
    unit = next(u for u in load_units(root) if u.recipe == "ace" and u.status == "active")
    rel = unit.path().as_posix()
    learned = run_git(root, "log", "--format=%H", "--", rel).split()
    (root / rel).write_text(
        (root / rel).read_text("utf-8").replace(unit.text, "Edited by hand: " + unit.text), "utf-8"
    )
    run_git(root, "commit", "-q", "-am", "my wording")
    hand = run_git(root, "rev-parse", "HEAD").strip()
    undone = revert(ws, hand).commit

    code, out, err = _cli(capsys, "show", unit.id)
    assert code == 0, err
    assert f"{hand[:10]} " in out and "(hand edit) my wording" in out
    assert f"{undone[:10]} " in out
    line = next(ln for ln in out.splitlines() if ln.startswith(undone[:10]))
    assert "(revert)" in line
    for sha in learned:
        line = next(ln for ln in out.splitlines() if ln.startswith(sha[:10]))
        assert "(learned)" in line
    assert "(learned) my wording" not in out
    data = _json(capsys, "show", unit.id)
    kinds = {c["commit"]: c["kind"] for c in data["commits"]}
    assert kinds[hand] == "hand edit" and kinds[undone] == "revert"
    assert all(kinds[sha] == "learned" for sha in learned)


def test_memory_renders_the_working_tree_and_says_when_it_differs_from_head(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=8)
    head_text = _json(capsys, "memory", "--as-of", "HEAD")["memory"]
    unit = next(u for u in load_units(ws.root) if u.recipe == "ace" and u.status == "active")
    path = ws.root / unit.path()
    path.write_text(
        path.read_text("utf-8").replace(unit.text, "Uncommitted wording of mine."), "utf-8"
    )
    expected = agent_memory(ws, open_env(ws), "alex", "recipe")  # what run/train give the agent
    assert "Uncommitted wording of mine." in expected

    code, out, err = _cli(capsys, "memory", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["memory"] == expected != head_text
    assert data["differs_from_head"] is True and data["source"] == "working tree"
    assert data["uncommitted"] == [unit.path().as_posix()]
    assert "differs from HEAD" in err and unit.path().as_posix() in err

    code, out, err = _cli(capsys, "memory")
    assert code == 0
    assert "Uncommitted wording of mine." in out and "differs from HEAD" in err
    # HEAD is still there on request, without the note.
    code, out, err = _cli(capsys, "memory", "--as-of", "HEAD")
    assert "Uncommitted wording of mine." not in out and err == ""


def test_memory_says_nothing_extra_when_the_tree_is_clean(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=6)
    code, out, err = _cli(capsys, "memory", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["differs_from_head"] is False and data["uncommitted"] == []


def test_memory_notes_when_run_injects_something_else(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ws.root / "evolve.yaml"
    text = config.read_text("utf-8")
    assert "inject: recipe" in text
    config.write_text(text.replace("inject: recipe", "inject: oracle"), "utf-8")
    run_git(ws.root, "commit", "-q", "-am", "score with the oracle")
    code, out, err = _cli(capsys, "memory", "--workspace", str(ws.root))
    assert code == 0 and "memory.inject is 'oracle'" in err


def test_memory_of_a_clean_tree_does_not_read_head_again(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=6)
    import evolve.history._asof as asof

    def refuse(*_: object) -> None:
        raise AssertionError("HEAD's memory was read although the tree is clean")

    monkeypatch.setattr(asof, "load_units_at", refuse)
    data = _json(capsys, "memory")
    assert data["differs_from_head"] is False and data["memory"]


def test_memory_with_an_ignored_unit_file_differs_from_head(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws.root / ".gitignore").write_text("memory/alex/mine-*.md\n", "utf-8")
    unit = _unit("mine-0000000001", "A note git ignores but the agent reads.")
    path = ws.root / unit.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_unit(unit), "utf-8")
    data = _json(capsys, "memory")
    assert "A note git ignores" in data["memory"]
    assert data["differs_from_head"] is True and data["uncommitted"] == []
