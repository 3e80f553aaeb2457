"""`evolve revert REV`: undo a memory or prompt commit as a new commit, and tombstone what it taught.

The revert is file-level: each file the commit changed goes back to its content before the
commit, provided no later commit changed what that file *says* (its text or status), or the
file means again what the commit left (a unit revoked and reactivated since). Counter moves
(ACE helpful/harmful, topl alpha/beta; see `_content`) are evidence, not content: they never
block a revert; a revert takes back exactly the counter deltas of the commits it undoes
(`_countback`) and keeps the evidence every other commit added. A commit that only moved
counters reverts that way too.

Where a later commit did change a unit's text or status, the revert stops and names it;
`cascade=True` then reverts the commit and every later commit that changed those units (and,
in turn, the later commits that changed *their* units), newest first, as one new commit.

Every unit the commit made active — added, changed text, or reactivated — gets a tombstone
(its text, key, the reason and the reverted commit), so an updater that proposes it again is
refused. A revert of a revert (an `evolve revert` or a plain `git revert`) makes no tombstones:
it brings back what the first revert took away and lifts the tombstones it wrote; reverting
the commit evolve wrote to answer a plain `git revert` lifts those, and reverting the `git
revert` itself takes that answer along.

`unit=ID` takes back one unit's change (and the units tied to it in the commit through
`revoked_by`/`supersedes`), leaving the rest of the commit standing (`Evolve-Units`);
`dry_run=True` plans the same revert and writes nothing. For the `rewrite` document a cascade
takes only the later commits that keep the line-level undo from applying (`_line_touches`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from evolve._format._units import valid_id
from evolve.applier import CapFit, fit_files
from evolve.errors import EvolveError
from evolve.history._changes import (
    REVERTS,
    TAUGHT,
    TRACKED,
    UNITS,
    Change,
    content_changes,
    git_revert_answers,
    git_revert_target,
    is_revert,
    taught_by,
    uncancelled,
    undid,
)
from evolve.history._content import (
    carry_counters,
    is_counters_file,
    is_unit_path,
    same_content,
    same_meaning,
    take_back_provenance,
    unit_of,
)
from evolve.history._countback import (
    CountBack,
    Deltas,
    add_deltas,
    counter_deltas,
    describe,
    take_back,
)
from evolve.history._lines import (
    doc_lines,
    drop_kept_lines,
    is_document,
    line_revert,
)
from evolve.history._log import refresh_commit_graph
from evolve.history._restarts import (
    SKILL_COUNTERS,
    Restarts,
    drop_skill_deltas,
    record_drops,
    restored_records,
)
from evolve.history._unretire import RESTARTS, STRATA, restart_files, unretired
from evolve.memory import MemoryUnit, dump_unit, load_units_at
from evolve.memory._similarity import normalize
from evolve.store import KIND, OPS, PERSONA, CommitInfo, GitStore, format_ops
from evolve.txn import Transaction, writer
from evolve.workspace import Workspace

STAGING = "memory/skills/_staging.yaml"  # evolve.skills.STAGING_PATH
FAILED = "memory/skills/_failed_tasks.yaml"  # evolve.skills._failed.FAILED_PATH


@dataclass
class RevertResult:
    reverted: str
    commit: str
    restored: list[str] = field(default_factory=list)
    tombstones: list[MemoryUnit] = field(default_factory=list)
    # Every commit this revert undid, newest first (more than one for a cascade).
    commits: list[str] = field(default_factory=list)
    # Tombstones taken away (a revert of a revert).
    lifted: list[str] = field(default_factory=list)
    # Evidence counters moved back: (unit id, field, before the revert, after it).
    counters: list[tuple[str, str, float | int, float | int]] = field(default_factory=list)
    # Units whose counters the reverted commits moved but that no longer exist.
    counters_skipped: list[str] = field(default_factory=list)
    # Retired skills the revert brought back: their scoreboard record restarted (`_unretire`).
    restarted: list[str] = field(default_factory=list)
    # Files the revert deletes (a unit the commit added and nothing tombstoned in its place).
    removed: list[str] = field(default_factory=list)
    # A per-unit revert: the units taken back (the rest of the commit stands).
    units: list[str] = field(default_factory=list)
    # Commits evolve wrote to answer a plain `git revert` this revert undid (with it).
    answers: list[str] = field(default_factory=list)
    # Plain `git revert`s a real run answers first, in a commit of their own (`--dry-run`).
    unanswered: list[str] = field(default_factory=list)
    # `dry_run=True`: nothing was written and `commit` is empty.
    dry_run: bool = False


def unit_ident(path: str) -> str:
    """The unit id a memory file is named for (`memory/alex/ace-1a2b.md` -> `ace-1a2b`)."""
    return path.rsplit("/", 1)[-1].removesuffix(".md")


def later_content_touches(store: GitStore, sha: str, path: str) -> list[str]:
    """Commits after `sha` on HEAD's history that changed what `path` says, oldest first."""
    out = store.git("log", "--reverse", "--format=%H %P", f"{sha}..HEAD", "--", path)
    touches = []
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        commit, parents = parts[0], parts[1:]
        before = store.read(parents[0], path) if parents else None
        if not same_content(path, before, store.read(commit, path)):
            touches.append(commit)
    return touches


