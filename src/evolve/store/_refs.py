"""The store's refs: a branch moved the way `git update-ref` does (git's `.lock` protocol,
the old value checked under the lock, the reflogs written) without a process; side refs (a
history of their own, e.g. `refs/evolve/records`); and the locks a killed process left."""

from __future__ import annotations

import os
import time
from pathlib import Path

from evolve.errors import EvolveError
from evolve.store._base import GitFailed, _last_line
from evolve.store._objects import GitObjects
from evolve.store._trailers import Trailers, format_message

# A ref or index lock untouched this long, found while we hold the workspace's writer lock,
# was left by a killed process (git holds such locks for milliseconds).
STALE_LOCK_SECONDS = 1.0
_LOGGER = "evolve.store._git"  # the logger a removed lock is reported on (as it always was)


def _git_running_in(root: Path, git_dir: Path) -> bool | None:
    """Whether a git process other than this process's children works in this repository
    (its current folder inside `root` or `git_dir`); None when processes cannot be listed."""
    proc = Path("/proc")
    if not (proc / "self").is_dir():
        return None
    me = os.getpid()
    inside = (str(root), str(git_dir))
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if not (entry / "comm").read_text(encoding="utf-8").startswith("git"):
                continue
            fields = (entry / "stat").read_text(encoding="utf-8")
            if int(fields.rpartition(")")[2].split()[1]) == me:
                continue  # our own cat-file reader, or GitPython's
            cwd = os.readlink(entry / "cwd")
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to inspect
        if any(cwd == p or cwd.startswith(p + "/") for p in inside):
            return True
    return False


class GitRefs(GitObjects):
    """Moving refs, side refs, and locks left behind (see the module's docstring)."""

    def _open_ref_lock(self, lock_path: Path) -> int:
        """Create git's `<ref>.lock` (recovering one a killed process left)."""
        for attempt in range(2):
            try:
                return os.open(lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if attempt or not self.recover_stale_lock(lock_path):
                    break
        raise EvolveError(
            f"{lock_path} exists: another git process is updating the branch; retry when it "
            "is done, or delete that file if no git or evolve process is running."
        )

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
        try:
            current = self.head()
            if current != old:
                raise EvolveError(
                    "the branch moved while evolve was committing; rerun the command."
                )
            os.write(fd, (new + "\n").encode("ascii"))
            os.close(fd)
            fd = -1
            os.replace(lock_path, ref_path)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            lock_path.unlink(missing_ok=True)
            raise
        name, email = self._identity_of("COMMITTER")
        stamp = f"{int(time.time())} {time.strftime('%z')}"
        flat = " ".join(subject.split())
        entry = f"{old or self._zero} {new} {name} <{email}> {stamp}\tevolve: {flat}"[:400]
        for log_dir, log_name in ((self.git_dir, "HEAD"), (self.common_dir, ref)):
            log_path = log_dir / "logs" / log_name
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with log_path.open("a", encoding="utf-8", errors="replace") as handle:
                handle.write(entry + "\n")

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
        self._recover_locks(ref, "packed-refs")
        try:
            self.git("update-ref", ref, sha, parent or self._zero)
        except GitFailed as exc:
            raise EvolveError(
                f"cannot update {ref}: {_last_line(str(exc.stderr))}; retry when no other git "
                "process is running."
            ) from None
        return sha

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
        """Remove `lock` (a git `.lock` file) if a killed process left it; True if it is gone.

        Evolve creates ref and index locks only while it holds the workspace's writer lock,
        so one found while this process holds that lock belongs either to a git command the
        user runs by hand or to a killed evolve process. While a git process (not one of
        ours) runs in this repository, its lock is respected: waited for up to
        `STALE_LOCK_SECONDS`, never removed. With none running, the lock is a leftover and is
        removed with a warning. Where processes cannot be listed (no /proc), a lock untouched
        for `STALE_LOCK_SECONDS` counts as a leftover. Without the writer lock nothing is
        removed.
        """
        from evolve._held import writer_lock_held

        if not lock.exists():
            return True
        if not writer_lock_held(self.git_dir):
            return False
        start = time.monotonic()
        while True:
            try:
                mtime = lock.stat().st_mtime
            except FileNotFoundError:
                return True  # a live git finished with it
            busy = _git_running_in(self.root.resolve(), self.git_dir.resolve())
            if busy is False or (busy is None and time.time() - mtime >= STALE_LOCK_SECONDS):
                break
            if time.monotonic() - start >= (STALE_LOCK_SECONDS if busy else 5.0):
                return False
            time.sleep(0.05)
        try:
            lock.unlink()
        except FileNotFoundError:
            return True
        import logging

        logging.getLogger(_LOGGER).warning(
            "evolve: removed %s, a lock left behind by a process that was killed while it "
            "held the workspace",
            lock,
        )
        return True

    def recover_stale_locks(self) -> list[Path]:
        """Recover every git lock a killed evolve process may have left behind: the index,
        HEAD, ORIG_HEAD, packed-refs and any ref under refs/heads/ or refs/evolve/.

        For the next writer to call first thing, under the writer lock (without it, nothing
        is removed). Returns the locks (and temporary index files) that were removed.
        """
        from evolve._held import writer_lock_held

        candidates = [self.git_dir / f"{name}.lock" for name in ("index", "HEAD", "ORIG_HEAD")]
        candidates.append(self.common_dir / "packed-refs.lock")
        for folder in ("refs/heads", "refs/evolve"):
            candidates += sorted((self.common_dir / folder).rglob("*.lock"))
        removed = []
        for lock in candidates:
            if lock.exists() and self.recover_stale_lock(lock) and not lock.exists():
                removed.append(lock)
        if writer_lock_held(self.git_dir):
            # Temporary indexes of git-commit-path commits that a kill interrupted.
            for temp in self.git_dir.glob("evolve-index-*"):
                temp.unlink(missing_ok=True)
                removed.append(temp)
        return removed

    def _recover_locks(self, *names: str) -> None:
        """Recover the stale ones among the named locks (relative to the git dirs)."""
        for name in names:
            base = self.common_dir if name.startswith(("refs/", "packed-refs")) else self.git_dir
            lock = base / f"{name}.lock"
            if lock.exists():
                self.recover_stale_lock(lock)

    def _branch_locks(self) -> list[str]:
        ref = self._head_ref()
        return ["index", "HEAD", "ORIG_HEAD", *([ref] if ref else [])]
