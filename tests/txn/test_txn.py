"""The one transaction: the lock, the apply journal around a write, recovery, a generation's
journal, and the layer it sits in."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from evolve import txn
from evolve.errors import EvolveError, LockHeld
from evolve.memory import MemoryUnit, load_units
from evolve.ops import Op
from evolve.txn._generation import journal_path as generation_journal
from evolve.txn._journal import journal_path
from evolve.workspace import Workspace

RunGit = Callable[..., str]
ALEX = "user:alex"


def _unit(uid: str, text: str) -> MemoryUnit:
    return MemoryUnit.model_validate(
        {"id": uid, "recipe": "ace", "kind": "bullet", "scope": ALEX, "created_episode": 0,
         "text": text}
    )  # fmt: skip


def _status(ws: Workspace, run_git: RunGit) -> str:
    return run_git(ws.root, "status", "--porcelain", "--untracked-files=all")


def test_apply_journals_the_write_and_commit_ends_it(workspace: Workspace, run_git: RunGit) -> None:
    with txn.writer(workspace, "test") as tx:
        applied = tx.apply([Op(op="add", unit=_unit("ace-a", "Sign texts."))], [], scope=ALEX)
        journal = json.loads(journal_path(workspace.store).read_text("utf-8"))
        assert journal == {"head": workspace.store.head(), "paths": applied.paths}
        sha = tx.commit(applied.paths, "learn ace-a", trailers=[("Evolve-Kind", "train")])
        assert not journal_path(workspace.store).exists()
    assert sha == workspace.store.head()
    assert [u.id for u in load_units(workspace.root)] == ["ace-a"]
    assert _status(workspace, run_git) == ""


def test_a_writer_that_dies_before_its_commit_is_undone_by_the_next(
    workspace: Workspace, run_git: RunGit
) -> None:
    head = workspace.store.head()
    with pytest.raises(RuntimeError), txn.writer(workspace, "test") as tx:
        tx.apply([Op(op="add", unit=_unit("ace-a", "Half written."))], [], scope=ALEX)
        raise RuntimeError("died between the write and the commit")
    assert journal_path(workspace.store).exists()  # an error is the next writer's to undo

    with txn.writer(Workspace(workspace.root), "the next writer") as tx:
        assert tx.recovery.restored == ["memory/alex/ace-a.md"]
        assert not tx.recovery.committed
        message = tx.recovery.message()
        assert message is not None and message.startswith("an interrupted evolve write was")
    assert workspace.store.head() == head
    assert _status(workspace, run_git) == ""


def test_write_commits_whole_files_and_refuses_protected_ones(workspace: Workspace) -> None:
    with txn.writer(workspace, "test") as tx:
        paths = tx.write({"prompts/extra.md": b"# more\n"}, allowed=("prompts/",))
        assert tx.commit(paths, "a prompt") is not None
        with pytest.raises(EvolveError):
            tx.write({"evalset/splits.yaml": b"train: []\n"})
    assert not journal_path(workspace.store).exists()


def test_joined_needs_the_lock_this_process_holds(workspace: Workspace) -> None:
    with pytest.raises(EvolveError, match="outside the workspace's writer lock"):
        txn.joined(workspace)
    with txn.writer(workspace, "test"):
        assert txn.joined(workspace).ws is workspace
        with pytest.raises(LockHeld):  # a second writer, even in this process, is refused
            txn.lock(Workspace(workspace.root), "another").acquire()


def test_a_generation_journals_its_base_and_rolls_back_to_it(
    workspace: Workspace, run_git: RunGit
) -> None:
    base = workspace.store.head()
    with txn.writer(workspace, "test") as tx:
        gtx = tx.generation(1, "hash")
        assert gtx.base == base and generation_journal(workspace.store).exists()
        gtx.phase("training", stream_end=4)
        assert json.loads(generation_journal(workspace.store).read_text("utf-8"))["phase"] == (
            "training"
        )
        applied = tx.apply([Op(op="add", unit=_unit("ace-a", "Kept?"))], [], scope=ALEX)
        assert tx.commit(applied.paths, "learned in generation 1") != base
        (workspace.root / "memory" / "stray.md").write_text("left behind\n", encoding="utf-8")
        gtx.rollback()
        gtx.end()
    assert workspace.store.head() == base
    assert not generation_journal(workspace.store).exists()
    assert _status(workspace, run_git) == ""


def test_a_killed_generation_is_reset_and_recorded_by_the_next_writer(
    workspace: Workspace,
) -> None:
    base = workspace.store.head()
    with txn.writer(workspace, "test") as tx:
        tx.generation(1, "hash")
        applied = tx.apply([Op(op="add", unit=_unit("ace-a", "Never judged."))], [], scope=ALEX)
        tx.commit(applied.paths, "learned in generation 1", trailers=[("Evolve-Generation", "1")])
        # ... the process is killed here: the journal stays.
    with txn.writer(Workspace(workspace.root), "evolve train") as tx:
        record = tx.recovery.generation
    assert record is not None and record.number == 1 and record.verdict == "rejected"
    assert record.reason.startswith("error: the process running it")
    assert "`evolve train` rolled it back" in record.reason
    assert workspace.store.head() == base
    assert txn.last_used_number(workspace) == 1  # the number is used up


SRC = Path(txn.__file__).parent
HIGHER = ("train", "generations", "review", "history", "compare", "cli", "skills", "updaters",
          "reflector", "quick", "report", "sim")  # fmt: skip


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # function-local too
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_txn_imports_nothing_above_it() -> None:
    found = {
        f"{path.name}: {module}"
        for path in SRC.glob("*.py")
        for module in _imports(path)
        if module.startswith("evolve.") and module.split(".")[1] in HIGHER
    }
    assert found == set()


def test_below_txn_nothing_imports_it() -> None:
    below = SRC.parent
    found = {
        f"{path.relative_to(below)}: {module}"
        for package in ("store", "workspace", "applier", "gate", "memory", "ops")
        for path in (below / package).glob("*.py")
        for module in _imports(path)
        if module == "evolve.txn" or module.startswith("evolve.txn.")
    }
    assert found == set()


def test_only_the_transaction_commits_to_the_branch() -> None:
    """Every writer commits through `Transaction.commit`; the store's commit is called only
    there (and by `init_workspace`, whose first commit makes the repository)."""
    callers = set()
    for path in SRC.parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "commit"
                and isinstance(node.func.value, ast.Attribute | ast.Name)
                and (getattr(node.func.value, "attr", None) or getattr(node.func.value, "id", ""))
                == "store"
            ):
                callers.add(str(path.relative_to(SRC.parent)))
    assert callers == {"txn/_writer.py", "workspace/_init.py"}
