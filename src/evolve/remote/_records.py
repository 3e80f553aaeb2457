"""Records refs merge as unions: never rewritten, never forced (docs/sharing.md).

A remote's `refs/evolve/*` arrive under `refs/remotes/<remote>/evolve/` (a plain `git fetch`
with the refspecs evolve configures puts them there too) and are merged into the local ones
here, by kind:

- **train records** (`refs/evolve/train`, `refs/evolve/arm-records/**`): a history of files
  (the persona clock, stream and run records, recorded histories, refusals). Merged as a
  union: a commit with both tips as parents whose tree holds every file of both; a file both
  sides changed is merged by its own rule (:data:`RULES`).
- **generation records** (`refs/evolve/records`): `gen-NNNN.{json,md}` and
  `experiments/<name>/results.{json,md}`. Two learners numbering a generation alike, or
  running the same experiment, both keep theirs: the record whose bytes sort first keeps the
  name, the other is kept beside it as `gen-NNNN+<8 hex>.json` (`experiments/<name>+<8 hex>/`).
- **pointers** (`refs/evolve/aborted/**`, `refs/evolve/arms/**`): commits kept reachable.
  A fast-forward moves the ref; two unrelated tips both stay: the remote's keeps the name
  (moving it there would need a forced push), the local one is kept as `<name>+<8 hex>`.

The rules of the two history kinds are commutative: two clones that merged each other's
records in either order hold the same trees (and pointers converge through the remote). A merge that changes nothing moves nothing; a side that contains the other
is taken as it is (a fast-forward). What the remote sent is validated before anything is
merged: ref names, file names and modes, sizes, and each file's content by its kind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evolve._format._timeline import Segment, parse_segments, timeline_text
from evolve.errors import EvolveError
from evolve.store import GitFailed, GitStore
from evolve.store._base import committed_env

TRAIN = "train"
RECORDS = "records"
POINTER = "pointer"

#: A file a remote sends on a records ref may be this large (a stream's recorded history is
#: the largest evolve writes); a tree may hold this many files.
MAX_FILE = 16 * 1024 * 1024
MAX_FILES = 200_000

_PART = r"[A-Za-z0-9_][A-Za-z0-9_.:=+-]{0,99}"
_REF_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.=+-]{0,99}")
_STREAM = rf"{_PART}/{_PART}/-?[0-9]{{1,20}}/{_PART}"
_SUFFIX = r"(?:\+[0-9a-f]{8})?"
_PATHS: dict[str, re.Pattern[str]] = {
    TRAIN: re.compile(
        rf"timeline/[a-z0-9][a-z0-9_-]{{0,39}}\.json"
        rf"|(?:streams|runs|history)/{_STREAM}\.json"
        rf"|refusals/{_STREAM}/[0-9]{{1,12}}-[0-9a-f]{{1,64}}\.txt"
    ),
    RECORDS: re.compile(
        rf"gen-[0-9]{{4,9}}{_SUFFIX}\.(?:json|md)|experiments/{_PART}{_SUFFIX}/results\.(?:json|md)"
    ),
}
_HEX = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def kind_of(ref: str) -> str | None:
    """The kind of a local records ref (`refs/evolve/...`), None for a name evolve never
    writes (such a ref from a remote is left where it was fetched, and said)."""
    parts = ref.split("/")
    if len(parts) < 3 or parts[:2] != ["refs", "evolve"] or len(ref) > 400 or len(parts) > 12:
        return None
    if not all(_REF_PART.fullmatch(p) and not p.endswith((".lock", ".")) for p in parts[2:]):
        return None
    if ref == "refs/evolve/train":
        return TRAIN
    if ref == "refs/evolve/records":
        return RECORDS
    if parts[2] == "arm-records" and len(parts) > 3:
        return TRAIN
    if parts[2] in ("aborted", "arms") and len(parts) > 3:
        return POINTER
    return None


class Hostile(EvolveError):
    """What a remote sent is not what evolve writes: nothing of it was merged."""


@dataclass
class Merged:
    """What merging one remote's records did."""

    updated: list[str] = field(default_factory=list)  # local refs moved (fast-forward or merge)
    merged: list[str] = field(default_factory=list)  # of those, the ones given a merge commit
    kept_aside: list[str] = field(default_factory=list)  # names a second record was kept under
    ignored: list[str] = field(default_factory=list)  # remote refs of no kind evolve knows


# --- git plumbing, reading objects as stored -----------------------------------------------


