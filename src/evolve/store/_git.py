"""Git access for the store.

Two commit paths:

- The fast path (the default): per-episode commits are frequent, so :meth:`GitStore.commit`
  writes the blobs, the trees along the changed paths, the commit object, the ref and the
  index entries of the changed paths from Python (`evolve.store._index`; an index that module
  leaves to git costs one `git update-index` process), so a commit starts no process.
- git's own commit path (`git commit --only`): used when the repository has a hook that a
  commit runs (pre-commit, prepare-commit-msg, commit-msg, post-commit, reference-transaction,
  in `core.hooksPath` or `.git/hooks`) or asks for signed commits (`commit.gpgsign`), so that
  hooks run and signing applies exactly as they would for a person's `git commit`.

`benchmarks/bench_commit.py` measures both against `git add` + `git commit` on a 1,000-file,
10,000-commit repository. Objects are hashed with the repository's own algorithm (SHA-1 or
SHA-256, `extensions.objectFormat`).

History is read with NUL-framed `git log -z` output (and a per-call random marker around
patches), and trailers are read from each raw message, so no text in a commit, a file or an
author name can break the parsing.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # GitPython is imported only by `GitStore.repo` (code not yet moved off it)
    import git

from evolve._format._git import batch_contents, batch_request, status_paths, tree_blobs
from evolve.errors import EvolveError
from evolve.store._index import Change, Declined, update_index
from evolve.store._trailers import Trailers, format_message, split_message

# hashlib, tempfile and logging are imported where used: reading commands never need them, and
# start-up is most of what a short command costs.

_TREE = 0o040000
_LOG_FORMAT = "%H%x00%P%x00%cI%x00%B"
# Whatever the user's configuration: UTF-8 messages, no signature check output in between.
_LOG_OPTIONS = ("--encoding=UTF-8", "--no-show-signature")
# Hooks that `git commit` runs; when one is installed, commits go through `git commit`.
COMMIT_HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "reference-transaction",
)
# A ref or index lock untouched this long, found while we hold the workspace's writer lock,
# was left by a killed process (git holds such locks for milliseconds).
STALE_LOCK_SECONDS = 1.0

CommitPath = Literal["auto", "fast", "git"]


def _parse_tree(raw: bytes, rawlen: int) -> dict[str, tuple[int, bytes]]:
    """Parse a git tree object's body into {name: (mode, binary object id)}."""
    entries: dict[str, tuple[int, bytes]] = {}
    pos, end = 0, len(raw)
    while pos < end:
        space = raw.index(b" ", pos)
        nul = raw.index(b"\x00", space)
        mode = int(raw[pos:space], 8)
        entries[raw[space + 1 : nul].decode("utf-8", "surrogateescape")] = (
            mode,
            raw[nul + 1 : nul + 1 + rawlen],
        )
        pos = nul + 1 + rawlen
    return entries


def _format_tree(entries: dict[str, tuple[int, bytes]]) -> bytes:
    """Serialize entries in git's order (a tree sorts as if its name ended in '/')."""
    names = sorted(entries, key=lambda n: n + "/" if entries[n][0] == _TREE else n)
    out = bytearray()
    for name in names:
        mode, binsha = entries[name]
        out += b"%o %s\x00" % (mode, name.encode("utf-8", "surrogateescape"))
        out += binsha
    return bytes(out)


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


@dataclass(frozen=True)
class CommitInfo:
    """One commit as `git log` reports it, with its trailers parsed."""

    sha: str
    parents: tuple[str, ...]
    time: str
    subject: str
    body: str
    trailers: dict[str, str] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.sha[:10]


def _info(sha: bytes, parents: bytes, when: bytes, message: bytes) -> CommitInfo:
    subject, body, trailers = split_message(message.decode("utf-8", "replace"))
    return CommitInfo(
        sha=sha.decode("ascii"),
        parents=tuple(parents.decode("ascii").split()),
        time=when.decode("ascii"),
        subject=subject,
        body=body,
        trailers=trailers,
    )


