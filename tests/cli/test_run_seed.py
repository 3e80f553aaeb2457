"""`evolve run --seed S`: the evaluation seed, and how it combines with `--runs K`."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import cli_json, run_cli
from evolve.workspace import Workspace


def _episodes(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What each episode did (time and log folder aside)."""
    return [
        (t["task_id"], t["run"], t["accepted"], tuple(t["violations"]), t["tokens"])
        for t in report["tasks"]
    ]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    # The oracle block states every preference, so sim's lapses and computed-value failures
    # (the stochastic part of its episodes) decide the outcome.
    out: dict[str, Any] = cli_json(capsys, "run", "--split", "dev", "--inject", "oracle", *args)
    return out


def test_the_same_seed_gives_identical_episodes(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _run(capsys, "--seed", "7")
    second = _run(capsys, "--seed", "7")
    assert first["seed"] == second["seed"] == 7
    assert _episodes(first) == _episodes(second)
    assert first["rules"] == second["rules"]


def test_different_seeds_differ_on_something_stochastic(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = [_run(capsys, "--seed", str(seed)) for seed in (7, 8)]
    assert [r["seed"] for r in reports] == [7, 8]
    assert _episodes(reports[0]) != _episodes(reports[1])


def test_the_default_seed_is_run_seed(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    default = _run(capsys)
    assert default["seed"] == ws.config.run.seed == 0
    assert _episodes(default) == _episodes(_run(capsys, "--seed", "0"))


def test_runs_with_a_seed_run_k_does_not_depend_on_k(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run k uses a seed derived from (S, task, k): run 0 of --runs 3 is --runs 1, the three
    runs differ from one another, and run 1 is not the episode of --seed S+1."""
    three = _run(capsys, "--seed", "5", "--runs", "3")
    one = _run(capsys, "--seed", "5", "--runs", "1")
    assert (three["seed"], three["runs"]) == (5, 3)
    by_run = {k: [e[:1] + e[2:] for e in _episodes(three) if e[1] == k] for k in range(3)}
    assert by_run[0] == [e[:1] + e[2:] for e in _episodes(one)]
    assert by_run[0] != by_run[1] or by_run[1] != by_run[2]
    next_seed = _run(capsys, "--seed", "6", "--runs", "1")
    assert by_run[1] != [e[:1] + e[2:] for e in _episodes(next_seed)]


def test_the_seed_is_in_the_text_report_and_the_help(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--seed", "3")
    assert code == 0, err
    assert "seed=3" in out
    code, out, _ = run_cli(capsys, "run", "--help")
    assert code == 0
    assert "--seed" in out and "--runs 1 is run 0 of --runs 3" in " ".join(out.split())