def _git(
    store: GitStore,
    *args: str,
    input: bytes | None = None,
    index: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    env = {**committed_env(), **(env or {})}
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    done = subprocess.run(["git", *args], cwd=store.root, input=input, capture_output=True, env=env)
    if done.returncode != 0:
        raise GitFailed(args, done.returncode, done.stderr.decode("utf-8", "replace"))
    return done.stdout.decode("utf-8", "surrogateescape")


Tree = dict[str, tuple[str, str]]  # path -> (mode, blob id)


def _tree(store: GitStore, commit: str | None) -> Tree:
    if commit is None:
        return {}
    out: Tree = {}
    for entry in _git(store, "ls-tree", "-r", "-z", "--full-tree", commit).split("\x00"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        mode, kind, oid = meta.split()
        out[path] = (mode if kind == "blob" else f"{kind}:{mode}", oid)
    return out


def _sizes(store: GitStore, oids: list[str]) -> dict[str, int]:
    if not oids:
        return {}
    out = _git(
        store,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype) %(objectsize)",
        input="".join(f"{o}\n" for o in oids).encode("ascii"),
    )
    sizes = {}
    for line in out.splitlines():
        oid, kind, size = line.split()
        if kind != "blob":
            raise Hostile(f"object {oid[:10]} is a {kind}, not a file")
        sizes[oid] = int(size)
    return sizes


# --- what a remote may send ------------------------------------------------------------


def _check_json(path: str, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise Hostile(f"{path} is not valid JSON") from None


def _check_file(kind: str, path: str, raw: bytes) -> None:
    """Refuse a file evolve would not have written (Hostile names it)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Hostile(f"{path} is not UTF-8 text") from None
    if "\x00" in text:
        raise Hostile(f"{path} holds a NUL byte")
    if path.endswith(".md") or path.endswith(".txt"):
        return
    data = _check_json(path, raw)
    if kind == RECORDS:
        if path.startswith("gen-"):
            from evolve.txn._records import GenerationRecord

            try:
                GenerationRecord.model_validate(data)
            except ValueError:
                raise Hostile(f"{path} is not a generation record") from None
        elif not isinstance(data, dict):
            raise Hostile(f"{path} is not an experiment's results")
        return
    folder = path.split("/", 1)[0]
    try:
        if folder == "timeline":
            parse_segments(raw)
        elif folder == "streams":
            _stream_commits(data)
        elif folder == "runs":
            _run(data)
        elif folder == "history":
            _episodes(data)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise Hostile(f"{path} is not a valid {folder} record") from None


def validate(store: GitStore, kind: str, ref: str, ours: str | None, theirs: str) -> Tree:
    """Check what `theirs` holds beyond `ours` (names, modes, sizes, contents); its tree.

    Raises:
        Hostile: one sentence naming the first thing evolve would not have written.
    """
    try:
        their_tree = _tree(store, theirs)
        if len(their_tree) > MAX_FILES:
            raise Hostile(f"it holds {len(their_tree):,} files (at most {MAX_FILES:,})")
        our_tree = _tree(store, ours)
        new = {p: e for p, e in their_tree.items() if our_tree.get(p) != e}
        pattern = _PATHS[kind]
        for path, (mode, _oid) in new.items():
            if not pattern.fullmatch(path):
                raise Hostile(f"{path!r} is not a file evolve writes there")
            if mode != "100644":
                raise Hostile(f"{path} has mode {mode} (a plain file is 100644)")
        sizes = _sizes(store, sorted({oid for _m, oid in new.values()}))
        for path, (_mode, oid) in new.items():
            if sizes[oid] > MAX_FILE:
                raise Hostile(f"{path} is {sizes[oid]:,} bytes (at most {MAX_FILE:,})")
        blobs = store.read_blobs(oid for _m, oid in new.values())
        for path, (_mode, oid) in new.items():
            _check_file(kind, path, blobs[oid])
    except Hostile as exc:
        raise Hostile(
            f"the remote's {ref} is refused, nothing of it was merged: {exc}; ask whoever "
            "pushed it, or leave that remote."
        ) from None
    return their_tree


# --- the merge rule of each file on a train-records ref ------------------------------------


def _stream_commits(data: Any) -> dict[int, str]:
    commits = {int(k): str(v) for k, v in data["commits"].items()}
    if any(k < 0 or not _HEX.fullmatch(v) for k, v in commits.items()):
        raise ValueError("bad commit")
    return commits


def _run(data: Any) -> tuple[int, str]:
    episode, head = int(data["episode"]), str(data["head"])
    if episode < 0 or not _HEX.fullmatch(head):
        raise ValueError("bad run")
    return episode, head


def _episodes(data: Any) -> dict[int, Any]:
    records = {int(k): v for k, v in data["episodes"].items()}
    if not all(isinstance(v, dict) for v in records.values()):
        raise ValueError("bad episode")
    return records


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def merge_timeline(persona: str, ours: bytes, theirs: bytes) -> bytes:
    """Both timelines' segments: every episode of every stream keeps the clock it ran at
    (where both sides gave one episode a clock, the smaller); the clock after the merge is
    the larger of the two (`Timeline.now`), with both streams' episodes on it."""
    pool = sorted(
        set(parse_segments(ours)) | set(parse_segments(theirs)),
        key=lambda s: (s.stream, s.clock, s.start, s.end),
    )
    kept: list[Segment] = []
    for seg in pool:
        k = seg.start
        while k < seg.end:
            if any(s.covers(seg.stream, k) for s in kept):
                k += 1
                continue
            first = k
            while k < seg.end and not any(s.covers(seg.stream, k) for s in kept):
                k += 1
            kept.append(Segment(seg.stream, first, k, seg.clock + first - seg.start))
    kept.sort(key=lambda s: (s.clock, s.stream, s.start))
    return timeline_text(persona, kept).encode("utf-8")


def merge_streams(ours: bytes, theirs: bytes) -> bytes:
    """Every episode's commit from both records; one episode recorded with two commits (both
    sides trained it) keeps the smaller id (both commits stay on the merged branch)."""
    a, b = json.loads(ours), json.loads(theirs)
    commits = _stream_commits(a)
    for k, sha in _stream_commits(b).items():
        commits[k] = min(sha, commits.get(k, sha))
    stream = str(a.get("stream") or b.get("stream") or "")
    data = {"stream": stream, "commits": {str(k): commits[k] for k in sorted(commits)}}
    return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def merge_runs(ours: bytes, theirs: bytes) -> bytes:
    """The run record of the later episode (on a tie, the smaller commit id)."""
    a, b = json.loads(ours), json.loads(theirs)
    ka, kb = _run(a), _run(b)
    return ours if (-ka[0], ka[1]) <= (-kb[0], kb[1]) else theirs


def merge_history(ours: bytes, theirs: bytes) -> bytes:
    """Every episode's recorded history from both; one episode recorded twice keeps the
    record whose canonical JSON sorts first."""
    a, b = _episodes(json.loads(ours)), _episodes(json.loads(theirs))
    for k, record in b.items():
        if k not in a or _canonical(record) < _canonical(a[k]):
            a[k] = record
    data = {"episodes": {str(k): a[k] for k in sorted(a)}}
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _first(ours: bytes, theirs: bytes) -> bytes:
    """Write-once files (refusal records): the bytes that sort first keep the path; the other
    stays in the records ref's history (its commit is a parent of the merge), where `evolve
    log` finds every refusal record."""
    return min(ours, theirs)


RULES: dict[str, Callable[[bytes, bytes], bytes]] = {
    "streams": merge_streams,
    "runs": merge_runs,
    "history": merge_history,
    "refusals": _first,
}


def _merge_train_file(path: str, ours: bytes, theirs: bytes) -> bytes:
    folder = path.split("/", 1)[0]
    if folder == "timeline":
        return merge_timeline(path[len("timeline/") : -len(".json")], ours, theirs)
    return RULES.get(folder, _first)(ours, theirs)


# --- the union of two trees ---------------------------------------------------------------


def _group(path: str) -> str:
    """The records kept together on refs/evolve/records: gen-NNNN (.json and .md), or
    experiments/<name> (its results files)."""
    if path.startswith("experiments/"):
        return path.rsplit("/", 1)[0]
    return path.rsplit(".", 1)[0]


def _aside(path: str, group: str, tag: str) -> str:
    return group + f"+{tag}" + path[len(group) :]


def union(
    store: GitStore, kind: str, ours: Tree, theirs: Tree, kept_aside: list[str]
) -> dict[str, tuple[str, str]]:
    """The tree of the merge: every file of both sides, by the rule of its kind."""
    out = dict(ours)
    differ = sorted(p for p in theirs if p in ours and ours[p] != theirs[p])
    out.update({p: e for p, e in theirs.items() if p not in ours})
    if not differ:
        return out
    blobs = store.read_blobs([ours[p][1] for p in differ] + [theirs[p][1] for p in differ])
    if kind == TRAIN:
        for path in differ:
            data = _merge_train_file(path, blobs[ours[path][1]], blobs[theirs[path][1]])
            out[path] = ("100644", _write_blob(store, data))
        return out
    # generation records: a group both sides hold differently is kept twice
    for group in sorted({_group(p) for p in differ}):
        mine = {p: e for p, e in ours.items() if _group(p) == group}
        yours = {p: e for p, e in theirs.items() if _group(p) == group}
        key_a = "".join(f"{p}\0{e[1]}\n" for p, e in sorted(mine.items()))
        key_b = "".join(f"{p}\0{e[1]}\n" for p, e in sorted(yours.items()))
        keep, other, key = (mine, yours, key_b) if key_a <= key_b else (yours, mine, key_a)
        tag = hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]
        for path in set(mine) | set(yours):
            out.pop(path, None)
        out.update(keep)
        for path, entry in other.items():
            name = _aside(path, group, tag)
            out[name] = entry
            kept_aside.append(name)
    return out


def _write_blob(store: GitStore, data: bytes) -> str:
    return _git(store, "hash-object", "-w", "--stdin", input=data).strip()


def _write_tree(store: GitStore, tree: Tree) -> str:
    fd, index = tempfile.mkstemp(prefix="evolve-records-index-", dir=store.git_dir)
    os.close(fd)
    os.unlink(index)  # git writes a new index there
    try:
        lines = "".join(f"{mode} {oid}\t{path}\0" for path, (mode, oid) in sorted(tree.items()))
        _git(store, "update-index", "-z", "--index-info", input=lines.encode(), index=index)
        return _git(store, "write-tree", index=index).strip()
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(index)


def _commit(store: GitStore, tree: str, parents: list[str], subject: str) -> str:
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    message = f"{subject}\n\nEvolve-Kind: records merge\n"
    who = {}
    for role in ("AUTHOR", "COMMITTER"):
        name, email = store._identity_of(role)
        who[f"GIT_{role}_NAME"], who[f"GIT_{role}_EMAIL"] = name, email
    return _git(store, *args, "-F", "-", input=message.encode("utf-8"), env=who).strip()


def _move(store: GitStore, ref: str, new: str, old: str | None) -> None:
    try:
        store.git("update-ref", ref, new, old or "0" * len(new))
    except GitFailed as exc:
        raise EvolveError(
            f"cannot update {ref}: another process moved it meanwhile; rerun the command."
        ) from exc


def merge_ref(store: GitStore, ref: str, theirs: str, source: str, done: Merged) -> None:
    """Merge the commit `theirs` (fetched from `source`) into the local records ref `ref`."""
    kind = kind_of(ref)
    if kind is None:
        done.ignored.append(ref)
        return
    ours = store.ref_sha(ref)
    if ours == theirs or (ours is not None and store.is_ancestor(theirs, ours)):
        return
    if kind == POINTER:
        _merge_pointer(store, ref, ours, theirs, done)
        return
    their_tree = validate(store, kind, ref, ours, theirs)
    if ours is None or store.is_ancestor(ours, theirs):
        _move(store, ref, theirs, ours)  # a fast-forward: their history, as it is
        done.updated.append(ref)
        return
    tree = _write_tree(store, union(store, kind, _tree(store, ours), their_tree, done.kept_aside))
    sha = _commit(store, tree, [ours, theirs], f"records: merge {source}'s {ref}")
    _move(store, ref, sha, ours)
    done.updated.append(ref)
    done.merged.append(ref)


def _merge_pointer(store: GitStore, ref: str, ours: str | None, theirs: str, done: Merged) -> None:
    if not _HEX.fullmatch(theirs):
        raise Hostile(f"the remote's {ref} does not name a commit")
    if ours is None or store.is_ancestor(ours, theirs):
        _move(store, ref, theirs, ours)
        done.updated.append(ref)
        return
    # Unrelated tips: the remote's keeps the name (it is what everyone fetches; moving it
    # would be a forced push), this side's is kept beside it, and travels with the next push.
    aside = f"{ref}+{ours[:8]}"
    if store.ref_sha(aside) is None:
        _move(store, aside, ours, None)
        done.kept_aside.append(aside)
    _move(store, ref, theirs, ours)
    done.updated.append(ref)
