"""The merge rule of every records file (docs/sharing.md), and a remote's records as hostile
input: validated before anything is merged."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import one_sentence
from conftest import run_cli as _cli
from evolve.remote import clone, pull, push
from evolve.remote._records import (
    kind_of,
    merge_history,
    merge_runs,
    merge_streams,
    merge_timeline,
)
from evolve.train import train
from evolve.train._trainref import Segment, Timeline
from evolve.workspace import Workspace

RunGit = Callable[..., str]
A = "a" * 40
B = "b" * 40


def _timeline(*segments: tuple[str, int, int, int]) -> bytes:
    return Timeline("alex", [Segment(*s) for s in segments]).text().encode()


def test_timelines_merge_to_the_larger_clock_with_both_streams_and_in_either_order() -> None:
    ours = _timeline(("s0", 0, 5, 0), ("s0", 5, 15, 5))
    theirs = _timeline(("s0", 0, 5, 0), ("s1", 0, 4, 5), ("s0", 5, 9, 5))
    merged = merge_timeline("alex", ours, theirs)
    assert merged == merge_timeline("alex", theirs, ours)
    timeline = Timeline.parse("alex", merged)
    assert timeline.now() == 15  # the larger clock
    assert timeline.clock("s1", 3) == 8 and timeline.clock("s0", 14) == 14  # both streams
    # one episode given two clocks (both sides ran it): the smaller, in either order
    clash = merge_timeline("alex", _timeline(("s2", 0, 3, 4)), _timeline(("s2", 1, 3, 9)))
    assert Timeline.parse("alex", clash).clock("s2", 2) == 6


def test_stream_run_and_history_records_merge_the_same_in_either_order() -> None:
    s1 = json.dumps({"stream": "x", "commits": {"0": A, "1": B}}).encode()
    s2 = json.dumps({"stream": "x", "commits": {"1": A, "2": B}}).encode()
    merged = json.loads(merge_streams(s1, s2))
    assert merged["commits"] == {"0": A, "1": A, "2": B}
    assert merge_streams(s1, s2) == merge_streams(s2, s1)
    r1 = json.dumps({"episode": 4, "head": B, "stream": "x"}).encode()
    r2 = json.dumps({"episode": 7, "head": A, "stream": "x"}).encode()
    assert merge_runs(r1, r2) == merge_runs(r2, r1) == r2  # the later episode
    h1 = json.dumps({"episodes": {"0": {"p": 1}}}).encode()
    h2 = json.dumps({"episodes": {"1": {"p": 2}}}).encode()
    assert json.loads(merge_history(h1, h2))["episodes"] == {"0": {"p": 1}, "1": {"p": 2}}
    assert merge_history(h1, h2) == merge_history(h2, h1)


def test_only_names_evolve_writes_are_merged() -> None:
    assert kind_of("refs/evolve/train") == "train"
    assert kind_of("refs/evolve/records") == "records"
    assert kind_of("refs/evolve/arm-records/q3/ace/alex/instance/0") == "train"
    assert kind_of("refs/evolve/aborted/gen-0002") == "pointer"
    for bad in ("refs/evolve/other", "refs/heads/main", "refs/evolve/arms/.x", "refs/evolve"):
        assert kind_of(bad) is None


def _remote_with(
    ws: Workspace, tmp_path: Path, run_git: RunGit, files: dict[str, bytes]
) -> Workspace:
    """A bare origin whose refs/evolve/train carries `files` on top of ws's records; the
    clone that pushed them."""
    train(ws, recipe="ace", episodes=2)
    bare = tmp_path / "origin.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    run_git(ws.root, "remote", "add", "origin", str(bare))
    push(ws)
    other, _ = clone(str(bare), tmp_path / "other")
    other.store.write_side_ref("refs/evolve/train", files, "planted")
    run_git(other.root, "push", "--quiet", "origin", "refs/evolve/train:refs/evolve/train")
    return other


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({"timeline/alex.json": b"{not json"}, "timeline/alex.json is not valid JSON"),
        ({"timeline/alex.json": b"{}"}, "timeline/alex.json is not a valid timeline"),
        ({"hooks/post-merge": b"#!/bin/sh\n"}, "'hooks/post-merge' is not a file evolve writes"),
        ({"runs/alex/ace/0/instance.json": b'{"episode": -3, "head": "x"}'}, "not a valid runs"),
        ({"refusals/alex/ace/0/instance/000001-ab.txt": b"\xff\xfe"}, "is not UTF-8 text"),
        ({"history/alex/ace/0/instance.json": b"x" * (16 * 1024 * 1024 + 1)}, "bytes (at most"),
    ],
)
def test_a_hostile_records_ref_is_refused_whole_in_one_sentence(
    ws: Workspace,
    tmp_path: Path,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, bytes],
    said: str,
) -> None:
    _remote_with(ws, tmp_path, run_git, files)
    before = run_git(ws.root, "for-each-ref", "refs/evolve", "refs/heads")
    code, out, err = _cli(capsys, "pull")
    assert code == 1
    line = one_sentence(err)
    assert "refs/evolve/train is refused, nothing of it was merged" in line and said in line
    assert run_git(ws.root, "for-each-ref", "refs/evolve", "refs/heads") == before


def test_a_link_in_a_remote_records_tree_is_refused(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _remote_with(ws, tmp_path, run_git, {})

    def git_in(*args: str, data: str = "") -> str:
        done = subprocess.run(["git", *args], cwd=other.root, input=data, capture_output=True,
                              text=True, check=True)  # fmt: skip
        return done.stdout.strip()

    tip = git_in("rev-parse", "refs/evolve/train")
    link = git_in("hash-object", "-w", "--stdin", data="../../../etc/passwd")
    folder = git_in("mktree", data=f"120000 blob {link}\tblair.json\n")
    entries = git_in("ls-tree", f"{tip}^{{tree}}")
    tree = git_in("mktree", data=entries + f"\n040000 tree {folder}\ttimeline\n")
    commit = git_in("commit-tree", tree, "-p", tip, "-m", "a link")
    git_in("push", "--quiet", "origin", f"{commit}:refs/evolve/train")
    code, out, err = _cli(capsys, "pull")
    assert code == 1 and "timeline/blair.json has mode 120000" in one_sentence(err)
    assert ws.store.ref_sha("refs/evolve/train") != commit


def test_an_unknown_remote_ref_is_left_where_it_was_fetched(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    other = _remote_with(ws, tmp_path, run_git, {})
    run_git(other.root, "push", "--quiet", "origin", "HEAD:refs/evolve/surprise")
    done = pull(ws)
    assert done.records.ignored == ["refs/evolve/surprise"]
    assert run_git(ws.root, "for-each-ref", "refs/evolve/surprise") == ""


def test_two_generation_records_of_one_number_are_both_kept(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    other = _remote_with(ws, tmp_path, run_git, {})
    mine, theirs = (_record(1, "accepted"), _record(1, "rejected"))
    ws.store.write_side_ref("refs/evolve/records", {"gen-0001.json": mine}, "gen 1")
    other.store.write_side_ref("refs/evolve/records", {"gen-0001.json": theirs}, "gen 1")
    run_git(other.root, "push", "--quiet", "origin", "refs/evolve/records:refs/evolve/records")
    done = push(ws)  # the remote has its own generation 1: pulled first, then pushed
    assert done.pulls == 1 and "refs/evolve/records" in done.records.merged
    names = run_git(ws.root, "ls-tree", "--name-only", "refs/evolve/records").split()
    assert len(names) == 2 and "gen-0001.json" in names
    aside = next(n for n in names if n != "gen-0001.json")
    kept = {
        json.loads(run_git(ws.root, "show", f"refs/evolve/records:{n}"))["verdict"] for n in names
    }
    assert kept == {"accepted", "rejected"} and aside.startswith("gen-0001+")
    # the other side merges to the very same tree
    pull(other)
    assert run_git(other.root, "rev-parse", "refs/evolve/records^{tree}") == run_git(
        ws.root, "rev-parse", "refs/evolve/records^{tree}"
    )


def _record(number: int, verdict: str) -> bytes:
    data = {
        "number": number, "started": "2026-01-01T00:00:00+00:00",
        "finished": "2026-01-01T00:00:01+00:00", "base": A, "candidate": B, "final": A,
        "protected_hash": "x", "protected_hash_candidate": "x", "tests_passed": True,
        "verdict": verdict, "reason": "test",
    }  # fmt: skip
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def test_unrelated_pointer_tips_both_stay_and_the_same_on_both_sides(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    other = _remote_with(ws, tmp_path, run_git, {})
    mine = _commit(ws, run_git, "mine")
    theirs = _commit(other, run_git, "theirs")
    run_git(ws.root, "update-ref", "refs/evolve/aborted/gen-0002", mine)
    run_git(other.root, "update-ref", "refs/evolve/aborted/gen-0002", theirs)
    run_git(other.root, "push", "--quiet", "origin", "refs/evolve/aborted/gen-0002")
    push(ws)
    pull(other)
    keep, aside = theirs, mine  # the remote's tip keeps the name; ws's is kept beside it
    for side in (ws, other):
        refs = dict(
            line.split()[::-1]
            for line in run_git(
                side.root,
                "for-each-ref",
                "--format=%(objectname) %(refname)",
                "refs/evolve/aborted",
            ).splitlines()  # fmt: skip
        )
        assert refs == {
            "refs/evolve/aborted/gen-0002": keep,
            f"refs/evolve/aborted/gen-0002+{aside[:8]}": aside,
        }


def _commit(ws: Workspace, run_git: RunGit, text: str) -> str:
    tree = run_git(ws.root, "rev-parse", "HEAD^{tree}").strip()
    return run_git(ws.root, "commit-tree", tree, "-p", "HEAD", "-m", text).strip()


def test_clone_of_a_repository_that_is_no_workspace_leaves_nothing(
    tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    run_git(tmp_path, "init", "--quiet", "--initial-branch=main", str(plain))
    (plain / "README").write_text("hello\n", encoding="utf-8")
    run_git(plain, "add", "README")
    run_git(plain, "commit", "--quiet", "-m", "a repository")
    code, out, err = _cli(capsys, "clone", str(plain), str(tmp_path / "copy"))
    assert code == 1 and "is not an evolve workspace" in one_sentence(err)
    assert not (tmp_path / "copy").exists()