def _settled_since(change: Change, now: bytes | None) -> bool:
    """Undoing `change` needs nothing from this file any more: a later commit put it back to
    what it meant before the commit (same text and status; counters and timing aside)."""
    return (
        change.before is not None
        and now is not None
        and is_unit_path(change.path)
        and same_meaning(change.path, now, change.before)
    )


def _as_left(change: Change, now: bytes | None) -> bool:
    """The unit means again what the commit left (same text and status; counters and timing
    aside), whatever later commits did in between (e.g. revoked it and reactivated it)."""
    return (
        change.after is not None
        and now is not None
        and is_unit_path(change.path)
        and same_meaning(change.path, now, change.after)
    )


def _gone_since(change: Change, now: bytes | None) -> bool:
    """A unit the commit added that is no longer active now (evicted by a cap, or revoked):
    undoing the add conflicts with nothing, whatever happened to it in between; its
    tombstone takes its place."""
    if change.before is not None or not is_unit_path(change.path):
        return False
    if _wrote_tombstone(change):
        return False  # the commit's own tombstone: undoing it lifts it
    if now is None:
        return True
    current = unit_of(change.path, now)
    return current is not None and current.status not in TAUGHT


def _wrote_tombstone(change: Change) -> bool:
    """The commit wrote a tombstone here (an evolve revert, or the commit that answers a plain
    `git revert`): reverting it takes the tombstone away."""
    left = unit_of(change.path, change.after) if is_unit_path(change.path) else None
    return left is not None and left.status == "tombstoned"


class _Conflict(Exception):
    def __init__(self, path: str, later: str) -> None:
        super().__init__(path)
        self.path, self.later = path, later


