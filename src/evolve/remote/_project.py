"""`share.scopes`: what `evolve push` sends is a *projection* of this workspace's history
without the scopes kept on this machine (docs/sharing.md, "share.scopes").

Two histories are projected, each with its own filter of what stays here:

- **the branch**: under `memory/`, the folder of each persona not shared (`user:<p>`),
  `memory/skills/` (`skills`) and the files of `memory/` itself (`global`: the units and
  their counters; dot-files such as `.gitkeep` travel);
- **the training records** (`refs/evolve/train`): every record of a persona not shared (its
  clock, its streams' commits, runs, recorded histories and refusals, which quote what was
  learned); when `global` or `skills` is not shared, every record (each stream's records may
  quote those units).

The projection of a commit keeps its author, committer, dates and message; its tree loses
the private entries; its parents are the projections of its parents. A commit that changed
only private memory projects onto its parent (nothing of it leaves); one that changed some
private memory keeps its subject and trailers but loses every body line naming a private
unit (the operations and notes quote the unit's text) and, when its persona is private, its
complaint; `Evolve-Ops` loses the pairs of private units. A commit with nothing private is
its own projection, so a workspace that never held a private scope projects onto itself.

The projection is deterministic (the same commit always projects to the same id, on any
machine) and incremental: the mapping local -> projected is cached in the git folder
(`evolve/share/<kind>-<scopes digest>`), so a push projects only the commits that are new.
The cache is only a cache: without it the same ids are computed again.

Pulling runs it backwards (:func:`lift`): each commit fetched from the remote that is not the
projection of a local one is *lifted*: its private entries (a remote may not change them: a
remote's files of a private scope are dropped) are this workspace's, taken from the lifted
first parent;
its parents are the lifted parents; its message and authorship stay. So the remote's history
merges with the local one through an ordinary merge base, the private memory is never
deleted by a pull, and the lifted commit projects back onto exactly the remote's commit:
the next push is a fast-forward.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evolve.errors import EvolveError
from evolve.store import GitStore
from evolve.store._base import committed_env
from evolve.store._objects import _format_tree, _parse_tree
from evolve.workspace import Workspace
from evolve.workspace._config import ShareConfig

BRANCH = "branch"
RECORDS = "records"
TRAIN_REF = "refs/evolve/train"
#: Where `evolve push` leaves the last projection it sent (`git log refs/shared/heads/main`
#: shows what the team sees); the push refspecs of a workspace with private scopes send these.
SHARED_PREFIX = "refs/shared/"

_TREE = 0o040000
_RECORD_DIRS = ("streams", "runs", "history", "refusals")
_SIGNATURES = (b"gpgsig", b"gpgsig-sha256", b"mergetag")
_UNIT_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

Entries = dict[str, tuple[int, bytes]]
#: top folder -> whether an entry (name, is a folder) of it stays on this machine
Hidden = dict[str, Callable[[str, bool], bool]]


def private_scopes(share: ShareConfig, personas: list[str]) -> list[str]:
    """The scopes `share` keeps here, of global, skills and the given personas."""
    if share.scopes == "all":
        return []
    scopes = ["global", "skills"] + [f"user:{p}" for p in personas]
    return [s for s in scopes if not share.shared(s)]


def _branch_hidden(share: ShareConfig) -> Hidden:
    def memory(name: str, is_dir: bool) -> bool:
        if not is_dir:
            return not name.startswith(".") and not share.shared("global")
        if name == "skills":
            return not share.shared("skills")
        return not share.shared(f"user:{name}")

    return {"memory": memory}


def _records_hidden(share: ShareConfig) -> Hidden:
    everything = not (share.shared("global") and share.shared("skills"))

    def persona_dir(name: str, is_dir: bool) -> bool:
        return everything or not share.shared(f"user:{name}")

    def timeline(name: str, is_dir: bool) -> bool:
        return everything or not share.shared(f"user:{name.removesuffix('.json')}")

    hidden: Hidden = {d: persona_dir for d in _RECORD_DIRS}
    hidden["timeline"] = timeline
    return hidden


@dataclass
class _Commit:
    tree: str
    parents: list[str]
    headers: list[bytes]  # every header line but tree and parent (continuations kept)
    message: bytes
    signed: bool


def _parse_commit(raw: bytes) -> _Commit:
    head, _, message = raw.partition(b"\n\n")
    tree = ""
    parents: list[str] = []
    headers: list[bytes] = []
    signed = False
    skipping = False
    for line in head.split(b"\n"):
        if line.startswith(b" "):
            if not skipping:
                headers.append(line)
            continue
        key = line.split(b" ", 1)[0]
        skipping = key in _SIGNATURES
        if key == b"tree":
            tree = line[5:].decode("ascii")
        elif key == b"parent":
            parents.append(line[7:].decode("ascii"))
        elif skipping:
            signed = True
        else:
            headers.append(line)
    return _Commit(tree, parents, headers, message, signed)


def _format_commit(commit: _Commit) -> bytes:
    lines = [b"tree " + commit.tree.encode("ascii")]
    lines += [b"parent " + p.encode("ascii") for p in commit.parents]
    lines += commit.headers
    return b"\n".join(lines) + b"\n\n" + commit.message


_COMMIT_ID = re.compile(r"(?<![\w-])[0-9a-f]{7,64}(?![\w-])")


class _Prefixes:
    """Full commit ids by their first 7 hex digits, to resolve the ids a message names."""

    def __init__(self) -> None:
        self._by: dict[str, list[str]] = {}

    def add(self, sha: str) -> None:
        bucket = self._by.setdefault(sha[:7], [])
        if sha not in bucket:
            bucket.append(sha)

    def resolve(self, token: str) -> str | None:
        found = [s for s in self._by.get(token[:7], ()) if s.startswith(token)]
        return found[0] if len(found) == 1 else None


def _map_ids(message: bytes, prefixes: _Prefixes, mapped: Callable[[str], str]) -> bytes:
    """`message` with every commit id it names (whole or abbreviated) that `prefixes` knows
    replaced by `mapped(id)`, abbreviated alike: a revert names the reverted commit as the
    reader's history holds it."""
    text = message.decode("utf-8", "surrogateescape")

    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        full = prefixes.resolve(token)
        return token if full is None else mapped(full)[: len(token)]

    return _COMMIT_ID.sub(one, text).encode("utf-8", "surrogateescape")


