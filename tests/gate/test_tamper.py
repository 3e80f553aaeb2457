"""Judge exactly what is committed (issue 28, item 1): the gate's copies and checks under
each git tamper technique.

A workspace's `.git/` can come from someone else. Each technique below makes git show other
files than those committed (`git archive` honours them all); the copies the gate scores and
tests must still hold the committed bytes, the protected-state check must see the disk as it
is, and the git set-up is named (`git_setup`) so that a generation is refused in one sentence
unless the user trusts it. The end-to-end generations are in `test_tamper_generation.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from evolve.gate import (
    export_tree,
    git_setup,
    protected_state,
    run_workspace_tests,
    setup_sentence,
)
from evolve.workspace import Workspace

RunGit = Callable[..., str]
SPLITS = "evalset/splits.yaml"
PROBE = "tests/health/test_probe.py"
FAILING = "def test_probe() -> None:\n    raise AssertionError('the probe always fails')\n"
PASSING = "def test_probe() -> None:\n    pass\n"


def _commit_all(root: Path, run_git: RunGit, message: str) -> str:
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", message)
    return run_git(root, "rev-parse", "HEAD").strip()


def _blob(root: Path, run_git: RunGit, data: bytes) -> str:
    """Write `data` as a blob (not in any tree) and return its id."""
    source = root.parent / "blob.tmp"
    source.write_bytes(data)
    return run_git(root, "hash-object", "-w", str(source)).strip()


def _three_dev_tasks(root: Path) -> bytes:
    splits = yaml.safe_load((root / SPLITS).read_text(encoding="utf-8"))
    splits["dev"] = splits["dev"][:3]
    return yaml.safe_dump(splits, sort_keys=False).encode()


def _side_commit(root: Path, run_git: RunGit, path: str, data: bytes) -> str:
    """A commit on top of HEAD with `path` holding `data`, on no branch; HEAD stays."""
    head = run_git(root, "rev-parse", "HEAD").strip()
    run_git(root, "checkout", "-q", "--detach")
    (root / path).write_bytes(data)
    side = _commit_all(root, run_git, "side: another file")
    run_git(root, "checkout", "-q", "main")
    assert run_git(root, "rev-parse", "HEAD").strip() == head
    return side


def _info(root: Path, name: str, text: str) -> None:
    folder = root / ".git" / "info"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def _hook(root: Path, name: str, body: str) -> Path:
    path = root / ".git" / "hooks" / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def root(workspace: Workspace) -> Path:
    return workspace.root


@pytest.fixture
def failing_base(workspace: Workspace, run_git: RunGit) -> str:
    """A base whose workspace tests fail (a probe that always fails)."""
    (workspace.root / PROBE).write_text(FAILING, encoding="utf-8")
    return _commit_all(workspace.root, run_git, "base: a probe that always fails")


def _export(ws: Workspace, tmp_path: Path, rev: str = "HEAD") -> Path:
    out = tmp_path / "export"
    out.mkdir()
    sha = ws.store.rev_parse(rev)
    export_tree(ws.store, sha, out)
    return out


# --- the copies hold the committed bytes -------------------------------------------------


def test_a_replaced_splits_blob_is_exported_as_committed(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path
) -> None:
    committed = (root / SPLITS).read_bytes()
    evil = _blob(root, run_git, _three_dev_tasks(root))
    run_git(root, "replace", run_git(root, "rev-parse", f"HEAD:{SPLITS}").strip(), evil)
    assert run_git(root, "show", f"HEAD:{SPLITS}").encode() != committed  # git shows the fake

    out = _export(workspace, tmp_path)

    assert (out / SPLITS).read_bytes() == committed


def test_a_replaced_commit_is_exported_as_committed(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path
) -> None:
    committed = (root / SPLITS).read_bytes()
    side = _side_commit(root, run_git, SPLITS, _three_dev_tasks(root))
    head = run_git(root, "rev-parse", "HEAD").strip()
    run_git(root, "replace", head, side)

    out = _export(workspace, tmp_path, head)

    assert (out / SPLITS).read_bytes() == committed


def test_a_replaced_tree_is_exported_as_committed(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path
) -> None:
    committed = (root / SPLITS).read_bytes()
    side = _side_commit(root, run_git, SPLITS, _three_dev_tasks(root))
    run_git(
        root,
        "replace",
        run_git(root, "rev-parse", "HEAD^{tree}").strip(),
        run_git(root, "rev-parse", f"{side}^{{tree}}").strip(),
    )

    out = _export(workspace, tmp_path)

    assert (out / SPLITS).read_bytes() == committed


def test_export_subst_does_not_rewrite_a_committed_file(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path
) -> None:
    data = b"# $Format:%H$\n" + (root / SPLITS).read_bytes()
    (root / SPLITS).write_bytes(data)
    _commit_all(root, run_git, "a splits file with a format placeholder")
    _info(root, "attributes", f"{SPLITS} export-subst\n")

    out = _export(workspace, tmp_path)

    assert (out / SPLITS).read_bytes() == data


def test_a_smudge_filter_on_the_evalset_does_not_reach_the_copy(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path
) -> None:
    committed = (root / SPLITS).read_bytes()
    run_git(root, "config", "filter.evil.smudge", "sed -e '/^dev:/,$d'")
    _info(root, "attributes", "evalset/** filter=evil\n")

    out = _export(workspace, tmp_path)

    assert (out / SPLITS).read_bytes() == committed


@pytest.mark.parametrize("where", ["info/attributes", ".gitattributes", "core.attributesFile"])
def test_export_ignore_does_not_drop_the_tests(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path, where: str
) -> None:
    rule = "tests/** export-ignore\n"
    if where == "info/attributes":
        _info(root, "attributes", rule)
    elif where == ".gitattributes":
        (root / ".gitattributes").write_text(rule, encoding="utf-8")
        _commit_all(root, run_git, "attributes")
    else:
        (tmp_path / "attrs").write_text(rule, encoding="utf-8")
        run_git(root, "config", "core.attributesFile", str(tmp_path / "attrs"))

    out = _export(workspace, tmp_path)

    health = "tests/health/test_workspace_health.py"
    assert (out / health).read_bytes() == (root / health).read_bytes()


def test_a_committed_gitattributes_filter_on_a_protected_file_does_not_reach_the_copy(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path
) -> None:
    committed = (root / SPLITS).read_bytes()
    (root / ".gitattributes").write_text(f"{SPLITS} filter=evil\n", encoding="utf-8")
    _commit_all(root, run_git, "attributes")
    run_git(root, "config", "filter.evil.smudge", "sed -e '/^dev:/,$d'")

    out = _export(workspace, tmp_path)

    assert (out / SPLITS).read_bytes() == committed


@pytest.mark.slow
@pytest.mark.parametrize("where", ["info/attributes", ".gitattributes"])
def test_export_ignore_cannot_make_failing_tests_vanish(
    workspace: Workspace, root: Path, run_git: RunGit, failing_base: str, where: str
) -> None:
    if where == "info/attributes":
        _info(root, "attributes", "tests/** export-ignore\n")
        base = failing_base
    else:
        (root / ".gitattributes").write_text("tests/** export-ignore\n", encoding="utf-8")
        base = _commit_all(root, run_git, "attributes")

    passed, output = run_workspace_tests(workspace.store, base, base, ("evalset/", "tests/"))

    assert not passed
    assert "the probe always fails" in output


@pytest.mark.slow
def test_a_replaced_test_blob_cannot_make_a_failing_test_pass(
    workspace: Workspace, root: Path, run_git: RunGit, failing_base: str
) -> None:
    good = _blob(root, run_git, PASSING.encode())
    run_git(root, "replace", run_git(root, "rev-parse", f"HEAD:{PROBE}").strip(), good)

    passed, output = run_workspace_tests(
        workspace.store, failing_base, failing_base, ("evalset/", "tests/")
    )

    assert not passed
    assert "the probe always fails" in output


def test_the_export_refuses_a_path_that_leaves_the_copy(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path
) -> None:
    """A hand-made tree can name `..`: the export refuses it, writing nothing outside."""
    from evolve.errors import EvolveError

    blob = _blob(root, run_git, b"outside\n")
    inner = _mktree(root, f"100644 blob {blob}\tescape\n")
    outer = _mktree(root, f"040000 tree {inner}\t..\n")
    commit = run_git(root, "commit-tree", outer, "-m", "hand-made").strip()
    out = tmp_path / "export"
    out.mkdir()

    with pytest.raises(EvolveError, match="git would never write"):
        export_tree(workspace.store, commit, out)
    assert not (tmp_path / "escape").exists()


def _mktree(root: Path, listing: str) -> str:
    import subprocess

    done = subprocess.run(
        ["git", "mktree", "--missing"], cwd=root, input=listing, capture_output=True, text=True
    )
    if done.returncode != 0:  # newer git refuses `..`: write the tree object by hand
        mode, kind_oid = listing.split(" ", 1)
        kind, rest = kind_oid.split(" ", 1)
        oid, name = rest.rstrip("\n").split("\t")
        body = f"{int(mode, 8):o} {name}".encode() + b"\x00" + bytes.fromhex(oid)
        import hashlib
        import zlib

        raw = b"tree %d\x00" % len(body) + body
        sha = hashlib.sha1(raw).hexdigest()
        target = root / ".git" / "objects" / sha[:2] / sha[2:]
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(zlib.compress(raw))
        return sha
    return done.stdout.strip()


# --- the protected-state check -------------------------------------------------------------


def test_a_clean_filter_cannot_hide_an_evalset_edit_on_disk(
    workspace: Workspace, root: Path, run_git: RunGit
) -> None:
    """Edit splits.yaml on disk and install a clean filter that turns the edit back into the
    committed bytes: `git status` and `git hash-object` see no change, the check does."""
    committed = (root / SPLITS).read_bytes()
    clean = root.parent / "clean.sh"
    clean.write_bytes(
        b"#!/bin/sh\ncat >/dev/null\ncat " + str(root.parent / "committed").encode() + b"\n"
    )
    (root.parent / "committed").write_bytes(committed)
    clean.chmod(0o755)
    run_git(root, "config", "filter.evil.clean", str(clean))
    _info(root, "attributes", f"{SPLITS} filter=evil\n")
    (root / SPLITS).write_bytes(_three_dev_tasks(root))
    run_git(root, "add", SPLITS)  # stages the cleaned bytes: the committed blob
    assert run_git(root, "status", "--porcelain") == ""  # git sees nothing

    state = protected_state(workspace.store, "HEAD", workspace.config.protected)

    assert f"protected file {SPLITS} differs from commit HEAD" in state.problems


def test_a_replaced_base_commit_does_not_change_the_protected_hash(
    workspace: Workspace, root: Path, run_git: RunGit
) -> None:
    head = run_git(root, "rev-parse", "HEAD").strip()
    before = workspace.store.protected_hash(head, workspace.config.protected)
    side = _side_commit(root, run_git, SPLITS, _three_dev_tasks(root))
    run_git(root, "replace", head, side)

    after = workspace.store.protected_hash(head, workspace.config.protected)

    assert after == before


def test_a_protected_state_under_a_replace_ref_is_a_problem_unless_trusted(
    workspace: Workspace, root: Path, run_git: RunGit
) -> None:
    head = run_git(root, "rev-parse", "HEAD").strip()
    evil = _blob(root, run_git, _three_dev_tasks(root))
    run_git(root, "replace", run_git(root, "rev-parse", f"HEAD:{SPLITS}").strip(), evil)
    protected = workspace.config.protected

    untrusted = protected_state(workspace.store, head, protected)
    trusted = protected_state(workspace.store, head, protected, trust_git_config=True)

    assert untrusted.problems and "replace refs (refs/replace/" in untrusted.problems[0]
    assert trusted.problems == ()
    committed = run_git(root, "--no-replace-objects", "rev-parse", f"HEAD:{SPLITS}").strip()
    assert trusted.blobs[SPLITS] == committed


# --- the git set-up is named ---------------------------------------------------------------

Plant = Callable[[Path, RunGit, Path], None]


def _replace_blob(root: Path, run_git: RunGit, tmp: Path) -> None:
    evil = _blob(root, run_git, _three_dev_tasks(root))
    run_git(root, "replace", run_git(root, "rev-parse", f"HEAD:{SPLITS}").strip(), evil)


def _replace_graft(root: Path, run_git: RunGit, tmp: Path) -> None:
    (root / "memory" / "note.md").write_text("x\n", encoding="utf-8")
    _commit_all(root, run_git, "one more")
    run_git(root, "replace", "--graft", "HEAD")


def _grafts(root: Path, run_git: RunGit, tmp: Path) -> None:
    _info(root, "grafts", run_git(root, "rev-parse", "HEAD").strip() + "\n")


def _info_attributes(root: Path, run_git: RunGit, tmp: Path) -> None:
    _info(root, "attributes", "tests/** export-ignore\n")


def _attributes_file(root: Path, run_git: RunGit, tmp: Path) -> None:
    (tmp / "attrs").write_text("tests/** export-ignore\n", encoding="utf-8")
    run_git(root, "config", "core.attributesFile", str(tmp / "attrs"))


def _smudge(root: Path, run_git: RunGit, tmp: Path) -> None:
    run_git(root, "config", "filter.evil.smudge", "cat")


def _textconv(root: Path, run_git: RunGit, tmp: Path) -> None:
    run_git(root, "config", "diff.evil.textconv", "cat")


def _committed_attributes(root: Path, run_git: RunGit, tmp: Path) -> None:
    (root / ".gitattributes").write_text(
        "[attr]quiet export-ignore\n*.png binary\ntests/** quiet\n", encoding="utf-8"
    )
    _commit_all(root, run_git, "attributes")


def _attributes_in_evalset(root: Path, run_git: RunGit, tmp: Path) -> None:
    (root / "evalset" / ".gitattributes").write_text("*.yaml filter=lfs\n", encoding="utf-8")
    _commit_all(root, run_git, "attributes")


def _hook_naming_evalset(root: Path, run_git: RunGit, tmp: Path) -> None:
    _hook(root, "post-commit", "sed -i 's/dev:/x:/' evalset/splits.yaml\n")


def _hook_planting_replace(root: Path, run_git: RunGit, tmp: Path) -> None:
    _hook(root, "reference-transaction", "git replace -f $(git rev-parse HEAD) HEAD~1\n")


@pytest.mark.parametrize(
    ("plant", "named"),
    [
        (_replace_blob, "replace refs (refs/replace/"),
        (_replace_graft, "replace refs (refs/replace/"),
        (_grafts, ".git/info/grafts"),
        (_info_attributes, ".git/info/attributes"),
        (_attributes_file, "core.attributesfile in the repository's configuration"),
        (_smudge, "filter.evil.smudge in the repository's configuration"),
        (_textconv, "diff.evil.textconv in the repository's configuration"),
        (_committed_attributes, ".gitattributes setting a filter or export rule on tests/"),
        (_attributes_in_evalset, "evalset/.gitattributes setting a filter or export rule on"),
        (_hook_naming_evalset, "the hook post-commit, which names evalset"),
        (_hook_planting_replace, "the hook reference-transaction, which names git replace"),
    ],
    ids=lambda v: getattr(v, "__name__", "").strip("_") or None,
)
def test_each_git_set_up_is_named_in_one_sentence(
    workspace: Workspace, root: Path, run_git: RunGit, tmp_path: Path, plant: Plant, named: str
) -> None:
    assert git_setup(workspace.store, "HEAD", workspace.config.protected) == []
    plant(root, run_git, tmp_path)

    found = git_setup(workspace.store, workspace.store.head() or "", workspace.config.protected)
    sentence = setup_sentence(found)

    assert any(named in item for item in found), found
    assert sentence.startswith("refusing to start a generation: ")
    assert "\n" not in sentence and sentence.endswith("anyway.")
    assert named in sentence and "--trust-git-config" in sentence


def test_a_benign_set_up_is_not_named(
    workspace: Workspace, root: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line-end attributes, a filter on unprotected files, a hook that names nothing judged and
    the user's own configuration are not refused."""
    (root / ".gitattributes").write_text(
        "* text=auto\n*.png filter=lfs diff=lfs\nmemory/** -diff\n", encoding="utf-8"
    )
    _commit_all(root, run_git, "attributes")
    _hook(root, "pre-push", "echo pushing\n")
    (root / ".git" / "hooks" / "post-commit.sample").write_text("git replace\n", encoding="utf-8")
    user = root.parent / "user.gitconfig"
    user.write_text('[filter "lfs"]\n\tsmudge = git-lfs smudge -- %f\n', encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user))

    assert git_setup(workspace.store, "HEAD", workspace.config.protected) == []


