"""The workspace's git set-up that can make git show files other than those committed.

The gate judges exactly the committed bytes (`evolve.store._committed`: no replace ref, graft,
attribute, filter or textconv driver is honoured by what it reads). A workspace whose `.git/`
carries such a set-up is still named before a generation starts, and refused unless the
user passes `--trust-git-config` (`evolve(..., trust_git_config=True)`): someone set it up to
make git show other files, and whoever runs the gate should know. What is named:

- replace refs (`refs/replace/`, which `git replace` and `git replace --graft` write);
- grafts (`info/grafts`);
- `info/attributes` holding any rule, or `core.attributesFile` in the repository's own
  configuration;
- a key of the repository's own configuration that makes git run a program: a filter
  (`filter.<name>.*`), textconv or diff command (`diff.<name>.textconv/command`,
  `diff.external`), merge driver (`merge.<name>.driver`), file-system monitor
  (`core.fsmonitor`), hooks folder (`core.hooksPath`), ssh command (`core.sshCommand`), pager
  (`core.pager`, `pager.<command>`) or signing program (`gpg.program`, `gpg.<format>.program`),
  unless its value turns it off (`false`);
- a `.gitattributes` (committed at the root or under a protected path, or on disk there)
  setting `filter`, `diff`, `export-ignore`, `export-subst`, `ident` or
  `working-tree-encoding` (directly or through a macro) on a protected file;
- a hook that names a protected path or git's replace, graft, attribute, filter or
  index-flag machinery (or cannot be read as text).

The user's and the system's configuration are the user's own and are not named (`git lfs
install` writes a filter there). The check reads files only: it runs no hook and no filter.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from evolve.store import GitStore
from evolve.workspace._drivers import DRIVERS, attribute_lines, driver_command

TRUST_FLAG = "--trust-git-config"
WATCHED_ATTRIBUTES = frozenset(
    {"filter", "diff", "export-ignore", "export-subst", "ident", "working-tree-encoding"}
)
# Keys of the repository's own configuration that make git run a program or read other
# files than those committed: a filter, textconv, diff or merge driver, an external diff, a
# file-system monitor (`core.fsmonitor`, run by `git status` and the index), a hooks folder
# (`core.hooksPath`, which can point into the workspace's own evolvable files), an ssh
# command, a pager (`core.pager`, `pager.<command>`), a signing program.
_CONFIG = re.compile(
    r"^(filter\..+\..+|diff\..+\.(textconv|command)|merge\..+\.driver|pager\..+"
    r"|gpg\.(.+\.)?program)$"
)
_LOCAL_KEYS = (
    "diff.external",
    "core.attributesfile",
    "core.fsmonitor",
    "core.hookspath",
    "core.sshcommand",
    "core.pager",
)
# A value that turns a key off (`core.fsmonitor = false`, `pager.log = false`) runs nothing.
_OFF = frozenset({"", "false", "no", "off", "0"})
_HOOK_MARKERS = (
    "git replace",
    "refs/replace",
    "grafts",
    "attributes",
    "filter.",
    "textconv",
    "update-index",
    "skip-worktree",
    "assume-unchanged",
)
_SHOWN = 3
# evolve's own merge drivers (`evolve init`, `evolve clone`): the counter sidecars' attribute
# lines, and each driver's command exactly as this interpreter registers it. They run only in a
# merge, never when the gate reads a commit; any other value under their names is named.
_OWN_ATTRIBUTES = frozenset(attribute_lines())


def _own_driver(key: str, value: str | None) -> bool:
    return any(
        key == f"merge.{name}.driver" and value == driver_command(kind)
        for kind, name in DRIVERS.items()
    )


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _rules(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and line[:1] != "#"]


_READ_LIMIT = 1 << 20  # a set-up file is named by its first MiB


def _read_bytes(path: Path) -> bytes | None:
    """The first MiB of the regular file at `path`, never through a link or from a device
    (a hostile `.git/` may hold `info/attributes -> /dev/zero`); None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return b"(a link)" if exc.errno == errno.ELOOP else None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return b"(not a file)"
        return handle.read(_READ_LIMIT)


def _read(path: Path) -> str | None:
    data = _read_bytes(path)
    return None if data is None else data.decode("utf-8", "replace")


def _watched_attrs(tokens: Iterable[str], macros: dict[str, bool]) -> bool:
    """Whether attribute tokens set (not unset) a watched attribute or a macro that does."""
    for token in tokens:
        if token[:1] in ("-", "!"):
            continue
        name = token.partition("=")[0]
        if name in WATCHED_ATTRIBUTES or macros.get(name):
            return True
    return False


def _pattern_hits(pattern: str, base: str, files: Sequence[str]) -> list[str]:
    """The `files` (workspace paths) a gitattributes pattern in folder `base` could match
    (over-approximated: a `*` may cross a folder)."""
    pattern = pattern.strip('"')
    if pattern.startswith("!"):
        return []
    anchored = "/" in pattern.rstrip("/")
    clean = pattern.lstrip("/")
    hits = []
    for path in files:
        if base and not path.startswith(base + "/"):
            continue
        rel = path[len(base) + 1 :] if base else path
        target = rel if anchored else rel.rsplit("/", 1)[-1]
        if fnmatch.fnmatchcase(target, clean) or (
            clean.endswith("/**") and rel.startswith(clean[:-3] + "/")
        ):
            hits.append(path)
    return hits


