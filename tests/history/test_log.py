"""`evolve log`: memory and prompt history, newest first, with the trailers parsed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evolve.train._train as train_module
from conftest import run_cli as _cli
from evolve.history import history
from evolve.memory import MemoryUnit, dump_unit
from evolve.ops import Op
from evolve.train import TrainReport, train
from evolve.updaters import Update
from evolve.workspace import Workspace

RunGit = Callable[..., str]
SHA = re.compile(r"^([0-9a-f]{10}) (\S+)  (.*)$")


@pytest.fixture
def trained(ws: Workspace) -> TrainReport:
    """Twelve ACE episodes with the sim model: several memory commits."""
    report = train(ws, recipe="ace", episodes=12)
    assert len(report.commits) >= 3, "the fixture needs several memory commits"
    return report


def _log_json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    code, out, err = _cli(capsys, "log", "--json", *args)
    assert code == 0, err
    data = json.loads(out)  # exactly one JSON document
    if "-n" not in args:  # the default limit is named in the document, never silent
        assert set(data) == {"entries", "limit", "truncated"} and data["limit"] == 50
        data = data["entries"]
    assert isinstance(data, list)
    return data


def _git_trailers(root: Path, run_git: RunGit, sha: str) -> dict[str, str]:
    block = run_git(root, "log", "-1", "--format=%(trailers:only=true,unfold=true)", sha)
    out = {}
    for line in block.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            out[key] = value.strip()
    return out


def _git_complaint(root: Path, run_git: RunGit, sha: str) -> str:
    body = run_git(root, "log", "-1", "--format=%B", sha).splitlines()
    at = body.index("Complaint:")
    return next(line.strip() for line in body[at + 1 :] if line.strip())


def _init_sha(root: Path, run_git: RunGit) -> str:
    return run_git(root, "rev-list", "--max-parents=0", "HEAD").strip()


def _entries(out: str) -> list[tuple[str, list[str]]]:
    """The human output split into (header line, following indented lines) per commit."""
    entries: list[tuple[str, list[str]]] = []
    for line in out.splitlines():
        if SHA.match(line):
            entries.append((line, []))
        elif line.startswith("    ") and entries:
            entries[-1][1].append(line.strip())
    return entries


# --- the listing ----------------------------------------------------------------------------


def test_log_lists_training_commits_newest_first_with_their_fields(
    ws: Workspace, trained: TrainReport, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    code, out, err = _cli(capsys, "log", "-n", "0")
    assert code == 0, err
    entries = _entries(out)
    shown = [SHA.match(header)[1] for header, _ in entries]  # type: ignore[index]
    training = [sha[:10] for sha in trained.commits]
    # Newest first: the training commits appear in reverse order of making.
    assert [s for s in shown if s in training] == training[::-1]
    assert len(shown) == len(set(shown))

    by_short = dict(zip(shown, entries, strict=True))
    for sha in trained.commits:
        header, lines = by_short[sha[:10]]
        m = SHA.match(header)
        assert m is not None
        when = run_git(root, "log", "-1", "--format=%cI", sha).strip()
        assert m[2] == when
        subject = run_git(root, "log", "-1", "--format=%s", sha).strip()
        assert m[3] == subject and subject.startswith("ace · alex · ")  # recipe, persona
        t = _git_trailers(root, run_git, sha)
        assert f"episode {t['Evolve-Episode']}, task {t['Evolve-Task']}" in lines
        assert f"complaint: {_git_complaint(root, run_git, sha)}" in lines
        assert f"ops: {t['Evolve-Ops']}" in lines
        assert re.search(r"=(ace-[0-9a-f]{10})", t["Evolve-Ops"])  # ops name unit ids


def test_log_json_returns_the_trailers_parsed(
    ws: Workspace, trained: TrainReport, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    data = _log_json(capsys, "-n", "0")
    by_sha = {e["commit"]: e for e in data}
    assert set(trained.commits) <= set(by_sha)
    order = [e["commit"] for e in data if e["commit"] in trained.commits]
    assert order == trained.commits[::-1]
    for sha in trained.commits:
        e = by_sha[sha]
        trailers = _git_trailers(root, run_git, sha)
        assert e["trailers"] == trailers
        assert e["episode"] == int(trailers["Evolve-Episode"])
        assert isinstance(e["episode"], int)
        assert e["recipe"] == "ace" == trailers["Evolve-Recipe"]
        assert e["task"] == trailers["Evolve-Task"]
        assert e["complaint"] == _git_complaint(root, run_git, sha)
        pairs = [tok.split("=", 1) for tok in trailers["Evolve-Ops"].split()]
        assert e["ops"] == [{"op": op, "id": ident} for op, ident in pairs]
        assert e["time"] == run_git(root, "log", "-1", "--format=%cI", sha).strip()
        assert e["subject"] == run_git(root, "log", "-1", "--format=%s", sha).strip()


def test_log_path_arguments_filter_the_history(
    ws: Workspace, trained: TrainReport, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    # The unit file touched by the most commits.
    counts: dict[str, int] = {}
    for sha in trained.commits:
        for path in run_git(root, "show", "--name-only", "--format=", sha).split():
            counts[path] = counts.get(path, 0) + 1
    path = max(sorted(counts), key=lambda p: counts[p])
    expected = run_git(root, "log", "--format=%H", "--", path).split()
    assert 1 <= len(expected) < len(trained.commits), "pick a path some commits did not touch"
    assert [e["commit"] for e in _log_json(capsys, path)] == expected

    code, out, err = _cli(capsys, "log", path)
    assert code == 0, err
    assert [SHA.match(h)[1] for h, _ in _entries(out)] == [s[:10] for s in expected]  # type: ignore[index]

    # A prompt change committed by hand shows under prompts/, and no training commit does.
    system = root / "prompts" / "system.md"
    system.write_text(system.read_text("utf-8") + "\nBe brief.\n", encoding="utf-8")
    run_git(root, "commit", "-q", "-am", "prompts: be brief")
    hand = run_git(root, "rev-parse", "HEAD").strip()
    listed = [e["commit"] for e in _log_json(capsys, "prompts")]
    assert listed[0] == hand
    assert not set(listed) & set(trained.commits)
    # A path nothing touched lists nothing.
    assert _log_json(capsys, "memory/nobody") == []


def test_log_n_limits_the_count(
    ws: Workspace, trained: TrainReport, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    newest = trained.commits[::-1]
    assert [e["commit"] for e in _log_json(capsys, "-n", "1")] == newest[:1]
    assert [e["commit"] for e in _log_json(capsys, "-n", "2")] == newest[:2]
    code, out, err = _cli(capsys, "log", "-n", "2")
    assert code == 0, err
    assert [SHA.match(h)[1] for h, _ in _entries(out)] == [s[:10] for s in newest[:2]]  # type: ignore[index]
    # -n 0 lists everything that touched memory/ or prompts/.
    init = _init_sha(ws.root, run_git)
    everything = run_git(ws.root, "log", "--format=%H", "--", "memory", "prompts").split()
    listed = [e["commit"] for e in _log_json(capsys, "-n", "0")]
    assert [s for s in listed if s != init] == [s for s in everything if s != init]
    assert len(listed) > 2
    # A negative count is a usage error.
    code, _, err = _cli(capsys, "log", "-n", "-1")
    assert code != 0 and err.strip()


def test_log_leaves_out_commits_that_touch_neither_memory_nor_prompts(
    ws: Workspace, trained: TrainReport, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    (root / "NOTES.txt").write_text("my own notes\n", encoding="utf-8")
    run_git(root, "add", "NOTES.txt")
    run_git(root, "commit", "-q", "-m", "notes")
    other = run_git(root, "rev-parse", "HEAD").strip()
    data = _log_json(capsys)
    assert other not in {e["commit"] for e in data}
    assert data[0]["commit"] == trained.commits[-1]
    code, out, _ = _cli(capsys, "log")
    assert code == 0 and other[:10] not in out and "notes" not in out.splitlines()[0]


def test_log_does_not_list_the_init_commit(
    ws: Workspace, trained: TrainReport, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    init = _init_sha(ws.root, run_git)
    listed = [e["commit"] for e in _log_json(capsys, "-n", "0")]
    assert init not in listed
    assert listed == trained.commits[::-1]


def test_log_on_a_new_workspace_says_there_is_no_history(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "log")
    assert code == 0, err
    assert "no memory or prompt commits yet" in out
    assert not _entries(out)
    assert _log_json(capsys) == []


# --- refusals of episodes that commit nothing -------------------------------------------------

PUBLIC = "Payments should be public."


class _Proposer:
    """A recipe that proposes one tombstoned bullet for every rejected episode."""

    name = "ace"

    def observe(self, ctx: Any) -> Update:
        unit = MemoryUnit.model_validate(
            {"id": "ace-00000000bb", "recipe": "ace", "kind": "bullet", "scope": "user:alex",
             "created_episode": ctx.episode.episode, "text": PUBLIC}
        )  # fmt: skip
        return Update(ops=[Op(op="add", unit=unit)])

    def verify(self, units: Any, calls: Any) -> list[str]:
        return []


def _tombstone(ws: Workspace, run_git: RunGit) -> str:
    stone = MemoryUnit.model_validate(
        {"id": "ace-00000000aa", "recipe": "ace", "kind": "bullet", "scope": "user:alex",
         "status": "tombstoned", "reason": "wrong: alex never wants public payments",
         "text": PUBLIC}
    )  # fmt: skip
    path = ws.root / stone.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_unit(stone), encoding="utf-8")
    run_git(ws.root, "add", "memory")
    run_git(ws.root, "commit", "-q", "-m", "tombstone a wrong bullet")
    return run_git(ws.root, "rev-parse", "HEAD").strip()


def _refusals(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if e["kind"] == "refusal"]


def test_a_refusal_reaches_history_when_the_episode_changes_nothing_else(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    base = _tombstone(ws, run_git)
    monkeypatch.setattr(train_module, "get_recipe", lambda name: _Proposer())
    report = train(ws, recipe="ace", episodes=3)
    assert not report.commits and ws.store.head() == base  # the branch learned nothing
    refused = [o for o in report.outcomes if o.refused]
    assert refused, "a rejected episode proposed the tombstoned bullet"

    data = _log_json(capsys, "-n", "0")
    records = _refusals(data)
    assert [r["episode"] for r in records] == [o.episode for o in refused][::-1]
    for r in records:
        assert r["trailers"]["Evolve-Kind"] == "refusal"
        assert r["trailers"]["Evolve-Persona"] == "alex" and r["recipe"] == "ace"
        assert r["trailers"]["Evolve-Base"] == base
        assert r["subject"].startswith("ace · alex · episode ") and r["subject"].endswith(
            "refused 1"
        )
        assert any(PUBLIC in line and "tombstone" in line for line in r["refused"])
        assert r["complaint"]
    # Beside the commit the episodes ran on: above it, below nothing newer.
    shas = [e["commit"] for e in data]
    assert shas.index(base) == len(records)
    code, out, err = _cli(capsys, "log")
    assert code == 0, err
    assert "(refusal record)" in out and PUBLIC in out

    # A resumed stream replays those episodes; their refusals are on record only once.
    train(ws, recipe="ace", episodes=3)
    assert len(_refusals(_log_json(capsys, "-n", "0"))) == len(records)


def test_refusal_records_survive_a_fresh_clone(
    ws: Workspace,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: Any,
    tmp_path: Path,
) -> None:
    _tombstone(ws, run_git)
    monkeypatch.setattr(train_module, "get_recipe", lambda name: _Proposer())
    train(ws, recipe="ace", episodes=3)
    expected = [(e["commit"], e["episode"]) for e in _refusals(_log_json(capsys, "-n", "0"))]
    assert expected

    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(ws.root), str(clone))
    monkeypatch.chdir(clone)
    assert _refusals(_log_json(capsys, "-n", "0")) == []  # a plain clone lacks refs/evolve/*
    run_git(clone, "fetch", "-q", "origin", "refs/evolve/*:refs/evolve/*")
    got = _refusals(_log_json(capsys, "-n", "0"))
    assert [(e["commit"], e["episode"]) for e in got] == expected
    code, out, err = _cli(capsys, "log")
    assert code == 0 and PUBLIC in out


def _commit_file(ws: Workspace, path: str, text: str, subject: str, **trailers: str) -> str:
    full = ws.root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text, encoding="utf-8")
    sha = ws.store.commit([path], subject, trailers=list(trailers.items()))
    assert sha is not None
    return sha


def _pathspec_walk(root: Path, run_git: RunGit, n: int | None = None) -> list[str]:
    limit = [f"--max-count={n}"] if n else []
    return run_git(
        root, "log", "--format=%H", "--min-parents=1", *limit, "HEAD", "--", "memory", "prompts"
    ).split()


def _mixed_history(ws: Workspace, run_git: RunGit) -> None:
    """Evolve's commits, hand edits of memory/ and prompts/, and commits of other files."""
    for n in range(3):
        _commit_file(ws, f"memory/alex/ace-{n:010d}.md", f"unit {n}\n", f"ace: episode {n}",
                     **{"Evolve-Episode": str(n), "Evolve-Kind": "train"})  # fmt: skip
        _commit_file(ws, "README.md", f"readme {n}\n", f"docs {n}")
        _commit_file(ws, "memory/alex/notes.md", f"hand {n}\n", f"hand edit {n}")
        _commit_file(ws, "notes/other.txt", f"other {n}\n", f"other {n}", **{"Evolve-Kind": "x"})
        _commit_file(ws, "prompts/extra.md", f"prompt {n}\n", f"prompt by hand {n}")


