"""`share.scopes` keeps a persona's memory on its machine while the team's learning travels
(docs/sharing.md, "share.scopes").

alex's scope is private, global and skills are shared: `evolve push` sends a projection of the
branch and of the training records; every object the bare remote holds (each commit, tree
and blob of its whole history) is read and none names alex's folder or quotes alex's units;
a second clone gets the shared learning; the first, after a pull, still has alex's memory;
a revert of a shared commit works in either clone and travels to the other.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import run_cli as _cli
from evolve.remote import clone, pull, push
from evolve.train import train
from evolve.workspace import Workspace
from factories import VERIFY_AFTER

RunGit = Callable[..., str]
SHARE = "share:\n  scopes: [global, skills]\n"


def _private_alex(ws: Workspace, tmp_path: Path, run_git: RunGit) -> Path:
    """A bare remote as `origin`; `share.scopes` keeps alex's memory on this machine."""
    bare = tmp_path / "origin.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    run_git(ws.root, "remote", "add", "origin", f"file://{bare}")
    config = ws.root / "evolve.yaml"
    config.write_text(config.read_text(encoding="utf-8") + SHARE, encoding="utf-8")
    run_git(ws.root, "commit", "--quiet", "-am", "share global and skills only")
    return bare


def _global_unit(ident: str, text: str) -> str:
    return f"---\nid: {ident}\nrecipe: hand\nkind: bullet\nscope: global\n---\n{text}\n"


def _commit_file(root: Path, run_git: RunGit, rel: str, text: str, message: str) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    run_git(root, "add", rel)
    run_git(root, "commit", "--quiet", "-m", message)
    return run_git(root, "rev-parse", "HEAD").strip()


def _private_texts(root: Path, run_git: RunGit) -> set[str]:
    """Every text any commit of the branch held in alex's folder (units and counters)."""
    texts: set[str] = set()
    for sha in run_git(root, "rev-list", "HEAD").split():
        names = run_git(root, "ls-tree", "-r", "--name-only", sha, "--", "memory/alex")
        for name in names.split():
            body = run_git(root, "show", f"{sha}:{name}")
            if name.endswith(".md"):
                texts.add(body.split("---\n", 2)[2].strip())
    return {t for t in texts if t}


def _every_object(bare: Path) -> tuple[list[str], bytes]:
    """The names (`rev-list --objects --all`) and the contents of every object the bare
    repository reaches, commits and trees included."""
    listed = subprocess.run(
        ["git", "rev-list", "--objects", "--all"], cwd=bare, capture_output=True, check=True
    ).stdout.decode()
    oids = [line.split(" ", 1)[0] for line in listed.splitlines()]
    names = [line.split(" ", 1)[1] for line in listed.splitlines() if " " in line]
    contents = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=bare,
        input="".join(f"{o}\n" for o in oids).encode(),
        capture_output=True,
        check=True,
    ).stdout
    return names, contents


def _assert_nothing_private(bare: Path, texts: set[str]) -> None:
    names, contents = _every_object(bare)
    assert names and contents
    assert not [n for n in names if n.startswith("memory/alex")]
    assert b"memory/alex" not in contents
    leaked = [t for t in texts if t.encode() in contents]
    assert leaked == []


def _read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def _alex_files(root: Path) -> dict[str, str]:
    folder = root / "memory" / "alex"
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())}


