"""A workspace travels whole through real bare remotes (issue 25, docs/sharing.md).

A plain `git clone` lacks refs/evolve/*: training there is refused with the fix; after the fix
the clone trains on alex's clock and does not relearn the payment preference that drifted at
the origin. `evolve clone` brings every record (refusals included); two clones pushing records
in turn are never refused as non-fast-forward; `share.scopes` keeps a scope off the remote.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import one_sentence
from conftest import run_cli as _cli
from evolve.envs.persona_world._rules import RULES_BY_NAME
from evolve.remote import Merged, clone, merge_ref, pull, push
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
VIS = RULES_BY_NAME["payment_visibility"]
PRIVATE, FRIENDS = VIS.statement("private"), VIS.statement("friends")


def _bare(tmp_path: Path, run_git: RunGit, name: str = "origin.git") -> Path:
    bare = tmp_path / name
    # the workspace's branch is the bare remote's HEAD, so a clone checks it out
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    return bare


def _origin(ws: Workspace, bare: Path, run_git: RunGit, url: str | None = None) -> None:
    run_git(ws.root, "remote", "add", "origin", url or str(bare))


def _refs(root: Path, run_git: RunGit, prefix: str = "refs/evolve") -> dict[str, str]:
    out = run_git(root, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split() for line in out.splitlines())


def test_a_plain_git_clone_is_refused_then_trains_on_the_origins_clock_after_the_fix(
    ws: Workspace,
    tmp_path: Path,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = train(ws, recipe="ace", episodes=30)  # past alex's drift at clock 12
    assert [o.clock for o in first.outcomes] == list(range(30))
    bare = _bare(tmp_path, run_git)
    _origin(ws, bare, run_git, f"file://{bare}")
    assert push(ws, "origin").pushed
    plain = tmp_path / "plain"
    run_git(tmp_path, "clone", "--quiet", f"file://{bare}", str(plain))
    assert run_git(plain, "for-each-ref", "refs/evolve") == ""  # a plain clone lacks them
    head = run_git(plain, "rev-parse", "HEAD")

    monkeypatch.chdir(plain)
    code, out, err = _cli(capsys, "train", "--recipe", "ace", "--seed", "1", "--episodes", "5")
    assert code == 1 and out == ""
    line = one_sentence(err)
    assert "no refs/evolve/train" in line and "restart alex's clock" in line
    assert "`evolve pull origin`" in line
    assert run_git(plain, "rev-parse", "HEAD") == head  # nothing written
    assert run_git(plain, "for-each-ref", "refs/evolve") == ""

    code, out, err = _cli(capsys, "pull", "origin")
    assert code == 0, err
    assert (
        _refs(plain, run_git)["refs/evolve/train"] == _refs(ws.root, run_git)["refs/evolve/train"]
    )
    code, out, err = _cli(
        capsys, "train", "--recipe", "ace", "--seed", "1", "--episodes", "20", "--json"
    )
    assert code == 0, err
    second = json.loads(out)
    # alex's clock goes on after the origin's thirty episodes: post-drift throughout.
    assert [o["clock"] for o in second["outcomes"]] == list(range(30, 50))
    added = "\n".join(
        line
        for sha in second["commits"]
        for line in run_git(plain, "show", "--format=", sha, "--", "memory").splitlines()
        if line.startswith("+")
    )
    assert PRIVATE not in added  # the drifted preference is not relearned
    code, out, err = _cli(capsys, "memory", "--json")
    now = json.loads(out)["memory"]
    assert FRIENDS in now and PRIVATE not in now


def test_records_fetched_but_not_merged_are_refused_with_the_fix(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=4)
    bare = _bare(tmp_path, run_git)
    _origin(ws, bare, run_git)
    push(ws)
    other, _ = clone(str(bare), tmp_path / "other")
    train(other, recipe="ace", episodes=8, seed=1)
    push(other)
    # A plain `git fetch` (the refspecs evolve configured) brings the records aside.
    run_git(ws.root, "fetch", "--quiet", "origin")
    assert "refs/remotes/origin/evolve/train" in _refs(ws.root, run_git, "refs/remotes")
    code, out, err = _cli(capsys, "train", "--recipe", "ace", "--episodes", "6")
    assert code == 1
    line = one_sentence(err)
    assert "not merged into refs/evolve/train" in line and "`evolve pull origin`" in line
    pull(ws)
    report = train(ws, recipe="ace", episodes=6)
    assert [o.clock for o in report.outcomes] == [12, 13]  # after both learners' eight + four


def test_evolve_clone_then_log_shows_every_entry_of_the_origin_refusals_included(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    first = train(ws, recipe="ace", episodes=10)
    code, out, err = _cli(capsys, "revert", first.commits[0])
    assert code == 0, err
    train(ws, recipe="ace", episodes=16, seed=1)  # proposes the tombstoned texts again
    code, out, err = _cli(capsys, "log", "-n", "0", "--json")
    origin_log = json.loads(out)
    kinds = [e["kind"] for e in origin_log]
    assert "refusal" in kinds, kinds  # the stream refused something (records on the side ref)
    bare = _bare(tmp_path, run_git)
    _origin(ws, bare, run_git, f"file://{bare}")
    code, out, err = _cli(capsys, "push", "--json")
    assert code == 0, err

    code, out, err = _cli(capsys, "clone", f"file://{bare}", str(tmp_path / "copy"), "--json")
    assert code == 0, err
    copy = tmp_path / "copy"
    assert json.loads(out)["workspace"] == str(copy)
    code, out, err = _cli(capsys, "log", "-n", "0", "--json", "-C", str(copy))
    assert code == 0, err
    assert json.loads(out) == origin_log
    assert _refs(copy, run_git) == _refs(ws.root, run_git)
    # a plain fetch and push carry them too
    fetch = run_git(copy, "config", "--get-all", "remote.origin.fetch").split()
    push_specs = run_git(copy, "config", "--get-all", "remote.origin.push").split()
    assert "+refs/evolve/*:refs/remotes/origin/evolve/*" in fetch
    assert "refs/evolve/*:refs/evolve/*" in push_specs and "HEAD" in push_specs


def test_two_clones_pushing_records_in_turn_are_never_refused(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    train(ws, recipe="ace", episodes=3)
    bare = _bare(tmp_path, run_git)
    _origin(ws, bare, run_git)
    push(ws)
    a, _ = clone(f"file://{bare}", tmp_path / "a")
    b, _ = clone(str(bare), tmp_path / "b")
    pulled = 0
    for turn in range(3):
        # each learns without pulling first: their records refs diverge every turn (alex's
        # and blair's memory folders apart, so the branches merge without a conflict)
        train(a, recipe="ace", episodes=6 + 3 * turn)
        pulled += push(a).pulls
        train(b, recipe="ace", episodes=3 + 3 * turn, persona="blair")
        pb = push(b)  # the remote moved: pulled (records merged as a union), never rejected
        assert pb.pulls >= 1 and "refs/evolve/train" in pb.records.merged
    assert pulled >= 2  # a's later turns found b's push there
    pull(a)
    assert _refs(a.root, run_git) == _refs(b.root, run_git) == _refs(bare, run_git)
    assert run_git(a.root, "rev-parse", "HEAD") == run_git(b.root, "rev-parse", "HEAD")
    # the union kept both learners' records: each one's own commits are in the merged history
    merged = set(run_git(a.root, "log", "--format=%H", "refs/evolve/train").split())
    for side in (a, b):
        own = run_git(side.root, "log", "--format=%H", "refs/evolve/train", "--not",
                      "refs/remotes/origin/evolve/train")  # fmt: skip
        assert set(own.split()) <= merged
    timelines = run_git(a.root, "ls-tree", "--name-only", "refs/evolve/train", "timeline/")
    assert timelines.split() == ["timeline/alex.json", "timeline/blair.json"]
    # a plain git push is a fast-forward now, and never forced
    done = subprocess.run(["git", "push", "--dry-run", "origin"], cwd=a.root, capture_output=True)
    assert done.returncode == 0, done.stderr
    run_git(bare, "fsck", "--strict")


def test_the_merged_clock_is_the_larger_with_both_streams_counted(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    train(ws, recipe="ace", episodes=5)
    bare = _bare(tmp_path, run_git)
    _origin(ws, bare, run_git)
    push(ws)
    a, _ = clone(str(bare), tmp_path / "a")
    b, _ = clone(str(bare), tmp_path / "b")
    ra = train(a, recipe="ace", episodes=15)  # stream 0 goes on: clock 5..14
    rb = train(b, recipe="ace", episodes=4, seed=1)  # stream 1 from clock 5: 5..8
    assert [o.clock for o in ra.outcomes] == list(range(5, 15))
    assert [o.clock for o in rb.outcomes] == [5, 6, 7, 8]
    push(a)
    # b's records alone (its branch would need the unit merge rules): fetched and merged
    run_git(b.root, "push", "--quiet", "origin", "refs/evolve/train:refs/evolve/b-train")
    run_git(a.root, "fetch", "--quiet", "origin", "refs/evolve/b-train:refs/remotes/b/evolve/train")
    done = Merged()
    fetched = a.store.ref_sha("refs/remotes/b/evolve/train")
    assert fetched is not None
    merge_ref(a.store, "refs/evolve/train", fetched, "b", done)
    assert done.merged == ["refs/evolve/train"]
    timeline = json.loads(run_git(a.root, "show", "refs/evolve/train:timeline/alex.json"))
    spans = {(s["stream"], s["start"], s["end"], s["clock"]) for s in timeline["segments"]}
    assert spans == {
        ("alex/ace/0/instance", 0, 5, 0),
        ("alex/ace/0/instance", 5, 15, 5),
        ("alex/ace/1/instance", 0, 4, 5),
    }
    # stream 1 goes on in a: its first four episodes keep the clock they ran at in b, the
    # new ones run after the larger clock (a's 15)
    third = train(a, recipe="ace", episodes=6, seed=1)
    assert [o.clock for o in third.outcomes] == [5, 6, 7, 8, 15, 16]


def test_share_scopes_keep_a_persona_off_the_remote(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = _bare(tmp_path, run_git)
    _origin(ws, bare, run_git)
    config = ws.root / "evolve.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + "share:\n  scopes: [global, skills]\n",
        encoding="utf-8",
    )
    run_git(ws.root, "commit", "--quiet", "-am", "share global and skills only")
    code, out, err = _cli(capsys, "push")
    assert code == 0, err  # nothing of alex's yet
    train(Workspace(ws.root), recipe="ace", episodes=6)
    assert run_git(ws.root, "ls-files", "memory/alex")  # alex learned something
    code, out, err = _cli(capsys, "push")
    assert code == 0, err  # the projection without alex's memory is pushed
    # the remote's tree and history hold nothing of alex's memory
    assert run_git(bare, "log", "--all", "--format=%H", "--", "memory/alex") == ""
    for ref in _refs(bare, run_git, "refs/heads"):
        assert "memory/alex" not in run_git(bare, "ls-tree", "-r", "--name-only", ref)
