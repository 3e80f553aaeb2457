"""The generation transaction and its journal: a generation is all or nothing.

Before a generation changes anything, its base (commit, branch, number, the index flags and
ignored files that existed) is written to `.git/evolve-generation.json`; the journal is
removed only after the generation's record is written. If the generation ends in an error, an
interrupt or a timeout, :func:`abort` resets to the base at once; if the process is killed
outright, the next writer finds the journal and :func:`recover_generation` does the same
before anything else (:class:`GenerationTransaction` is the running generation's handle on
this). Either way the record says `rejected (error: ...)`, and the number is used up
(numbers come from the records, which always get this generation's record).

"The generation's untracked files" are what it leaves that git does not track: every
untracked, not-ignored file (the tree was clean at the base, so all of them are new), and the
ignored files that appeared under `memory/`, `prompts/` or a protected path (which the agent
or the judge would read). Ignored files that existed at the base, and everything under
`generations/` (run logs and records, the evidence of what happened), are kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from evolve._format._message import PREFIX
from evolve._held import host
from evolve._io import atomic_write
from evolve.errors import EvolveError, WriteFailed, write_failure
from evolve.gate import index_flags, sweep
from evolve.store import GENERATION, KIND, GitFailed, GitStore
from evolve.txn._journal import end as end_apply_journal
from evolve.txn._records import (
    ChangeRecord,
    GenerationRecord,
    load_records,
    save_record,
)
from evolve.workspace import Workspace
from evolve.workspace._paths import GENERATION_JOURNAL

JOURNAL = GENERATION_JOURNAL
ABORTED_REFS = "refs/evolve/aborted"
EVOLVABLE = ("memory/", "prompts/")


@dataclass
class GenerationJournal:
    number: int
    base: str
    branch: str | None
    protected_hash: str
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=host)
    started: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    phase: str = "start"
    stream_end: int | None = None
    dry_run: bool = False
    ignored_before: list[str] = field(default_factory=list)
    flagged_before: list[str] = field(default_factory=list)


def journal_path(store: GitStore) -> Path:
    return store.git_dir / JOURNAL


def write_journal(store: GitStore, journal: GenerationJournal) -> None:
    atomic_write(journal_path(store), json.dumps(asdict(journal), indent=1) + "\n")


def read_journal(store: GitStore) -> GenerationJournal | None:
    """The journal of an unfinished generation, or None.

    Raises:
        EvolveError: the journal exists but cannot be read (it names the file to inspect).
    """
    path = journal_path(store)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        known = {f.name for f in fields(GenerationJournal)}
        return GenerationJournal(**{k: v for k, v in data.items() if k in known})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise EvolveError(
            f"the generation journal {path} is unreadable ({exc.__class__.__name__}); if no "
            "evolve process is running, reset the workspace to the last good commit and delete it."
        ) from None


def end_journal(store: GitStore) -> None:
    journal_path(store).unlink(missing_ok=True)


def _ignored(store: GitStore) -> list[str]:
    return store.untracked_paths(ignored=True)


def _branch(store: GitStore) -> str | None:
    return store.current_branch()  # None: detached


def begin(
    ws: Workspace, number: int, protected_hash: str, *, dry_run: bool = False
) -> GenerationJournal:
    """Journal the base of generation `number` (HEAD now) before it changes anything."""
    store = ws.store
    base = store.head()
    assert base is not None
    journal = GenerationJournal(
        number=number,
        base=base,
        branch=_branch(store),
        protected_hash=protected_hash,
        dry_run=dry_run,
        ignored_before=_ignored(store),
        flagged_before=sorted(index_flags(store)),
    )
    write_journal(store, journal)
    return journal


def set_phase(store: GitStore, journal: GenerationJournal, phase: str, **changes: object) -> None:
    """Note the step the generation is in (a killed one is recorded with it)."""
    journal.phase = phase
    for key, value in changes.items():
        setattr(journal, key, value)
    write_journal(store, journal)


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p.rstrip("/") or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def remove_generation_files(ws: Workspace, journal: GenerationJournal) -> list[str]:
    """Remove the generation's untracked files (see the module docstring); returns them."""
    store = ws.store
    removed = store.untracked_paths()
    if removed:
        store.clean_untracked()
    watched = EVOLVABLE + tuple(ws.config.protected)
    before = set(journal.ignored_before)
    for rel in _ignored(store):
        if rel in before or not _under(rel.rstrip("/"), watched) or _under(rel, ("generations",)):
            continue
        path = store.root / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(rel)
    return removed