def test_a_private_persona_never_reaches_the_remote_while_the_team_learning_does(
    ws: Workspace,
    tmp_path: Path,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bare = _private_alex(ws, tmp_path, run_git)
    lesson = _commit_file(
        ws.root, run_git, "memory/hand-0000000001.md",
        _global_unit("hand-0000000001", "Confirm the recipient before sending anything."),
        "team: a global lesson",
    )  # fmt: skip
    train(Workspace(ws.root), recipe="ace", episodes=8)
    _commit_file(
        ws.root, run_git, "memory/skills/general/verify-after.md", VERIFY_AFTER,
        "team: a skill",
    )  # fmt: skip
    train(Workspace(ws.root), recipe="ace", episodes=4, seed=1)
    texts = _private_texts(ws.root, run_git)
    assert len(texts) >= 3  # alex learned
    mine = _alex_files(ws.root)

    code, out, err = _cli(capsys, "push", "--json")
    assert code == 0, err
    _assert_nothing_private(bare, texts)
    shared = run_git(bare, "ls-tree", "-r", "--name-only", "main")
    assert "memory/hand-0000000001.md" in shared
    assert "memory/skills/general/verify-after.md" in shared
    # the shared commits keep their messages; alex's episodes changed only alex's memory
    subjects = run_git(bare, "log", "--format=%s", "main").splitlines()
    assert "team: a global lesson" in subjects and "team: a skill" in subjects
    # pushing again sends nothing new and stays a fast-forward
    assert push(Workspace(ws.root), "origin").pushed

    two_root = tmp_path / "two"
    two, _ = clone(f"file://{bare}", two_root)
    assert (two_root / "memory" / "hand-0000000001.md").is_file()
    assert (two_root / "memory" / "skills" / "general" / "verify-after.md").is_file()
    assert not (two_root / "memory" / "alex").exists()
    theirs = _commit_file(
        two_root, run_git, "memory/hand-0000000002.md",
        _global_unit("hand-0000000002", "Read the task twice before acting."),
        "team: a second lesson",
    )  # fmt: skip
    assert push(two, "origin").pushed

    # the first clone pulls the team's lesson and keeps alex's memory
    pulled = pull(Workspace(ws.root), "origin")
    assert pulled.merged_branch is not None
    assert (ws.root / "memory" / "hand-0000000002.md").is_file()
    assert _alex_files(ws.root) == mine
    assert run_git(ws.root, "status", "--porcelain") == ""
    # it learns more and pushes: a fast-forward of what the second clone pushed
    train(Workspace(ws.root), recipe="ace", episodes=3, seed=2)
    assert push(Workspace(ws.root), "origin").pulls == 0
    texts |= _private_texts(ws.root, run_git)
    _assert_nothing_private(bare, texts)
    assert run_git(bare, "merge-base", "--is-ancestor", theirs, "main") == ""

    # a revert of the second clone's lesson, made in the first clone, reaches the second
    lifted = run_git(ws.root, "log", "--format=%H", "--grep", "team: a second lesson").split()
    assert lifted and lifted[-1] != theirs  # its parent here holds alex's memory
    code, out, err = _cli(capsys, "revert", lifted[-1], "--reason", "not ours")
    assert code == 0, err
    assert "status: tombstoned" in _read(ws.root, "memory/hand-0000000002.md")
    assert push(Workspace(ws.root), "origin").pushed
    pull(two, "origin")
    assert "status: tombstoned" in _read(two_root, "memory/hand-0000000002.md")
    # the revert names the reverted commit as the second clone's history holds it
    trailer = run_git(two_root, "log", "-1", "--format=%(trailers:key=Evolve-Reverts,valueonly)")
    assert trailer.strip() == theirs
    code, out, err = _cli(capsys, "log", "--json")
    assert code == 0, err

    # a revert of the first clone's lesson, made in the second clone, reaches the first
    (there,) = run_git(two_root, "log", "--format=%H", "--grep", "team: a global lesson").split()
    monkeypatch.chdir(two_root)
    code, out, err = _cli(capsys, "revert", there, "--reason", "superseded")
    assert code == 0, err
    assert push(two, "origin").pushed
    pull(Workspace(ws.root), "origin")
    assert "status: tombstoned" in _read(ws.root, "memory/hand-0000000001.md")
    assert _read(ws.root, "memory/hand-0000000001.md") == _read(
        two_root, "memory/hand-0000000001.md"
    )
    trailer = run_git(
        ws.root, "log", "--grep", "^revert .*: team: a global lesson",
        "--format=%(trailers:key=Evolve-Reverts,valueonly)",
    )  # fmt: skip
    assert trailer.strip() == lesson  # never rewritten: nothing private under it
    assert set(mine) <= set(_alex_files(ws.root))  # alex's memory is still here
    texts |= _private_texts(ws.root, run_git)
    _assert_nothing_private(bare, texts)
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=bare, capture_output=True)
    assert fsck.returncode == 0, fsck.stderr


