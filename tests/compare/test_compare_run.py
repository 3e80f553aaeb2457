"""`evolve compare`: arms on their own refs, main untouched, results recorded."""

from __future__ import annotations

import copy
import io
import json
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from compare_helpers import snapshot, write_small

from conftest import GIT_ENV, GitRunner, cli_json, run_cli
from evolve.cli import main
from evolve.compare._run import load_results
from evolve.generations import load_records
from evolve.workspace import Workspace, init_workspace

pytestmark = pytest.mark.slow

ACE = "refs/evolve/arms/small/ace/blair/instance/0"
TEPA = "refs/evolve/arms/small/tepa/blair/instance/0"


@pytest.fixture(scope="module")
def ran_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The small experiment, run once for the module (it takes seconds): the workspace it ran
    in, which each test gets a copy of (`ws` below), and the command's JSON document."""
    root = tmp_path_factory.mktemp("compare-ran") / "ws"
    with pytest.MonkeyPatch.context() as patch:
        for key, value in GIT_ENV.items():
            patch.setenv(key, value)
        for key in ("EVOLVE_WORKSPACE", "COLUMNS", "LINES"):
            patch.delenv(key, raising=False)
        ws = init_workspace(root)
        patch.chdir(root)
        write_small(root)
        for args in (["add", "experiments/small.yaml"], ["commit", "-qm", "experiment: small"]):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        # Something uncommitted in the working tree, which must stay exactly as it is.
        (root / "memory" / "notes.md").write_text("a hand note in progress\n", encoding="utf-8")
        before = snapshot(root, ws.store.git_dir)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["compare", "experiments/small.yaml", "--jobs", "1", "--json"])
        assert code == 0, err.getvalue()
        assert snapshot(root, ws.store.git_dir) == before
    return root, json.loads(out.getvalue())


