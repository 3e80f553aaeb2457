"""The store's base: the repository's folders, git processes, its configuration, and refs
read from their files (loose or packed) without a process.

`GitStore` is built in layers, each a class over the one before: this base, objects
(`_objects`: blobs and trees read and written), refs (`_refs`: moving refs under git's lock
protocol, side refs, locks a killed process left), history (`_history`: `git log` read
safely), and the commit paths (`_git`).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # GitPython is imported only by `GitBase.repo` (code not yet moved off it)
    import git

from evolve._format._git import COMMITTED_ENV as COMMITTED_ENV
from evolve._format._git import committed_env as committed_env
from evolve.errors import EvolveError


def _clean_identity(value: str) -> str:
    """A name or email as git would write it: no angle brackets, no control characters."""
    return " ".join("".join(c for c in value if c not in "<>" and c.isprintable()).split())


def _last_line(text: str) -> str:
    """git's own complaint out of its stderr (its first `fatal:`/`error:` line), else the last
    line, shortened, without a final period."""
    found = re.search(r"(?:fatal|error): (.+)", text)
    if found:
        line = found.group(1)
    else:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        line = lines[-1] if lines else "no message from git"
    return line.strip().rstrip("'.")[:300]


class GitFailed(EvolveError):
    """A git command evolve ran failed; the message is git's own complaint, `stderr` all of it."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        self.args_run = tuple(args)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"git {args[0] if args else ''} failed: {_last_line(stderr)}.")


def _discover(root: Path) -> tuple[Path, Path]:
    """(git dir, common dir) of the repository whose working tree is `root`: `root/.git` is
    the git dir, or a file `gitdir: PATH` (a worktree or submodule) names it; a `commondir`
    file in the git dir names the common dir (linked worktrees), else it is the git dir.

    Raises:
        EvolveError: when `root` holds no repository.
    """
    dot = root / ".git"
    if dot.is_dir():
        git_dir = dot
    elif dot.is_file():
        first = dot.read_text(encoding="utf-8").strip()
        if not first.startswith("gitdir:"):
            raise EvolveError(f"{dot} is not a git repository link; run `git status` there.")
        git_dir = root / first[len("gitdir:") :].strip()
    else:
        raise EvolveError(
            f"{root} is not a git repository; run `evolve init` to create a workspace."
        )
    if not (git_dir / "HEAD").is_file():
        raise EvolveError(
            f"{root} is not a git repository; run `evolve init` to create a workspace."
        )
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        common = ""
    common_dir = (git_dir / common) if common else git_dir
    return Path(os.path.normpath(git_dir)), Path(os.path.normpath(common_dir))


