"""The store's refs: a branch moved the way `git update-ref` does (git's `.lock` protocol,
the old value checked under the lock, the reflogs written) without a process; side refs (a
history of their own, e.g. `refs/evolve/records`); and the locks a killed evolve left.

A git lock (`index.lock`, `<ref>.lock`) is taken over only from the dead: before evolve takes
one (itself, or through a git command it runs) it writes an owner record under
`.git/evolve-locks/` naming its pid, host and start time, and removes it after. A lock whose
record names a process that is provably gone (`evolve._held.owner_gone`), and that no process
holds open, is a leftover and is removed. A lock without such a record belongs to someone
else (a user's git, a libgit2 or JGit tool, git run from another folder): it is waited for,
briefly, and otherwise reported in one sentence; never deleted."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from evolve._confine import append_under
from evolve._held import owner, owner_gone
from evolve._io import io_fault
from evolve._lazy import pattern
from evolve.errors import EvolveError, PathRefused
from evolve.store._base import GitFailed, _last_line
from evolve.store._objects import GitObjects
from evolve.store._trailers import Trailers, format_message

# How long a lock that is not evolve's own (a user's git, a libgit2 or JGit tool) is waited
# for before the command says so; such a lock is never removed.
STALE_LOCK_SECONDS = 2.0
_LOGGER = "evolve.store._git"  # the logger a removed lock is reported on (as it always was)
OWNERS = "evolve-locks"  # under the git dir: one owner record per git lock evolve takes


def owner_path(git_dir: Path, lock: Path) -> Path:
    """Where the owner record of the git lock `lock` lives."""
    key = hashlib.sha256(os.path.abspath(lock).encode("utf-8", "surrogateescape")).hexdigest()
    return git_dir / OWNERS / f"{key[:24]}.json"


def write_owner(git_dir: Path, lock: Path, record: dict[str, object]) -> None:
    """Record `record` (see `evolve._held.owner`) as the owner of `lock`, before it is taken."""
    path = owner_path(git_dir, lock)
    path.parent.mkdir(exist_ok=True)
    raw = json.dumps({**record, "lock": os.path.abspath(lock)}).encode("utf-8")
    io_fault(path)
    # Not atomic (a rename per commit is not worth it): a record cut short reads as none, and
    # a lock without a record is never removed.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, raw)
    finally:
        os.close(fd)


def read_owner(git_dir: Path, lock: Path) -> dict[str, object] | None:
    """The owner record of `lock`, or None when evolve did not take it (or the record is not
    one evolve wrote)."""
    try:
        with open(owner_path(git_dir, lock), "rb") as handle:
            data = json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("lock") != os.path.abspath(lock):
        return None
    return data


def _open_elsewhere(lock: Path) -> bool:
    """Whether a process holds `lock` open (a live writer of it, whoever it is); False where
    processes cannot be inspected."""
    proc = Path("/proc")
    target = os.path.realpath(lock)
    try:
        entries = list(proc.iterdir())
    except OSError:
        return False
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue  # gone meanwhile, or not ours to inspect
        for fd in fds:
            try:
                if os.readlink(fd) == target:
                    return True
            except OSError:
                continue
    return False


class GitRefs(GitObjects):
    """Moving refs, side refs, and locks left behind (see the module's docstring)."""

    def _open_ref_lock(self, lock_path: Path) -> int:
        """Create git's `<ref>.lock` (recovering one a killed evolve left), its owner record
        written first (removed by `_replace_under`)."""
        if lock_path.exists() and not self.recover_stale_lock(lock_path):
            raise _held_by_another(lock_path, "updating the branch")
        fd = self._create_lock(lock_path)
        if fd is None:
            raise _held_by_another(lock_path, "updating the branch")
        return fd

    def _create_lock(self, lock: Path) -> int | None:
        """Take git's `lock` the way git does, exclusively created, with evolve's owner record
        written first: its descriptor, or None (no record left) where it already exists."""
        write_owner(self.git_dir, lock, owner())
        try:
            io_fault(lock)
            return os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            self._disown(lock)
            return None
        except BaseException:
            self._disown(lock)
            raise

    def _replace_under(
        self, fd: int, lock: Path, path: Path, value: str, still: Callable[[], bool]
    ) -> bool:
        """With `lock` held (`fd`): if `still()` holds, write `value` into the lock and rename
        it over `path` (True); else drop the lock (False). `still` may raise instead. Either
        way the lock is gone and its owner record with it."""
        try:
            if not still():
                os.close(fd)
                fd = -1
                lock.unlink()
                return False
            os.write(fd, (value + "\n").encode("ascii"))
            os.close(fd)
            fd = -1
            os.replace(lock, path)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            lock.unlink(missing_ok=True)
            raise
        finally:
            self._disown(lock)
        return True

    def _disown(self, *locks: Path) -> None:
        for lock in locks:
            owner_path(self.git_dir, lock).unlink(missing_ok=True)

    @contextlib.contextmanager
    def _owning(self, *names: str) -> Iterator[None]:
        """Recover the named git locks a killed evolve left, then record this process as their
        owner while a git command it runs takes them (see the module docstring)."""
        locks = [self._lock_path(name) for name in names]
        for lock in locks:
            if lock.exists():
                self.recover_stale_lock(lock)
        mine = owner()
        claimed = []
        try:
            for lock in locks:
                if not lock.exists():  # one still held stays its owner's: git refuses, says so
                    write_owner(self.git_dir, lock, mine)
                    claimed.append(lock)
            yield
        finally:
            self._disown(*claimed)

    def _lock_path(self, name: str) -> Path:
        base = self.common_dir if name.startswith(("refs/", "packed-refs")) else self.git_dir
        return base / f"{name}.lock"

    def _update_head(self, new: str, old: str | None, subject: str) -> None:
        """Point the current branch at `new`, the way `git update-ref` does, without a process.

        The ref's `.lock` file is git's own lock protocol, so a concurrent git command that
        updates the same ref is caught; `old` is checked under the lock.
        """
        ref = self._head_ref()
        if ref is None:
            raise EvolveError("HEAD is detached; check out a branch before running evolve.")
        ref_path = self.common_dir / ref
        lock_path = ref_path.with_name(ref_path.name + ".lock")
        ref_path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._open_ref_lock(lock_path)

        def unmoved() -> bool:
            if self.head() != old:
                raise EvolveError(
                    "the branch moved while evolve was committing; rerun the command."
                )
            return True

        self._replace_under(fd, lock_path, ref_path, new, unmoved)
        name, email = self._identity_of("COMMITTER")
        stamp = f"{int(time.time())} {time.strftime('%z')}"
        flat = " ".join(subject.split())
        entry = f"{old or self._zero} {new} {name} <{email}> {stamp}\tevolve: {flat}"[:400]
        for log_dir, log_name in ((self.git_dir, "HEAD"), (self.common_dir, ref)):
            # No link followed: a `.git/logs/...` swapped for a link would append elsewhere.
            # The commit is made; a reflog that is a link is left as it is, and said.
            try:
                append_under(log_dir, f"logs/{log_name}", entry + "\n")
            except PathRefused as exc:
                import logging

                logging.getLogger(_LOGGER).warning("evolve: reflog not written: %s", exc)

    def write_side_ref(
        self,
        ref: str,
        files: dict[str, bytes],
        subject: str,
        *,
        body: str = "",
        trailers: Trailers = (),
    ) -> str:
        """Commit `files` on top of `ref` (a history of its own, e.g. refs/evolve/records),
        without touching HEAD, the index or the working tree."""
        parent = self._read_ref(ref) if ref.startswith("refs/") else None
        base = self._tree_of(parent) if parent else None
        changes: dict[str, tuple[int, bytes] | None] = {
            path: (0o100644, bytes.fromhex(self._store(b"blob", data)))
            for path, data in files.items()
        }
        tree = self._write_tree(base, changes) or self._store(b"tree", b"")
        name, email = self._identity_of("COMMITTER")
        stamp = f"{int(time.time())} {time.strftime('%z')}"
        lines = [f"tree {tree}"] + ([f"parent {parent}"] if parent else [])
        lines += [f"author {name} <{email}> {stamp}", f"committer {name} <{email}> {stamp}"]
        sha = self._store(
            b"commit",
            ("\n".join(lines) + "\n\n" + format_message(subject, body, trailers)).encode("utf-8"),
        )
        if parent is not None and self._move_loose_ref(ref, sha, parent):
            return sha
        try:
            with self._owning(ref, "packed-refs"):
                self.git("update-ref", ref, sha, parent or self._zero)
        except GitFailed as exc:
            raise EvolveError(
                f"cannot update {ref}: {_last_line(str(exc.stderr))}; retry when no other git "
                "process is running."
            ) from None
        return sha

    def _move_loose_ref(self, ref: str, new: str, old: str) -> bool:
        """Move `ref` from `old` to `new` without a process where all `git update-ref` would do
        is rewrite its loose file: a plain name whose file holds `old`, not a link; no reflog
        of it kept or asked for (`core.logAllRefUpdates=always`); no hook that sees ref
        updates, no other ref storage, no fsync or shared permissions asked for; no lock on it
        or on packed-refs. Then it is git's own protocol: `<ref>.lock` created exclusively (its
        owner record first), the old value checked under it, the lock renamed over the ref.
        False, having changed nothing, wherever any of that does not hold: git moves it."""
        if not _PLAIN_REF.fullmatch(ref) or any(
            part.startswith(".") or part.endswith((".", ".lock")) or ".." in part
            for part in ref.split("/")
        ):
            return False
        config = self._config()
        if (
            str(config.get("core.logallrefupdates")).lower() == "always"
            or any(key.startswith(_GIT_DOES_MORE) for key in config)
            or any(
                os.path.lexists(base / "hooks" / "reference-transaction")
                for base in (self.git_dir, self.common_dir)
            )
        ):
            return False
        path = self.common_dir / ref
        lock = path.with_name(path.name + ".lock")
        expected = (old + "\n").encode("ascii")
        if (
            not _holds(path, expected)
            or os.path.lexists(self.common_dir / "logs" / ref)
            or os.path.lexists(self.common_dir / "packed-refs.lock")
            or os.path.lexists(lock)
        ):
            return False
        fd = self._create_lock(lock)
        if fd is None:  # taken meanwhile: git says what holds it
            return False
        # moved meanwhile: git says so
        return self._replace_under(fd, lock, path, new, lambda: _holds(path, expected))

    def read_side_ref(self, ref: str, prefix: str = "") -> dict[str, bytes]:
        """Every file of the tree at `ref` (empty if the ref does not exist)."""
        sha = self._read_ref(ref) if ref.startswith("refs/") else None
        if not sha:
            return {}
        out = {}
        for path in self.list_files(sha, prefix):
            data = self.read(sha, path)
            if data is not None:
                out[path] = data
        return out

    # --- crash leftovers -----------------------------------------------------------------

    def recover_stale_lock(self, lock: Path) -> bool:
        """Remove `lock` (a git `.lock` file) if a killed evolve left it; True if it is gone.

        Only under this process's writer lock, and only when the lock's owner record names an
        evolve process that is provably gone (its pid free, or reused by a process that started
        at another time) and no process holds the file open. Any other lock (no record: a
        user's git, a libgit2 or JGit tool) is waited for up to `STALE_LOCK_SECONDS` and then
        left where it is: True if its owner released it meanwhile, else False (the caller
        says so in one sentence). Without the writer lock nothing is removed.
        """
        from evolve._held import writer_lock_held

        if not lock.exists():
            self._disown(lock)
            return True
        if not writer_lock_held(self.git_dir):
            return False
        record = read_owner(self.git_dir, lock)
        if record is not None and owner_gone(record) and not _open_elsewhere(lock):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
            self._disown(lock)
            import logging

            logging.getLogger(_LOGGER).warning(
                "evolve: removed %s, a lock left behind by evolve process %s, which was killed "
                "while it held the workspace",
                lock,
                record.get("pid"),
            )
            return True
        deadline = time.monotonic() + STALE_LOCK_SECONDS
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if not lock.exists():
                return True  # its owner finished with it
        return False

    def recover_stale_locks(self) -> list[Path]:
        """Recover every git lock a killed evolve process left behind: the index, HEAD,
        ORIG_HEAD, packed-refs and any ref under refs/heads/ or refs/evolve/, and the owner
        records of locks that are gone.

        Under the writer lock only (without it, nothing is removed). Returns the locks (and
        temporary index files) that were removed; a foreign lock stays (see
        `recover_stale_lock`).
        """
        from evolve._held import writer_lock_held

        candidates = [self.git_dir / f"{name}.lock" for name in ("index", "HEAD", "ORIG_HEAD")]
        candidates.append(self.common_dir / "packed-refs.lock")
        for folder in ("refs/heads", "refs/evolve"):
            candidates += sorted((self.common_dir / folder).rglob("*.lock"))
        removed = []
        held = writer_lock_held(self.git_dir)
        for lock in candidates:
            if not lock.exists() or not held:
                continue
            record = read_owner(self.git_dir, lock)
            if record is not None and self.recover_stale_lock(lock) and not lock.exists():
                removed.append(lock)
        if held:
            # Temporary indexes of git-commit-path commits that a kill interrupted.
            for temp in self.git_dir.glob("evolve-index-*"):
                temp.unlink(missing_ok=True)
                removed.append(temp)
            for path in (self.git_dir / OWNERS).glob("*.json"):  # records of released locks
                with contextlib.suppress(OSError, ValueError):
                    record = json.loads(path.read_bytes())
                    if not os.path.exists(str(record.get("lock"))) and owner_gone(record):
                        path.unlink(missing_ok=True)
        return removed

    def _recover_locks(self, *names: str) -> None:
        """Recover the stale ones among the named locks (relative to the git dirs)."""
        for name in names:
            lock = self._lock_path(name)
            if lock.exists():
                self.recover_stale_lock(lock)

    def _branch_locks(self) -> list[str]:
        ref = self._head_ref()
        return ["index", "HEAD", "ORIG_HEAD", *([ref] if ref else [])]


# A ref name `_move_loose_ref` writes itself: evolve's own, whose updates git logs only when
# asked to (anything else, git checks and writes).
_PLAIN_REF = pattern(r"refs/evolve(?:/[A-Za-z0-9_.-]+)+")
# Configuration under which `git update-ref` does more than rewrite a loose ref file.
_GIT_DOES_MORE = ("core.hookspath", "core.fsync", "core.sharedrepository", "extensions.refstorage")


def _holds(path: Path, content: bytes) -> bool:
    """Whether `path` is a plain file (not a link) holding exactly `content`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(content) + 1) == content
    finally:
        os.close(fd)


def _held_by_another(lock: Path, doing: str) -> EvolveError:
    return EvolveError(
        f"{lock} exists: another git process or tool is {doing} and evolve never removes a "
        "lock it did not take; retry when it is done, or delete that file if no git tool is "
        "running."
    )
