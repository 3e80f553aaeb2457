"""A revert takes back only the failing episodes of the commit it undoes (issue 13, review).

The record of tasks failed in training (`memory/skills/_failed_tasks.yaml`) decides which
episodes the pooled scoreboard counts. Reverting the batch that first recorded a task used to
drop the task although a later batch, not reverted, failed it too: its later episodes fell
out of the pooled counters. The record now counts failing episodes per task, so `evolve
revert` (and a plain `git revert`, answered by the next evolve writer) keeps a task while any
episode that was not reverted failed it.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import GitRunner, run_cli
from evolve.history import revert
from evolve.history._gitrevert import tombstone_git_reverts
from evolve.skills._failed import FAILED_PATH, dump_failed, load_failed, parse_failed
from evolve.workspace import Workspace


def _failing_episodes(root: Path) -> list[tuple[int, str]]:
    """(episode, task) of every training episode whose task failed, from the run log."""
    (log,) = sorted(Workspace(root).runs_dir.glob("train-*.jsonl"))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return [(r["episode"], r["task_id"]) for r in records if not r["task_success"]]


def _trained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    root = tmp_path / "w"
    assert run_cli(capsys, "init", str(root), "--skills")[0] == 0
    monkeypatch.chdir(root)
    code, _, err = run_cli(capsys, "train", "--episodes", "40")
    assert code == 0, err
    return root


def test_reverting_the_batch_that_first_failed_a_task_keeps_it_while_a_later_one_failed_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_git: GitRunner,
) -> None:
    root = _trained(tmp_path, monkeypatch, capsys)
    failing = _failing_episodes(root)
    assert load_failed(root) == dict(Counter(t for _, t in failing))  # every episode counted
    (first,) = run_git(root, "log", "--format=%H", "--grep=batch 0 ").split()
    trailers = Workspace(root).store.commit_info(first).trailers
    episodes = {int(e) for e in trailers["Evolve-Episodes"].split()}
    mine = {t for e, t in failing if e in episodes}
    later = Counter(t for e, t in failing if e not in episodes)
    # The case of the review: a task batch 0 recorded that a later batch failed again.
    assert mine & set(later), (mine, later)
    code, _, err = run_cli(capsys, "revert", first[:10])
    assert code == 0, err
    assert load_failed(root) == dict(later)
    shown = run_cli(capsys, "skills")[1].splitlines()[-1]  # "Tasks failed in training ...: ..."
    assert all(t in shown for t in mine & set(later))


def _commit_record(
    run_git: GitRunner, ws: Workspace, counts: dict[str, int] | list[str], subject: str
) -> str:
    path = ws.root / FAILED_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(counts, list):  # the list an older evolve wrote
        path.write_text("".join(f"- {t}\n" for t in counts))
    else:
        path.write_text(dump_failed(counts))
    run_git(ws.root, "add", FAILED_PATH)
    run_git(ws.root, "commit", "-qm", subject)
    return run_git(ws.root, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("resolve", ["theirs", "by hand"])
def test_a_plain_git_revert_ends_where_evolve_revert_does(
    workspace: Workspace, run_git: GitRunner, resolve: str
) -> None:
    ws = workspace
    first = _commit_record(run_git, ws, {"t": 1, "u": 1}, "batch A: t and u failed")
    _commit_record(run_git, ws, {"t": 2, "u": 1, "w": 1}, "batch B: t failed again, and w")
    start = run_git(ws.root, "rev-parse", "HEAD").strip()
    # What `evolve revert` leaves.
    revert(ws, first)
    want = load_failed(ws.root)
    assert want == {"t": 1, "w": 1}
    run_git(ws.root, "reset", "-q", "--hard", start)
    # A plain git revert: the file A created was changed since, so git stops; the user
    # resolves it either way and commits.
    git = subprocess.run(
        ["git", "revert", "--no-edit", first], cwd=ws.root, capture_output=True, text=True
    )
    assert git.returncode != 0
    if resolve == "theirs":
        run_git(ws.root, "rm", "-q", FAILED_PATH)  # take the revert's side: the file goes
    else:  # drop u, which only A failed, and keep the rest as HEAD has it
        (ws.root / FAILED_PATH).write_text("t: 2\nw: 1\n")
        run_git(ws.root, "add", FAILED_PATH)
    run_git(ws.root, "-c", "core.editor=true", "revert", "--continue")
    made = tombstone_git_reverts(ws)
    assert len(made) == 1
    assert load_failed(ws.root) == want
    assert run_git(ws.root, "status", "--porcelain").strip() == ""
    assert tombstone_git_reverts(ws) == []  # answered once


def test_an_old_list_record_still_reads_and_reverts_as_before(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    first = _commit_record(run_git, ws, ["t", "u"], "an older evolve's batch")
    _commit_record(run_git, ws, ["t", "u", "w"], "a later one")
    assert load_failed(ws.root) == {"t": 1, "u": 1, "w": 1}
    revert(ws, first)
    assert load_failed(ws.root) == {"w": 1}
    assert parse_failed(run_git(ws.root, "show", f"HEAD:{FAILED_PATH}")) == {"w": 1}
