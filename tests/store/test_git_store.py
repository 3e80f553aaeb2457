"""`GitStore`: commits written from Python must be exactly what git itself would write."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.errors import EvolveError
from evolve.store import EPISODE, OPS, RECIPE, TASK, GitStore

RunGit = Callable[..., str]


@pytest.fixture
def store(tmp_path: Path) -> GitStore:
    """A repository with one commit holding `README.md` and `memory/a.md`."""
    root = tmp_path / "repo"
    root.mkdir()
    store = GitStore.init(root)
    _write(root, "README.md", "hello\n")
    _write(root, "memory/a.md", "alpha\n")
    sha = store.commit(["README.md", "memory/a.md"], "initial")
    assert sha is not None
    return store


def _write(root: Path, rel: str, text: str, *, executable: bool = False) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _assert_git_agrees(root: Path, run_git: RunGit) -> None:
    """HEAD, the index and the working tree agree, and the objects pass `git fsck --strict`."""
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    run_git(root, "diff", "--quiet", "HEAD")
    run_git(root, "diff", "--cached", "--quiet", "HEAD")
    head_tree = run_git(root, "rev-parse", "HEAD^{tree}").strip()
    run_git(root, "add", "-A")
    assert run_git(root, "write-tree").strip() == head_tree
    run_git(root, "fsck", "--strict", "--no-progress", "--no-dangling")


def _twin_tree(source: Path, tmp_path: Path, run_git: RunGit) -> str:
    """The tree the git CLI writes for the working tree of `source` (copied to a fresh repo)."""
    twin = tmp_path / "twin"
    if twin.exists():
        shutil.rmtree(twin)
    shutil.copytree(source, twin, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    run_git(twin, "init", "-q", "-b", "main")
    run_git(twin, "add", "-A")
    return run_git(twin, "write-tree").strip()


# --- commits --------------------------------------------------------------------------


def test_first_commit_in_an_empty_repository(tmp_path: Path, run_git: RunGit) -> None:
    root = tmp_path / "r"
    root.mkdir()
    store = GitStore.init(root)
    assert store.head() is None
    assert list(store.log()) == []
    _write(root, "x.txt", "x\n")
    sha = store.commit(["x.txt"], "first")
    assert sha is not None and store.head() == sha
    assert run_git(root, "rev-parse", "HEAD").strip() == sha
    assert run_git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    info = next(store.log())
    assert info.parents == () and info.subject == "first"
    _assert_git_agrees(root, run_git)


def test_add_modify_delete_nested_new_top_level_and_executable(
    store: GitStore, tmp_path: Path, run_git: RunGit
) -> None:
    root = store.root
    base = store.head()
    _write(root, "memory/a.md", "alpha, changed\n")  # modify
    _write(root, "memory/alex/deep/new.md", "new\n")  # nested new folders
    _write(root, "prompts/system.md", "be nice\n")  # new top-level folder
    _write(root, "bin/run.sh", "#!/bin/sh\necho hi\n", executable=True)  # executable bit
    (root / "README.md").unlink()  # delete
    (root / "memory" / "link.md").symlink_to("a.md")  # symlink
    _write(root, "memory/ünï cødé.md", "unicode name\n")
    paths = [
        "memory/a.md",
        "memory/alex/deep/new.md",
        "prompts/system.md",
        "bin/run.sh",
        "README.md",
        "memory/link.md",
        "memory/ünï cødé.md",
    ]
    sha = store.commit(paths, "change everything")
    assert sha is not None
    assert run_git(root, "rev-parse", "HEAD").strip() == sha
    assert run_git(root, "rev-parse", "HEAD^").strip() == base
    assert run_git(root, "rev-parse", "HEAD^{tree}").strip() == _twin_tree(root, tmp_path, run_git)
    ls = run_git(root, "ls-tree", "-r", "HEAD").splitlines()
    modes = {line.split("\t", 1)[1]: line.split()[0] for line in ls}
    assert modes["bin/run.sh"] == "100755"
    assert modes["memory/a.md"] == "100644"
    assert modes["memory/link.md"] == "120000"
    assert "README.md" not in modes
    assert store.read(sha, "memory/link.md") == b"a.md"
    _assert_git_agrees(root, run_git)


def test_tree_entries_are_in_git_order(store: GitStore, tmp_path: Path, run_git: RunGit) -> None:
    # git sorts a tree named "a" as "a/", i.e. after "a-b" and "a.txt" but before "a0".
    root = store.root
    names = ["a-b", "a.txt", "a/x", "a0", "a/b/c", "A", "_", "z"]
    for name in names:
        _write(root, name, name + "\n")
    assert store.commit(names, "ordering") is not None
    assert run_git(root, "rev-parse", "HEAD^{tree}").strip() == _twin_tree(root, tmp_path, run_git)
    _assert_git_agrees(root, run_git)


def test_deleting_the_last_file_of_a_folder_removes_the_folder(
    store: GitStore, run_git: RunGit
) -> None:
    root = store.root
    _write(root, "memory/x/y/only.md", "only\n")
    store.commit(["memory/x/y/only.md"], "add")
    (root / "memory" / "x" / "y" / "only.md").unlink()
    assert store.commit(["memory/x/y/only.md"], "remove") is not None
    assert store.list_files("HEAD", "memory") == ["memory/a.md"]
    assert run_git(root, "ls-tree", "HEAD", "memory/").split()[-1] == "memory/a.md"
    _assert_git_agrees(root, run_git)


def test_deleting_every_file_gives_the_empty_tree(store: GitStore, run_git: RunGit) -> None:
    root = store.root
    (root / "README.md").unlink()
    (root / "memory" / "a.md").unlink()
    assert store.commit(["README.md", "memory/a.md"], "empty it") is not None
    empty_tree = run_git(root, "hash-object", "-t", "tree", "/dev/null").strip()
    assert run_git(root, "rev-parse", "HEAD^{tree}").strip() == empty_tree
    run_git(root, "fsck", "--strict", "--no-progress")


def test_executable_bit_change_alone_is_a_change(store: GitStore, run_git: RunGit) -> None:
    root = store.root
    path = root / "README.md"
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    assert store.commit(["README.md"], "make it executable") is not None
    assert run_git(root, "ls-tree", "HEAD", "README.md").split()[0] == "100755"
    _assert_git_agrees(root, run_git)


def test_only_named_paths_are_taken_from_the_working_tree(store: GitStore, run_git: RunGit) -> None:
    root = store.root
    _write(root, "memory/a.md", "changed\n")
    _write(root, "README.md", "also changed\n")
    store.commit(["memory/a.md"], "only a")
    assert store.read("HEAD", "memory/a.md") == b"changed\n"
    assert store.read("HEAD", "README.md") == b"hello\n"
    assert store.dirty_paths() == ["README.md"]


def test_other_staged_changes_stay_staged_and_uncommitted(store: GitStore, run_git: RunGit) -> None:
    root = store.root
    _write(root, "staged.txt", "staged\n")
    run_git(root, "add", "staged.txt")
    _write(root, "memory/a.md", "changed\n")
    store.commit(["memory/a.md"], "only a")
    assert store.read("HEAD", "staged.txt") is None
    assert run_git(root, "diff", "--cached", "--name-status", "HEAD").split() == ["A", "staged.txt"]


def test_nothing_changed_returns_none(store: GitStore, run_git: RunGit) -> None:
    head = store.head()
    assert store.commit(["memory/a.md"], "no change") is None
    assert store.commit([], "no paths") is None
    assert store.commit(["does/not/exist.md"], "deleting what is not there") is None
    assert store.head() == head
    assert run_git(store.root, "rev-list", "--count", "HEAD").strip() == "1"


def test_allow_empty_makes_a_commit_with_the_same_tree(store: GitStore, run_git: RunGit) -> None:
    head = store.head()
    sha = store.commit([], "marker", allow_empty=True, trailers={"Evolve-Kind": "marker"})
    assert sha is not None and sha != head
    info = next(store.log())
    assert info.parents == (head,)
    assert info.trailers == {"Evolve-Kind": "marker"}
    tree = run_git(store.root, "rev-parse", "HEAD^{tree}").strip()
    assert tree == run_git(store.root, "rev-parse", "HEAD^^{tree}").strip()
    _assert_git_agrees(store.root, run_git)


def test_author_comes_from_the_environment(store: GitStore, run_git: RunGit) -> None:
    line = run_git(store.root, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip()
    assert line == "Evolve Test <test@evolve.invalid>|Evolve Test <test@evolve.invalid>"


def test_reflog_records_the_commit(store: GitStore, run_git: RunGit) -> None:
    _write(store.root, "memory/a.md", "x\n")
    sha = store.commit(["memory/a.md"], "reflogged")
    assert sha is not None
    top = run_git(store.root, "reflog", "-1", "--format=%H %gs").strip()
    assert top == f"{sha} evolve: reflogged"


def test_commit_chains_on_an_external_git_commit(store: GitStore, run_git: RunGit) -> None:
    root = store.root
    first = store.head()
    _write(root, "outside.txt", "by hand\n")
    run_git(root, "add", "outside.txt")
    run_git(root, "commit", "-q", "-m", "by hand")
    external = run_git(root, "rev-parse", "HEAD").strip()
    assert external != first
    _write(root, "memory/a.md", "after\n")
    sha = store.commit(["memory/a.md"], "after the external commit")
    assert sha is not None
    assert next(store.log()).parents == (external,)
    assert store.read(sha, "outside.txt") == b"by hand\n"
    _assert_git_agrees(root, run_git)


def test_commit_works_on_packed_refs(store: GitStore, run_git: RunGit) -> None:
    root = store.root
    run_git(root, "pack-refs", "--all")
    assert not (store.git_dir / "refs" / "heads" / "main").exists()
    old = store.head()
    _write(root, "memory/a.md", "packed\n")
    sha = store.commit(["memory/a.md"], "on packed refs")
    assert sha is not None
    assert run_git(root, "rev-parse", "HEAD").strip() == sha
    assert run_git(root, "rev-parse", "HEAD^").strip() == old
    _assert_git_agrees(root, run_git)


def test_branch_moved_during_commit_is_detected(
    store: GitStore, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = store.root
    real_write_tree = store._write_tree

    def write_tree_then_someone_commits(*args: object, **kwargs: object) -> str | None:
        tree = real_write_tree(*args, **kwargs)  # type: ignore[arg-type]
        if not (root / "sneaky.txt").exists():
            _write(root, "sneaky.txt", "sneaky\n")
            run_git(root, "add", "sneaky.txt")
            run_git(root, "commit", "-q", "-m", "concurrent")
        return tree

    monkeypatch.setattr(store, "_write_tree", write_tree_then_someone_commits)
    _write(root, "memory/a.md", "mine\n")
    with pytest.raises(EvolveError, match="branch moved"):
        store.commit(["memory/a.md"], "mine")
    assert run_git(root, "log", "-1", "--format=%s").strip() == "concurrent"
    assert not (store.git_dir / "refs" / "heads" / "main.lock").exists()
    assert store.read("HEAD", "memory/a.md") == b"alpha\n"


def test_ref_lock_held_by_git_is_respected(store: GitStore, run_git: RunGit) -> None:
    lock = store.git_dir / "refs" / "heads" / "main.lock"
    lock.write_text("", encoding="utf-8")
    head = store.head()
    _write(store.root, "memory/a.md", "blocked\n")
    with pytest.raises(EvolveError, match="another git process"):
        store.commit(["memory/a.md"], "blocked")
    assert store.head() == head
    assert lock.exists()  # git's lock is not ours to remove
    lock.unlink()
    assert store.commit(["memory/a.md"], "unblocked") is not None


def test_detached_head_is_refused(store: GitStore, run_git: RunGit) -> None:
    run_git(store.root, "checkout", "-q", "--detach")
    _write(store.root, "memory/a.md", "x\n")
    with pytest.raises(EvolveError, match="detached"):
        store.commit(["memory/a.md"], "x")


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(EvolveError, match="not a git repository"):
        GitStore(tmp_path)


# --- messages and history --------------------------------------------------------------


def test_message_and_trailers_round_trip_through_log(store: GitStore, run_git: RunGit) -> None:
    _write(store.root, "memory/a.md", "x\n")
    trailers = {EPISODE: "7", RECIPE: "ace", TASK: "text_update-1", OPS: "add=u-1 modify=u-2"}
    sha = store.commit(
        ["memory/a.md"],
        "  learn:   sign-off\n preference ",
        body="The user wanted a dash.\nSecond line.",
        trailers=trailers,
    )
    assert sha is not None
    info = next(store.log())
    assert info.sha == sha and info.short == sha[:10]
    assert info.subject == "learn: sign-off preference"
    assert info.body.startswith("The user wanted a dash.\nSecond line.")
    assert info.trailers == trailers
    assert info.time.startswith("20")
    # git itself agrees on the trailers
    git_view = run_git(store.root, "log", "-1", "--format=%(trailers:only,unfold)")
    assert set(git_view.split("\n")) - {""} == {f"{k}: {v}" for k, v in trailers.items()}


def test_trailer_values_are_flattened_and_empty_ones_dropped(store: GitStore) -> None:
    sha = store.commit(
        [],
        "s",
        trailers=[("Evolve-Episode", "1"), ("Evolve-Task", "multi\nline   value"), ("X-Empty", "")],
        allow_empty=True,
    )
    info = next(store.log())
    assert info.sha == sha
    assert info.trailers == {"Evolve-Episode": "1", "Evolve-Task": "multi line value"}


def test_log_filters_by_path_and_limits(store: GitStore) -> None:
    root = store.root
    for i in range(3):
        _write(root, "memory/a.md", f"v{i}\n")
        store.commit(["memory/a.md"], f"memory {i}", trailers={EPISODE: str(i)})
        _write(root, "prompts/system.md", f"p{i}\n")
        store.commit(["prompts/system.md"], f"prompt {i}")
    subjects = [c.subject for c in store.log(paths=["memory"])]
    assert subjects == ["memory 2", "memory 1", "memory 0", "initial"]
    assert [c.subject for c in store.log(paths=["prompts/system.md"])] == [
        "prompt 2",
        "prompt 1",
        "prompt 0",
    ]
    assert [c.subject for c in store.log(max_count=2)] == ["prompt 2", "memory 2"]
    assert [c.subject for c in store.log(grep_trailer=EPISODE)] == [
        "memory 2",
        "memory 1",
        "memory 0",
    ]
    assert [c.trailers[EPISODE] for c in store.log(grep_trailer=EPISODE, max_count=1)] == ["2"]
    assert len(list(store.log())) == 7
    all_commits = list(store.log())
    assert all(c.parents == (n.sha,) for c, n in zip(all_commits, all_commits[1:], strict=False))
    older = list(store.log(rev=all_commits[2].sha))
    assert [c.sha for c in older] == [c.sha for c in all_commits[2:]]


def test_rev_parse(store: GitStore, run_git: RunGit) -> None:
    head = store.head()
    assert head is not None
    assert store.rev_parse("HEAD") == head
    assert store.rev_parse("main") == head
    assert store.rev_parse(head[:8]) == head
    with pytest.raises(EvolveError, match="'nosuch' is not a commit"):
        store.rev_parse("nosuch")
    with pytest.raises(EvolveError, match="is not a commit"):
        store.rev_parse("HEAD~5")
    blob = run_git(store.root, "rev-parse", "HEAD:README.md").strip()
    with pytest.raises(EvolveError, match="is not a commit"):
        store.rev_parse(blob)


def test_read_and_list_files_at_a_revision(store: GitStore) -> None:
    root = store.root
    first = store.head()
    assert first is not None
    _write(root, "memory/a.md", "second\n")
    _write(root, "memory/alex/u1.md", "u1\n")
    second = store.commit(["memory/a.md", "memory/alex/u1.md"], "second")
    assert second is not None
    assert store.read(first, "memory/a.md") == b"alpha\n"
    assert store.read(second, "memory/a.md") == b"second\n"
    assert store.read(first, "memory/alex/u1.md") is None
    assert store.read(second, "nosuch.md") is None
    assert store.list_files(first, "memory") == ["memory/a.md"]
    assert store.list_files(second, "memory/") == ["memory/a.md", "memory/alex/u1.md"]
    assert store.list_files(second, "memory/alex") == ["memory/alex/u1.md"]
    assert store.list_files(second, "prompts") == []


def test_read_of_a_folder_is_none(store: GitStore) -> None:
    assert store.read("HEAD", "memory") is None


def test_list_files_with_a_file_prefix(store: GitStore) -> None:
    assert store.list_files("HEAD", "memory/a.md") in ([], ["memory/a.md"])


def test_dirty_paths(store: GitStore, run_git: RunGit) -> None:
    root = store.root
    assert store.dirty_paths() == []
    _write(root, "memory/a.md", "modified\n")
    _write(root, "new/deep/untracked.md", "u\n")
    (root / "README.md").unlink()
    _write(root, "staged.md", "s\n")
    run_git(root, "add", "staged.md")
    _write(root, ".gitignore", "ignored/\n")
    _write(root, "ignored/x.log", "x\n")
    assert sorted(store.dirty_paths()) == [
        ".gitignore",
        "README.md",
        "memory/a.md",
        "new/deep/untracked.md",
        "staged.md",
    ]
    assert store.dirty_paths(["memory"]) == ["memory/a.md"]
    assert store.dirty_paths(["prompts"]) == []


def test_dirty_paths_reports_a_staged_rename_once(store: GitStore, run_git: RunGit) -> None:
    run_git(store.root, "mv", "memory/a.md", "memory/b.md")
    assert store.dirty_paths() == ["memory/b.md"]


def test_reset_hard_discards_commits_and_changes(store: GitStore, run_git: RunGit) -> None:
    base = store.head()
    assert base is not None
    _write(store.root, "memory/a.md", "gen\n")
    store.commit(["memory/a.md"], "generation")
    _write(store.root, "memory/a.md", "uncommitted\n")
    store.reset_hard(base)
    assert store.head() == base
    assert (store.root / "memory" / "a.md").read_text(encoding="utf-8") == "alpha\n"
    assert store.dirty_paths() == []


def test_many_commits_stay_consistent(store: GitStore, run_git: RunGit) -> None:
    root = store.root
    for i in range(15):
        rel = f"memory/u{i % 4}/unit{i}.md"
        _write(root, rel, f"unit {i}\n")
        paths = [rel]
        if i % 3 == 2:
            victim = f"memory/u{(i - 2) % 4}/unit{i - 2}.md"
            os.unlink(root / victim)
            paths.append(victim)
        assert store.commit(paths, f"episode {i}", trailers={EPISODE: str(i)}) is not None
    assert run_git(root, "rev-list", "--count", "HEAD").strip() == "16"
    _assert_git_agrees(root, run_git)
