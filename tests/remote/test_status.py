"""A remote added by hand after `evolve init`: until one evolve command configures it, a plain
`git push` sends the branch alone, and `evolve status` says so with the one command that
fixes it; after `evolve push`, plain `git push` and `git fetch` carry the records, and
`evolve status` reports records fetched but not merged (with `evolve pull`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import run_cli
from evolve.remote import clone
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]


def _refs(root: Path, run_git: RunGit, prefix: str) -> dict[str, str]:
    out = run_git(root, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split() for line in out.splitlines())


def _status(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code, out, err = run_cli(capsys, "status", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert isinstance(data, dict)
    return data


def test_a_remote_added_by_hand_is_reported_until_one_evolve_push_configures_it(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=3)
    bare = tmp_path / "origin.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    run_git(ws.root, "remote", "add", "origin", str(bare))

    report = _status(capsys)
    assert report["ok"] is False
    assert report["remotes"] == [
        {
            "name": "origin",
            "url": str(bare),
            "fetches_records": False,
            "pushes_records": False,
            "fix": "evolve push origin",
        }
    ]
    code, out, err = run_cli(capsys, "status")
    assert code == 0, err
    assert "remote origin" in out and "run `evolve push origin` once" in out
    run_git(ws.root, "push", "--quiet", "origin", "main")  # plain git: the branch alone
    assert _refs(bare, run_git, "refs/evolve") == {}

    code, out, err = run_cli(capsys, "push", "origin")  # the one evolve command
    assert code == 0, err
    report = _status(capsys)
    assert report["ok"] is True and report["records"] is None and report["merge"] is None
    code, out, err = run_cli(capsys, "status")
    assert "a plain git fetch and git push carry the records" in out

    train(ws, recipe="ace", episodes=3)
    run_git(ws.root, "push", "--quiet")  # plain git from now on: the records travel
    assert _refs(bare, run_git, "refs/evolve") == _refs(ws.root, run_git, "refs/evolve")
    assert run_git(bare, "rev-parse", "main") == run_git(ws.root, "rev-parse", "HEAD")

    other, _ = clone(str(bare), tmp_path / "other")
    train(other, recipe="ace", episodes=2, seed=1)
    run_git(other.root, "push", "--quiet")
    run_git(ws.root, "fetch", "--quiet")  # plain git: their records come beside ours
    theirs = _refs(other.root, run_git, "refs/evolve")["refs/evolve/train"]
    beside = _refs(ws.root, run_git, "refs/remotes/origin/evolve")
    assert beside["refs/remotes/origin/evolve/train"] == theirs
    report = _status(capsys)
    assert report["ok"] is False
    assert isinstance(report["records"], str) and "`evolve pull origin`" in report["records"]
    code, out, err = run_cli(capsys, "pull", "origin")
    assert code == 0, err
    assert _status(capsys)["ok"] is True


def test_status_outside_a_remote_says_how_to_add_one(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "status")
    assert code == 0, err
    assert "no remote (add one: git remote add NAME URL)" in out
    assert _status(capsys)["remotes"] == []


def test_a_workspace_keeping_a_scope_here_trains_and_reports_ok_right_after_its_push(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    with (ws.root / "evolve.yaml").open("a", encoding="utf-8") as f:
        f.write("share:\n  scopes: [global, skills]\n")
    run_git(ws.root, "commit", "--quiet", "-am", "share: alex stays here")
    train(ws, recipe="ace", episodes=2)
    bare = tmp_path / "origin.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    run_git(ws.root, "remote", "add", "origin", str(bare))
    code, out, err = run_cli(capsys, "push", "origin")
    assert code == 0, err
    # git points refs/remotes/origin/evolve/train at the projection just pushed: this
    # machine's own records, not a teammate's to pull first.
    pushed = run_git(ws.root, "rev-parse", "refs/shared/evolve/train").strip()
    assert run_git(ws.root, "rev-parse", "refs/remotes/origin/evolve/train").strip() == pushed
    report = _status(capsys)
    assert report["ok"] is True, report
    code, out, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "4")
    assert code == 0, err


def test_a_plain_clone_lacks_the_merge_drivers_until_install_drivers_registers_them(
    ws: Workspace,
    tmp_path: Path,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _status(capsys)["drivers"] is None  # `evolve init` registered them
    copy = tmp_path / "copy"
    run_git(tmp_path, "clone", "--quiet", str(ws.root), str(copy))  # plain git: no config
    monkeypatch.chdir(copy)
    report = _status(capsys)
    assert report["ok"] is False
    assert isinstance(report["drivers"], str)
    assert "run `evolve merge --install-drivers` once" in report["drivers"]
    code, out, err = run_cli(capsys, "status")
    assert code == 0, err
    assert "merge drivers: not registered here" in out

    code, out, err = run_cli(capsys, "merge", "--install-drivers", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert done["drivers"] == [
        "evolve-counters",
        "evolve-failed",
        "evolve-staging",
        "evolve-strata",
    ]
    driver = run_git(copy, "config", "--get", "merge.evolve-counters.driver")
    assert "-m evolve merge-driver counters %O %A %B %P" in driver
    assert run_git(copy, "status", "--porcelain") == ""  # the working tree is untouched
    report = _status(capsys)
    assert report["drivers"] is None
    code, out, err = run_cli(capsys, "status")
    assert "merge drivers: registered" in out


def test_install_drivers_takes_nothing_else(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "merge", "--install-drivers", "--fix")
    assert code != 0 and "--install-drivers takes no REF" in err and out == ""
