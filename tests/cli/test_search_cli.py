"""`evolve search`: its table and --json, progress on stderr, bad input one sentence, and the
search panel of `evolve report` (HTML and --json)."""

from __future__ import annotations

import pytest

from conftest import GitRunner, cli_json, one_sentence, run_cli, workspace_state
from evolve.workspace import Workspace


def _train(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "train", "--episodes", "24", "--feedback", "corrective")
    assert code == 0, err


def _tokens_cap(ws: Workspace, run_git: GitRunner, factor: float) -> None:
    """Set `gate.max_token_factor` in evolve.yaml (a commit, as a user changes the config)."""
    path = ws.root / "evolve.yaml"
    text = path.read_text(encoding="utf-8")
    assert "  max_token_factor: 1.5\n" in text
    path.write_text(text.replace("  max_token_factor: 1.5\n", f"  max_token_factor: {factor}\n"))
    run_git(ws.root, "commit", "-qam", "config: the token cap")


def test_search_prints_its_table_and_progress_and_the_report_shows_the_cycle(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    # The sim's review step (verify_first) costs about 1.6x the tokens: the gate's default
    # cap of 1.5x would refuse it (tested in tests/search/test_search.py).
    _tokens_cap(ws, run_git, 3.0)
    _train(capsys)
    code, out, err = run_cli(capsys, "search", "--budget", "800", "--runs", "1")
    assert code == 0, err
    assert "generation 1: scoring the champion" in err  # progress on stderr
    assert "dev gain [95%]" in out and "workflow-verify_first" in out
    assert "cycle c1:" in out and "of 800 episodes" in out
    assert "harness: search c1 champion" in run_git(ws.root, "log", "-1", "--format=%s")
    report = cli_json(capsys, "report")
    cycle = report["search"][0]
    assert cycle["cycle"] == "c1" and cycle["path"]
    assert "workflow" in cycle["singles"]
    assert all("predicted" in c for c in cycle["combinations"])
    html = (ws.root / "generations" / "report" / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="search">Harness search</h2>' in html and "Champion's path" in html


def test_search_json_is_one_document_and_a_dry_run_changes_nothing(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    _train(capsys)
    state = workspace_state(ws.root, run_git)
    data = cli_json(capsys, "search", "--budget", "400", "--runs", "1", "--dry-run")
    assert data["dry_run"] is True and data["budget"] == 400 and data["episodes"] <= 400
    assert {"tried", "path", "champion_before", "champion_after", "wall_s"} <= set(data)
    assert workspace_state(ws.root, run_git) == state


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--budget", "0"), "--budget"),
        (("--cycle", "gen"), "must be letters, digits"),
        (("--cycle", "a/b"), "must be letters, digits"),
    ],
)
def test_bad_input_is_one_sentence_and_writes_nothing(
    ws: Workspace,
    capsys: pytest.CaptureFixture[str],
    run_git: GitRunner,
    args: tuple[str, ...],
    says: str,
) -> None:
    state = workspace_state(ws.root, run_git)
    code, _, err = run_cli(capsys, "search", *args)
    assert code != 0
    assert says in (one_sentence(err) if err.startswith("error:") else err)
    assert workspace_state(ws.root, run_git) == state


def test_a_report_without_a_search_has_no_search_panel(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    report = cli_json(capsys, "report")
    assert report["search"] == []
    html = (ws.root / "generations" / "report" / "report.html").read_text(encoding="utf-8")
    assert 'id="search"' not in html