@pytest.fixture
def ws(
    ran_once: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Workspace:
    """A copy of the workspace the experiment ran in, the current folder set to it."""
    root = tmp_path / "ws"
    shutil.copytree(ran_once[0], root, symlinks=True)
    monkeypatch.chdir(root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    capsys.readouterr()
    return Workspace(root)


@pytest.fixture
def ran(ws: Workspace, ran_once: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    """What `evolve compare experiments/small.yaml --jobs 1 --json` printed for `ws`."""
    return copy.deepcopy(ran_once[1])


def test_arms_train_on_their_own_refs_and_main_is_untouched(
    ws: Workspace, run_git: GitRunner, ran: dict[str, Any]
) -> None:
    head = run_git(ws.root, "rev-parse", "HEAD").strip()
    refs = run_git(ws.root, "for-each-ref", "--format=%(refname)", "refs/evolve/arms").split()
    assert sorted(refs) == sorted(
        f"refs/evolve/arms/small/{arm}/blair/instance/{order}"
        for arm in ("ace", "tepa")
        for order in (0, 1)
    )
    for ref in refs:
        # Each arm starts at the workspace's HEAD and adds its own episode commits.
        assert run_git(ws.root, "merge-base", "--is-ancestor", head, ref) == ""
        recipes = set(run_git(ws.root, "log", "--format=%(trailers:key=Evolve-Recipe,valueonly)",
                              f"{head}..{ref}").split())  # fmt: skip
        assert recipes == {ref.split("/")[4]}
    assert run_git(ws.root, "log", "--format=%H", "-1", "HEAD").strip() == head
    assert run_git(ws.root, "status", "--porcelain") == "?? memory/notes.md\n"
    # The arms' memories differ, and git says how.
    diff = run_git(ws.root, "diff", "--stat", ACE, TEPA, "--", "memory/")
    assert "ace-" in diff and "tepa-" in diff
    # The persona's clock of each arm is its own: no arm's training saw another's episodes.
    assert run_git(
        ws.root, "show", "refs/evolve/arm-records/small/ace/blair/instance/1:timeline/blair.json"
    )


def test_memory_as_of_an_arm_and_log_and_revert_in_a_worktree(
    ws: Workspace, run_git: GitRunner, ran: dict[str, Any], capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:  # fmt: skip
    shown = cli_json(capsys, "memory", "--as-of", ACE, "--persona", "blair")
    assert shown["commit"] == run_git(ws.root, "rev-parse", ACE).strip()
    assert "[ace-" in shown["memory"]
    # Log and revert on an arm: a worktree on a branch at the arm, then move the arm's ref.
    arm = tmp_path / "arm"
    run_git(ws.root, "worktree", "add", "-q", "-b", "try-ace", str(arm), ACE)
    log = cli_json(capsys, "log", "-C", str(arm), "-n", "0")
    adds = [e for e in log if e.get("recipe") == "ace" and any(o["op"] == "add" for o in e["ops"])]
    assert adds, log
    newest = adds[0]["commit"]
    code, out, err = run_cli(capsys, "revert", newest, "-C", str(arm), "--reason", "bad arm")
    assert code == 0, err
    run_git(ws.root, "update-ref", ACE, "try-ace")
    assert (
        run_git(ws.root, "log", "-1", "--format=%s", ACE).startswith("Revert")
        or "revert" in run_git(ws.root, "log", "-1", "--format=%B", ACE).lower()
    )
    after = cli_json(capsys, "memory", "--as-of", ACE, "--persona", "blair")
    assert after["memory"] != shown["memory"]
    # Running the experiment again never trains over the reverted arm.
    reverted = run_git(ws.root, "rev-parse", ACE).strip()
    code, _, err = run_cli(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert code == 0, err
    assert f"note: arm {ACE} (measured at" in err and "resuming: 5 of 5 jobs are done" in err
    assert run_git(ws.root, "rev-parse", ACE).strip() == reverted


def test_results_per_arm_with_intervals_are_written_and_recorded(
    ws: Workspace, ran: dict[str, Any]
) -> None:
    doc = ran
    rows = {r["arm"]: r for r in doc["rows"]}
    assert set(rows) == {"none", "oracle", "fixed", "block", "ace", "tepa"}
    assert 290 <= rows["block"]["memory_chars"] <= 300  # a constant block, scored once per persona
    assert rows["block"]["gap_closed"]["value"] == 0.0 and "spread" not in rows["block"]
    assert rows["none"]["gap_closed"]["value"] == 0.0
    assert rows["oracle"]["gap_closed"]["value"] == 1.0
    for arm in ("ace", "tepa", "fixed"):
        row = rows[arm]
        for key in ("success", "violation_rate", "gap_closed"):
            iv = row[key]
            assert iv["low"] <= iv["value"] <= iv["high"]
        assert row["spread"]["gap_closed"]["orders"] == 2
        assert row["rules"] and all(0.0 <= r["value"] <= 1.0 for r in row["rules"].values())
        assert row["tokens_per_episode"] > 0
    assert rows["ace"]["gap_closed"]["value"] > 0.2  # ace learns something from 6 episodes
    # The control is as long as ace's memory, and teaches nothing.
    assert abs(rows["fixed"]["memory_chars"] - rows["ace"]["memory_chars"]) <= 2
    assert rows["fixed"]["gap_closed"]["value"] == 0.0
    assert rows["ace"]["train_tokens_per_stream"] > 0
    folder = ws.root / "generations" / "experiments" / "small"
    assert json.loads((folder / "results.json").read_text())["rows"] == doc["rows"]
    md = (folder / "results.md").read_text()
    assert "| ace |" in md and "gap closed" in md
    # How to read the arms: this experiment's own refs, a command that runs as written.
    assert f"`git diff {ACE} {TEPA} -- memory/`" in md
    [recorded] = load_results(ws)
    assert recorded["rows"] == doc["rows"]
    assert load_records(ws) == []  # generation records are not confused by experiments


def test_a_changed_experiment_needs_fresh_and_a_rerun_redoes_nothing(
    ws: Workspace, ran: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    cells = ws.root / "generations" / "experiments" / "small" / "cells"
    stamps = {p.name: p.stat().st_mtime_ns for p in cells.iterdir()}
    code, _, err = run_cli(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert code == 0 and "resuming: 5 of 5 jobs are done" in err
    assert {p.name: p.stat().st_mtime_ns for p in cells.iterdir()} == stamps
    path = write_small(ws.root, (ws.root / "experiments" / "small.yaml").read_text().replace(
        "episodes: 6", "episodes: 5"))  # fmt: skip
    code, _, err = run_cli(capsys, "compare", str(path))
    assert code == 1 and "--fresh" in err
    doc = cli_json(capsys, "compare", str(path), "--fresh", "--jobs", "1")
    assert doc["plan"]["episodes"] == 5


def test_the_experiment_page_in_the_report(
    ws: Workspace, ran: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "report")
    assert code == 0, err
    html = (ws.root / "generations" / "report" / "report.html").read_text()
    assert "Experiment small" in html and "gap closed" in html and "<svg" in html


def test_git_status_stays_clean_in_a_committed_workspace(
    ws: Workspace, run_git: GitRunner, ran: dict[str, Any]
) -> None:
    (ws.root / "memory" / "notes.md").unlink()
    assert subprocess.run(["git", "status", "--porcelain"], cwd=ws.root, capture_output=True,
                          text=True).stdout == ""  # fmt: skip