def clear_new_flags(store: GitStore, journal: GenerationJournal) -> list[str]:
    """Clear skip-worktree/assume-unchanged flags set during the generation (so that the reset
    really restores those files)."""
    new = sorted(set(index_flags(store)) - set(journal.flagged_before))
    store.clear_index_flags(new)
    return new


def rollback(ws: Workspace, journal: GenerationJournal, target: str | None = None) -> None:
    """Reset to `target` (default: the base) and remove what the generation left untracked."""
    store = ws.store
    clear_new_flags(store, journal)
    store.reset_hard(target or journal.base)
    end_apply_journal(store)  # a half-applied write is undone by the reset itself
    remove_generation_files(ws, journal)


def _commit_summary(store: GitStore, sha: str) -> tuple[str, dict[str, str]]:
    """A commit's subject and `Evolve-*` trailers, read from the raw object (no log framing)."""
    raw = store.commit_object(sha)
    text = raw.decode("utf-8", "replace")
    _, _, message = text.partition("\n\n")
    subject = message.split("\n", 1)[0].strip()
    trailers: dict[str, str] = {}
    for line in message.strip().split("\n\n")[-1].splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith(PREFIX):
            trailers[key] = value.strip()
    return subject, trailers


def generation_commits(store: GitStore, base: str, tip: str, number: int) -> list[ChangeRecord]:
    """The commits of generation `number` between `base` and `tip`, oldest first (by the
    parents the commits hold: no replace ref or graft)."""
    if base == tip:
        return []
    try:
        shas = store.commits_between(base, tip)
    except GitFailed:
        return []
    out = []
    for sha in shas:
        try:
            subject, trailers = _commit_summary(store, sha)
        except GitFailed:
            continue
        if trailers.get(GENERATION) != str(number):
            continue
        kind: Literal["memory", "prompt"] = (
            "prompt" if trailers.get(KIND) == "reflector" else "memory"
        )
        out.append(ChangeRecord(kind=kind, commit=sha, subject=subject[:200]))
    return out


def error_record(
    ws: Workspace,
    journal: GenerationJournal,
    tip: str,
    reason: str,
    refused: list[str] | None = None,
) -> GenerationRecord:
    """The record of a generation that ended in an error: `rejected (error: ...)`."""
    store = ws.store
    final = store.head() or journal.base
    try:
        cand_hash = store.protected_hash(tip, tuple(ws.config.protected))
    except GitFailed:
        cand_hash = ""
    return GenerationRecord(
        number=journal.number,
        started=journal.started,
        finished=datetime.now(UTC).isoformat(timespec="seconds"),
        dry_run=journal.dry_run,
        base=journal.base,
        candidate=tip,
        final=final,
        changes=generation_commits(store, journal.base, tip, journal.number),
        refused=refused or [],
        protected_hash=journal.protected_hash,
        protected_hash_candidate=cand_hash,
        tests_passed=False,
        stream_end=journal.stream_end,
        verdict="rejected",
        reason=reason,
        phase=journal.phase,
    )


def keep_tip(store: GitStore, journal: GenerationJournal, tip: str) -> None:
    """Keep the commits of an aborted generation reachable under refs/evolve/aborted/ (for a
    post-mortem; no branch contains them)."""
    if tip != journal.base:
        with contextlib.suppress(GitFailed):
            store.set_ref(f"{ABORTED_REFS}/gen-{journal.number:04d}", tip)


def abort(
    ws: Workspace, journal: GenerationJournal, reason: str, refused: list[str] | None = None
) -> GenerationRecord:
    """End generation `journal.number` in its base after an error, in this process.

    If its record was already written (the error came after), that outcome stands.
    """
    store = ws.store
    done = None if journal.dry_run else _recorded(ws, journal.number)
    if done is not None:
        if store.head() != done.final and _is_ancestor(store, done.final, store.head() or ""):
            rollback(ws, journal, done.final)
        end_journal(store)
        return done
    tip = store.head() or journal.base
    keep_tip(store, journal, tip)
    rollback(ws, journal)
    record = error_record(ws, journal, tip, reason, refused)
    if not journal.dry_run:
        try:
            save_record(ws, record)
        except OSError as exc:
            said = write_failure(exc)
            if said is None:
                raise
            # The reset is done; the journal stays, so the next evolve command writes the record.
            raise WriteFailed(
                f"generation {journal.number} {reason.removeprefix('error: ')}; the workspace "
                f"was reset to its base {journal.base[:10]}, but its record could not be "
                f"written ({said[0]}): the next evolve command writes it."
            ) from exc
    end_journal(store)
    sweep()
    return record