def test_a_plain_git_push_sends_the_projection_and_refuses_the_branch_itself(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    bare = _private_alex(ws, tmp_path, run_git)
    assert push(Workspace(ws.root), "origin").pushed  # configures the remote and the hook
    train(Workspace(ws.root), recipe="ace", episodes=5)
    _commit_file(
        ws.root, run_git, "memory/hand-0000000003.md",
        _global_unit("hand-0000000003", "Say which account a payment comes from."),
        "team: a third lesson",
    )  # fmt: skip
    texts = _private_texts(ws.root, run_git)
    assert texts
    before = run_git(bare, "for-each-ref")

    # naming the branch itself: the hook refuses, in one sentence, and nothing moves
    done = subprocess.run(
        ["git", "push", "origin", "main", "refs/evolve/train"],
        cwd=ws.root, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode != 0
    assert "share.scopes keeps on this machine" in done.stderr and "evolve push" in done.stderr
    assert run_git(bare, "for-each-ref") == before
    # a plain `git push` sends what the last `evolve push` projected (refs/shared/*)
    run_git(ws.root, "push", "--quiet")
    assert run_git(bare, "for-each-ref") == before  # nothing projected since
    assert push(Workspace(ws.root), "origin").pushed
    run_git(ws.root, "push", "--quiet")  # up to date, and allowed
    shared = run_git(bare, "ls-tree", "-r", "--name-only", "main")
    assert "memory/hand-0000000003.md" in shared and "memory/alex" not in shared
    _assert_nothing_private(bare, texts)

    # every scope shared again: evolve's own refspecs are back, and only they
    config = ws.root / "evolve.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace(SHARE, ""), encoding="utf-8")
    run_git(ws.root, "commit", "--quiet", "-am", "share every scope")
    pull(Workspace(ws.root), "origin")
    pushes = run_git(ws.root, "config", "--get-all", "remote.origin.push").split()
    assert pushes == ["HEAD", "refs/evolve/*:refs/evolve/*"]


def test_a_pull_never_takes_a_remotes_files_of_a_private_scope_nor_needs_the_cache(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    bare = _private_alex(ws, tmp_path, run_git)
    train(Workspace(ws.root), recipe="ace", episodes=5)
    assert push(Workspace(ws.root), "origin").pushed
    mine = _alex_files(ws.root)
    # someone with a plain clone (no hook, no projection) pushes a lesson
    plain = tmp_path / "plain"
    run_git(tmp_path, "clone", "--quiet", f"file://{bare}", str(plain))
    run_git(plain, "config", "user.name", "Someone")
    run_git(plain, "config", "user.email", "someone@example.invalid")
    _commit_file(
        plain, run_git, "memory/hand-0000000004.md",
        _global_unit("hand-0000000004", "Keep receipts."), "team: a fourth lesson",
    )  # fmt: skip
    run_git(plain, "push", "--quiet", "origin", "main")

    # the projection cache is only a cache: without it the same ids are computed again
    shutil.rmtree(ws.store.common_dir / "evolve" / "share")
    pulled = pull(Workspace(ws.root), "origin")
    assert pulled.merged_branch == "fast-forward"  # no merge: the remote built on ours
    assert (ws.root / "memory" / "hand-0000000004.md").is_file()
    assert _alex_files(ws.root) == mine
    again = push(Workspace(ws.root), "origin")
    assert again.pulls == 0 and again.merged_branch is None

    # then it pushes a folder of alex's: a pull here does not take it
    (plain / "memory" / "alex").mkdir(parents=True)
    (plain / "memory" / "alex" / "ace-0000000bad.md").write_text("not alex's", encoding="utf-8")
    run_git(plain, "add", "memory/alex")
    _commit_file(
        plain, run_git, "memory/hand-0000000005.md",
        _global_unit("hand-0000000005", "Name the account."), "team: a fifth lesson",
    )  # fmt: skip
    assert "memory/alex/ace-0000000bad.md" in run_git(plain, "ls-files")
    run_git(plain, "push", "--quiet", "origin", "main")
    pull(Workspace(ws.root), "origin")
    assert (ws.root / "memory" / "hand-0000000005.md").is_file()
    assert _alex_files(ws.root) == mine
    assert run_git(ws.root, "status", "--porcelain") == ""
    train(Workspace(ws.root), recipe="ace", episodes=2, seed=1)
    _commit_file(
        ws.root, run_git, "memory/hand-0000000006.md",
        _global_unit("hand-0000000006", "Check the date."), "team: a sixth lesson",
    )  # fmt: skip
    last = push(Workspace(ws.root), "origin")  # a fast-forward of what the other pushed
    assert last.pulls == 0
    assert "memory/hand-0000000006.md" in run_git(bare, "ls-tree", "-r", "--name-only", "main")
