"""A workspace's repository read with the standard library only: discovery, refs, git runs.

git runs through `os.posix_spawnp` (importing `subprocess` costs more than a short `git log`)
with `git -C ROOT`, as the store runs it with ROOT as its working folder, and with the store's
environment for reading objects as stored (`evolve._format._git.COMMITTED_ENV`: no replace
ref, no graft), so a `.git/` from someone else cannot make it print other files.
"""

from __future__ import annotations

import os
import select

from evolve._checkout import source_checkout
from evolve._format import Unhandled as Unhandled  # re-exported: the fast path raises it
from evolve._format._git import committed_env

CONFIG_NAME = "evolve.yaml"  # as evolve.workspace._paths
GENERATION_JOURNAL = "evolve-generation.json"  # as evolve.workspace._paths
APPLY_JOURNAL = "evolve-journal.json"  # as evolve.workspace._paths


class GitError(Unhandled):
    """git failed; the full command reports it in its own words."""


class Repo:
    """A workspace found from a folder: its root, git dir and common dir."""

    def __init__(self, root: str, git_dir: str, common_dir: str) -> None:
        self.root = root
        self.git_dir = git_dir
        self.common_dir = common_dir

    @classmethod
    def find(cls, start: str | None) -> Repo:
        """The workspace holding `start` (default: the current folder), as `Workspace.find`
        finds it, and its repository as the store discovers it.

        Raises:
            Unhandled: no workspace, or a repository laid out in a way the store reports on.
        """
        here = os.path.realpath(start if start is not None else os.getcwd())
        folder = here
        while True:
            if os.path.isfile(os.path.join(folder, CONFIG_NAME)):
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                raise Unhandled("no workspace")
            folder = parent
        if source_checkout(folder):
            raise Unhandled("evolve's own source checkout")
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            git_dir = dot
        else:
            raise Unhandled("not a plain repository")  # worktrees, submodules: the store's way
        if not os.path.isfile(os.path.join(git_dir, "HEAD")):
            raise Unhandled("no HEAD")
        if os.path.exists(os.path.join(git_dir, "commondir")) or os.path.isdir(
            os.path.join(git_dir, "reftable")
        ):
            raise Unhandled("linked worktree or reftable")
        if os.path.exists(os.path.join(git_dir, GENERATION_JOURNAL)):
            raise Unhandled("a generation journal to recover")
        if os.path.exists(os.path.join(git_dir, APPLY_JOURNAL)):
            raise Unhandled("a write interrupted or in progress (the full command says which)")
        return cls(folder, git_dir, git_dir)

    # --- refs: read from the files, as GitStore reads them -----------------------------

    def _read(self, path: str) -> str:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return ""

    def read_ref(self, ref: str, depth: int = 0) -> str | None:
        raw = self._read(os.path.join(self.common_dir, ref)).strip()
        if raw.startswith("ref: ") and depth < 5:
            return self.read_ref(raw[5:].strip(), depth + 1)
        if raw:
            return raw
        packed = self._read(os.path.join(self.common_dir, "packed-refs"))
        for line in packed.splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and not line.startswith(("#", "^")):
                return sha
        return None

    def head(self) -> str | None:
        raw = self._read(os.path.join(self.git_dir, "HEAD")).strip()
        if raw.startswith("ref: "):
            return self.read_ref(raw[5:].strip())
        return raw or None

    # --- running git ---------------------------------------------------------------------

    def start(self, *args: str, input: bytes | None = None) -> Run | Finished:
        """Start `git ARGS`; `.wait()` returns its stdout. Where the system has in-memory
        files, git writes into one (no pipe to drain, chunk by chunk, while it runs)."""
        if hasattr(os, "memfd_create"):
            return Finished(self.root, args, input)
        return Run(self.root, args, input)

    def stream(self, *args: str) -> Run:
        """Start `git ARGS` with its stdout on a pipe, to read as it comes (`.chunks()`)."""
        return Run(self.root, args, None)

    def git(self, *args: str, input: bytes | None = None) -> bytes:
        """Run `git ARGS` and return its stdout.

        Raises:
            GitError: git exited non-zero.
        """
        return self.start(*args, input=input).wait()