def _recorded(ws: Workspace, number: int) -> GenerationRecord | None:
    return {r.number: r for r in load_records(ws)}.get(number)


def last_used_number(ws: Workspace) -> int:
    """The highest generation number used so far: in the records, in the commits on HEAD
    (`Evolve-Generation`, for a clone that did not fetch the records ref) and in the kept
    tips of aborted generations. The next generation gets the number after it."""
    store = ws.store
    numbers = [r.number for r in load_records(ws)]
    if store.head() is not None:
        values = store.trailer_values(GENERATION)
        numbers += [int(v) for v in values if v.isdigit() and len(v) < 10]
    refs = [r.removeprefix(ABORTED_REFS + "/") for r in store.ref_names(ABORTED_REFS)]
    numbers += [int(n[4:]) for n in refs if n.startswith("gen-") and n[4:].isdigit()]
    return max(numbers, default=0)


def _is_ancestor(store: GitStore, a: str, b: str) -> bool:
    return store.is_ancestor(a, b)


def _stash(store: GitStore, number: int) -> bool:
    """Save what the working tree holds (untracked files too) before a recovery resets it."""
    if not store.dirty_paths():
        return False
    done = subprocess.run(
        ["git", "stash", "push", "--include-untracked", "--quiet", "-m",
         f"evolve: working tree left by interrupted generation {number}"],
        cwd=store.root, capture_output=True,
    )  # fmt: skip
    return done.returncode == 0


def recover_generation(ws: Workspace, command: str) -> GenerationRecord | None:
    """Finish the rollback of a generation whose process died (the caller holds the writer
    lock, so that process is gone); returns the record written, if any.

    Raises:
        EvolveError: HEAD was moved to another branch since; the sentence says what to do.
    """
    store = ws.store
    journal = read_journal(store)
    if journal is None:
        return None
    done = _recorded(ws, journal.number)
    branch = _branch(store)
    if journal.branch is not None and branch != journal.branch:
        short = journal.branch.removeprefix("refs/heads/")
        raise EvolveError(
            f"generation {journal.number} was interrupted on branch {short}, but HEAD is now "
            f"{branch.removeprefix('refs/heads/') if branch else 'detached'}; check out {short} "
            "and run the command again to finish its rollback."
        )
    tip = store.head() or journal.base
    target = done.final if done is not None else journal.base
    if not _is_ancestor(store, target, tip):
        target = tip  # the branch was moved by hand since: leave it where it is
    stashed = _stash(store, journal.number)
    if done is None:
        keep_tip(store, journal, tip)
    rollback(ws, journal, target)
    record = None
    if done is None:
        reason = (
            f"error: the process running it (pid {journal.pid}) stopped during {journal.phase}; "
            f"`{command}` rolled it back"
            + ("; its uncommitted files are in `git stash list`" if stashed else "")
        )
        record = error_record(ws, journal, tip, reason)
        if not journal.dry_run:
            save_record(ws, record)
    end_journal(store)
    sweep()
    return record


@dataclass
class GenerationTransaction:
    """A running generation: its journal (the base it resets to) and the refusals its error
    record would list. Opened by `Transaction.generation` under the writer lock."""

    ws: Workspace
    journal: GenerationJournal
    refused: list[str] = field(default_factory=list)

    @property
    def number(self) -> int:
        return self.journal.number

    @property
    def base(self) -> str:
        return self.journal.base

    def phase(self, name: str, **changes: object) -> None:
        """Note the step the generation is in (a killed one is recorded with it)."""
        set_phase(self.ws.store, self.journal, name, **changes)

    def rollback(self) -> None:
        """Reset to the base (a rejected or unjudged generation)."""
        rollback(self.ws, self.journal)

    def abort(self, reason: str) -> GenerationRecord:
        """End the generation in its base after an error and record it (see :func:`abort`)."""
        return abort(self.ws, self.journal, reason, self.refused)

    def end(self) -> None:
        """The generation's record is written: nothing is left to finish."""
        end_journal(self.ws.store)
