"""Reads of exactly what is committed: what the gate, scoring and the protected-state check
judge, and the git commands the generation transaction and the report still ran through
GitPython.

A workspace can come from someone else, and so can its `.git/`: a replace ref
(`refs/replace/`, `git replace --graft`), a graft (`info/grafts`), an attribute
(`info/attributes`, `core.attributesFile`, a committed `.gitattributes`) naming a smudge
filter, `export-ignore`, `export-subst` or a textconv driver all make git show a commit
otherwise than it is stored, and `git archive` honours every one of them. The reads here do
not:

- every git process they start runs with `GIT_NO_REPLACE_OBJECTS=1` and `GIT_GRAFT_FILE`
  naming a file that cannot exist (:data:`COMMITTED_ENV`), so a commit, tree or blob is read
  as stored and history walks the parents the commits hold;
- a tree is exported by listing it (`git ls-tree -r -z`) and writing each blob's bytes as
  `git cat-file --batch` returns them, each checked against its id (git hashes an object's
  bytes to name it, so a blob that is not the committed one cannot pass), written without
  following any link (each folder opened with `O_NOFOLLOW`, each file created with
  `O_EXCL`): no attribute, filter or `export-*` rule is consulted;
- diffs are made with `--no-textconv --no-ext-diff`.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from evolve._format._git import batch_contents, batch_request
from evolve.errors import EvolveError
from evolve.store._base import COMMITTED_ENV, GitFailed, committed_env
from evolve.store._history import GitHistory

__all__ = ["COMMITTED_ENV", "GitCommitted", "committed_env"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LINK = "120000"
_SUBMODULE = "160000"


def _check_path(path: str) -> list[str]:
    """`path`'s components, refused when one could leave the export folder (a hand-made tree
    object can hold names git itself would never write)."""
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", "..") or part.casefold() == ".git" or "\x00" in part:
            raise EvolveError(
                f"the commit holds the path {path!r}, which git would never write; "
                "evolve does not export it."
            )
    return parts


class GitCommitted(GitHistory):
    """Reads of what is committed, and nothing else (see the module's docstring)."""

    def _committed_bytes(self, *args: str, input: bytes | None = None) -> bytes:
        return self._git_bytes(*args, input=input, env=committed_env())

    def _committed_text(self, *args: str, input: bytes | None = None) -> str:
        return self._git_committed(*args, input=input)

    # --- objects -----------------------------------------------------------------------

    def blob_id(self, data: bytes) -> str:
        """The id git gives a blob holding `data` (in the repository's hash)."""
        return self._hash(b"blob %d\x00" % len(data) + data)

    def committed_tree(self, rev: str) -> str:
        """The id of the tree commit `rev` holds, as stored (no replace ref or graft)."""
        return self._committed_text("rev-parse", "--verify", f"{rev}^{{tree}}").strip()

    def committed_entries(self, rev: str, paths: Sequence[str] = ()) -> dict[str, tuple[str, str]]:
        """Every file of commit `rev` (under `paths` when given) as stored: path -> (mode,
        object id); links and submodules included (modes 120000 and 160000)."""
        args = ["ls-tree", "-r", "-z", "--full-tree", rev]
        if paths:
            args += ["--", *[p.rstrip("/") for p in paths]]
        entries: dict[str, tuple[str, str]] = {}
        for item in self._committed_text(*args).split("\x00"):
            meta, sep, path = item.partition("\t")
            parts = meta.split()
            if sep and len(parts) == 3 and parts[1] in ("blob", "commit"):
                entries[path] = (parts[0], parts[2])
        return entries

    def read_blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The bytes of the blobs `ids`, as stored, each checked against its id (one
        `git cat-file --batch`).

        Raises:
            EvolveError: a blob is missing or its bytes do not hash to its id.
        """
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        pairs = [(oid, oid) for oid in wanted]
        raw = self._committed_bytes("cat-file", "--batch", input=batch_request(pairs))
        try:
            found = batch_contents(raw, pairs)
        except (LookupError, ValueError):
            raise EvolveError(
                "git is missing an object of the commit being judged; run `git fsck`."
            ) from None
        for oid, data in found.items():
            if self.blob_id(data) != oid:
                raise EvolveError(
                    f"git returned bytes for blob {oid[:10]} that are not that blob; "
                    "run `git fsck`."
                )
        return found

    def read_blob(self, oid: str) -> bytes:
        """One blob's bytes, as stored (see :meth:`read_blobs`)."""
        return self.read_blobs([oid])[oid]

    # --- exports -----------------------------------------------------------------------

    def export_committed(
        self, rev: str, root: Path, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        """Write the files of commit `rev` (only those under `paths` when given) into the
        folder `root`, exactly as committed: path -> the object id written.

        Existing files in `root` are not replaced (a path given twice in a hand-made tree is
        refused); links are written as links, submodules as empty folders.

        Raises:
            EvolveError: a path that could leave `root`, or a blob that is not what the tree
                names.
        """
        if paths is not None and not paths:
            return {}
        entries = self.committed_entries(rev, paths or ())
        blobs = self.read_blobs(oid for mode, oid in entries.values() if mode != _SUBMODULE)
        fd = os.open(root, _DIR_FLAGS)
        try:
            links = []
            for path, (mode, oid) in sorted(entries.items()):
                if mode == _LINK:
                    links.append((path, oid))  # last: no file is written through a link
                    continue
                *folders, name = _check_path(path)
                folder = _open_folders(fd, folders, path)
                try:
                    if mode == _SUBMODULE:
                        os.mkdir(name, 0o755, dir_fd=folder)
                    else:
                        _write_file(folder, name, blobs[oid], 0o755 if mode == "100755" else 0o644)
                finally:
                    os.close(folder)
            for path, oid in links:
                *folders, name = _check_path(path)
                folder = _open_folders(fd, folders, path)
                try:
                    target = blobs[oid].decode("utf-8", "surrogateescape")
                    os.symlink(target, name, dir_fd=folder)
                finally:
                    os.close(folder)
        except FileExistsError:
            raise EvolveError(
                f"commit {rev[:10]} names a path twice or over a folder; evolve does not export it."
            ) from None
        finally:
            os.close(fd)
        return {path: oid for path, (_mode, oid) in entries.items()}

    def exported_ids(self, root: Path, paths: Sequence[str]) -> dict[str, str]:
        """What a folder holds under `paths` (workspace-relative prefixes), as blob ids: a
        file by its bytes, a link by its target; never follows a link. Compare it with
        :meth:`committed_entries` to know that a copy holds exactly the committed files."""
        out: dict[str, str] = {}

        def visit(path: Path, rel: str) -> None:
            try:
                info = path.lstat()
            except FileNotFoundError:
                return
            if stat.S_ISLNK(info.st_mode):
                out[rel] = self.blob_id(os.readlink(path).encode("utf-8", "surrogateescape"))
            elif stat.S_ISDIR(info.st_mode):
                for child in sorted(path.iterdir()):
                    visit(child, f"{rel}/{child.name}")
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:  # noqa: PTH123 - lstat said a file
                    out[rel] = self.blob_id(handle.read())
            else:
                out[rel] = f"special:{stat.S_IFMT(info.st_mode):o}"

        for prefix in paths:
            clean = prefix.strip("/")
            if clean:
                visit(root / clean, clean)
        return out

    # --- diffs and history -------------------------------------------------------------

    def committed_diff(self, a: str, b: str, paths: Sequence[str] = ()) -> str:
        """`git diff A B -- PATHS` of the committed trees: no textconv, no external diff, no
        color, no replace ref (the patch text, as git prints it)."""
        args = ["diff", "--no-textconv", "--no-ext-diff", "--no-color", a, b]
        if paths:
            args += ["--", *paths]
        return self._committed_text(*args)

    def committed_changes(self, a: str, b: str, paths: Sequence[str] = ()) -> list[str]:
        """The paths that differ between the committed trees of `a` and `b` (under `paths`)."""
        out = self._committed_text("diff-tree", "-r", "-z", "--name-only", "--no-renames",
                                   a, b, "--", *paths)  # fmt: skip
        return [p for p in out.split("\x00") if p]

    def is_ancestor(self, a: str, b: str) -> bool:
        """Whether commit `a` is an ancestor of `b` (or `b` itself) by the parents stored."""
        done = subprocess.run(
            ["git", "merge-base", "--is-ancestor", a, b],
            cwd=self.root, capture_output=True, env=committed_env(),
        )  # fmt: skip
        return done.returncode == 0

    def commits_between(self, base: str, tip: str) -> list[str]:
        """The commits reachable from `tip` and not from `base`, oldest first, by the
        parents stored."""
        return self._committed_text("rev-list", "--reverse", f"{base}..{tip}").split()

    def commit_object(self, sha: str) -> bytes:
        """The raw commit object `sha` (header, blank line, message), as stored."""
        return self._committed_bytes("cat-file", "commit", sha)

    def trailer_values(self, key: str, rev: str = "HEAD") -> list[str]:
        """The values of trailer `key` on every commit reachable from `rev` that carries it."""
        out = self._committed_text(
            "log", "--fixed-strings", f"--grep={key}:",
            f"--format=%(trailers:key={key},valueonly,unfold)", rev,
        )  # fmt: skip
        return out.split()

    def log_name_status(self, paths: Sequence[str]) -> list[tuple[int, list[tuple[str, str]]]]:
        """Every commit on HEAD touching `paths`, oldest first: (commit time, [(status,
        path)]) without rename detection."""
        out = self._committed_text(
            "log", "--reverse", "--format=@%ct", "--name-status", "--no-renames", "HEAD",
            "--", *paths,
        )  # fmt: skip
        commits: list[tuple[int, list[tuple[str, str]]]] = []
        for line in out.splitlines():
            if line.startswith("@") and line[1:].isdigit():
                commits.append((int(line[1:]), []))
            elif commits and "\t" in line:
                status, _, path = line.partition("\t")
                commits[-1][1].append((status, path))
        return commits

    def log_changes(self, paths: Sequence[str]) -> list[tuple[str, list[tuple[str, str]]]]:
        """Every commit on HEAD touching `paths`, oldest first: (commit id, [(status,
        path)]) without rename detection."""
        out = self._committed_text(
            "log", "--reverse", "--format=@%H", "--name-status", "--no-renames", "HEAD",
            "--", *paths,
        )  # fmt: skip
        commits: list[tuple[str, list[tuple[str, str]]]] = []
        for line in out.splitlines():
            if line.startswith("@") and len(line) > 1 and "\t" not in line:
                commits.append((line[1:], []))
            elif commits and "\t" in line:
                status, _, path = line.partition("\t")
                commits[-1][1].append((status, path))
        return commits

    # --- refs and the index ------------------------------------------------------------

    def ref_names(self, prefix: str) -> list[str]:
        """The full names of the refs under `prefix` (e.g. `refs/evolve/aborted`)."""
        out = self.git("for-each-ref", "--format=%(refname)", prefix)
        return [line for line in out.splitlines() if line]

    def set_ref(self, ref: str, sha: str) -> None:
        """Point `ref` at `sha` (`git update-ref`, with its lock and reflog)."""
        self.git("update-ref", ref, sha)

    def current_branch(self) -> str | None:
        """The branch HEAD is on (`refs/heads/...`), None when it is detached."""
        return self._head_ref()

    def index_tags(self, paths: Sequence[str] = ()) -> list[tuple[str, str]]:
        """(tag, path) of every index entry under `paths` (all when empty), the tag as
        `git ls-files -v` prints it ("H" cached, "S" skip-worktree, lower case
        assume-unchanged)."""
        out = self.git("ls-files", "-v", "-z", "--", *paths)
        return [(e[0], e[2:]) for e in out.split("\x00") if len(e) > 2 and e[1] == " "]

    def clear_index_flags(self, paths: Sequence[str]) -> None:
        """Clear skip-worktree and assume-unchanged on `paths` (one flag per call: git applies
        only the last of several such options)."""
        if paths:
            self.git("update-index", "--no-skip-worktree", "--", *paths)
            self.git("update-index", "--no-assume-unchanged", "--", *paths)

    def untracked_paths(self, *, ignored: bool = False) -> list[str]:
        """Untracked files and folders (`--directory`), not ignored ones; the ignored ones
        instead when `ignored`."""
        args = ["ls-files", "--others", "--exclude-standard", "--directory", "-z"]
        if ignored:
            args.insert(2, "--ignored")
        return sorted(p for p in self.git(*args).split("\x00") if p)

    # --- the repository's own set-up ---------------------------------------------------

    def local_config(self) -> dict[str, str | None]:
        """The repository's own configuration (`.git/config`, `config.worktree` and what they
        include), not the user's or the system's: key (lower case) -> value."""
        done = subprocess.run(
            ["git", "config", "--local", "--includes", "-z", "--list"],
            cwd=self.root, capture_output=True,
        )  # fmt: skip
        config: dict[str, str | None] = {}
        for item in done.stdout.decode("utf-8", "replace").split("\x00"):
            if item:
                key, sep, value = item.partition("\n")
                config[key.lower()] = value if sep else None
        return config

    def replace_refs(self) -> list[str]:
        """The replace refs the repository holds (loose or packed), by name."""
        names = set()
        folder = self.common_dir / "refs" / "replace"
        for dirpath, _dirs, files in os.walk(folder):
            for name in files:
                rel = Path(dirpath, name).relative_to(self.common_dir).as_posix()
                names.add(rel)
        with contextlib.suppress(OSError):
            packed = (self.common_dir / "packed-refs").read_text(encoding="utf-8", errors="replace")
            for line in packed.splitlines():
                _sha, _, ref = line.partition(" ")
                if ref.startswith("refs/replace/"):
                    names.add(ref.strip())
        return sorted(names)

    def shared_clone(self, dest: Path, side_refs: str = "refs/evolve/*") -> None:
        """Clone this repository into `dest` sharing its objects (`git clone --shared`),
        with the side refs matching `side_refs` too; replace refs and grafts are neither
        copied nor honoured."""
        env = committed_env()
        for argv, cwd in (
            (["git", "clone", "--quiet", "--shared", str(self.root), str(dest)], None),
            (["git", "fetch", "--quiet", "origin", f"{side_refs}:{side_refs}"], dest),
        ):
            done = subprocess.run(argv, cwd=cwd, capture_output=True, env=env)
            if done.returncode != 0:
                raise GitFailed(argv[1:], done.returncode, done.stderr.decode("utf-8", "replace"))


def _open_folders(root_fd: int, folders: Sequence[str], path: str) -> int:
    """A descriptor of the folder `folders` under `root_fd`, made where missing, reached
    without following a link."""
    fd = os.dup(root_fd)
    try:
        for part in folders:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                raise EvolveError(
                    f"the commit's path {path} runs through something that is not a folder; "
                    "evolve does not export it."
                ) from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_file(folder: int, name: str, data: bytes, mode: int) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 mode, dir_fd=folder)  # fmt: skip
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
