"""Git access for the store.

Per-episode commits are frequent, so :meth:`GitStore.commit` writes the blobs, the trees
along the changed paths, the commit object and the ref from Python, and spends one git
process on updating the index. `benchmarks/bench_commit.py` measures it against `git add` +
`git commit` on a 1,000-file, 10,000-commit repository.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import git

from evolve.errors import EvolveError
from evolve.store._trailers import Trailers, format_message, parse_trailers

_FIELD = "\x1f"
_RECORD = "\x1e"
_LOG_FORMAT = _FIELD.join(["%H", "%P", "%cI", "%s", "%b", "%(trailers:only,unfold)"]) + _RECORD


_TREE = 0o040000


def _parse_tree(raw: bytes) -> dict[str, tuple[int, bytes]]:
    """Parse a git tree object's body into {name: (mode, binary sha)}."""
    entries: dict[str, tuple[int, bytes]] = {}
    pos, end = 0, len(raw)
    while pos < end:
        space = raw.index(b" ", pos)
        nul = raw.index(b"\x00", space)
        mode = int(raw[pos:space], 8)
        entries[raw[space + 1 : nul].decode("utf-8", "surrogateescape")] = (
            mode,
            raw[nul + 1 : nul + 21],
        )
        pos = nul + 21
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


class GitStore:
    """A git repository holding a workspace; the only code that makes commits."""

    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            self.repo = git.Repo(root)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise EvolveError(
                f"{root} is not a git repository; run `evolve init` to create a workspace."
            ) from exc
        self._git = self.repo.git
        self._config_identity: tuple[str, str] | None = None
        self._trees: dict[str, str] = {}
        self._tree_cache: dict[str, dict[str, tuple[int, bytes]]] = {}
        self.objects_dir = Path(self.repo.git_dir) / "objects"

    @classmethod
    def init(cls, root: Path) -> GitStore:
        git.Repo.init(root, initial_branch="main")
        return cls(root)

    @property
    def git_dir(self) -> Path:
        return Path(self.repo.git_dir)

    # --- reading -----------------------------------------------------------------------

    def head(self) -> str | None:
        """The commit HEAD points at, or None in a repository without commits."""
        try:
            return self.repo.head.commit.hexsha
        except ValueError:
            return None

    def rev_parse(self, rev: str) -> str:
        """Resolve a revision to a full commit sha.

        Raises:
            EvolveError: when `rev` names no commit.
        """
        try:
            return str(self._git.rev_parse("--verify", "--quiet", f"{rev}^{{commit}}")).strip()
        except git.GitCommandError:
            raise EvolveError(
                f"'{rev}' is not a commit in this workspace; see `evolve log`."
            ) from None

    def dirty_paths(self, paths: Sequence[str] = ()) -> list[str]:
        """Paths with uncommitted changes (staged, unstaged or untracked), ignoring ignored files."""
        out = self._git.status("--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
        entries = [e for e in out.split("\x00") if e]
        dirty: list[str] = []
        skip = False
        for entry in entries:
            if skip:
                skip = False
                continue
            status, path = entry[:2], entry[3:]
            if "R" in status or "C" in status:
                skip = True  # the next entry is the rename source
            dirty.append(path)
        return dirty

    def read(self, rev: str, path: str) -> bytes | None:
        """A file's bytes at `rev`, or None if it does not exist there."""
        try:
            blob = self.repo.commit(rev).tree / path
        except KeyError:
            return None
        if blob.type != "blob":
            return None
        data: bytes = blob.data_stream.read()
        return data

    def list_files(self, rev: str, prefix: str) -> list[str]:
        """Paths of the files under `prefix` at `rev` (sorted)."""
        root = self.repo.commit(rev).tree
        try:
            tree = root / prefix.rstrip("/") if prefix.strip("/") else root
        except KeyError:
            return []
        if not isinstance(tree, git.Tree):
            return [str(getattr(tree, "path", prefix))]
        return sorted(str(b.path) for b in tree.traverse() if isinstance(b, git.Blob))

    def read_tree_files(self, rev: str, prefix: str) -> dict[str, bytes]:
        """Every file under `prefix` at `rev`, read with two git processes (ls-tree and one
        `cat-file --batch`), however many files there are."""
        listing = self._git.ls_tree("-r", "-z", "--full-tree", rev, "--", prefix.rstrip("/"))
        entries = []
        for item in listing.split("\x00"):
            meta, _, path = item.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob":
                entries.append((path, parts[2]))
        if not entries:
            return {}
        proc = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=self.root,
            input="".join(f"{sha}\n" for _, sha in entries).encode("ascii"),
            capture_output=True,
            check=True,
        )
        out, pos = {}, 0
        raw = proc.stdout
        for path, _ in entries:
            header_end = raw.index(b"\n", pos)
            size = int(raw[pos:header_end].split()[2])
            start = header_end + 1
            out[path] = raw[start : start + size]
            pos = start + size + 1
        return out

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
        """
        if self.head() is None:
            return
        args = [f"--format={_LOG_FORMAT}", rev]
        if max_count is not None:
            args.insert(0, f"--max-count={max_count}")
        if min_parents is not None:
            args.insert(0, f"--min-parents={min_parents}")
        if grep_trailer:
            needle = (
                f"{grep_trailer}: {grep_value}" if grep_value is not None else f"{grep_trailer}:"
            )
            args[:0] = ["--fixed-strings", f"--grep={needle}"]
        if paths:
            args += ["--", *paths]
        out = self._git.log(*args, strip_newline_in_stdout=False)
        for record in out.split(_RECORD):
            record = record.lstrip("\n")
            if not record:
                continue
            sha, parents, when, subject, body, trailers = record.split(_FIELD)
            body = body.strip()
            if trailers.strip():
                # %b includes the trailer block: keep it out of the body.
                head, sep, last = body.rpartition("\n\n")
                if parse_trailers(last) and sep:
                    body = head.strip()
                elif parse_trailers(body):
                    body = ""
            yield CommitInfo(
                sha=sha,
                parents=tuple(parents.split()),
                time=when,
                subject=subject,
                body=body,
                trailers=parse_trailers(trailers),
            )

    def log_patches(
        self, paths: Sequence[str], *, max_count: int | None = None
    ) -> list[tuple[CommitInfo, str]]:
        """Commits touching `paths`, newest first, each with its patch for those paths."""
        if self.head() is None:
            return []
        fmt = (
            "%x1e"
            + _FIELD.join(["%H", "%P", "%cI", "%s", "%b", "%(trailers:only,unfold)"])
            + "%x1d"
        )
        args = [f"--format={fmt}", "-p", "--no-color", "HEAD", "--", *paths]
        if max_count is not None:
            args.insert(0, f"--max-count={max_count}")
        out = self._git.log(*args, strip_newline_in_stdout=False)
        result = []
        for chunk in out.split("\x1e"):
            if not chunk.strip():
                continue
            head, _, patch = chunk.partition("\x1d")
            sha, parents, when, subject, body, trailers = head.split(_FIELD)
            info = CommitInfo(
                sha, tuple(parents.split()), when, subject, body.strip(), parse_trailers(trailers)
            )
            result.append((info, patch.strip("\n")))
        return result

    def changed_paths(
        self, parent: str | None, commit: str, paths: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        """(status letter, path) of the files `commit` changed against `parent`."""
        base = (
            parent if parent is not None else "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        )  # empty tree
        out = self._git.diff_tree("-r", "--no-renames", "--name-status", base, commit, "--", *paths)
        pairs = []
        for line in out.splitlines():
            status, _, path = line.partition("\t")
            if path:
                pairs.append((status[:1], path))
        return pairs

    def first_touch_after(self, commit: str, path: str) -> str | None:
        """The oldest commit after `commit` (on HEAD's history) that changed `path`."""
        out = self._git.log("--reverse", "--format=%H", f"{commit}..HEAD", "--", path).split()
        return out[0] if out else None

    def commit_info(self, rev: str) -> CommitInfo:
        sha = self.rev_parse(rev)
        return next(self.log(rev=sha, max_count=1))

    # --- writing -----------------------------------------------------------------------

    def _identity_of(self, role: str) -> tuple[str, str]:
        """Who `role` ("AUTHOR" or "COMMITTER") is: the environment, then git config."""
        if self._config_identity is None:
            reader = self.repo.config_reader()
            name = str(reader.get_value("user", "name", "")) or "evolve"
            email = str(reader.get_value("user", "email", "")) or "evolve@localhost"
            self._config_identity = (name, email)
        name = os.environ.get(f"GIT_{role}_NAME") or self._config_identity[0]
        email = os.environ.get(f"GIT_{role}_EMAIL") or self._config_identity[1]
        return name, email

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
        anything else staged in the index stays staged and is not committed. Returns the new commit's sha, or None when nothing
        changed and `allow_empty` is false.
        """
        message = format_message(subject, body, trailers)
        parent = self.head()
        base_tree = self._tree_of(parent) if parent is not None else None
        changes: dict[str, tuple[int, bytes] | None] = {}
        for path in paths:
            changes[path] = self._store_worktree_file(path)
        tree = self._write_tree(base_tree, changes) or self._store(b"tree", b"")
        if parent is not None and not allow_empty and tree == base_tree:
            return None
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
            self._git.update_index("--add", "--remove", "--", *paths)
        return sha

    # Objects are written from Python (zlib + sha1, no process) and trees are rebuilt only
    # along the changed paths, so a commit costs one git process (the index update). Trees
    # this store wrote or read are cached by sha, so the next commit rarely reads any.

    def _store(self, kind: bytes, data: bytes) -> str:
        header = b"%s %d\x00" % (kind, len(data))
        digest = hashlib.sha1(header + data, usedforsecurity=False).hexdigest()
        target = self.objects_dir / digest[:2] / digest[2:]
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix="tmp_obj_")
            with os.fdopen(fd, "wb") as handle:
                handle.write(zlib.compress(header + data, 1))
            os.chmod(tmp, 0o444)
            os.replace(tmp, target)
        return digest

    def _tree_of(self, commit: str) -> str:
        tree = self._trees.get(commit)
        if tree is None:
            tree = self.repo.commit(commit).tree.hexsha
            self._trees[commit] = tree
        return tree

    def _tree_entries(self, tree: str) -> dict[str, tuple[int, bytes]]:
        cached = self._tree_cache.get(tree)
        if cached is None:
            cached = _parse_tree(self.repo.odb.stream(bytes.fromhex(tree)).read())
            self._remember_tree(tree, cached)
        return dict(cached)

    def _remember_tree(self, tree: str, entries: dict[str, tuple[int, bytes]]) -> None:
        if len(self._tree_cache) >= 256:
            self._tree_cache.pop(next(iter(self._tree_cache)))
        self._tree_cache[tree] = entries

    def _store_worktree_file(self, path: str) -> tuple[int, bytes] | None:
        full = self.root / path
        if full.is_symlink():
            data = os.readlink(full).encode("utf-8")
            mode = 0o120000
        elif full.is_file():
            data = full.read_bytes()
            mode = 0o100755 if os.access(full, os.X_OK) else 0o100644
        else:
            return None
        return mode, bytes.fromhex(self._store(b"blob", data))

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

    def _update_head(self, new: str, old: str | None, subject: str) -> None:
        """Point the current branch at `new`, the way `git update-ref` does, without a process.

        The ref's `.lock` file is git's own lock protocol, so a concurrent git command that
        updates the same ref is caught; `old` is checked under the lock.
        """
        head = self.repo.head
        if head.is_detached:
            raise EvolveError("HEAD is detached; check out a branch before running evolve.")
        ref_path = self.git_dir / head.reference.path
        lock_path = ref_path.with_name(ref_path.name + ".lock")
        ref_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            raise EvolveError(
                f"{lock_path} exists: another git process is updating the branch; retry when it is done."
            ) from None
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
        entry = f"{old or '0' * 40} {new} {name} <{email}> {stamp}\tevolve: {subject}\n"[:400]
        for log_name in ("HEAD", head.reference.path):
            log_path = self.git_dir / "logs" / log_name
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with log_path.open("a", encoding="utf-8") as handle:
                handle.write(entry if entry.endswith("\n") else entry + "\n")

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
        try:
            parent: str | None = (
                str(self._git.rev_parse("--verify", "--quiet", ref)).strip() or None
            )
        except git.GitCommandError:
            parent = None
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
        args = [ref, sha] + ([parent] if parent else ["0" * 40])
        self._git.update_ref(*args)
        return sha

    def read_side_ref(self, ref: str, prefix: str = "") -> dict[str, bytes]:
        """Every file of the tree at `ref` (empty if the ref does not exist)."""
        try:
            sha = str(self._git.rev_parse("--verify", "--quiet", ref)).strip()
        except git.GitCommandError:
            return {}
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
        out = self._git.ls_tree("-r", "--full-tree", rev, "--", *paths)
        return hashlib.sha256(out.encode("utf-8")).hexdigest()

    def reset_hard(self, rev: str) -> None:
        """Move HEAD, the index and the working tree to `rev` (used to discard a generation)."""
        self._git.reset("--hard", "--quiet", rev)

    def clean_untracked(self) -> None:
        """Remove untracked files and folders that are not ignored (`git clean -fd`)."""
        self._git.clean("-f", "-d", "-q")

    def checkout_paths(self, rev: str, paths: Sequence[str]) -> None:
        """Restore `paths` in the index and working tree to their state at `rev`."""
        if paths:
            self._git.checkout(rev, "--", *paths)