class _Plan:
    """The tree a revert leads to, built commit by commit (newest first) over HEAD."""

    def __init__(
        self, store: GitStore, head: str, why: str | None, stamp: str, restarts: Restarts
    ) -> None:
        self.store, self.head, self.why, self.stamp = store, head, why, stamp
        self.restarts = restarts  # skills whose scoreboard record restarted since a commit
        self.state: dict[str, bytes | None] = {}
        self.stones: dict[str, MemoryUnit] = {}  # path -> tombstone
        # A per-unit revert undoes the files of these units only (`revert(..., unit=...)`);
        # a whole revert leaves the units per-unit reverts already took back (`skip`).
        self.only: set[str] | None = None
        self.skip: set[str] = set()

    def wanted(self, path: str) -> bool:
        ident = unit_ident(path)
        if self.only is not None:
            return ident in self.only
        return ident not in self.skip

    def now(self, path: str) -> bytes | None:
        return self.state[path] if path in self.state else self.store.read(self.head, path)

    def undo(self, info: CommitInfo, undone: set[str]) -> None:
        """Undo one commit on top of the plan so far; raises _Conflict when a later commit
        outside `undone` (the commits this revert undoes) changed what one of its files says."""
        tombstones = not is_revert(info)
        why = self.why or f"reverted {info.sha[:10]}"
        for change in content_changes(self.store, info):
            if not self.wanted(change.path):
                continue
            path, now = change.path, self.now(change.path)
            if path == STAGING:  # skills' sightings are evidence: taken back, never a conflict
                from evolve.skills._staging import take_back

                self.state[path] = take_back(change.before, change.after, now)
                continue
            if path == FAILED:  # tasks that failed in training: evidence, taken back too
                from evolve.skills._failed import take_back as take_back_failed

                self.state[path] = take_back_failed(change.before, change.after, now)
                continue
            if path == STRATA:  # the scoreboard's per-task counts: evidence, taken back too
                from evolve.skills._strata import take_back as take_back_strata

                # A later rewrite, eviction, merge, cut or replacement, or a revert that
                # brought a retired skill back (its Evolve-Restarts), not itself reverted,
                # dropped the skill's counts (`_restarts`).
                restarted = self.restarts.since(info)
                self.state[path] = take_back_strata(change.before, change.after, now, restarted)
                continue
            if _gone_since(change, now):
                current = unit_of(path, now)
                if current is not None and current.status == "tombstoned":
                    continue  # refused already
                self.state[path] = None  # added, retired since: only the tombstone is left
                self._stone(change, None, info, why, tombstones)
                continue
            later = [
                c
                for c in uncancelled(self.store, later_content_touches(self.store, info.sha, path))
                if c not in undone
            ]
            if (later or not same_content(path, now, change.after)) and not _as_left(change, now):
                if _settled_since(change, now):
                    self.state[path] = now  # already means what it meant before the commit
                    self._stone(change, now, info, why, tombstones)
                    continue
                merged = line_revert(path, change.before, change.after, now)
                if merged is None:
                    raise _Conflict(path, later[0] if later else "")
                self.state[path] = merged
                self._stone(change, merged, info, why, tombstones)
                continue
            restored = change.before
            if restored is not None and is_unit_path(path) and now != change.after:
                old = unit_of(path, restored)
                if old is not None:
                    kept = carry_counters(old, unit_of(path, change.after), unit_of(path, now))
                    if kept != old:
                        restored = dump_unit(kept).encode("utf-8")
            self.state[path] = restored
            # The tombstone is of the unit as it is now (a unit revoked and reactivated since
            # means what the commit left, with today's timing).
            self._stone(Change(path, change.before, now), restored, info, why, tombstones)
        self._provenance(info)

    def _provenance(self, info: CommitInfo) -> None:
        """Take back the provenance `info` added to units whose text it left alone."""
        parent = info.parents[0]
        for _, path in self.store.changed_paths(parent, info.sha, TRACKED):
            if path in self.state or not is_unit_path(path) or not self.wanted(path):
                continue
            before, after = self.store.read(parent, path), self.store.read(info.sha, path)
            if not same_content(path, before, after):
                continue  # a change in what it says: undone above
            now = self.now(path)
            kept = take_back_provenance(
                unit_of(path, before), unit_of(path, after), unit_of(path, now)
            )
            if kept is not None:
                self.state[path] = dump_unit(kept).encode("utf-8")

    def _stone(
        self,
        change: Change,
        restored: bytes | None,
        info: CommitInfo,
        why: str,
        tombstones: bool,
    ) -> None:
        taught = taught_by(change) if tombstones else None
        if taught is None:
            return
        stone = taught.with_(
            status="tombstoned", reason=why, reverted_commit=info.sha, valid_to=self.stamp
        )
        if restored is not None:
            stone = stone.with_(id=self._free_id(taught, info.sha))
        self.stones[str(stone.path())] = stone

    def _taken(self, path: str) -> bool:
        return path in self.stones or self.now(path) is not None

    def _free_id(self, unit: MemoryUnit, sha: str) -> str:
        base = f"{unit.id[:52]}-t{sha[:7]}"
        candidate, n = base, 1
        while self._taken(str(unit.with_(id=candidate).path())):
            n += 1
            candidate = f"{base}{n}"
        return candidate

    def finish(self) -> dict[str, bytes | None]:
        """The files to write: the restored files with the tombstones laid over them.

        A tombstone of a text that the plan leaves active (a cascade that also undid the
        revoke of that text) would contradict it, so it is dropped.
        """
        active, kept_lines = set(), set()
        for path, data in self.state.items():
            unit = unit_of(path, data)
            if unit is not None and unit.status == "active":
                active.add((unit.scope, normalize(unit.text)))
                if is_document(unit):
                    kept_lines |= {normalize(line) for line in doc_lines(unit.text)}
        files = dict(self.state)
        stones, self.stones = self.stones, {}
        for path, found in stones.items():
            stone = drop_kept_lines(found, kept_lines) if is_document(found) else found
            if stone is None or (stone.scope, normalize(stone.text)) in active:
                continue
            if files.get(path) is not None:  # an older commit restored a file here
                stone = stone.with_(id=self._free_id(stone, stone.reverted_commit or "0000000"))
                path = str(stone.path())
            self.stones[path] = stone
            files[path] = dump_unit(stone).encode("utf-8")
        # Twins (`evolve.history.twins`) too, for a per-unit revert as well: its tombstone
        # refuses the text wherever another unit of the scope says it.
        self._stone_copies(files)
        return {p: d for p, d in files.items() if d != self.store.read(self.head, p)}

    def _stone_copies(self, files: dict[str, bytes | None]) -> None:
        """A unit this revert leaves alone but that holds a tombstoned text (learned again,
        word for word, by a later commit, or by another learner: a twin, `history.twins`) is
        tombstoned too: what the reverted commit taught stops rendering wherever it is."""
        from evolve.history._twins import twins

        if not self.stones:
            return
        units = load_units_at(self.store, self.head)
        for stone in list(self.stones.values()):
            for unit in twins(units, stone):
                path = str(unit.path())
                if path in files:
                    continue
                copy = unit.with_(
                    status="tombstoned",
                    reason=stone.reason,
                    reverted_commit=stone.reverted_commit,
                    valid_to=self.stamp,
                )
                self.stones[path] = copy
                files[path] = dump_unit(copy).encode("utf-8")


