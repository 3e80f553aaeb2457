"""The log cache (`.git/evolve-log.cache`): what a full `evolve log --json` prints is the same
with it, without it, and after the history moves under it."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from test_fast_equivalence import _write, build

from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.quick import _logcache
from evolve.quick._git import Repo
from evolve.workspace import Workspace

RunGit = Callable[..., str]
FULL = [["log", "-n", "0", "--json"], ["log", "--jsonl"]]


def _same(capsys: pytest.CaptureFixture[str]) -> str:
    outs = []
    for argv in FULL:
        capsys.readouterr()
        assert _fast.run(argv) == 0
        fast = capsys.readouterr().out
        assert run_click(argv) == 0
        assert fast == capsys.readouterr().out
        outs.append(fast)
    return outs[0]


def test_the_cache_gives_what_a_full_read_gives_as_history_moves(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    build(ws, run_git)
    cache = ws.store.git_dir / "evolve-log.cache"
    assert not cache.exists()
    first = _same(capsys)
    assert cache.is_file()
    assert _same(capsys) == first  # read from the cache, refusal records placed as before
    # New commits: one evolve made, a hand edit of memory, one that touches no memory.
    _write(ws, "memory/alex/note.md", "Alex pays rent on the 3rd.\n")
    run_git(ws.root, "commit", "-qam", "hand: rent day again")
    _write(ws, "other.txt", "x\n")
    run_git(ws.root, "add", "other.txt")
    run_git(ws.root, "commit", "-qm", "not memory")
    after = _same(capsys)
    assert "rent day again" in after and "not memory" not in after
    # History rewritten under the cache: it only ever adds entries, and shows what HEAD has.
    run_git(ws.root, "reset", "-q", "--hard", "HEAD~3")
    rewound = _same(capsys)
    assert (
        "rent day again" not in rewound and len(json.loads(rewound)) == len(json.loads(first)) - 1
    )


@pytest.mark.parametrize("junk", [b"", b"garbage", b"\xe9\x00\x00\x00\x00"])
def test_a_corrupt_cache_is_ignored_and_rewritten(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], junk: bytes
) -> None:
    build(ws, run_git)
    cache = ws.store.git_dir / "evolve-log.cache"
    cache.write_bytes(junk)
    _same(capsys)
    assert cache.read_bytes() != junk


def test_replace_refs_turn_the_cache_off(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    build(ws, run_git)
    _same(capsys)
    # Graft HEAD onto its grandparent: the same commit id now shows other parents.
    run_git(ws.root, "replace", "--graft", "HEAD", "HEAD~2")
    out = _same(capsys)
    assert "docs only" not in out
    assert _logcache.tip(Repo.find(str(ws.root))) is None
    # Nothing seen through the graft is remembered: without it, the cache gives git's answer.
    (ws.store.git_dir / "evolve-log.cache").unlink()
    _same(capsys)
    assert not (ws.store.git_dir / "evolve-log.cache").exists()
    run_git(ws.root, "replace", "-d", run_git(ws.root, "rev-parse", "HEAD").strip())
    _same(capsys)
    assert _same(capsys) and _logcache.tip(Repo.find(str(ws.root))) is not None


def test_concurrent_readers_all_get_the_full_answer(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    """Readers racing to write the caches each print the whole answer; the cache left behind
    is a whole one (written to a temporary file, then renamed over the old one)."""
    import subprocess
    import sys

    build(ws, run_git)
    assert run_click(["log", "-n", "0", "--json"]) == 0
    want = capsys.readouterr().out
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "evolve", "log", "-n", "0", "--json"],
            cwd=ws.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out == want
    assert _logcache.tip(Repo.find(str(ws.root))) is not None
    assert not list(ws.store.git_dir.glob("*.tmp"))
    _same(capsys)


def test_the_cache_holds_the_history_of_head_only(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file is HEAD's history, newest first, whatever moved under it: it never grows
    with commits no branch has any more."""
    build(ws, run_git)
    _same(capsys)
    repo = Repo.find(str(ws.root))

    def cached() -> list[str]:
        text = (ws.store.git_dir / "evolve-log.cache").read_text(encoding="utf-8")
        return [line.split(" ", 1)[0] for line in text.splitlines()[1:]]

    def history() -> list[str]:
        return run_git(ws.root, "rev-list", "HEAD").split()

    assert cached() == history() and _logcache.tip(repo) == history()[0]
    for n in range(3):
        _write(ws, "memory/alex/note.md", f"Alex pays rent on day {n}.\n")
        run_git(ws.root, "commit", "-qam", f"hand: rent day {n}")
    _same(capsys)
    assert cached() == history()
    run_git(ws.root, "reset", "-q", "--hard", "HEAD~2")
    run_git(ws.root, "commit", "-q", "--allow-empty", "-m", "after the reset")
    _same(capsys)
    assert cached() == history()


def test_commits_evolve_did_not_make_are_settled_in_small_batches(
    ws: Workspace,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The streamed log holds a few commits at a time while git says which hand commits
    changed memory: the answer is the same as one question for all of them."""
    build(ws, run_git)
    for n in range(5):
        _write(ws, "memory/alex/note.md", f"Alex pays rent on day {n}.\n")
        run_git(ws.root, "commit", "-qam", f"hand: rent day {n}")
        run_git(ws.root, "commit", "-q", "--allow-empty", "-m", f"no memory {n}")
    monkeypatch.setattr(_logcache, "_BATCH", 2)
    monkeypatch.setattr(_logcache, "_HOLD", 3)
    for _ in range(2):  # without the cache, then from it
        out = _same(capsys)
        assert "rent day 4" in out and "no memory" not in out


def test_a_change_to_the_code_that_writes_entries_misses_the_log_cache(
    ws: Workspace,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cache's stamp is the code version of `evolve.quick` and `evolve._format` (the
    modules that write an entry): a changed source is not answered from the old file."""
    from evolve._format import _cache

    build(ws, run_git)
    _same(capsys)
    cache = ws.store.git_dir / "evolve-log.cache"
    before = _logcache._stamp()
    head = cache.read_text(encoding="utf-8").split("\n", 1)[0].split(" ")[2]
    sealed = _logcache._sealed(head)
    assert cache.read_text(encoding="utf-8").split(" ", 2)[1] == sealed
    assert _logcache.tip(Repo.find(str(ws.root))) is not None  # served from the file
    views = next(p for p in _cache._FINGERPRINTS if p.endswith("_views.py"))
    mtime, size, digest = _cache._FINGERPRINTS[views]
    monkeypatch.setitem(_cache._FINGERPRINTS, views, (mtime, size, b"another source"))
    assert _logcache._stamp() != before and _logcache._sealed(head) != sealed
    assert _logcache.tip(Repo.find(str(ws.root))) is None  # the file is of other code: not used
    _same(capsys)  # and a full log rewrites it for this code
    assert cache.read_text(encoding="utf-8").split(" ", 2)[1] == _logcache._sealed(head)
