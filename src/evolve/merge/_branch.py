"""`merge_branch(ws, ref)`: one merge commit, drivers and the rules of `_reconcile`, under the
writer lock; and `reconcile(ws)`: the same rules after a plain `git merge`.

Whatever fetched `ref` (`evolve pull`, a plain `git fetch`, another local branch),
merging it is:

1. refuse a dirty tree, an unknown ref, unrelated histories, and a unit conflict the rules
   cannot settle (one sentence, with the commands that resolve it) before anything changes;
2. `git merge --no-commit` (the counter sidecars merge by evolve's drivers, registered first);
   a conflict outside `memory/`'s unit files (a prompt both sides changed, a sidecar a driver
   refused) aborts the merge and says which file, nothing left half-done;
3. the unit files take their merged state (`merge_units`), then the rules' ops and the caps'
   evictions go through the applier (`txn`), and everything is ONE merge commit carrying
   `Evolve-Kind: merge`, `Evolve-Merged`, `Evolve-Ops` and `Evolve-Merge-Rules`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from evolve._format._message import KIND, MERGE_RULES, MERGED, OPS, format_message, format_ops
from evolve.errors import EvolveError
from evolve.memory import MalformedUnit, MemoryUnit, dump_unit, without_counters
from evolve.memory._files import load_units, read_unit
from evolve.merge._reconcile import Side, UnitMerge, merge_units, rules
from evolve.ops import Op
from evolve.txn._unsettled import mark_settled
from evolve.workspace import Workspace
from evolve.workspace._drivers import install_merge_drivers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evolve.txn import Transaction

COMMAND = "evolve merge"


@dataclass
class MergeResult:
    """What a merge did (`evolve merge --json` prints it)."""

    ref: str
    merged: str  # the commit merged in
    commit: str | None = None  # the merge commit (None: already up to date)
    status: str = "merged"  # merged | fast-forward | up-to-date | reconciled
    ops: list[tuple[str, str]] = field(default_factory=list)
    rules: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "ref": self.ref,
            "merged": self.merged,
            "commit": self.commit,
            "status": self.status,
            "ops": [{"op": op, "id": ident} for op, ident in self.ops],
            "rules": dict(self.rules),
            "notes": list(self.notes),
        }


def _git(ws: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_MERGE_AUTOEDIT": "no", "GIT_EDITOR": "true"}
    return subprocess.run(
        ["git", *args], cwd=ws.root, capture_output=True, text=True, encoding="utf-8",
        errors="replace", env=env, check=False,
    )  # fmt: skip


def _rev(ws: Workspace, ref: str) -> str:
    if ref.startswith("-"):
        raise EvolveError(f"{ref!r} is not a branch or commit; name the ref to merge.")
    done = _git(ws, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    sha = done.stdout.strip()
    if done.returncode != 0 or not sha:
        raise EvolveError(
            f"{ref!r} names no commit here; fetch it first (`git fetch` or `evolve pull`)."
        )
    return sha


def _unit_files(ws: Workspace, rev: str) -> tuple[dict[str, MemoryUnit], dict[str, bytes]]:
    """(path -> unit, path -> bytes) of the unit files under `memory/` at `rev` (counters not
    overlaid: a file holds content and status)."""
    files = ws.store.read_tree_files(rev, "memory")
    units: dict[str, MemoryUnit] = {}
    raw: dict[str, bytes] = {}
    for path, data in files.items():
        name = path.rsplit("/", 1)[-1]
        if not path.endswith(".md") or name.startswith("."):
            continue
        try:
            units[path] = read_unit(path, data.decode("utf-8"))
        except (MalformedUnit, UnicodeDecodeError) as exc:
            raise EvolveError(
                f"{path} at {rev[:10]} is not a unit file evolve can merge ({exc}); fix it "
                "on that side first."
            ) from None
        raw[path] = data
    return units, raw


def _resolved_bytes(
    path: str,
    unit: MemoryUnit | None,
    sides: tuple[tuple[dict[str, MemoryUnit], dict[str, bytes]], ...],
) -> bytes | None:
    if unit is None:
        return None
    for units, raw in sides:
        for p, u in units.items():
            if u == unit and p == path:
                return raw[p]
    for units, raw in sides:  # renamed (a new id): its file written again
        for p, u in units.items():
            if u == unit.with_(id=u.id) and u.recipe == "hand":
                return raw[p]
    return dump_unit(without_counters(unit)).encode("utf-8")


def _merge_state(ws: Workspace) -> bool:
    return (ws.store.git_dir / "MERGE_HEAD").exists()


def _abort(ws: Workspace, head: str) -> None:
    _git(ws, "merge", "--abort")
    _git(ws, "reset", "--hard", "--quiet", head)


def _conflicted(ws: Workspace) -> list[str]:
    done = _git(ws, "diff", "--name-only", "--diff-filter=U", "-z")
    return [p for p in done.stdout.split("\0") if p]


def _is_unit_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith("memory/") and path.endswith(".md") and not name.startswith(".")


@contextmanager
def _writer(ws: Workspace, command: str, *, check_git: bool = True) -> Iterator[Transaction]:
    """The writer lock for `command`, or, when this process already holds it (`evolve pull`
    merging what it fetched, under its own lock), that transaction joined."""
    from evolve import txn

    if txn.writer_lock_held(ws.store.git_dir):
        yield txn.joined(ws)
        return
    with txn.writer(ws, command, check_git=check_git) as tx:
        yield tx


def merge_branch(ws: Workspace, ref: str, *, take: Mapping[str, Side] | None = None) -> MergeResult:
    """Merge `ref` into the workspace's branch as one merge commit (see the module docstring).

    Raises:
        EvolveError: a dirty tree, an unknown ref, unrelated histories, a unit conflict the
            rules cannot settle, or a conflict outside the unit files: one sentence each,
            the workspace as it was.
    """
    theirs = _rev(ws, ref)
    with _writer(ws, COMMAND) as tx:
        store = ws.store
        head = store.head()
        if head is None:
            raise EvolveError("this branch has no commit yet; commit before merging.")
        dirty = store.dirty_paths()
        if dirty:
            raise EvolveError(
                f"uncommitted changes ({', '.join(dirty[:3])}); commit or discard them, then "
                "merge again."
            )
        if store.is_ancestor(theirs, head):
            return MergeResult(ref, theirs, None, "up-to-date")
        base_done = _git(ws, "merge-base", head, theirs)
        base = base_done.stdout.strip()
        if base_done.returncode != 0 or not base:
            raise EvolveError(
                f"{ref} shares no history with this branch; merge only clones of one workspace."
            )
        install_merge_drivers(ws.root)
        if base == head:
            done = _git(ws, "merge", "--ff-only", "--quiet", theirs)
            if done.returncode != 0:
                raise EvolveError(f"git could not fast-forward to {ref} ({done.stderr.strip()}).")
            return MergeResult(ref, theirs, theirs, "fast-forward")
        sides = tuple(_unit_files(ws, rev) for rev in (base, head, theirs))
        merged = merge_units(sides[0][0], sides[1][0], sides[2][0], take=take)
        if merged.conflicts:
            more = len(merged.conflicts) - 1
            extra = f" ({more} more unit(s) like it)" if more else ""
            raise EvolveError(merged.conflicts[0].sentence(ref).rstrip(".") + extra + ".")
        done = _git(ws, "merge", "--no-ff", "--no-commit", "--quiet", theirs)
        try:
            result = _finish(ws, tx, ref, theirs, merged, sides, done)
        except BaseException:
            _abort(ws, head)
            tx.end()
            raise
        tx.end()
        return result


def _finish(
    ws: Workspace,
    tx: Transaction,
    ref: str,
    theirs: str,
    merged: UnitMerge,
    sides: tuple[tuple[dict[str, MemoryUnit], dict[str, bytes]], ...],
    done: subprocess.CompletedProcess[str],
) -> MergeResult:
    if not _merge_state(ws):
        said = (done.stderr or done.stdout).strip().splitlines()
        raise EvolveError(f"git could not merge {ref} ({said[-1] if said else 'no reason given'}).")
    others = [p for p in _conflicted(ws) if not _is_unit_file(p)]
    if others:
        raise EvolveError(_conflict_sentence(others[0], ref, done.stderr))
    files: dict[str, bytes | None] = {}
    for path, unit in merged.units.items():
        data = _resolved_bytes(path, unit, (sides[1], sides[2]))
        full = ws.root / path
        now = full.read_bytes() if full.is_file() else None
        if now != data:
            files[path] = data
    files.update(_same_change_sidecars(ws, ws.store.head() or "", theirs))
    if files:
        tx.write(files, ("memory/",))
    result = MergeResult(ref, theirs, None, "merged", notes=list(merged.notes))
    _apply_rules(ws, tx, merged, result)
    _commit(ws, result)
    return result


def _sidecar_kind(path: str) -> str | None:
    from evolve.workspace._drivers import PATTERNS

    if not path.startswith("memory/"):
        return None
    for kind, pattern in PATTERNS.items():
        if pattern.startswith("memory/**/") and path.endswith("/" + pattern.rsplit("/", 1)[1]):
            return kind
        if path == pattern:
            return kind
    return None


def _sidecar_text(files: Mapping[str, bytes], path: str) -> str:
    data = files.get(path)
    return "" if data is None else data.decode("utf-8")


def _virtual_base(ws: Workspace, path: str, one: str, others: list[str], depth: int = 0) -> str:
    """The sidecar at `path` in the merge base of `one` and `others` as git's recursive merge
    builds it: several bases merged three-way in turn (their own bases found the same way)."""
    from evolve.merge._drivers import MERGES

    done = _git(ws, "merge-base", "--all", one, *others)
    bases = done.stdout.split()
    if done.returncode != 0 or not bases:
        return ""
    text = _sidecar_text(ws.store.read_tree_files(bases[0], path), path)
    kind = _sidecar_kind(path)
    for k in range(1, len(bases)):
        assert kind is not None
        under = _virtual_base(ws, path, bases[k], bases[:k], depth + 1) if depth < 8 else ""
        other = _sidecar_text(ws.store.read_tree_files(bases[k], path), path)
        text = MERGES[kind](path, under, text, other)
    return text


def _same_change_sidecars(ws: Workspace, head: str, theirs: str) -> dict[str, bytes | None]:
    """Sidecars both sides changed to the same bytes: git takes that content without running
    the driver (both learners counted one episode each, and the merge would keep one count),
    so they are merged three-way here. Raises EvolveError on a side that does not read."""
    from evolve.merge._drivers import MERGES, Malformed

    ours = ws.store.read_tree_files(head, "memory")
    other = ws.store.read_tree_files(theirs, "memory")
    out: dict[str, bytes | None] = {}
    for path in sorted(ours):
        kind = _sidecar_kind(path)
        if kind is None or other.get(path) != ours[path]:
            continue
        text = ours[path].decode("utf-8", "replace")
        base = _virtual_base(ws, path, head, [theirs])
        if base == text:
            continue  # neither side changed it
        try:
            merged = MERGES[kind](path, base, text, text)
        except Malformed as exc:
            raise EvolveError(f"{path} could not be merged ({exc}); nothing was merged.") from None
        if merged != text:
            out[path] = merged.encode("utf-8")
    return out


def _conflict_sentence(path: str, ref: str, stderr: str) -> str:
    """One sentence for a file outside the unit files that git could not merge (a driver's
    reason when it gave one)."""
    why = "both sides changed it"
    for line in stderr.splitlines():
        head, sep, rest = line.partition(": not merged (")
        if sep and head.strip() == path:
            why = rest.split("); it is left", 1)[0]
            break
    return (
        f"{path} could not be merged ({why}); nothing was merged: fix it on one side, or "
        f"run `git merge {ref}`, resolve it by hand and finish with `evolve merge --fix`."
    )


def _apply_rules(ws: Workspace, tx: Transaction, merged: UnitMerge, result: MergeResult) -> None:
    from evolve.applier._caps import victims

    units = load_units(ws.root)
    settle = rules(units, merged.double, review=ws.config.train.review)
    for scope, ops in sorted(settle.ops.items()):
        _apply(tx, ops, load_units(ws.root), scope, result)
    result.rules.update(settle.counts)
    result.notes.extend(settle.notes)
    after = load_units(ws.root)
    evicts: dict[str, list[Op]] = {}
    for victim, why in victims(ws, after, doing="this merge"):
        evicts.setdefault(victim.scope, []).append(Op(op="evict", unit=victim, reason=why))
        result.notes.append(f"{victim.id}: evicted, {why}")
    for scope, ops in sorted(evicts.items()):
        _apply(tx, ops, load_units(ws.root), scope, result)
        result.rules["cap"] = result.rules.get("cap", 0) + len(ops)
    if merged.renamed:
        result.rules["renamed"] = len(merged.renamed)
    if merged.edited:
        result.rules["edited"] = len(merged.edited)


def _apply(
    tx: Transaction, ops: list[Op], units: list[MemoryUnit], scope: str, result: MergeResult
) -> None:
    applied = tx.apply(ops, units, scope=scope)
    if applied.refused:
        first = applied.refused[0]
        raise EvolveError(
            f"the merge's {first.op} of {first.what!r} was refused ({first.reason}); nothing "
            "was merged: fix that unit on one side and merge again."
        )
    result.ops.extend((op.op, op.id) for op in applied.applied)


def _commit(ws: Workspace, result: MergeResult) -> None:
    add = _git(ws, "add", "-A", "--", "memory")
    if add.returncode != 0:
        raise EvolveError(f"git could not stage the merged memory ({add.stderr.strip()}).")
    left = _conflicted(ws)
    if left:
        raise EvolveError(f"{left[0]} is still unmerged after the rules; merge it by hand.")
    rules_value = " ".join(f"{k}={v}" for k, v in sorted(result.rules.items()))
    trailers = [(KIND, "merge"), (MERGED, result.merged)]
    if result.ops:
        trailers.append((OPS, format_ops(result.ops)))
    if rules_value:
        trailers.append((MERGE_RULES, rules_value))
    body = "\n".join(f"- {note}" for note in result.notes)
    message = format_message(f"evolve: merge {result.ref}", body, trailers)
    done = subprocess.run(
        ["git", "commit", "--quiet", "--cleanup=verbatim", "--file=-"],
        cwd=ws.root, input=message, capture_output=True, text=True, encoding="utf-8",
        env={**os.environ, "GIT_EDITOR": "true"}, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise EvolveError(
            f"git commit refused the merge ({done.stderr.strip().splitlines()[-1:] or ['']}[0]); "
            "nothing was merged: fix the commit hook and merge again."
        )
    result.commit = ws.store.head()


def reconcile(ws: Workspace, *, take: Mapping[str, Side] | None = None) -> MergeResult:
    """The merge rules after a plain `git merge` (`evolve merge --fix`).

    A merge git stopped (`MERGE_HEAD`: unit files in conflict) is finished as
    :func:`merge_branch` would have: unit files merged by the rules, the rules' ops and caps
    applied, one merge commit. A merge git already committed (HEAD has two parents) gets one
    commit on top that applies the rules to it (`Evolve-Kind: merge fix`). Otherwise there is
    nothing to do.

    Raises:
        EvolveError: a conflict outside the unit files is still unresolved, or a unit
            conflict the rules cannot settle (one sentence, with the commands that resolve it).
    """
    store = ws.store
    with _writer(ws, f"{COMMAND} --fix", check_git=False) as tx:
        head = store.head()
        if head is None:
            raise EvolveError("this branch has no commit yet; there is no merge to fix.")
        if _merge_state(ws):
            theirs = (store.git_dir / "MERGE_HEAD").read_text("utf-8").split()[0]
            ours = head
        else:
            info = store.commit_info(head)
            if len(info.parents) != 2 or info.trailers.get(KIND) == "merge":
                return MergeResult("HEAD", head, None, "up-to-date")
            ours, theirs = info.parents
        base = _git(ws, "merge-base", ours, theirs).stdout.strip()
        if not base:
            raise EvolveError("the merge's two sides share no history; nothing to reconcile.")
        sides = tuple(_unit_files(ws, rev) for rev in (base, ours, theirs))
        merged = merge_units(sides[0][0], sides[1][0], sides[2][0], take=take)
        if merged.conflicts:
            raise EvolveError(merged.conflicts[0].sentence(theirs[:10]))
        in_merge = _merge_state(ws)
        others = [p for p in _conflicted(ws) if not _is_unit_file(p)] if in_merge else []
        if others:
            raise EvolveError(
                f"{others[0]} is still unmerged; resolve it (`git add` it), then run "
                "`evolve merge --fix` again."
            )
        result = MergeResult("HEAD" if not in_merge else theirs[:10], theirs, None, "reconciled")
        files: dict[str, bytes | None] = {}
        for path, unit in merged.units.items():
            if not in_merge and path not in merged.changed and unit is not None:
                continue  # git merged it cleanly: the committed merge stands
            data = _resolved_bytes(path, unit, (sides[1], sides[2]))
            full = ws.root / path
            now = full.read_bytes() if full.is_file() else None
            if now != data and (in_merge or _is_conflict_text(now)):
                files[path] = data
        files.update(_same_change_sidecars(ws, ours, theirs))
        if files:
            tx.write(files, ("memory/",))
        _apply_rules(ws, tx, merged, result)
        if in_merge:
            _commit(ws, result)
            tx.end()
        else:
            changed = [p for p in store.dirty_paths(["memory"])]
            if changed:
                trailers = [(KIND, "merge fix"), (MERGED, theirs)]
                if result.ops:
                    trailers.append((OPS, format_ops(result.ops)))
                rules_value = " ".join(f"{k}={v}" for k, v in sorted(result.rules.items()))
                if rules_value:
                    trailers.append((MERGE_RULES, rules_value))
                body = "\n".join(f"- {note}" for note in result.notes)
                result.commit = tx.commit(
                    changed, f"evolve: merge rules after {theirs[:10]}", body=body,
                    trailers=trailers,
                )  # fmt: skip
            else:
                tx.end()
                # Nothing to change: writers may build on this merge from now on.
                mark_settled(ws, head)
                result.notes.append(f"{head[:10]}: nothing to settle; recorded as settled")
        return result


def _is_conflict_text(data: bytes | None) -> bool:
    return data is not None and b"\n<<<<<<< " in b"\n" + data
