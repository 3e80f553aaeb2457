"""Training reads memory incrementally (re-parsing only files whose stat changed), and still
sees, at the very next episode, whatever changed between two episodes of one run: a hand edit
in place, a new hand note, a deleted unit, a `git revert` of the last episode's commit."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from evolve.episode import run_episode
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import UnitReader, load_units
from evolve.memory._files import read_unit
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]


def _models() -> tuple[MockLLM, MockLLM]:
    """An agent that completes at once (so every episode is complained about) and an updater
    that writes a new TEPA precedent for the same key each time (so every episode commits)."""
    count = [0]

    def update(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        count[0] += 1
        sentence = f"Sign texts with '- Alex {count[0]}'."
        return json.dumps({"precedents": [{"key": "sms.signoff", "sentence": sentence}]})

    agent = MockLLM(lambda m, s: '{"tool": "supervisor__complete_task", "arguments": {}}')
    return agent, MockLLM(update)


@pytest.fixture
def memories(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rendered memory of every episode `train` runs, in order."""
    seen: list[str] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[3].memory)
        return run_episode(*args, **kwargs)

    monkeypatch.setattr("evolve.train._train.run_episode", spy)
    return seen


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The unit files the trainer's reader parsed, in order."""
    seen: list[str] = []

    def spy(path: str, raw: str) -> Any:
        seen.append(path)
        return read_unit(path, raw)

    monkeypatch.setattr("evolve.memory._files.read_unit", spy)
    return seen


def _train(ws: Workspace, episodes: int, between: Callable[[int], None]) -> list[str | None]:
    agent, updater = _models()
    report = train(
        ws, recipe="tepa", episodes=episodes, agent_llm=agent, updater_llm=updater,
        progress=lambda done, total: between(done),
    )  # fmt: skip
    return [o.commit for o in report.outcomes]


def _active_text(ws: Workspace) -> list[str]:
    return [u.text for u in load_units(ws.root) if u.status == "active" and u.recipe == "tepa"]


def test_only_changed_files_are_parsed_again(workspace: Workspace, parsed: list[str]) -> None:
    per_episode: list[list[str]] = []

    def between(done: int) -> None:
        per_episode.append(list(parsed))
        parsed.clear()

    commits = _train(workspace, 4, between)
    assert all(commits)
    # Episode k's read re-parses what episode k-1 wrote (the new unit and the revoked one),
    # nothing else.
    for k in range(2, 4):
        assert 1 <= len(per_episode[k]) <= 2, per_episode[k]


def test_a_hand_edit_between_episodes_is_seen_by_the_next(
    workspace: Workspace, run_git: RunGit, memories: list[str]
) -> None:
    root = workspace.root

    def between(done: int) -> None:
        if done != 2:
            return
        # In place (same inode): the text of the active precedent changes.
        active = next(u for u in load_units(root) if u.status == "active" and u.recipe == "tepa")
        path = root / active.path()
        raw = path.read_text(encoding="utf-8")
        inode = path.stat().st_ino
        with path.open("r+", encoding="utf-8") as handle:
            handle.write(raw.replace(active.text, "Sign texts with '- Alexandra, by hand'."))
            handle.truncate()
        assert path.stat().st_ino == inode
        # And a new hand-written note.
        (root / "memory" / "alex" / "from-alex.md").write_text(
            "I am vegetarian.\n", encoding="utf-8"
        )
        run_git(root, "add", "memory")
        run_git(root, "commit", "-q", "-m", "a hand edit")

    _train(workspace, 4, between)
    assert "by hand" not in memories[1] and "vegetarian" not in memories[1]
    assert "Sign texts with '- Alexandra, by hand'." in memories[2]
    assert "I am vegetarian." in memories[2]


def test_a_git_revert_between_episodes_is_seen_by_the_next(
    workspace: Workspace, run_git: RunGit, memories: list[str]
) -> None:
    root = workspace.root
    before_revert: list[str] = []

    def between(done: int) -> None:
        if done == 3:
            before_revert.extend(_active_text(workspace))
            run_git(root, "revert", "--no-edit", "HEAD")  # undo episode 2's commit

    commits = _train(workspace, 5, between)
    assert all(commits)
    assert before_revert == ["Sign texts with '- Alex 3'."]
    # Episode 3 sees episode 1's precedent back, not the reverted one of episode 2.
    assert "- Alex 2'" in memories[2]
    assert "- Alex 3'" not in memories[3] and "- Alex 2'" in memories[3]


def test_a_deleted_unit_file_is_gone_at_the_next_read(workspace: Workspace) -> None:
    reader = UnitReader(workspace.root)
    note = workspace.root / "memory" / "alex" / "note.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("Texts end with a smiley.\n", encoding="utf-8")
    assert "note" in {u.id for u in reader.load()}
    os.unlink(note)
    assert "note" not in {u.id for u in reader.load()}
    # A file rewritten with the same size and a new mtime is read again.
    note.write_text("Texts end with a smiley.\n", encoding="utf-8")
    reader.load()
    note.write_text("Texts end with a frowny\n", encoding="utf-8")
    stamp = note.stat().st_mtime_ns + 5_000_000
    os.utime(note, ns=(stamp, stamp))
    assert [u.text for u in reader.load() if u.id == "note"] == ["Texts end with a frowny"]


def test_resuming_finds_the_last_episode_without_walking_the_whole_history(
    workspace: Workspace, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evolve.store import _digest
    from evolve.train import last_episode

    _train(workspace, 3, lambda done: None)
    sid = train_stream(workspace)
    # A commit that mentions the stream in its text, not as a trailer, is skipped.
    run_git(workspace.root, "commit", "-q", "--allow-empty", "-m", f"see Evolve-Stream: {sid}")
    walks: list[tuple[str, ...]] = []
    real = _digest._records

    def records(store: Any, *rev: str) -> Iterator[Any]:
        walks.append(rev)
        yield from real(store, *rev)

    monkeypatch.setattr(_digest, "_records", records)
    assert last_episode(workspace, sid) == 2
    assert len(walks) == 1 and walks[0][0].endswith("..HEAD")  # only the commits since
    walks.clear()
    assert last_episode(workspace, sid) == 2
    assert walks == []  # HEAD is where the last look stopped: nothing to read
    run_git(workspace.root, "reset", "-q", "--hard", "HEAD~1")
    assert last_episode(workspace, sid) == 2
    assert walks and all(w[0].endswith("..HEAD") for w in walks)  # from a kept ancestor
    assert last_episode(workspace, sid + "-other") is None
    # Without what was kept, the whole history is read once, with the same answer.
    (workspace.store.git_dir / "evolve-streams.digest").unlink()
    walks.clear()
    assert last_episode(workspace, sid) == 2
    assert walks == [("HEAD",)]


def train_stream(ws: Workspace) -> str:
    from evolve.train import stream_id

    cfg = ws.config
    return stream_id(cfg.persona, "tepa", cfg.train.seed, cfg.train.feedback)
