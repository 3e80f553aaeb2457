"""An interrupt between an episode's memory commit and its scoreboard count: the resumed
stream's evidence (per-task record, pooled counters, failed tasks) is the uninterrupted one's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_scoreboard_retire import _plant

from conftest import GitRunner
from evolve.skills._strata import load_strata
from evolve.train import train
from evolve.workspace import Workspace, init_workspace


def _ws(root: Path, run_git: GitRunner) -> Workspace:
    ws = init_workspace(root)
    _plant(ws, run_git)
    config = yaml.safe_load((ws.root / "evolve.yaml").read_text())
    config["skills"]["retire_confidence"] = 0.99999  # keep the skill counted: no retirement
    (ws.root / "evolve.yaml").write_text(yaml.safe_dump(config))
    run_git(ws.root, "commit", "-qam", "no retirement")
    return Workspace(ws.root)


@pytest.mark.parametrize("where", ["before the count", "in the count commit"])
def test_an_interrupt_at_the_count_loses_no_episode(
    tmp_path: Path, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    import evolve.train._train as train_mod
    from evolve.train import _scoreboard

    reference = _ws(tmp_path / "ref", run_git)
    train(reference, recipe="ace", episodes=8)
    want = _state(reference)

    ws = _ws(tmp_path / "ws", run_git)
    calls = {"n": 0}
    real_score, real_settle = train_mod.score_episodes, _scoreboard.settle

    def crash_score(*args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 4 and where == "before the count":
            raise KeyboardInterrupt
        real_score(*args, **kwargs)

    def crash_settle(w: Any, *args: Any, **kwargs: Any) -> Any:
        if calls["n"] == 4 and where == "in the count commit":

            def boom(*a: Any, **k: Any) -> str:
                raise KeyboardInterrupt

            monkeypatch.setattr(w.store, "commit", boom)
        return real_settle(w, *args, **kwargs)

    monkeypatch.setattr(train_mod, "score_episodes", crash_score)
    monkeypatch.setattr(_scoreboard, "settle", crash_settle)
    with pytest.raises(KeyboardInterrupt):
        train(ws, recipe="ace", episodes=8)
    monkeypatch.setattr(train_mod, "score_episodes", real_score)
    monkeypatch.setattr(_scoreboard, "settle", real_settle)
    train(Workspace(ws.root), recipe="ace", episodes=8)  # a new process resumes
    assert _state(ws) == want
    assert "Evolve-Skills-Seen" in run_git(ws.root, "log", "--format=%B")


def _state(ws: Workspace) -> tuple[Any, ...]:
    """The scoreboard's evidence: the per-task record, the pooled counters, the failed tasks."""
    from evolve.memory import load_units
    from evolve.skills._failed import load_failed
    from evolve.skills._scoreboard import SKILL_COUNTERS

    (skill,) = [u for u in load_units(ws.root) if u.kind == "skill"]
    counters = tuple(getattr(skill, name) for name in SKILL_COUNTERS)
    return load_strata(ws.root), counters, load_failed(ws.root)