def _check_revertable(store: GitStore, info: CommitInfo) -> list[Change]:
    short = info.short
    # A merge `evolve merge` made reverts against its first parent: what it
    # brought in from the other side is taken back and tombstoned, as any commit's teaching.
    if len(info.parents) > 1 and not (
        len(info.parents) == 2 and info.trailers.get(KIND) == "merge"
    ):
        raise EvolveError(
            f"{short} is a merge commit, and `evolve revert` undoes one commit at a time: "
            f"revert the commits it brought in one by one (`git log {short}^1..{short}` "
            "lists them), newest first, or undo the whole merge with "
            f"`git revert -m 1 {short}` (it writes no tombstones)."
        )
    if not info.parents or info.trailers.get(KIND) == "init":
        raise EvolveError(f"{short} is not a memory or prompt commit; pick one from `evolve log`.")
    if not store.changed_paths(info.parents[0], info.sha, TRACKED):
        raise EvolveError(
            f"{short} changed nothing in memory/ or prompts/; pick a commit from `evolve log`."
        )
    changes = content_changes(store, info)
    if not changes and not counter_deltas(store, info):
        raise EvolveError(
            f"{short} changed no unit's text, status or evidence counters; it taught nothing "
            "to revert."
        )
    return changes


def reverted_by(store: GitStore, sha: str, unit: str | None = None) -> str | None:
    """The revert that undid `sha` (with `unit`: that unit's change in it) and still stands
    (itself not reverted), if any. A per-unit revert undid only the units it names."""
    out = store.git("log", "--fixed-strings", f"--grep={sha}", "--format=%H", f"{sha}..HEAD")
    for candidate in out.split():  # newest first: the newest revert of `sha` decides
        info = store.commit_info(candidate)
        if undid(info, sha, unit):
            return None if reverted_by(store, candidate) is not None else candidate
    return None


def _units_taken(store: GitStore, sha: str) -> set[str]:
    """The units that standing per-unit reverts took back from `sha` (a whole revert of `sha`
    leaves them, and their counters, as those reverts left them)."""
    out = store.git("log", "--fixed-strings", f"--grep={sha}", "--format=%H", f"{sha}..HEAD")
    taken: set[str] = set()
    for candidate in out.split():
        info = store.commit_info(candidate)
        units = info.trailers.get(UNITS, "").split()
        if units and undid(info, sha, units[0]) and reverted_by(store, candidate) is None:
            taken |= set(units)
    return taken


def _closure(store: GitStore, first: CommitInfo) -> list[CommitInfo]:
    """`first` and every later commit that changed what its files (or theirs) say, newest first."""
    chosen = {first.sha: first}
    queue = [first]
    documents: set[str] = set()  # document paths whose later line changes were looked at
    while queue:
        info = queue.pop()
        for change in content_changes(store, info):
            head = store.read("HEAD", change.path)
            if change.path in (STAGING, STRATA, FAILED):
                continue
            if _gone_since(change, head) or _settled_since(change, head) or _as_left(change, head):
                continue
            later_ones = later_content_touches(store, info.sha, change.path)
            if _document_change(change):
                # A document is rewritten whole at every episode: a later rewrite goes with
                # this commit only where it keeps the line-level undo from applying.
                if change.path in documents:
                    continue
                documents.add(change.path)
                later_ones = _line_touches(store, later_ones, change.path)
            for later in later_ones:
                if later in chosen:
                    continue
                other = store.commit_info(later)
                if len(other.parents) != 1:
                    raise EvolveError(
                        f"{other.short} is a merge commit that changed {change.path}; "
                        "revert it by hand with git."
                    )
                chosen[later] = other
                queue.append(other)
    order = store.git("rev-list", f"{first.sha}^..HEAD").split()
    rank = {sha: i for i, sha in enumerate(order)}
    return sorted(chosen.values(), key=lambda c: rank.get(c.sha, len(rank)))


def _document_change(change: Change) -> bool:
    return is_document(unit_of(change.path, change.after)) or is_document(
        unit_of(change.path, change.before)
    )


def _line_touches(store: GitStore, later: list[str], path: str) -> list[str]:
    """The commits of `later` that changed more of the document at `path` than its text
    (status, scope, kind; or removed it): the only ones that keep a line-level undo from
    applying. Later changes to the lines themselves need no cascade: the line-level undo
    takes out the lines the commit added wherever they are now and puts back the lines it
    removed (`_lines.line_revert`)."""
    out = []
    for sha in later:
        info = store.commit_info(sha)
        if len(info.parents) != 1:
            out.append(sha)  # a merge: refused by the caller with what to do
            continue
        b = unit_of(path, store.read(info.parents[0], path))
        a = unit_of(path, store.read(sha, path))
        if b is None or a is None or (b.status, b.scope, b.kind) != (a.status, a.scope, a.kind):
            out.append(sha)
    return out