@dataclass
class _Maps:
    path: Path
    forward: dict[str, str] = field(default_factory=dict)  # local -> projected
    back: dict[str, str] = field(default_factory=dict)  # projected -> newest local
    first: dict[str, str] = field(default_factory=dict)  # projected -> the local that made it
    lifted: dict[str, str] = field(default_factory=dict)  # remote -> lifted local
    new: list[str] = field(default_factory=list)
    locals: _Prefixes = field(default_factory=_Prefixes)  # forward's keys
    remotes: _Prefixes = field(default_factory=_Prefixes)  # back's and lifted's keys

    def remote_to_local(self, sha: str) -> str:
        """The local commit a remote parent stands for (the newest that projects onto it)."""
        return self.back.get(sha) or self.lifted[sha]

    def named(self, sha: str) -> str:
        """The local commit a remote message names: the one that made the change (commits
        that changed only private memory project onto it too, later)."""
        return self.first.get(sha) or self.lifted[sha]

    @classmethod
    def load(cls, path: Path) -> _Maps:
        maps = cls(path)
        with contextlib.suppress(OSError):
            for line in path.read_text(encoding="ascii").splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[0] == "p":
                    maps.project(parts[1], parts[2], cached=True)
                elif len(parts) == 3 and parts[0] == "l":
                    maps.lift(parts[1], parts[2], cached=True)
        return maps

    def project(self, local: str, projected: str, *, cached: bool = False) -> None:
        self.forward[local] = projected
        self.back[projected] = local
        self.first.setdefault(projected, local)
        self.locals.add(local)
        self.remotes.add(projected)
        if not cached:
            self.new.append(f"p {local} {projected}")

    def lift(self, remote: str, local: str, *, cached: bool = False) -> None:
        self.lifted[remote] = local
        self.remotes.add(remote)
        if not cached:
            self.new.append(f"l {remote} {local}")

    def save(self) -> None:
        if not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        old = ""
        with contextlib.suppress(OSError):
            old = self.path.read_text(encoding="ascii")
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp_")
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(old + "".join(f"{line}\n" for line in self.new))
        os.replace(tmp, self.path)
        self.new = []