class _ObjectReader:
    """One long-lived `git cat-file --batch` process (GitPython's reader assumes SHA-1), which
    reads objects as stored: no replace ref is honoured."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: Callable[[], None] | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            proc = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=self._root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # Objects as stored: a replace ref must not change what a commit builds on or
                # what the gate reads (`_committed`).
                env=committed_env(),
            )
            self._proc = proc
            self._finalizer = weakref.finalize(self, _stop, proc)
        return self._proc

    def get(self, name: str) -> tuple[str, str, bytes] | None:
        """(id, type, content) of the object `name` (any `git rev-parse` name), or None."""
        if "\n" in name or not name:
            return None
        with self._lock:  # one request and its answer at a time on the pipe
            try:
                return self._get(name)
            except BaseException:
                # Stopped between the request and the end of its answer (Ctrl-C, a time
                # limit's alarm, SIGTERM, an error): the pipe may still hold part of the
                # answer, which the next request would read as its own. This process goes;
                # the next request starts a new one.
                self.close()
                raise

    def _get(self, name: str) -> tuple[str, str, bytes] | None:
        proc = self._start()
        stdin, stdout = proc.stdin, proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
        stdin.flush()
        header = stdout.readline()
        parts = header.split()
        if len(parts) != 3 or not parts[2].isdigit():
            if not header:
                raise EvolveError("git cat-file stopped unexpectedly; rerun the command.")
            return None  # "<name> missing" or "<name> ambiguous"
        data = stdout.read(int(parts[2]))
        stdout.read(1)
        return parts[0].decode("ascii"), parts[1].decode("ascii"), data

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._proc = None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover
        proc.kill()
        proc.wait()


class GitBase:
    """A git repository's folders, processes, configuration and ref files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._git_dir, self.common_dir = _discover(root)
        self._repo: git.Repo | None = None
        if (self.common_dir / "reftable").is_dir():
            raise EvolveError(
                f"{root} keeps its refs in the reftable format, which evolve cannot update; "
                "convert it with `git refs migrate --ref-format=files`."
            )
        self._config_cache: dict[str, str | None] | None = None
        self._global_attributes: bool | None = None
        self._trees: dict[str, str] = {}
        self._tree_cache: dict[str, dict[str, tuple[int, bytes]]] = {}
        self.objects_dir = self.common_dir / "objects"
        self._reader = _ObjectReader(root)
        self._hash_name: str | None = None

    @property
    def git_dir(self) -> Path:
        return self._git_dir

    @property
    def repo(self) -> git.Repo:
        """A GitPython repository, created on first use (importing GitPython costs a `git
        version` process): only for code not yet moved to :meth:`git`."""
        if self._repo is None:
            import git

            self._repo = git.Repo(self.root)
        return self._repo

    def git(self, *args: str, input: bytes | None = None) -> str:
        """Run `git ARGS` in the working tree and return its stdout as text.

        Raises:
            GitFailed: when git exits non-zero (carries git's stderr).
        """
        return self._git_bytes(*args, input=input).decode("utf-8", "surrogateescape")

    def close(self) -> None:
        """Stop the object reader process (it also stops when the store is collected)."""
        self._reader.close()

    def start(self, *args: str) -> Callable[[], str]:
        """Start `git ARGS` and return the call that waits for it and returns its stdout (as
        :meth:`git` does), so the caller can work while git runs."""
        proc = subprocess.Popen(
            ["git", *args], cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=committed_env(),
        )  # fmt: skip

        def collect() -> str:
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise GitFailed(args, proc.returncode, err.decode("utf-8", "replace"))
            return out.decode("utf-8", "surrogateescape")

        return collect

    def _git_bytes(
        self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
    ) -> bytes:
        """Run git and return its raw stdout (a failure is one clear :class:`GitFailed`).
        git reads objects as stored (:data:`COMMITTED_ENV`) unless `env` says otherwise."""
        done = subprocess.run(
            ["git", *args], cwd=self.root, input=input, capture_output=True,
            env=committed_env() if env is None else env,
        )  # fmt: skip
        if done.returncode != 0:
            raise GitFailed(args, done.returncode, done.stderr.decode("utf-8", "replace"))
        return done.stdout

    def _git_committed(self, *args: str, input: bytes | None = None) -> str:
        """Run git reading objects as stored (:data:`COMMITTED_ENV`: no replace ref, no
        graft) and return its stdout as text."""
        out = self._git_bytes(*args, input=input, env=committed_env())
        return out.decode("utf-8", "surrogateescape")

    # --- configuration -----------------------------------------------------------------

    def _config(self) -> dict[str, str | None]:
        """The git configuration as git itself reads it (all levels, includes, environment).

        Keys are lower-case; a key given without a value maps to None (git's boolean true).
        """
        if self._config_cache is None:
            done = subprocess.run(
                ["git", "config", "-z", "--list"], cwd=self.root, capture_output=True
            )
            config: dict[str, str | None] = {}
            for item in done.stdout.decode("utf-8", "replace").split("\x00"):
                if not item:
                    continue
                key, sep, value = item.partition("\n")
                config[key.lower()] = value if sep else None
            self._config_cache = config
        return self._config_cache

    def _config_bool(self, key: str) -> bool:
        config = self._config()
        if key not in config:
            return False
        value = config[key]
        return value is None or value.strip().lower() in ("true", "yes", "on", "1")

    def _identity_of(self, role: str) -> tuple[str, str]:
        """Who `role` ("AUTHOR" or "COMMITTER") is: the environment, then git config."""
        config = self._config()
        lower = role.lower()
        name = (
            os.environ.get(f"GIT_{role}_NAME")
            or config.get(f"{lower}.name")
            or config.get("user.name")
            or ""
        )
        email = (
            os.environ.get(f"GIT_{role}_EMAIL")
            or config.get(f"{lower}.email")
            or config.get("user.email")
            or ""
        )
        return _clean_identity(name) or "evolve", _clean_identity(email) or "evolve@localhost"

    def _author(self) -> tuple[str, str]:
        return self._identity_of("AUTHOR")

    # --- refs, read from their files ---------------------------------------------------

    def _read_ref(self, ref: str, depth: int = 0) -> str | None:
        """The object a ref points at, read from the loose ref or packed-refs."""
        try:
            raw = (self.common_dir / ref).read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raw = ""
        if raw.startswith("ref: ") and depth < 5:
            return self._read_ref(raw[5:].strip(), depth + 1)
        if raw:
            return raw
        try:
            packed = (self.common_dir / "packed-refs").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        for line in packed.splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and not line.startswith(("#", "^")):
                return sha
        return None

    def _head_ref(self) -> str | None:
        """The branch HEAD is on ("refs/heads/main"), or None when HEAD is detached."""
        raw = (self.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        return raw[5:].strip() if raw.startswith("ref: ") else None

    def head_branch(self) -> str | None:
        """The branch HEAD is on ("refs/heads/main"), or None when HEAD is detached."""
        return self._head_ref()

    def ref_sha(self, ref: str) -> str | None:
        """The object a full ref name (`refs/...`) points at, read from the ref files (loose
        or packed) without a process; None when it does not exist."""
        return self._read_ref(ref) if ref.startswith("refs/") else None

    def head(self) -> str | None:
        """The commit HEAD points at, or None in a repository without commits."""
        ref = self._head_ref()
        if ref is None:
            return (self.git_dir / "HEAD").read_text(encoding="utf-8").strip() or None
        return self._read_ref(ref)