def _refusal(store: GitStore, info: CommitInfo, conflict: _Conflict) -> EvolveError:
    short = info.short
    name = (
        f"{conflict.later[:10]} ({store.commit_info(conflict.later).subject})"
        if conflict.later
        else "a later commit"
    )
    try:
        n = len(_closure(store, info)) - 1
        more = (
            f" together with the {n} later commit{'s' if n != 1 else ''} that changed those units"
        )
    except EvolveError:
        more = ""
    return EvolveError(
        f"cannot revert {short} cleanly: {name} changed the text or status of "
        f"{conflict.path} since; revert that commit first, or run "
        f"`evolve revert {short} --cascade` to revert {short}{more} in one commit."
    )


def revert(
    ws: Workspace,
    rev: str,
    *,
    reason: str | None = None,
    cascade: bool = False,
    unit: str | None = None,
    dry_run: bool = False,
) -> RevertResult:
    """Revert commit `rev` (see the module docstring).

    With `unit` (or a unit id as `rev`), only that unit's change in the commit is taken back
    (the units its change is linked to in the commit, through `revoked_by`/`supersedes`, with
    it); the rest of the commit stands. With `dry_run`, nothing is written: the result says
    what the revert would do (`RevertResult.dry_run`).

    Raises:
        EvolveError: unknown revision, not a memory/prompt commit, a merge, a commit that
            changed no unit's text, status or counters, one already reverted, nothing left
            to undo, a conflict with a later commit (named; `cascade` resolves it), or a
            dirty tree.
    """
    from evolve.history._gitrevert import tombstone_git_reverts

    store = ws.store
    with writer(ws, "evolve revert") as tx:  # takes the lock, then recovers crash leftovers
        dirty = store.dirty_paths(["memory", "prompts"])
        if dirty:
            raise EvolveError(
                f"memory/ or prompts/ has uncommitted changes ({', '.join(dirty[:5])}); commit or discard them first."
            )
        if not dry_run:
            tombstone_git_reverts(ws, take_lock=False)
        info, unit = _target(ws, rev, unit)
        broken = _broken_sidecars(store, info)
        if broken and unit is None and not cascade:
            return _revert_as_text(tx, info, broken, reason, dry_run)
        _check_revertable(store, info)
        linked = _linked_units(store, info, unit) if unit is not None else None
        done = reverted_by(store, info.sha, unit)
        if done is not None:
            what = f"{unit} in {info.short}" if unit is not None else info.short
            raise EvolveError(
                f"{what} was already reverted by {done[:10]}; "
                f"`evolve revert {done[:10]}` undoes that revert."
            )
        head = store.head()
        assert head is not None
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        targets = _closure(store, info) if cascade else [info]
        # What evolve wrote to answer a plain `git revert` goes with it: reverting the
        # git revert lifts those tombstones too (`_answers`).
        answers = _answers(store, targets)
        targets = _in_order(store, info, targets + answers)
        undone = {t.sha for t in targets}
        restarts = Restarts(store, undone)
        plan = _Plan(store, head, reason, stamp, restarts)
        plan.only = linked
        if linked is None:
            plan.skip = _units_taken(store, info.sha)
        try:
            for target in targets:
                plan.undo(target, undone)
        except _Conflict as conflict:
            raise _refusal(store, info, conflict) from None
        changes = plan.finish()
        deltas: Deltas = {}
        for target in targets:
            moved = counter_deltas(store, target)
            if linked is not None or plan.skip:
                moved = {
                    k: v
                    for k, v in moved.items()
                    if (k[1] in linked if linked is not None else k[1] not in plan.skip)
                }
            if any(k in SKILL_COUNTERS for fields in moved.values() for k in fields):
                # The pooled counters as the per-task record: a skill whose record restarted
                # since the commit keeps the new record whole (its counts went with the old).
                drop_skill_deltas(moved, restarts.since(target))
            add_deltas(deltas, moved)
        counts = take_back(store, head, deltas, changes)
        changes.update(counts.files)
        # A lesson brought back gets back exactly the record the commit dropped with it.
        changes.update(restored_records(store, head, targets, changes))
        back = unretired(store, head, changes)
        changes.update(restart_files(store, head, changes, back))
        drops, ended = record_drops(store, head, changes)  # a tombstoned skill's record ends
        changes.update(drops)
        _check_shelves(ws, info, head, changes)
        capped = fit_files(ws, head, changes, f"reverting {info.short}")  # caps hold after
        capped.apply(changes)
        undo = _Undo(
            info,
            targets,
            plan,
            changes,
            counts,
            [u.id for u in back],
            ended,
            cascade=len(targets) - len(answers) > 1,
            units=sorted(linked or ()),
            answers=[a.sha for a in answers],
            capped=capped,
        )
        if dry_run:
            return _preview(tx, undo)
        return _commit(tx, undo)


