"""The issue's scenario: a second stream after the persona's preference drifted.

alex's payments turn private -> friends at alex's 12th episode. Train stream 0 past that
point, then a second stream (`--seed 1`): drift is keyed to alex's own clock (every episode
the workspace ran for alex, across streams), so stream 1 is judged by the drifted preference
from its first episode, and memory does not relearn "private".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import evolve.train._train as train_module
from conftest import run_cli as _cli
from evolve.envs.persona_world._rules import RULES_BY_NAME
from evolve.evaluate import open_env
from evolve.train import stream_tasks, train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
VIS = RULES_BY_NAME["payment_visibility"]
PRIVATE, FRIENDS = VIS.statement("private"), VIS.statement("friends")
DRIFT = 12  # evalset/personas/alex.yaml: payment_visibility changes at_episode 12


def _judged(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[str]]]:
    """(the clock each episode was judged at, its payment_visibility corrections)."""
    seen: list[tuple[int, list[str]]] = []
    real = train_module.run_episode  # type: ignore[attr-defined]

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        corrections = [
            v.corrective for v in result.judgement.violations if v.rule == "payment_visibility"
        ]
        seen.append((kwargs["episode"], corrections))
        return result

    monkeypatch.setattr(train_module, "run_episode", spy)
    return seen


def _added_lines(root: Any, run_git: RunGit, commits: list[str]) -> str:
    return "\n".join(
        line
        for sha in commits
        for line in run_git(root, "show", "--format=", sha, "--", "memory").splitlines()
        if line.startswith("+")
    )


def test_a_second_stream_after_drift_sees_the_drifted_preference(
    ws: Workspace,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = ws.root
    env = open_env(ws)
    payments = [t.kind == "payment" for t in stream_tasks(env, 1, DRIFT)]
    assert sum(payments) >= 3, "stream 1 needs payment tasks before episode 12"

    first = train(ws, recipe="ace", episodes=30)
    assert [o.clock for o in first.outcomes] == list(range(30))
    code, out, err = _cli(capsys, "memory", "--json")
    learned = json.loads(out)["memory"]
    assert FRIENDS in learned and PRIVATE not in learned, learned

    seen = _judged(monkeypatch)
    code, out, err = _cli(
        capsys, "train", "--recipe", "ace", "--seed", "1", "--episodes", "20", "--json"
    )
    assert code == 0, err
    second = json.loads(out)
    # Stream 1 runs on alex's clock after stream 0's thirty episodes: post-drift throughout.
    assert [o["clock"] for o in second["outcomes"]] == list(range(30, 50))
    assert [clock for clock, _ in seen] == list(range(30, 50))
    corrections = [c for _, cs in seen for c in cs]
    assert PRIVATE not in corrections  # never told to go back to private
    # The friends-only preference held: memory does not relearn "private".
    assert PRIVATE not in _added_lines(root, run_git, second["commits"])
    code, out, err = _cli(capsys, "memory", "--json")
    now = json.loads(out)["memory"]
    assert FRIENDS in now and PRIVATE not in now, now
    # Each commit records the clock it ran at.
    clock_of = {o["commit"]: o["clock"] for o in second["outcomes"] if o["commit"]}
    for sha in second["commits"]:
        trailers = run_git(root, "log", "-1", "--format=%(trailers:only,unfold)", sha)
        assert f"Evolve-Clock: {clock_of[sha]}" in trailers.splitlines()


def test_a_resumed_stream_keeps_its_clock_and_a_third_stream_starts_after_both(
    workspace: Workspace,
) -> None:
    train(workspace, recipe="ace", episodes=5)
    second = train(workspace, recipe="ace", episodes=4, seed=1)
    assert [o.clock for o in second.outcomes] == [5, 6, 7, 8]
    # Stream 0 continues after stream 1: alex's clock moved on meanwhile.
    more = train(workspace, recipe="ace", episodes=8)
    assert more.start <= 5
    clocks = {o.episode: o.clock for o in more.outcomes}
    assert clocks.get(5) == 9 and clocks[7] == 11
    # Replayed episodes (after the last commit) keep the clock they first ran at.
    assert all(clocks[k] == k for k in clocks if k < 5)
    third = train(workspace, recipe="tepa", episodes=2)
    assert [o.clock for o in third.outcomes] == [12, 13]


def test_a_malformed_timeline_is_one_clear_sentence_and_nothing_runs(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=2)
    ws.store.write_side_ref("refs/evolve/train", {"timeline/alex.json": b"{not json"}, "broken")
    head = ws.store.head()
    code, out, err = _cli(capsys, "train", "--recipe", "ace", "--episodes", "6")
    assert code == 1 and out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "timeline/alex.json is not a valid timeline" in lines[0]
    assert ws.store.head() == head