def test_a_set_up_that_appears_during_a_trusted_generation_rejects_it(
    workspace: Workspace, root: Path, run_git: RunGit
) -> None:
    from evolve.gate import protection_reason

    store, protected = workspace.store, workspace.config.protected
    before = protected_state(store, "HEAD", protected, trust_git_config=True)
    _info(root, "attributes", "tests/** export-ignore\n")
    after = protected_state(store, "HEAD", protected, trust_git_config=True)

    reason = protection_reason(store, before, after, "during scoring")

    assert reason == "the workspace's git set-up changed during scoring (.git/info/attributes)"


def test_a_copy_that_does_not_hold_the_committed_protected_files_is_named(
    workspace: Workspace, root: Path, tmp_path: Path
) -> None:
    from evolve.gate import loaded_problem

    store, protected = workspace.store, workspace.config.protected
    base = protected_state(store, "HEAD", protected)
    out = _export(workspace, tmp_path)
    assert loaded_problem(base, store.exported_ids(out, protected), "the copy") is None
    (out / SPLITS).write_bytes(_three_dev_tasks(root))
    (out / "tests" / "health" / "test_workspace_health.py").unlink()

    problem = loaded_problem(base, store.exported_ids(out, protected), "the copy")

    assert problem == (
        "the copy did not hold the protected files committed at the base "
        f"({SPLITS}, tests/health/test_workspace_health.py)"
    )