def _broken_sidecars(store: GitStore, info: CommitInfo) -> list[str]:
    """The counters sidecars `info` changed that cannot be read before or after it (a hand
    edit with a typo: an unknown counter, a key given twice; or the revert of its fix), which
    no evidence can be read from."""
    from evolve.memory._counters import parse_counters

    if len(info.parents) != 1:
        return []
    broken = []
    for _, path in store.changed_paths(info.parents[0], info.sha, TRACKED):
        if not is_counters_file(path):
            continue
        for rev in (info.sha, info.parents[0]):
            raw = store.read(rev, path)
            try:
                if raw is not None:
                    parse_counters(path, raw.decode("utf-8"))
            except (EvolveError, UnicodeDecodeError):
                broken.append(path)
                break
    return broken


def _revert_as_text(
    tx: Transaction, info: CommitInfo, broken: list[str], reason: str | None, dry_run: bool
) -> RevertResult:
    """Revert a commit that left a counters sidecar unreadable by putting back, byte for byte,
    every file it changed in memory/ and prompts/, provided none changed since (there is no
    evidence to take back from a file that cannot be read)."""
    store = tx.store
    parent = info.parents[0]
    changes: dict[str, bytes | None] = {}
    for _, path in store.changed_paths(parent, info.sha, TRACKED):
        if store.read("HEAD", path) != store.read(info.sha, path):
            raise EvolveError(
                f"{broken[0]} cannot be read before or after {info.short}, and {path} changed "
                f"since; fix "
                f"{broken[0]} by hand (or `git revert {info.short}` and resolve the conflict), "
                "then commit."
            )
        changes[path] = store.read(parent, path)
    ops = [
        ("restore" if changes[p] is not None else "remove", unit_ident(p)) for p in sorted(changes)
    ]
    restored = [p for p in sorted(changes) if changes[p] is not None]
    removed = [p for p in sorted(changes) if changes[p] is None]
    result = RevertResult(info.sha, "", restored, removed=removed, commits=[info.sha])
    if dry_run:
        result.dry_run = True
        return result
    why = reason or f"reverted {info.short}"
    body = [
        f"Reason: {why}",
        "",
        f"Reverts: {info.short} {info.subject}",
        "",
        f"{', '.join(broken)} cannot be read before or after {info.short} (a hand edit); the "
        "files it changed are put back byte for byte as they were before it.",
    ]
    trailers = [(KIND, "revert"), (REVERTS, info.sha), (OPS, format_ops(ops))]
    paths = tx.write(changes)
    commit = tx.commit(
        paths, f"revert {info.short}: {info.subject}"[:200], body="\n".join(body), trailers=trailers
    )
    refresh_commit_graph(store)
    if commit is None:
        raise _nothing_left(info.short)
    result.commit = commit
    return result


@dataclass(frozen=True)
class _Undo:
    """One revert, worked out: the commit asked for, every commit it takes back, the files it
    writes, the counters it moves back, and what kind of revert the commit records (a
    cascade, the units of a per-unit revert, what it evicts to keep memory within its caps)."""

    info: CommitInfo
    targets: list[CommitInfo]
    plan: _Plan
    changes: dict[str, bytes | None]
    counts: CountBack
    restarted: list[str]
    ended: list[str]
    cascade: bool = False
    units: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    capped: CapFit | None = None  # what the revert evicts to keep memory within its caps

    @property
    def capped_paths(self) -> set[str]:
        return set(self.capped.paths) if self.capped else set()


def _target(ws: Workspace, rev: str, unit: str | None) -> tuple[CommitInfo, str | None]:
    """The commit to revert and the unit to take back from it (None: all of it).

    `rev` is a commit, or a unit id: then the newest commit that changed what that unit says
    and whose change to it still stands."""
    store = ws.store
    try:
        sha = store.rev_parse(rev)
    except EvolveError:
        if unit is not None or not valid_id(rev):
            raise
        path = _unit_path(ws, rev)
        if path is None:
            raise EvolveError(
                f"'{rev}' is not a commit or a unit id in this workspace; see `evolve log`."
            ) from None
        return _last_change(store, rev, path), rev
    info = store.commit_info(sha)
    if unit is not None and not _changed_unit(store, info, unit):
        raise EvolveError(
            f"{info.short} did not change unit {unit!r}; `evolve show {unit}` lists the "
            "commits that did."
        )
    return info, unit


def _unit_path(ws: Workspace, unit_id: str) -> str | None:
    from evolve.history._show import find_path

    return find_path(ws, unit_id)


