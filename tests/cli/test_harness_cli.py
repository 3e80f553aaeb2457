"""`evolve harness show|set`: a module switch is one commit through the applier, scored by the
next run, and `evolve revert` restores the harness exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import GitRunner, cli_json, one_sentence, run_cli, workspace_state
from evolve.harness import HARNESS_FILE, MODULES
from evolve.workspace import Workspace


def _dev(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    report = cli_json(capsys, "run", "--split", "dev", "--runs", "2")
    return {k: report[k] for k in ("score", "violation_rate", "tokens_per_episode")}


def _train(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "train", "--episodes", "24", "--feedback", "corrective")
    assert code == 0, err


def test_show_names_the_defaults_and_every_builtin(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = cli_json(capsys, "harness", "show")
    assert sorted(shown) == sorted(MODULES)  # emit_json sorts keys
    assert shown["workflow"]["active"] == "act"
    assert "Self-Refine" in shown["workflow"]["builtins"]["verify_first"]["mechanism"]
    assert shown["context"]["builtins"]["budget_fifo"]["parameters"] == {"budget_tokens": 80}


def test_a_switch_is_scored_and_revert_restores_the_harness_exactly(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    _train(capsys)
    before = _dev(capsys)
    first = cli_json(capsys, "harness", "set", "workflow", "verify_first")
    assert (
        run_git(ws.root, "log", "-1", "--format=%s").strip() == "harness: workflow -> verify_first"
    )
    helped = _dev(capsys)
    assert helped != before  # the next run is scored with the variant
    middle = (ws.root / HARNESS_FILE).read_bytes()
    second = cli_json(
        capsys, "harness", "set", "context", "budget_fifo", "--param", "budget_tokens=5"
    )
    assert cli_json(capsys, "harness", "show")["context"]["parameters"] == {"budget_tokens": 5}
    code, _, err = run_cli(capsys, "revert", second["commit"])
    assert code == 0, err
    assert (ws.root / HARNESS_FILE).read_bytes() == middle
    code, _, err = run_cli(capsys, "revert", first["commit"])
    assert code == 0, err
    assert not (ws.root / HARNESS_FILE).exists()
    assert _dev(capsys) == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("tools", "nope"), "tools has no variant 'nope'"),
        (("toolz", "plain"), "has no module 'toolz'"),
        (("context", "budget_fifo", "--param", "budget_tokens=x"), "must be NAME=N"),
        (("context", "budget_fifo", "--param", "size=3"), "has no parameter 'size'"),
    ],
)
def test_a_refused_switch_writes_nothing(
    ws: Workspace,
    capsys: pytest.CaptureFixture[str],
    run_git: GitRunner,
    args: tuple[str, ...],
    says: str,
) -> None:
    state = workspace_state(ws.root, run_git)
    code, _, err = run_cli(capsys, "harness", "set", *args)
    assert code != 0 and says in one_sentence(err)
    assert workspace_state(ws.root, run_git) == state


def test_an_unreviewed_workspace_variant_file_is_refused(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    own = Path(ws.root, "harness", "workflow")
    own.mkdir(parents=True)
    (own / "mine.py").write_text("import os\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "harness", "set", "workflow", "mine")
    assert code != 0 and "harness/workflow/mine.py awaits review" in one_sentence(err)
    assert not (ws.root / HARNESS_FILE).exists()