def test_log_finds_exactly_the_pathspec_walks_commits(ws: Workspace, run_git: RunGit) -> None:
    _mixed_history(ws, run_git)
    want = _pathspec_walk(ws.root, run_git)
    assert len(want) == 9  # 3 learned, 3 hand edits of memory/, 3 of prompts/
    assert [e.commit for e in history(ws.store, max_count=None)] == want
    for n in range(1, 12):
        assert [e.commit for e in history(ws.store, max_count=n)] == want[:n]


def test_log_on_a_history_with_merges_is_the_pathspec_walks(ws: Workspace, run_git: RunGit) -> None:
    _mixed_history(ws, run_git)
    run_git(ws.root, "checkout", "-q", "-b", "side")
    _commit_file(ws, "memory/alex/side.md", "side\n", "side edit")
    _commit_file(ws, "other.txt", "x\n", "side other")
    run_git(ws.root, "checkout", "-q", "main")
    _commit_file(ws, "memory/alex/main.md", "main\n", "main edit")
    run_git(ws.root, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    _commit_file(ws, "memory/alex/after.md", "after\n", "after the merge",
                 **{"Evolve-Episode": "9"})  # fmt: skip
    want = _pathspec_walk(ws.root, run_git)
    assert [e.commit for e in history(ws.store, max_count=None)] == want
    for n in (1, 2, 3, 5, 20):
        assert [e.commit for e in history(ws.store, max_count=n)] == want[:n]


def test_log_json_without_n_says_it_is_cut_and_n_0_streams_all(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(53):
        _commit_file(ws, "memory/alex/a.md", f"v{n}\n", f"edit {n}", **{"Evolve-Episode": str(n)})
    code, out, err = _cli(capsys, "log", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["limit"] == 50 and doc["truncated"] is True and len(doc["entries"]) == 50
    code, out, err = _cli(capsys, "log", "--json", "-n", "0")
    assert code == 0, err
    every = json.loads(out)
    assert [e["commit"] for e in every] == _pathspec_walk(ws.root, run_git)
    assert len(every) == 53 and every[0]["subject"] == "edit 52"
    code, out, err = _cli(capsys, "log", "--jsonl")
    assert code == 0, err
    lines = out.splitlines()
    assert [json.loads(line) for line in lines] == every
    code, out, err = _cli(capsys, "log", "--jsonl", "-n", "2")
    assert [json.loads(line) for line in out.splitlines()] == every[:2]
    code, out, err = _cli(capsys, "log", "--json", "-n", "0", "memory/alex/a.md")
    assert [e["commit"] for e in json.loads(out)] == [e["commit"] for e in every]
    code, out, err = _cli(capsys, "log", "--json", "--jsonl")
    assert code == 1 and "not both" in err


@pytest.mark.parametrize("path", ["../x", "/etc", ".git/config", "memory/../../x"])
def test_log_refuses_a_path_outside_the_workspace_in_one_sentence(
    ws: Workspace, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    code, out, err = _cli(capsys, "log", path)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "inside the workspace" in err