def _last_change(store: GitStore, unit_id: str, path: str) -> CommitInfo:
    """The newest single-parent commit on HEAD that changed what `path` says, with its change
    to the unit not reverted since."""
    for sha in store.git("log", "--format=%H", "--no-merges", "HEAD", "--", path).split():
        info = store.commit_info(sha)
        if not info.parents or info.trailers.get(KIND) == "init":
            continue
        if not any(c.path == path for c in content_changes(store, info)):
            continue
        if reverted_by(store, sha, unit_id) is None:
            return info
    raise EvolveError(
        f"no commit's change to unit {unit_id!r} is left to revert; `evolve show {unit_id}` "
        "lists the commits that touched it."
    )


def _changed_unit(store: GitStore, info: CommitInfo, unit: str) -> bool:
    if len(info.parents) != 1:
        return True  # refused as a merge by `_check_revertable`, with what to do
    if any(unit_ident(c.path) == unit for c in content_changes(store, info)):
        return True
    return any(ident == unit for _, ident in counter_deltas(store, info))


def _linked_units(store: GitStore, info: CommitInfo, unit: str) -> set[str]:
    """`unit` and the units its change in `info` is tied to: a unit it replaced or that
    replaced it (`revoked_by`, `supersedes`), in turn. Undoing one of them alone would leave
    a replacement without what it replaced, or two texts where the commit meant one."""
    edges: dict[str, set[str]] = {}
    for change in content_changes(store, info):
        ident = unit_ident(change.path)
        for data in (change.before, change.after):
            u = unit_of(change.path, data)
            for other in (u.revoked_by, u.supersedes) if u is not None else ():
                if other:
                    edges.setdefault(ident, set()).add(other)
                    edges.setdefault(other, set()).add(ident)
    changed = {unit_ident(c.path) for c in content_changes(store, info)}
    linked, queue = {unit}, [unit]
    while queue:
        for other in edges.get(queue.pop(), ()):
            if other not in linked and other in changed:
                linked.add(other)
                queue.append(other)
    return linked


def _answers(store: GitStore, targets: list[CommitInfo]) -> list[CommitInfo]:
    """The commits evolve wrote to answer the plain `git revert`s among `targets` that still
    stand (not reverted, not already among the targets)."""
    have = {t.sha for t in targets}
    out = []
    for target in targets:
        if git_revert_target(target) is None or target.trailers.get(KIND):
            continue
        for answer in git_revert_answers(store, target.sha):
            if answer.sha not in have and reverted_by(store, answer.sha) is None:
                have.add(answer.sha)
                out.append(answer)
    return out


def _in_order(store: GitStore, first: CommitInfo, commits: list[CommitInfo]) -> list[CommitInfo]:
    """`commits`, newest first."""
    if len(commits) == 1:
        return commits
    order = store.git("rev-list", f"{first.sha}^..HEAD").split()
    rank = {sha: i for i, sha in enumerate(order)}
    return sorted(commits, key=lambda c: rank.get(c.sha, len(rank)))


def _check_shelves(
    ws: Workspace, info: CommitInfo, head: str, changes: dict[str, bytes | None]
) -> None:
    """A revert that would leave a skill shelf over its cap (a lifted tombstone on a shelf
    filled since) is refused like any other write over a cap."""
    from evolve.applier._shelves import overflowing

    touched = {p for p in changes if is_unit_path(p) and p.startswith("memory/skills/")}
    if not touched:
        return
    before = [u for u in load_units_at(ws.store, head) if u.shelf is not None]
    after = [u for u in before if str(u.path()) not in touched]
    after += [u for p in touched if (u := unit_of(p, changes[p])) is not None]
    over = overflowing(before, after, ws.config.skills.caps)
    if over:
        raise EvolveError(
            f"reverting {info.short} would put a skill shelf over its cap (skills.caps in "
            f"evolve.yaml): {', '.join(over)}; revoke or revert a skill there first."
        )


def _nothing_left(short: str) -> EvolveError:
    return EvolveError(
        f"what {short} did is already undone in memory/ and prompts/ (by hand or by later "
        "commits); there is nothing left to revert."
    )


@dataclass
class _Message:
    """A revert commit's ops, subject, body and trailers, and what it lifts."""

    ops: list[tuple[str, str]]
    lifted: list[str]
    stones: list[MemoryUnit]
    subject: str
    body: list[str]
    trailers: list[tuple[str, str]]


