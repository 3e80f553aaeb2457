"""The store's objects: blobs and trees read through one long-lived `git cat-file --batch`,
and written from Python (zlib and the repository's own hash, SHA-1 or SHA-256, no process).
Trees are rebuilt only along the changed paths; trees this store wrote or read are cached by
id, so the next commit rarely reads any."""

from __future__ import annotations

import os
import stat
import subprocess
import zlib
from collections.abc import Sequence
from pathlib import Path

from evolve._format._git import batch_contents, batch_request, committed_env, tree_blobs
from evolve._io import io_fault
from evolve.errors import EvolveError
from evolve.store._base import GitBase
from evolve.store._index import Change

_TREE = 0o040000


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


class GitObjects(GitBase):
    """Reading and writing git objects (see the module's docstring)."""

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

    # --- reading -----------------------------------------------------------------------

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

    def commit_parents(self, commit: str) -> tuple[list[str], bytes]:
        """(parent ids, message bytes) of commit `commit` (a full id), read as stored
        through the long-lived `cat-file --batch` (its tree is cached for later reads).

        Raises:
            EvolveError: `commit` is not a commit here.
        """
        found = self._reader.get(commit)
        if found is None or found[1] != "commit":
            raise EvolveError(f"{commit} is not a commit in this repository.")
        header, _, message = found[2].partition(b"\n\n")
        parents: list[str] = []
        for line in header.split(b"\n"):
            if line.startswith(b"tree "):
                self._trees.setdefault(commit, line[5:].decode("ascii"))
            elif line.startswith(b"parent "):
                parents.append(line[7:].decode("ascii"))
        return parents, message

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
            env=committed_env(),
        )
        return batch_contents(proc.stdout, entries)

    def protected_hash(self, rev: str, prefixes: Sequence[str]) -> str:
        """A hash of the files under `prefixes` at `rev` (paths and blob ids), as committed: no
        replace ref or graft is honoured."""
        paths = [p.rstrip("/") for p in prefixes]
        # Without ls-tree's final newline: the hash stays what it was when GitPython ran it.
        out = self._git_committed("ls-tree", "-r", "--full-tree", rev, "--", *paths)
        out = out.removesuffix("\n")
        import hashlib

        return hashlib.sha256(out.encode("utf-8")).hexdigest()

    # --- writing -----------------------------------------------------------------------

    def _store(self, kind: bytes, data: bytes) -> str:
        header = b"%s %d\x00" % (kind, len(data))
        digest = self._hash(header + data)
        target = self.objects_dir / digest[:2] / digest[2:]
        if not target.exists():
            io_fault(target)
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
        to true or input counts too. Then the file is hashed by git, with its filters. A file
        whose every rule sets only attributes that never change what git stores (`merge=`, as
        evolve's own sidecar rules, `diff`, ...: `_content_neutral`) does not count."""
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
            self._global_attributes = any(not _content_neutral(p) for p in sources) or autocrlf in (
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
            if not _content_neutral(folder / ".gitattributes"):
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


# Attributes that never change the bytes git stores for a file (they steer merges, diffs,
# archives, packing or code statistics); any other (`text`, `eol`, `filter`, `ident`,
# `working-tree-encoding`, `crlf`, a macro such as `binary`) may.
_NEUTRAL_ATTRIBUTES = frozenset(
    {
        "merge",
        "diff",
        "whitespace",
        "export-ignore",
        "export-subst",
        "delta",
        "conflict-marker-size",
    }
)
_NEUTRAL_SIZE = 64 * 1024


def _content_neutral(path: Path) -> bool:
    """Whether the gitattributes file at `path` is missing, or changes nothing git stores:
    every line blank, a comment, or an unquoted pattern followed by neutral attributes only
    (set, unset, unspecified or given a value). Anything else (a macro definition, a quoted
    pattern, an attribute that may filter, a file too large or unreadable, a link, a fifo or
    anything but a regular file) is not: git then hashes the file itself."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            data = f.read(_NEUTRAL_SIZE + 1)
    except OSError:
        return False
    if len(data) > _NEUTRAL_SIZE:
        return False
    for raw in data.split(b"\n"):
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        if line.startswith((b'"', b"[")):
            return False
        for token in line.split()[1:]:
            name = token.lstrip(b"-!").partition(b"=")[0].decode("ascii", "replace")
            if name not in _NEUTRAL_ATTRIBUTES and not name.startswith("linguist-"):
                return False
    return True