class Projector:
    """Projects and lifts one kind of history (:data:`BRANCH` or :data:`RECORDS`)."""

    def __init__(self, store: GitStore, share: ShareConfig, kind: str) -> None:
        self.store = store
        self.kind = kind
        self.hidden = _branch_hidden(share) if kind == BRANCH else _records_hidden(share)
        scopes = "all" if share.scopes == "all" else ",".join(sorted(share.scopes))
        digest = hashlib.sha256(f"{kind}|{scopes}".encode()).hexdigest()[:16]
        self.maps = _Maps.load(store.common_dir / "evolve" / "share" / f"{kind}-{digest}")
        self._trees: dict[str, Entries] = {}
        self._projected_trees: dict[str, str] = {}
        self._private_ids: dict[str, frozenset[str]] = {}

    # --- objects ------------------------------------------------------------------------

    def _read(self, oid: str, kind: str) -> bytes:
        found = self.store._reader.get(oid)
        if found is None or found[1] != kind:
            raise EvolveError(f"{kind} {oid[:10]} is missing or not a {kind}; run `git fsck`.")
        return found[2]

    def _entries(self, tree: str) -> Entries:
        cached = self._trees.get(tree)
        if cached is None:
            cached = _parse_tree(self._read(tree, "tree"), self.store._rawlen)
            self._trees[tree] = cached
        return cached

    def _write_tree(self, entries: Entries) -> str:
        oid = self.store._store(b"tree", _format_tree(entries))
        self._trees[oid] = entries
        return oid

    def _split(self, tree: str) -> tuple[Entries, dict[str, Entries]]:
        """(the root's entries, {top folder: its private entries})."""
        root = self._entries(tree)
        private: dict[str, Entries] = {}
        for top, hides in self.hidden.items():
            entry = root.get(top)
            if entry is None or entry[0] != _TREE:
                continue
            sub = self._entries(entry[1].hex())
            kept = {n: e for n, e in sub.items() if hides(n, e[0] == _TREE)}
            if kept:
                private[top] = kept
        return root, private

    def _rebuild(self, tree: str, private: dict[str, Entries]) -> str:
        """`tree` with every private entry removed, then `private` put in its place."""
        root = dict(self._entries(tree))
        changed = False
        for top, hides in self.hidden.items():
            entry = root.get(top)
            sub: Entries = {}
            if entry is not None and entry[0] == _TREE:
                sub = {
                    n: e
                    for n, e in self._entries(entry[1].hex()).items()
                    if not hides(n, e[0] == _TREE)
                }
            elif entry is not None:
                sub = {}
                if top in private:  # a file where our folder goes: ours wins
                    del root[top]
                    changed = True
            had = entry is not None and entry[0] == _TREE
            sub.update(private.get(top, {}))
            if not had and not sub:
                continue
            if sub:
                new = (_TREE, bytes.fromhex(self._write_tree(sub)))
                if root.get(top) != new:
                    root[top] = new
                    changed = True
            elif top in root:
                del root[top]
                changed = True
        return self._write_tree(root) if changed else tree

    def _projected_tree(self, tree: str) -> str:
        out = self._projected_trees.get(tree)
        if out is None:
            out = self._rebuild(tree, {})
            self._projected_trees[tree] = out
        return out

    def _private_unit_ids(self, tree: str) -> frozenset[str]:
        """The stems of every private file (unit ids) under `tree`, for the message filter."""
        cached = self._private_ids.get(tree)
        if cached is None:
            ids: set[str] = set()
            stack = [
                (1, name, entry)
                for entries in self._split(tree)[1].values()
                for name, entry in entries.items()
            ]
            while stack:
                depth, name, (mode, oid) = stack.pop()
                if mode == _TREE:
                    if depth > 1:  # a skill's folder is its id; a persona's folder is not
                        ids.add(name)
                    stack.extend((depth + 1, n, e) for n, e in self._entries(oid.hex()).items())
                elif name.endswith(".md"):
                    ids.add(name.removesuffix(".md"))
            cached = frozenset(ids)
            self._private_ids[tree] = cached
        return cached

    def _write_commit(self, commit: _Commit) -> str:
        return self.store._store(b"commit", _format_commit(commit))

    def _rev_list(self, tip: str) -> list[list[str]]:
        done = subprocess.run(
            ["git", "rev-list", "--topo-order", "--reverse", "--parents", tip],
            cwd=self.store.root,
            capture_output=True,
            env=committed_env(),
        )
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip()
            raise EvolveError(f"listing the history of {tip[:10]} failed ({said}).")
        return [line.split() for line in done.stdout.decode("ascii").splitlines()]

    # --- projecting ---------------------------------------------------------------------

    def project(self, tip: str) -> str:
        """The projection of the local commit `tip` (written, its history too)."""
        for line in self._rev_list(tip):
            if line[0] not in self.maps.forward:
                self.maps.project(line[0], self._project_one(line[0]))
        self.maps.save()
        return self.maps.forward[tip]

    def _project_one(self, sha: str) -> str:
        commit = _parse_commit(self._read(sha, "commit"))
        tree = self._projected_tree(commit.tree)
        parents: list[str] = []
        for parent in commit.parents:
            mapped = self.maps.forward[parent]
            if mapped not in parents:
                parents.append(mapped)
        first_tree = (
            _parse_commit(self._read(commit.parents[0], "commit")).tree if commit.parents else None
        )
        touched = self._split(commit.tree)[1] != (self._split(first_tree)[1] if first_tree else {})
        if len(parents) == 1 and (touched or len(commit.parents) > 1):
            parent_tree = _parse_commit(self._read(parents[0], "commit")).tree
            if parent_tree == tree:
                return parents[0]  # it changed only what stays here: nothing of it leaves
        message = _map_ids(commit.message, self.maps.locals, self.maps.forward.__getitem__)
        if touched:
            ids = self._private_unit_ids(commit.tree)
            if first_tree:
                ids |= self._private_unit_ids(first_tree)
            message = self._redact(message, ids)
        if tree == commit.tree and parents == commit.parents and message == commit.message:
            return sha
        signed = commit.signed
        commit.tree, commit.parents, commit.message = tree, parents, message
        if signed:
            commit.signed = False
        return self._write_commit(commit)

    def _redact(self, message: bytes, ids: frozenset[str]) -> bytes:
        if self.kind != BRANCH:
            return message
        text = message.decode("utf-8", "surrogateescape")
        lines = text.split("\n")
        persona = next(
            (ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Evolve-Persona:")),
            None,
        )
        hides = self.hidden["memory"]
        private_persona = persona is not None and hides(persona, True)
        out: list[str] = []
        in_complaint = False
        for number, line in enumerate(lines):
            if number == 0:
                out.append(line)
                continue
            if line.startswith("Evolve-Ops:"):
                pairs = [t for t in line.split(":", 1)[1].split() if t.partition("=")[2] not in ids]
                if pairs:
                    out.append("Evolve-Ops: " + " ".join(pairs))
                continue
            if line.startswith("Complaint:"):
                in_complaint = private_persona
            elif not line.strip():
                in_complaint = False
            if in_complaint:
                continue
            words = set(_UNIT_ID.findall(line))
            if words & ids:
                continue
            out.append(line)
        return "\n".join(out).encode("utf-8", "surrogateescape")

    # --- lifting ------------------------------------------------------------------------

    def lift(self, tip: str) -> str:
        """The local commit `tip` (fetched from a remote) stands for: the local commit it is
        the projection of, else its lift (written, with its history's)."""
        if tip in self.maps.back:
            return self.maps.back[tip]
        if tip in self.maps.lifted:
            return self.maps.lifted[tip]
        for line in self._rev_list(tip):
            sha = line[0]
            if sha not in self.maps.back and sha not in self.maps.lifted:
                self.maps.lift(sha, self._lift_one(sha))
        self.maps.save()
        return self.maps.remote_to_local(tip)

    def _lift_one(self, sha: str) -> str:
        commit = _parse_commit(self._read(sha, "commit"))
        parents = [self.maps.remote_to_local(p) for p in commit.parents]
        private: dict[str, Entries] = {}
        if parents:
            private = self._split(_parse_commit(self._read(parents[0], "commit")).tree)[1]
        tree = self._rebuild(commit.tree, private)
        message = _map_ids(commit.message, self.maps.remotes, self.maps.named)
        if tree == commit.tree and parents == commit.parents and message == commit.message:
            return sha
        commit.tree, commit.parents, commit.message = tree, parents, message
        lifted = self._write_commit(commit)
        # It projects back onto the remote's commit (computed again, the same, when the
        # remote's had nothing private; one that had is the remote's, never rewritten).
        self.maps.project(lifted, sha)
        return lifted


def is_private(ws: Workspace) -> bool:
    """Whether `share.scopes` keeps any scope on this machine."""
    return ws.config.share.scopes != "all"


def _projector(store: GitStore, share: ShareConfig, kind: str, local: str | None) -> Projector:
    """A projector that knows the projection of `local`'s history (so a remote commit that
    is one of them lifts onto the local commit, even where the cache was lost)."""
    projector = Projector(store, share, kind)
    if local is not None:
        projector.project(local)
    return projector


def lift_fetched(ws: Workspace, remote: str, branch: str, fetched: str | None) -> str | None:
    """Replace the fetched `refs/remotes/<remote>/<branch>` and `.../evolve/train` by their
    lifts (see the module's docstring); the branch's lifted tip. Nothing to do when every
    scope is shared."""
    if not is_private(ws):
        return fetched
    store = ws.store
    share = ws.config.share
    train = f"refs/remotes/{remote}/evolve/train"
    theirs = store.ref_sha(train)
    if theirs is not None:
        lifted = _projector(store, share, RECORDS, store.ref_sha(TRAIN_REF)).lift(theirs)
        if lifted != theirs:
            store.git("update-ref", train, lifted, theirs)
    if fetched is None:
        return None
    lifted = _projector(store, share, BRANCH, store.head()).lift(fetched)
    if lifted != fetched:
        store.git("update-ref", f"refs/remotes/{remote}/{branch}", lifted, fetched)
    return lifted


def shared_refs(ws: Workspace, branch: str) -> list[str] | None:
    """The refspecs `evolve push` sends when a scope stays here: the projections of the
    branch and of `refs/evolve/train` (kept under `refs/shared/` too); None when every scope
    is shared (the push then sends everything). Generation and experiment records and the
    pointers to aborted generations and arms stay here: they hold unit text of every scope."""
    if not is_private(ws):
        return None
    store, share = ws.store, ws.config.share
    head = store.head()
    if head is None:
        raise EvolveError("this branch has no commit yet; commit before pushing.")
    tip = Projector(store, share, BRANCH).project(head)
    refs = [(tip, f"refs/heads/{branch}")]
    train = store.ref_sha(TRAIN_REF)
    if train is not None:
        refs.append((Projector(store, share, RECORDS).project(train), TRAIN_REF))
    out = []
    for sha, ref in refs:
        store.git("update-ref", SHARED_PREFIX + ref.removeprefix("refs/"), sha)
        out.append(f"{SHARED_PREFIX}{ref.removeprefix('refs/')}:{ref}")
    return out


def configure_shared_push(ws: Workspace, remote: str) -> None:
    """With a scope kept here, a plain `git push` to `remote` sends what the last `evolve
    push` projected (`refs/shared/*`), never the branch itself: its push refspecs are set to
    `refs/shared/heads/*:refs/heads/*` and `refs/shared/evolve/*:refs/evolve/*`. Once every
    scope is shared again, those two are removed (evolve's own refspecs are back)."""
    key = f"remote.{remote}.push"
    ours = [f"{SHARED_PREFIX}heads/*:refs/heads/*", f"{SHARED_PREFIX}evolve/*:refs/evolve/*"]
    done = subprocess.run(
        ["git", "config", "--get-all", key],
        cwd=ws.root,
        capture_output=True,
        env=committed_env(),
    )
    have = done.stdout.decode("utf-8", "replace").splitlines() if done.returncode == 0 else []
    wanted = ours if is_private(ws) else [v for v in have if v not in ours]
    if have == wanted:
        return
    ws.store.git("config", "--unset-all", key) if have else None
    for value in wanted:
        ws.store.git("config", "--add", key, value)


# --- the pre-push hook: a plain `git push` of private memory is refused ---------------------

HOOK_MARK = "# evolve: share.scopes pre-push check"
_ZERO = re.compile(r"0+")


def _hook_text() -> str:
    import sys

    return (
        f"#!{sys.executable}\n{HOOK_MARK} (written by evolve push and pull; docs/sharing.md)\n"
        "import sys\n\nfrom evolve.remote._project import pre_push\n\n"
        "sys.exit(pre_push(sys.stdin.read()))\n"
    )


def install_pre_push(ws: Workspace) -> bool:
    """Write `.git/hooks/pre-push` (see :func:`pre_push`) when a scope stays here; a hook
    someone else wrote is left alone (False)."""
    if not is_private(ws):
        return False
    hooks = Path(ws.store.git("rev-parse", "--git-path", "hooks").strip())
    hook = hooks if hooks.is_absolute() else ws.root / hooks
    hook = hook / "pre-push"
    text = _hook_text()
    with contextlib.suppress(OSError):
        old = hook.read_text(encoding="utf-8")
        if HOOK_MARK not in old:
            return False
        if old == text:
            return True
    hook.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=hook.parent, prefix=".tmp_")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, hook)
    return True