def _message(store: GitStore, shape: _Undo) -> _Message:
    info, targets, plan, changes, counts = (
        shape.info, shape.targets, shape.plan, shape.changes, shape.counts,
    )  # fmt: skip
    restarted, ended = shape.restarted, shape.ended
    short = info.short
    stones = [s for p, s in sorted(plan.stones.items()) if p in changes]
    stone_paths = {str(s.path()) for s in stones}
    ops: list[tuple[str, str]] = []
    lifted: list[str] = []
    for path in sorted(changes):
        ident = unit_ident(path)
        if path in stone_paths or is_counters_file(path) or path in shape.capped_paths:
            continue
        was = unit_of(path, store.read(plan.head, path))
        if was is not None and was.status == "tombstoned":
            lifted.append(was.id)
            ops.append(("lift", ident))
        else:
            ops.append(("restore" if changes[path] is not None else "remove", ident))
    ops += [("tombstone", s.id) for s in stones]
    ops += [("count", ident) for ident in counts.ids]
    ops += [("restart", ident) for ident in restarted]
    ops += shape.capped.ops() if shape.capped else []
    why = plan.why or f"reverted {short}"
    body = [f"Reason: {why}", ""]
    if shape.units:
        body += [f"Units taken back (the rest of {short} stands): {', '.join(shape.units)}", ""]
    body += [f"Reverts: {t.short} {t.subject}" for t in targets]
    if stones:
        body += ["", "Tombstones (refused if proposed again):"]
        body += [f"- {s.id}: {s.text[:120]}" for s in stones]
    if lifted:
        body += ["", "Tombstones lifted (their units may be learned again):"]
        body += [f"- {ident}" for ident in lifted]
    if counts.moved:
        body += ["", "Counters moved back (the evidence the reverted commit added):"]
        body += describe(counts.moved)
    if counts.missing:
        body += ["", "Counters not moved back (the unit no longer exists or is tombstoned):"]
        body += [f"- {ident}" for ident in counts.missing]
    if restarted:
        body += [
            "",
            "Scoreboard record restarted (the retirement is overruled: its evidence, the "
            "counters and the per-task counts, is set aside, so only new evidence can retire "
            "the skill again):",
        ]
        body += [f"- {ident}" for ident in restarted]
    if ended:
        body += [
            "",
            "Scoreboard record dropped (the skill is tombstoned; a revert of this revert "
            "brings it back):",
        ]
        body += [f"- {ident}" for ident in ended]
    body += shape.capped.lines() if shape.capped else []
    trailers = [
        (KIND, "cascade revert" if shape.cascade else "revert"),
        (REVERTS, " ".join(t.sha for t in targets)),
        (OPS, format_ops(ops)),
    ]
    if shape.units:
        trailers.append((UNITS, " ".join(shape.units)))
    if PERSONA in info.trailers:
        trailers.append((PERSONA, info.trailers[PERSONA]))
    if restarted:
        trailers.append((RESTARTS, " ".join(restarted)))
    subject = f"revert {short}" + (f" and {len(targets) - 1} later" if shape.cascade else "")
    if shape.units:
        subject = f"revert {' '.join(shape.units)} from {short}"
    return _Message(ops, lifted, stones, f"{subject}: {info.subject}"[:200], body, trailers)


def _preview(tx: Transaction, shape: _Undo) -> RevertResult:
    """What the revert would do, written nowhere (`evolve revert --dry-run`)."""
    from evolve.history._gitrevert import unanswered

    info, targets, changes, counts = shape.info, shape.targets, shape.changes, shape.counts
    restarted = shape.restarted
    if not changes:
        raise _nothing_left(info.short)
    msg = _message(tx.store, replace(shape, ended=[]))  # nothing is dropped yet
    stone_paths = {str(s.path()) for s in msg.stones}
    return RevertResult(
        info.sha,
        "",
        [
            p
            for p in sorted(changes)
            if changes[p] is not None and p not in stone_paths and not is_counters_file(p)
        ],
        msg.stones,
        commits=[t.sha for t in targets],
        lifted=msg.lifted,
        counters=counts.moved,
        counters_skipped=counts.missing,
        restarted=restarted,
        removed=[p for p in sorted(changes) if changes[p] is None],
        units=shape.units,
        answers=shape.answers,
        unanswered=[g.sha for g, _ in unanswered(tx.ws)],
        dry_run=True,
    )


def _commit(tx: Transaction, shape: _Undo) -> RevertResult:
    store = tx.store
    info, targets, changes, counts = shape.info, shape.targets, shape.changes, shape.counts
    restarted = shape.restarted
    short = info.short
    if not changes:
        raise _nothing_left(short)
    msg = _message(store, shape)
    stone_paths = {str(s.path()) for s in msg.stones}
    paths = tx.write(changes)
    commit = tx.commit(paths, msg.subject, body="\n".join(msg.body), trailers=msg.trailers)
    refresh_commit_graph(store)
    if commit is None:
        raise _nothing_left(short)
    restored = [
        p
        for p in paths
        if changes[p] is not None and p not in stone_paths and not is_counters_file(p)
    ]
    return RevertResult(
        info.sha,
        commit,
        restored,
        msg.stones,
        commits=[t.sha for t in targets],
        lifted=msg.lifted,
        counters=counts.moved,
        counters_skipped=counts.missing,
        restarted=restarted,
        removed=[p for p in paths if changes[p] is None],
        units=shape.units,
        answers=shape.answers,
    )