def attribute_hits(text: str, base: str, files: Sequence[str]) -> list[str]:
    """The protected `files` that a `.gitattributes` in folder `base` (`text`) gives a watched
    attribute."""
    macros: dict[str, bool] = {}
    hits: set[str] = set()
    for rule in _rules(text):
        pattern, *tokens = rule.split()
        if pattern.startswith("[attr]"):
            macros[pattern[6:]] = _watched_attrs(tokens, macros)
        elif _watched_attrs(tokens, macros):
            hits.update(_pattern_hits(pattern, base, files))
    return sorted(hits)


def _hook_finding(path: Path, watched: Sequence[str]) -> str | None:
    if path.is_symlink():
        return f"the hook {path.name}, which is a link evolve does not follow"
    data = _read_bytes(path)
    if data is None or data == b"(not a file)":
        return f"the hook {path.name}, which cannot be read as a file"
    if b"\x00" in data:
        return f"the hook {path.name}, which is not a text file evolve can read"
    text = data.decode("utf-8", "replace")
    for name in watched:
        if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text):
            return f"the hook {path.name}, which names {name}"
    for marker in _HOOK_MARKERS:
        if marker in text:
            return f"the hook {path.name}, which names {marker.strip('.')}"
    return None


def _hooks(store: GitStore, watched: Sequence[str]) -> list[str]:
    folder = store.hooks_dir()
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    found = []
    for path in entries:
        if path.name.endswith(".sample") or not os.access(path, os.X_OK) or path.is_dir():
            continue
        finding = _hook_finding(path, watched)
        if finding:
            found.append(finding)
    return found


def _attribute_files(store: GitStore, rev: str, prefixes: Sequence[str]) -> list[tuple[str, str]]:
    """(folder, text) of every `.gitattributes` that can apply to a protected path (at the
    root, in a folder above one, or under one), as committed at `rev` and as on disk."""
    texts: set[tuple[str, str]] = set()
    above = {""}
    for prefix in prefixes:
        parts = prefix.split("/")[:-1]
        above.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    names = sorted(f"{folder}/.gitattributes" if folder else ".gitattributes" for folder in above)
    entries = store.committed_entries(rev, [*prefixes, *names])
    ids = {p: oid for p, (mode, oid) in entries.items() if p.rsplit("/", 1)[-1] == ".gitattributes"}
    blobs = store.read_blobs(ids.values())
    for rel, oid in ids.items():
        texts.add((rel.rpartition("/")[0], blobs[oid].decode("utf-8", "replace")))
    on_disk = [store.root / name for name in names]
    for prefix in prefixes:
        folder = store.root / prefix
        if folder.is_dir() and not folder.is_symlink():
            on_disk += [p for p in folder.rglob(".gitattributes") if not p.is_symlink()]
    for path in on_disk:
        text = _read(path)
        if text is not None:
            folder_rel = path.parent.relative_to(store.root).as_posix()
            texts.add(("" if folder_rel == "." else folder_rel, text))
    return sorted(texts)


def git_setup(store: GitStore, rev: str, protected: Sequence[str]) -> list[str]:
    """What in the workspace's git set-up can make git show files other than those
    committed at `rev` (see the module's docstring), each as a short phrase; [] when none."""
    prefixes = [p.strip("/") for p in protected if p.strip("/")]
    found: list[str] = []
    replaced = store.replace_refs()
    if replaced:
        found.append(f"replace refs ({_names(replaced)})")
    if store.head() is not None:  # grafts only matter with history
        grafts = _read(store.common_dir / "info" / "grafts")
        if grafts is not None and _rules(grafts):
            found.append(".git/info/grafts")
    attributes = _read(store.common_dir / "info" / "attributes")
    if attributes is not None and [r for r in _rules(attributes) if r not in _OWN_ATTRIBUTES]:
        found.append(".git/info/attributes")
    config = store.local_config()
    keys = sorted(
        k
        for k, value in config.items()
        if (_CONFIG.match(k) or k in _LOCAL_KEYS)
        and (value is None or value.strip().lower() not in _OFF)
        and not _own_driver(k, value)
    )
    if keys:
        found.append(f"{_names(keys)} in the repository's configuration")
    files = sorted(store.committed_entries(rev, prefixes)) if prefixes else []
    with contextlib.suppress(OSError):
        for base, text in _attribute_files(store, rev, prefixes):
            hits = attribute_hits(text, base, files)
            if hits:
                where = f"{base}/.gitattributes" if base else ".gitattributes"
                found.append(f"{where} setting a filter or export rule on {_names(hits)}")
    found += _hooks(store, [*prefixes, *[p.rsplit("/", 1)[-1] for p in prefixes]])
    return list(dict.fromkeys(found))


def setup_sentence(found: Sequence[str]) -> str:
    """The one sentence that refuses a generation on `found` (see :func:`git_setup`)."""
    return (
        "refusing to start a generation: this workspace's git set-up can make git show files "
        f"other than those committed ({'; '.join(found)}); remove it, or pass {TRUST_FLAG} "
        "to have the gate judge exactly the committed files anyway."
    )