def _kind_of_push(ref: str) -> str | None:
    if ref.startswith(("refs/heads/", "refs/tags/", "refs/evolve/arms/", "refs/evolve/aborted/")):
        return BRANCH
    if ref == TRAIN_REF or ref.startswith("refs/evolve/arm-records/"):
        return RECORDS
    return None


def private_in(ws: Workspace, kind: str, tip: str, known: str | None) -> str | None:
    """The newest commit reachable from `tip` (not from `known`) that holds memory or records
    of a scope kept here, or is a local commit whose projection differs; None when none."""
    projector = Projector(ws.store, ws.config.share, kind)
    args = ["git", "rev-list", tip] + ([f"^{known}"] if known else [])
    done = subprocess.run(args, cwd=ws.root, capture_output=True, env=committed_env())
    if done.returncode != 0:
        return tip
    for sha in done.stdout.decode("ascii").split():
        commit = _parse_commit(projector._read(sha, "commit"))
        if projector._split(commit.tree)[1] or projector.maps.forward.get(sha, sha) != sha:
            return sha
    return None


def pre_push(lines: str) -> int:
    """The pre-push hook: refuse (1, one sentence) a push that would send memory or records
    of a scope `share.scopes` keeps on this machine; `evolve push` sends projections."""
    try:
        ws = Workspace(Path.cwd())
        if not is_private(ws):
            return 0
        for line in lines.splitlines():
            parts = line.split()
            if len(parts) != 4 or _ZERO.fullmatch(parts[1]):
                continue
            _local_ref, sha, remote_ref, remote_sha = parts
            kind = _kind_of_push(remote_ref)
            there = not _ZERO.fullmatch(remote_sha) and ws.store._reader.get(remote_sha)
            known = remote_sha if there else None
            found = sha if kind is None else private_in(ws, kind, f"{sha}^{{}}", known)
            if found is not None:
                import sys

                print(
                    f"evolve: pushing {remote_ref} would send memory or records that "
                    f"share.scopes keeps on this machine (commit {found[:10]}); nothing was "
                    "pushed: use `evolve push`, which sends the projection (refs/shared/*).",
                    file=sys.stderr,
                )
                return 1
    except EvolveError as exc:
        import sys

        print(f"evolve: {exc}", file=sys.stderr)
        return 1
    return 0