class Finished:
    """One git process writing into in-memory files; `wait()` reaps it and reads them."""

    def __init__(self, root: str, args: tuple[str, ...], input: bytes | None) -> None:
        self.returncode: int | None = None
        self._fds = [os.memfd_create("git-out"), os.memfd_create("git-err")]
        actions: list[tuple[int, int, int]] = [
            (os.POSIX_SPAWN_DUP2, self._fds[0], 1),
            (os.POSIX_SPAWN_DUP2, self._fds[1], 2),
        ]
        if input is not None:
            fd = os.memfd_create("git-in")
            self._fds.append(fd)
            os.write(fd, input)
            os.lseek(fd, 0, os.SEEK_SET)
            actions.append((os.POSIX_SPAWN_DUP2, fd, 0))
        try:
            self.pid = os.posix_spawnp(
                "git", ["git", "-C", root, *args], committed_env(), file_actions=actions
            )
        except OSError as exc:
            self.close()
            raise GitError("git cannot be run") from exc

    def _read(self, fd: int) -> bytes:
        size = os.fstat(fd).st_size
        return os.pread(fd, size, 0) if size else b""

    def wait(self) -> bytes:
        """git's stdout, once it has exited.

        Raises:
            GitError: git exited non-zero.
        """
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        try:
            if self.returncode != 0:
                raise GitError(self._read(self._fds[1]).decode("utf-8", "replace"))
            return self._read(self._fds[0])
        finally:
            self.close()

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def kill(self) -> None:
        """Stop git if it still runs (the reader gave up), and free its files."""
        if self.returncode is None:
            try:  # noqa: SIM105 - contextlib costs start-up here
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.returncode = -9
        self.close()


class Run:
    """One git process; `wait()` returns its stdout (stderr is drained alongside)."""

    def __init__(self, root: str, args: tuple[str, ...], input: bytes | None) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        actions: list[tuple[int, int, int]] = [
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ]
        in_w = -1
        if input is not None:
            in_r, in_w = os.pipe()
            actions.append((os.POSIX_SPAWN_DUP2, in_r, 0))
        try:
            self.pid = os.posix_spawnp(
                "git", ["git", "-C", root, *args], committed_env(), file_actions=actions
            )
        except OSError as exc:
            for fd in (out_r, out_w, err_r, err_w, in_w):
                if fd >= 0:
                    os.close(fd)
            raise GitError("git cannot be run") from exc
        finally:
            if input is not None:
                os.close(in_r)
        os.close(out_w)
        os.close(err_w)
        self.out = out_r
        self._err = err_r
        self._in = in_w
        self._input = input or b""
        self._err_chunks: list[bytes] = []
        self.returncode: int | None = None

    def chunks(self, size: int = 1 << 16) -> _Chunks:
        """stdout as it comes (stdin written and stderr drained alongside)."""
        return _Chunks(self, size)

    def wait(self) -> bytes:
        data = b"".join(self.chunks())
        self.finish()
        return data

    def finish(self) -> None:
        """Reap git; raise GitError when it failed."""
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        if self.returncode != 0:
            raise GitError(b"".join(self._err_chunks).decode("utf-8", "replace"))

    def kill(self) -> None:
        """Stop git early (the reader has what it needs)."""
        if self.returncode is None:
            try:  # noqa: SIM105 - contextlib costs start-up here
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.returncode = 0
        for fd in (self.out, self._err, self._in):
            if fd >= 0:
                try:  # noqa: SIM105 - contextlib costs start-up here
                    os.close(fd)
                except OSError:
                    pass
        self.out = self._err = self._in = -1


class _Chunks:
    def __init__(self, run: Run, size: int) -> None:
        self.run = run
        self.size = size

    def __iter__(self) -> _Chunks:
        return self

    def __next__(self) -> bytes:
        run = self.run
        while run.out >= 0:
            readers = [run.out] + ([run._err] if run._err >= 0 else [])
            writers = [run._in] if run._in >= 0 else []
            if run._err < 0 and not writers:
                ready_r: list[int] = [run.out]
                ready_w: list[int] = []
            else:
                ready_r, ready_w, _ = select.select(readers, writers, [])
            if ready_w:
                try:  # noqa: SIM105 - contextlib costs start-up here
                    sent = os.write(run._in, run._input[:65536])
                except BrokenPipeError:
                    sent = len(run._input)
                run._input = run._input[sent:]
                if not run._input:
                    os.close(run._in)
                    run._in = -1
            if run._err >= 0 and run._err in ready_r:
                data = os.read(run._err, self.size)
                if data:
                    run._err_chunks.append(data)
                else:
                    os.close(run._err)
                    run._err = -1
            if run.out in ready_r:
                data = os.read(run.out, self.size)
                if data:
                    return data
                os.close(run.out)
                run.out = -1
        while run._err >= 0:  # stdout closed: drain what git still says on stderr
            data = os.read(run._err, self.size)
            if not data:
                os.close(run._err)
                run._err = -1
            else:
                run._err_chunks.append(data)
        if run._in >= 0:
            os.close(run._in)
            run._in = -1
        raise StopIteration