class _ObjectReader:
    """One long-lived `git cat-file --batch` process (GitPython's reader assumes SHA-1)."""

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
            )
            self._proc = proc
            self._finalizer = weakref.finalize(self, _stop, proc)
        return self._proc

    def get(self, name: str) -> tuple[str, str, bytes] | None:
        """(id, type, content) of the object `name` (any `git rev-parse` name), or None."""
        if "\n" in name or not name:
            return None
        with self._lock:  # one request and its answer at a time on the pipe
            return self._get(name)

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


class GitStore:
    """A git repository holding a workspace; the only code that makes commits."""

    #: "auto" picks git's commit path when hooks or signing ask for it, else the fast path;
    #: "fast" and "git" force one (the benchmark uses them).
    commit_path: CommitPath = "auto"

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

    @classmethod
    def init(cls, root: Path) -> GitStore:
        root.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["git", "init", "--quiet", "--initial-branch=main", str(root)], capture_output=True
        )
        if done.returncode != 0:
            raise GitFailed(["init"], done.returncode, done.stderr.decode("utf-8", "replace"))
        return cls(root)

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

    @property
    def object_format(self) -> str:
        """The repository's hash algorithm: "sha1" or "sha256"."""
        if self._hash_name is None:
            name = (self._config().get("extensions.objectformat") or "sha1").strip().lower()
            if name not in ("sha1", "sha256"):
                raise EvolveError(
                    f"this repository uses the {name!r} object format, which evolve cannot "
                    "write; use a sha1 or sha256 repository."
                )
            self._hash_name = name
        return self._hash_name

    @property
    def _rawlen(self) -> int:
        return 32 if self.object_format == "sha256" else 20

    @property
    def _zero(self) -> str:
        return "0" * (2 * self._rawlen)

    def _hash(self, data: bytes) -> str:
        import hashlib

        if self.object_format == "sha256":
            return hashlib.sha256(data).hexdigest()
        return hashlib.sha1(data, usedforsecurity=False).hexdigest()

    @property
    def empty_tree(self) -> str:
        return self._hash(b"tree 0\x00")

    def hooks_dir(self) -> Path:
        """Where git looks for hooks (`core.hooksPath`, else `hooks/` in the git dir)."""
        configured = self._config().get("core.hookspath")
        if configured:
            path = Path(os.path.expanduser(configured))
            return path if path.is_absolute() else self.root / path
        return self.common_dir / "hooks"

    def commit_hooks(self) -> list[str]:
        """The installed hooks that `git commit` would run (executable files only, as git)."""
        folder = self.hooks_dir()
        found = []
        for name in COMMIT_HOOKS:
            path = folder / name
            if path.is_file() and os.access(path, os.X_OK):
                found.append(name)
        return found

    def uses_git_commit(self) -> bool:
        """Whether :meth:`commit` goes through `git commit` (hooks or signing ask for it)."""
        if self.commit_path != "auto":
            return self.commit_path == "git"
        return self._config_bool("commit.gpgsign") or bool(self.commit_hooks())

    # --- reading -----------------------------------------------------------------------

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

    def rev_parse(self, rev: str) -> str:
        """Resolve a revision to a full commit sha.

        Raises:
            EvolveError: when `rev` names no commit.
        """
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        except GitFailed:
            raise EvolveError(
                f"'{rev}' is not a commit in this workspace; see `evolve log`."
            ) from None

    def dirty_paths(self, paths: Sequence[str] = ()) -> list[str]:
        """Paths with uncommitted changes (staged, unstaged or untracked), ignoring ignored files."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
        return status_paths(out)

    def _entry_at(self, rev: str, path: str) -> tuple[int, bytes] | None:
        """(mode, binary id) of `path` in the tree of commit `rev`, or None."""
        commit = self._resolve_commit(rev)
        if commit is None:
            return None
        entry: tuple[int, bytes] | None = (_TREE, bytes.fromhex(self._tree_of(commit)))
        for part in [p for p in path.strip("/").split("/") if p]:
            if entry is None or entry[0] != _TREE:
                return None
            entry = self._tree_entries(entry[1].hex()).get(part)
        return entry

    def _resolve_commit(self, rev: str) -> str | None:
        if len(rev) == 2 * self._rawlen and all(c in "0123456789abcdef" for c in rev):
            return rev
        if rev == "HEAD":
            return self.head()
        found = self._reader.get(f"{rev}^{{commit}}")
        return found[0] if found is not None else None

    def read(self, rev: str, path: str) -> bytes | None:
        """A file's bytes at `rev`, or None if it does not exist there."""
        entry = self._entry_at(rev, path)
        if entry is None or entry[0] == _TREE or entry[0] == 0o160000:
            return None
        found = self._reader.get(entry[1].hex())
        return found[2] if found is not None and found[1] == "blob" else None

    def list_files(self, rev: str, prefix: str) -> list[str]:
        """Paths of the files under `prefix` at `rev` (sorted)."""
        clean = prefix.strip("/")
        entry = self._entry_at(rev, clean)
        if entry is None:
            return []
        if entry[0] != _TREE:
            return [clean]
        out: list[str] = []
        stack = [(clean, entry[1].hex())]
        while stack:
            base, tree = stack.pop()
            for name, (mode, binsha) in self._tree_entries(tree).items():
                rel = f"{base}/{name}" if base else name
                if mode == _TREE:
                    stack.append((rel, binsha.hex()))
                elif mode != 0o160000:
                    out.append(rel)
        return sorted(out)

    def read_tree_files(self, rev: str, prefix: str) -> dict[str, bytes]:
        """Every file under `prefix` at `rev`, read with two git processes (ls-tree and one
        `cat-file --batch`), however many files there are."""
        listing = self.git("ls-tree", "-r", "-z", "--full-tree", rev, "--", prefix.rstrip("/"))
        entries = tree_blobs(listing)
        if not entries:
            return {}
        proc = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=self.root,
            input=batch_request(entries),
            capture_output=True,
            check=True,
        )
        return batch_contents(proc.stdout, entries)

    def start(self, *args: str) -> Callable[[], str]:
        """Start `git ARGS` and return the call that waits for it and returns its stdout (as
        :meth:`git` does), so the caller can work while git runs."""
        proc = subprocess.Popen(
            ["git", *args], cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

        def collect() -> str:
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise GitFailed(args, proc.returncode, err.decode("utf-8", "replace"))
            return out.decode("utf-8", "surrogateescape")

        return collect

    def _git_bytes(self, *args: str, input: bytes | None = None) -> bytes:
        """Run git and return its raw stdout (a failure is one clear :class:`GitFailed`)."""
        done = subprocess.run(["git", *args], cwd=self.root, input=input, capture_output=True)
        if done.returncode != 0:
            raise GitFailed(args, done.returncode, done.stderr.decode("utf-8", "replace"))
        return done.stdout

    def log(
        self,
        paths: Sequence[str] = (),
        *,
        max_count: int | None = None,
        rev: str = "HEAD",
        grep_trailer: str | None = None,
        grep_value: str | None = None,
        min_parents: int | None = None,
    ) -> Iterator[CommitInfo]:
        """Walk history newest first; git does the walking and the path filtering.

        `grep_trailer` (and `grep_value`) keep only commits whose message contains the line
        ``<trailer>: <value>`` (matched as a fixed string; callers check the parsed trailer).
        Each commit is four NUL-terminated fields (`-z`; git never prints a NUL inside a
        message), so no message can forge a field or a record boundary.
        """
        if self.head() is None:
            return
        args = ["log", "-z", f"--format={_LOG_FORMAT}", *_LOG_OPTIONS]
        if max_count is not None:
            args.append(f"--max-count={max_count}")
        if min_parents is not None:
            args.append(f"--min-parents={min_parents}")
        if grep_trailer:
            needle = (
                f"{grep_trailer}: {grep_value}" if grep_value is not None else f"{grep_trailer}:"
            )
            args += ["--fixed-strings", f"--grep={needle}"]
        args += ["--end-of-options", rev]
        if paths:
            args += ["--", *paths]
        fields = self._git_bytes(*args).split(b"\x00")
        if len(fields) % 4 != 1 or fields[-1]:
            raise EvolveError("git log printed output evolve cannot read; rerun the command.")
        for n in range(0, len(fields) - 1, 4):
            yield _info(*fields[n : n + 4])

    def walk(self, rev: str = "HEAD") -> Generator[CommitInfo, None, None]:
        """Every commit reachable from `rev`, newest first, parsed as git prints them: one
        `git log -z` with no pathspec (so no tree is diffed), read as it streams. Closing the
        iterator early stops git."""
        if self.head() is None:
            return
        proc = subprocess.Popen(
            ["git", "log", "-z", f"--format={_LOG_FORMAT}", *_LOG_OPTIONS, "--end-of-options", rev],
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        fields: list[bytes] = []
        rest = b""
        finished = False
        try:
            while chunk := os.read(proc.stdout.fileno(), 1 << 16):
                parts = (rest + chunk).split(b"\x00")
                rest = parts.pop()
                fields += parts
                whole = len(fields) - len(fields) % 4
                for n in range(0, whole, 4):
                    yield _info(*fields[n : n + 4])
                del fields[:whole]
            finished = True
        finally:
            if not finished:
                proc.kill()
            proc.stdout.close()
            err = proc.stderr.read() if proc.stderr is not None else b""
            if proc.stderr is not None:
                proc.stderr.close()
            code = proc.wait()
        if code != 0:
            raise GitFailed(["log"], code, err.decode("utf-8", "replace"))
        if fields or rest:
            raise EvolveError("git log printed output evolve cannot read; rerun the command.")

    def commits_touching(self, shas: Sequence[str], paths: Sequence[str]) -> set[str]:
        """Which of the (non-merge) commits `shas` change a file under `paths` against their
        parent: one `git diff-tree --stdin` for all of them."""
        if not shas:
            return set()
        out = self._git_bytes(
            "diff-tree", "--stdin", "-r", "--name-only", "-z", "--no-renames", "--", *paths,
            input="".join(f"{sha}\n" for sha in shas).encode("ascii"),
        )  # fmt: skip
        wanted = set(shas)
        return {
            tok for tok in out.decode("utf-8", "surrogateescape").split("\x00") if tok in wanted
        }

    def log_patches(
        self, paths: Sequence[str], *, max_count: int | None = None
    ) -> list[tuple[CommitInfo, str]]:
        """Commits touching `paths`, newest first, each with its patch for those paths.

        Patches show file content, which may hold any byte, so each commit's header is framed
        by a marker drawn at random for this call: no content written before can contain it.
        """
        return self.start_log_patches(paths, max_count=max_count)()

    def start_log_patches(
        self, paths: Sequence[str], *, max_count: int | None = None
    ) -> Callable[[], list[tuple[CommitInfo, str]]]:
        """Start :meth:`log_patches`'s git process and return the call that collects its
        answer, so the caller can work (parse, import) while git walks."""
        if self.head() is None:
            return lambda: []
        marker = b"\x00" + os.urandom(16).hex().encode("ascii") + b"\x00"
        fmt = "%x00" + marker[1:-1].decode("ascii") + "%x00" + _LOG_FORMAT
        fmt += "%x00" + marker[1:-1].decode("ascii") + "%x00"
        args = ["log", f"--format={fmt}", "-p", "--no-color", "--no-ext-diff", *_LOG_OPTIONS]
        if max_count is not None:
            args.append(f"--max-count={max_count}")
        args += ["HEAD", "--", *paths]
        proc = subprocess.Popen(
            ["git", *args], cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

        def collect() -> list[tuple[CommitInfo, str]]:
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise GitFailed(args, proc.returncode, err.decode("utf-8", "replace"))
            chunks = out.split(marker)
            result = []
            for n in range(1, len(chunks) - 1, 2):
                fields = chunks[n].split(b"\x00")
                if len(fields) != 4:
                    raise EvolveError(
                        "git log printed output evolve cannot read; rerun the command."
                    )
                patch = chunks[n + 1].decode("utf-8", "replace").strip("\n")
                result.append((_info(*fields), patch))
            return result

        return collect

    def changed_paths(
        self, parent: str | None, commit: str, paths: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        """(status letter, path) of the files `commit` changed against `parent`."""
        base = parent if parent is not None else self.empty_tree
        out = self._git_bytes(
            "diff-tree", "-r", "-z", "--no-renames", "--name-status", base, commit, "--", *paths
        )
        items = out.decode("utf-8", "surrogateescape").split("\x00")
        return [(items[n][:1], items[n + 1]) for n in range(0, len(items) - 1, 2) if items[n + 1]]

    def first_touch_after(self, commit: str, path: str) -> str | None:
        """The oldest commit after `commit` (on HEAD's history) that changed `path`."""
        out = self.git("log", "--reverse", "--format=%H", f"{commit}..HEAD", "--", path).split()
        return out[0] if out else None

    def commit_info(self, rev: str) -> CommitInfo:
        sha = self.rev_parse(rev)
        return next(self.log(rev=sha, max_count=1))

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

        logging.getLogger(__name__).warning(
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

    # --- writing -----------------------------------------------------------------------

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

    def commit(
        self,
        paths: Sequence[str],
        subject: str,
        *,
        body: str = "",
        trailers: Trailers = (),
        allow_empty: bool = False,
    ) -> str | None:
        """Commit the working-tree state of `paths` (added, changed or deleted) on top of HEAD.

        The new tree is HEAD's tree with exactly these paths changed (like `git commit --only`):
        anything else staged in the index stays staged and is not committed. Returns the new
        commit's sha, or None when nothing changed and `allow_empty` is false.

        Raises:
            EvolveError: when a hook or signing refuses the commit (nothing is committed and
                the index is as it was), or the branch moved or is locked.
        """
        message = format_message(subject, body, trailers)
        parent = self.head()
        base_tree = self._tree_of(parent) if parent is not None else None
        blobs = {path: self._store_worktree_file(path) for path in paths}
        changes = {p: (b[0], b[1]) if b is not None else None for p, b in blobs.items()}
        tree = self._write_tree(base_tree, changes) or self._store(b"tree", b"")
        if parent is not None and not allow_empty and tree == base_tree:
            return None
        if paths:
            self._check_index_free()
        if self.uses_git_commit():
            return self._git_commit(paths, message, tree, blobs)
        name, email = self._author()
        cname, cemail = self._identity_of("COMMITTER")
        stamp = f"{int(time.time())} {time.strftime('%z')}"
        lines = [f"tree {tree}"]
        if parent is not None:
            lines.append(f"parent {parent}")
        lines.append(f"author {name} <{email}> {stamp}")
        lines.append(f"committer {cname} <{cemail}> {stamp}")
        sha = self._store(b"commit", ("\n".join(lines) + "\n\n" + message).encode("utf-8"))
        self._update_head(sha, parent, subject)
        self._trees[sha] = tree
        if paths:
            # One index write, so that `git status` agrees with the new HEAD.
            self._sync_index(paths, sha, blobs)
        return sha

    def _git_commit(
        self, paths: Sequence[str], message: str, tree: str, blobs: dict[str, Change]
    ) -> str:
        """Commit `tree` (HEAD's tree with `paths` changed) through `git commit`, so hooks run
        and signing applies.

        git commits a temporary index holding exactly `tree` (stat data kept from the real
        index where the content matches, so git need not rehash the working tree), which is
        what `git commit --only` does too; the real index is updated for `paths` only after
        the commit succeeded, so a refusing hook or signer leaves everything as it was.
        """
        self._recover_locks(*self._branch_locks())
        temp_index = self.git_dir / f"evolve-index-{os.getpid()}"
        name, email = self._author()
        cname, cemail = self._identity_of("COMMITTER")
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": cname,
            "GIT_COMMITTER_EMAIL": cemail,
            "GIT_EDITOR": "true",
        }
        try:
            self._git_bytes("read-tree", "-m", "-i", f"--index-output={temp_index}", tree)
            done = subprocess.run(
                ["git", "commit", "--quiet", "--allow-empty", "--cleanup=verbatim", "--file=-"],
                cwd=self.root,
                input=message.encode("utf-8"),
                capture_output=True,
                env={**env, "GIT_INDEX_FILE": str(temp_index)},
            )
        finally:
            temp_index.unlink(missing_ok=True)
        if done.returncode != 0:
            detail = _last_line(done.stderr.decode("utf-8", "replace"))
            raise EvolveError(
                f"git commit refused the commit ({detail}), so nothing was committed; fix the "
                "repository's commit hook or signing set-up and rerun."
            )
        sha = self.head()
        if sha is None:  # pragma: no cover - git said it committed
            raise EvolveError("git commit made no commit; rerun the command.")
        if paths:
            self._sync_index(paths, sha, blobs)
        return sha

    def _check_index_free(self) -> None:
        """Refuse before committing when a live git holds the index (the commit's index
        update would fail after the branch moved)."""
        lock = self.git_dir / "index.lock"
        if lock.exists() and not self.recover_stale_lock(lock):
            raise EvolveError(
                f"{lock} exists: another git process is using the index; retry when it is "
                "done, or delete that file if no git or evolve process is running."
            )

    def _sync_index(self, paths: Sequence[str], sha: str, blobs: dict[str, Change]) -> None:
        """Update the index for the committed `paths`, so `git status` agrees with HEAD:
        from Python with the blob ids just stored (`evolve.store._index`), or by `git
        update-index` when the index holds what that module leaves to git."""
        try:
            update_index(
                self.git_dir / "index", blobs, object_format=self.object_format,
                config=self._config(),
            )  # fmt: skip
            return
        except (Declined, OSError):
            pass  # git does it (and says why, if it cannot)
        try:
            self.git("update-index", "--add", "--remove", "--", *paths)
        except GitFailed as exc:
            named = " ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
            raise EvolveError(
                f"commit {sha[:10]} was made, but git could not update the index "
                f"({_last_line(str(exc.stderr))}); run `git reset -q -- {named}` to bring it "
                "in line."
            ) from None

    # Objects are written from Python (zlib + the repository's hash, no process) and trees are
    # rebuilt only along the changed paths. Trees this store wrote or read are cached by id,
    # so the next commit rarely reads any.

    def _store(self, kind: bytes, data: bytes) -> str:
        header = b"%s %d\x00" % (kind, len(data))
        digest = self._hash(header + data)
        target = self.objects_dir / digest[:2] / digest[2:]
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            import tempfile

            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix="tmp_obj_")
            with os.fdopen(fd, "wb") as handle:
                handle.write(zlib.compress(header + data, 1))
            os.chmod(tmp, 0o444)
            os.replace(tmp, target)
        return digest

    def _tree_of(self, commit: str) -> str:
        tree = self._trees.get(commit)
        if tree is None:
            found = self._reader.get(commit)
            if found is None or found[1] != "commit" or not found[2].startswith(b"tree "):
                raise EvolveError(f"{commit} is not a commit in this repository.")
            tree = found[2][5 : found[2].index(b"\n")].decode("ascii")
            self._trees[commit] = tree
        return tree

    def _tree_entries(self, tree: str) -> dict[str, tuple[int, bytes]]:
        cached = self._tree_cache.get(tree)
        if cached is None:
            found = self._reader.get(tree)
            if found is None or found[1] != "tree":
                raise EvolveError(f"tree {tree} is missing from this repository.")
            cached = _parse_tree(found[2], self._rawlen)
            self._remember_tree(tree, cached)
        return dict(cached)

    def _remember_tree(self, tree: str, entries: dict[str, tuple[int, bytes]]) -> None:
        if len(self._tree_cache) >= 256:
            self._tree_cache.pop(next(iter(self._tree_cache)))
        self._tree_cache[tree] = entries

    def _store_worktree_file(self, path: str) -> Change:
        """Store the file at `path` as a blob: (mode, raw id, its lstat taken before reading,
        which the index records), or None when there is no file."""
        full = self.root / path
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(st.st_mode):
            data = os.readlink(full).encode("utf-8", "surrogateescape")
            mode = 0o120000
        elif stat.S_ISREG(st.st_mode):
            mode = 0o100755 if st.st_mode & 0o100 else 0o100644  # as git reads the mode
            if self._attributes_may_apply(path):
                # A filter (LFS, git-crypt, ident, eol, working-tree-encoding) may change what
                # git stores for this file: let git hash it as `git add` would.
                oid = self._git_bytes("hash-object", "-w", f"--path={path}", "--", path)
                return mode, bytes.fromhex(oid.decode("ascii").strip()), st
            data = full.read_bytes()
        else:
            return None
        return mode, bytes.fromhex(self._store(b"blob", data)), st

    def _attributes_may_apply(self, path: str) -> bool:
        """Whether any gitattributes file git reads for `path` exists (the repository's
        `info/attributes`, `core.attributesFile`, the user's and the system's, or a
        `.gitattributes` in the work tree's root or a folder above `path`); `core.autocrlf` set
        to true or input counts too. Then the file is hashed by git, with its filters."""
        if self._global_attributes is None:
            config = self._config()
            home = Path(os.path.expanduser("~"))
            xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
            configured = config.get("core.attributesfile")
            sources = [
                self.common_dir / "info" / "attributes",
                Path(xdg) / "git" / "attributes",
                Path("/etc/gitattributes"),
            ]
            if configured:
                sources.append(Path(os.path.expanduser(configured)))
            autocrlf = (config.get("core.autocrlf", "false") or "true").strip().lower()
            self._global_attributes = any(p.is_file() for p in sources) or autocrlf in (
                "true",
                "yes",
                "on",
                "1",
                "input",
            )
        if self._global_attributes:
            return True
        folder = self.root
        for part in ["", *path.split("/")[:-1]]:
            folder = folder / part if part else folder
            if (folder / ".gitattributes").is_file():
                return True
        return False

    def _write_tree(
        self, base: str | None, changes: dict[str, tuple[int, bytes] | None]
    ) -> str | None:
        entries = self._tree_entries(base) if base is not None else {}
        nested: dict[str, dict[str, tuple[int, bytes] | None]] = {}
        for path, change in changes.items():
            head, _, rest = path.partition("/")
            if rest:
                nested.setdefault(head, {})[rest] = change
            elif change is None:
                entries.pop(head, None)
            else:
                entries[head] = change
        for name, sub in nested.items():
            current = entries.get(name)
            sub_base = current[1].hex() if current is not None and current[0] == _TREE else None
            new = self._write_tree(sub_base, sub)
            if new is None:
                entries.pop(name, None)
            else:
                entries[name] = (_TREE, bytes.fromhex(new))
        if not entries:
            return None
        tree = self._store(b"tree", _format_tree(entries))
        self._remember_tree(tree, entries)
        return tree

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

    def protected_hash(self, rev: str, prefixes: Sequence[str]) -> str:
        """A hash of the files under `prefixes` at `rev` (paths and blob ids)."""
        paths = [p.rstrip("/") for p in prefixes]
        # Without ls-tree's final newline: the hash stays what it was when GitPython ran it.
        out = self.git("ls-tree", "-r", "--full-tree", rev, "--", *paths).removesuffix("\n")
        import hashlib

        return hashlib.sha256(out.encode("utf-8")).hexdigest()

    def reset_hard(self, rev: str) -> None:
        """Move HEAD, the index and the working tree to `rev` (used to discard a generation)."""
        self._recover_locks(*self._branch_locks())
        self.git("reset", "--hard", "--quiet", rev)

    def clean_untracked(self) -> None:
        """Remove untracked files and folders that are not ignored (`git clean -fd`)."""
        self.git("clean", "-f", "-d", "-q")

    def checkout_paths(self, rev: str, paths: Sequence[str]) -> None:
        """Restore `paths` in the index and working tree to their state at `rev`."""
        if paths:
            self._recover_locks("index")
            self.git("checkout", rev, "--", *paths)