def test_the_prompt_size_the_gate_checks_is_the_committed_one(
    workspace: Workspace, root: Path, run_git: RunGit
) -> None:
    """A replace ref cannot shrink a prompt below `gate.max_prompt_chars` in the evidence."""
    from evolve.gate import prompt_sizes

    prompt = "prompts/system.md"
    committed = len((root / prompt).read_text(encoding="utf-8"))
    tiny = _blob(root, run_git, b"x\n")
    run_git(root, "replace", run_git(root, "rev-parse", f"HEAD:{prompt}").strip(), tiny)

    sizes = prompt_sizes(workspace.store, run_git(root, "rev-parse", "HEAD").strip())

    assert sizes[prompt] == committed > 2


def test_a_gitattributes_in_a_folder_above_a_nested_protected_path_is_named(
    workspace: Workspace, root: Path, run_git: RunGit
) -> None:
    (root / "data" / "evalset").mkdir(parents=True)
    (root / "data" / "evalset" / "tasks.yaml").write_text("[]\n", encoding="utf-8")
    (root / "data" / ".gitattributes").write_text("evalset/** export-ignore\n", "utf-8")
    _commit_all(root, run_git, "a nested evalset")

    found = git_setup(workspace.store, "HEAD", ["data/evalset/"])

    assert found == [
        "data/.gitattributes setting a filter or export rule on data/evalset/tasks.yaml"
    ]
