"""Confined opens: every file evolve reads or writes in a workspace is reached without
following a link out of it.

A workspace can come from someone else (a clone, a pull), so a symbolic link in it is input:
`prompts/notes.md -> /home/me/.ssh/id_rsa` would send a private file to the model provider,
`generations/runs -> /etc` would append records to a system file. The rule, for every path
evolve opens under the workspace root:

- a link whose target resolves outside the workspace, or into `.git/`, is refused with one
  sentence naming the link (its path in the workspace) and where it points;
- a link whose target stays inside the workspace (not under `.git/`) is followed, as
  `evolve.workspace.resolve` follows it for a proposal's path;
- the check is made when the file is opened, not only before: the path is resolved, then
  walked again one folder at a time from the root with `O_NOFOLLOW`, so a folder or file
  swapped for a link in between is refused (`ELOOP`), never followed.

Standard library and `evolve.errors` only: the memory reader, the unit scanner and the
writers above share this one module.
"""

from __future__ import annotations

import contextlib
import errno
import os
from functools import lru_cache

from evolve.errors import PathRefused

TYPE_CHECKING = False
if TYPE_CHECKING:  # the reading commands load this module: no pathlib (re, urllib) at import
    from pathlib import Path, PurePosixPath

_GIT = ".git"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def link_refused(link: str, target: str, root: str) -> PathRefused:
    """The sentence for a link at workspace-relative `link` that points to `target`."""
    git = os.path.join(root, _GIT)
    where = (
        "into .git/"
        if target == git or target.startswith(git + os.sep)
        else "outside the workspace"
    )
    return PathRefused(
        f"refusing {link}: it is a symbolic link to {target}, {where}; evolve never follows "
        "a link out of the workspace, so replace it with the file itself or remove it."
    )


def _inside(root: str, real: str) -> str | None:
    """`real` relative to `root` ("" for the root), or None when it lies outside or in .git/."""
    if real == root:
        return ""
    if not real.startswith(root.rstrip(os.sep) + os.sep):
        return None
    rel = real[len(root.rstrip(os.sep)) + 1 :]
    if rel.split(os.sep, 1)[0].casefold() == _GIT:
        return None
    return rel


def _first_link_out(root: str, rel: str) -> tuple[str, str] | None:
    """(the link's workspace path, its resolved target) for the first component of `rel` that
    is a link leading outside `root` or into .git/; None when there is none."""
    parts = [p for p in rel.split("/") if p]
    for i in range(len(parts)):
        here = os.path.join(root, *parts[: i + 1])
        if os.path.islink(here):
            real = os.path.realpath(here)
            if _inside(root, real) is None:
                return "/".join(parts[: i + 1]), real
    return None


@lru_cache(maxsize=64)
def real_root(root: str) -> str:
    """The real path of a workspace root (remembered: readers call this per file)."""
    return os.path.realpath(root)


def real_rel(root: Path | str, rel: str | PurePosixPath) -> str:
    """The workspace-relative path `rel` names, with links inside the workspace resolved.

    Nothing is opened.

    Raises:
        PathRefused: a component of `rel` is a link out of the workspace or into `.git/`
            (one sentence naming the link).
    """
    root_s = real_root(str(root))
    rel_s = str(rel)
    lexical = os.path.join(root_s, rel_s)
    real = os.path.realpath(lexical)
    inside = _inside(root_s, real)
    if inside is None:
        found = _first_link_out(root_s, rel_s)
        link, target = found if found is not None else (rel_s, real)
        raise link_refused(link, target, root_s)
    return inside


def check(root: Path | str, rel: str | PurePosixPath) -> None:
    """Refuse `rel` when it leads out of the workspace through a link (see `real_rel`)."""
    real_rel(root, rel)


def _walk(root: str, parts: list[str], rel: str, *, create: bool) -> int:
    """A descriptor of the folder `root/parts...`, opened one component at a time without
    following any link (the components come from `real_rel`, so none should be one)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if os.path.islink(os.path.join(root, *parts[: parts.index(part) + 1])):
                    raise _swapped(rel) from exc
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _io_fault(path: str) -> None:
    """`evolve._io.io_fault` (imported when a file is written: the readers never load `_io`)."""
    from evolve._io import io_fault

    io_fault(path)


def _swapped(rel: str) -> PathRefused:
    return PathRefused(
        f"refusing {rel}: a folder or file on its path became a symbolic link while it was "
        "being opened; evolve never follows a link out of the workspace."
    )


def _split(real: str) -> tuple[list[str], str]:
    parts = real.split(os.sep)
    return parts[:-1], parts[-1]


def open_fd(root: Path | str, rel: str | PurePosixPath, flags: int, mode: int = 0o666) -> int:
    """`os.open` of the workspace file `rel` with `flags`, confined: no component is a link
    out (refused by name), and the file is reached through real folders with `O_NOFOLLOW`.
    Missing folders are made when `flags` has `O_CREAT`."""
    root_s = real_root(str(root))
    real = real_rel(root_s, rel)
    if not real:
        raise PathRefused(f"refusing {rel}: it names the workspace root itself.")
    if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
        _io_fault(os.path.join(root_s, real))
    folders, name = _split(real)
    folder = _walk(root_s, folders, str(rel), create=bool(flags & os.O_CREAT))
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
    except OSError as exc:
        if os.path.islink(os.path.join(root_s, real)):
            raise _swapped(str(rel)) from exc
        raise
    finally:
        os.close(folder)


def read_bytes(root: Path | str, rel: str | PurePosixPath) -> bytes:
    """The bytes of the workspace file `rel`, opened confined (see `open_fd`)."""
    with os.fdopen(open_fd(root, rel, os.O_RDONLY), "rb") as f:
        return f.read()


def read_text(root: Path | str, rel: str | PurePosixPath) -> str:
    """The text of the workspace file `rel` (UTF-8, universal newlines, as `Path.read_text`)."""
    with os.fdopen(open_fd(root, rel, os.O_RDONLY), encoding="utf-8") as f:
        return f.read()


def append_text(root: Path | str, rel: str | PurePosixPath, text: str) -> None:
    """Append `text` to the workspace file `rel` (made with its folders when missing)."""
    fd = open_fd(root, rel, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(text)


def make_folders(root: Path | str, rel: str | PurePosixPath) -> None:
    """Make the workspace folder `rel` and its parents, confined (see `open_fd`)."""
    root_s = real_root(str(root))
    real = real_rel(root_s, rel)
    os.close(_walk(root_s, [p for p in real.split(os.sep) if p], str(rel), create=True))


def write_atomic(root: Path | str, rel: str | PurePosixPath, data: str | bytes) -> None:
    """Write `data` to the workspace file `rel` as `evolve._io.atomic_write` does (readers see
    the old file or the new one), confined: the temporary file is made and renamed inside the
    folder's descriptor, reached without following a link."""
    root_s = real_root(str(root))
    real = real_rel(root_s, rel)
    if not real:
        raise PathRefused(f"refusing {rel}: it names the workspace root itself.")
    _io_fault(os.path.join(root_s, real))
    folders, name = _split(real)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    folder = _walk(root_s, folders, str(rel), create=True)
    try:
        try:
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
        tmp, fd = _temp_file(folder, name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(raw)
                os.fchmod(handle.fileno(), mode)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def _temp_file(folder: int, name: str) -> tuple[str, int]:
    """A new temporary file beside `name` in `folder`: its name and a descriptor to write."""
    from evolve._io import temp_prefix

    for _ in range(100):
        candidate = f"{temp_prefix(name)}{os.urandom(4).hex()}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            return candidate, os.open(candidate, flags, 0o600, dir_fd=folder)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {name}")


def read_listed(path: str, rel: str) -> str:
    """The text of a file a folder walk listed as a regular file (at `path`, workspace path
    `rel`), opened with `O_NOFOLLOW`: a file swapped for a link since it was listed is refused,
    never followed (UTF-8, universal newlines, as `Path.read_text`)."""
    with os.fdopen(open_listed(path, rel), encoding="utf-8") as f:
        return f.read()


def open_listed(path: str, rel: str) -> int:
    """A read descriptor of the file a folder walk listed (see `read_listed`)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _swapped(rel) from None
        raise


def check_tree(root: Path | str, rel: str) -> None:
    """Refuse the workspace folder `rel` when it, or any link under it, leads out of the
    workspace or into `.git/` (by name, the first found in walk order). Links that stay
    inside pass. For folders whose files are read by paths the reader does not confine
    itself (the evalset, read by an environment that knows no workspace)."""
    root_s = real_root(str(root))
    check(root_s, rel)
    top = os.path.join(root_s, rel)
    for folder, dirs, files in os.walk(top):  # links to folders are listed, not entered
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(folder, name)
            if os.path.islink(path):
                check(root_s, os.path.relpath(path, root_s).replace(os.sep, "/"))


def append_under(base: Path | str, rel: str, text: str) -> None:
    """Append `text` to the file `rel` under `base`, a folder of evolve's own (`.git/`), made
    with its folders when missing: no component under `base` is followed if it is a link (one
    swapped in is refused by name), as git itself does not follow them there."""
    real_base = os.path.realpath(str(base))
    _io_fault(os.path.join(real_base, rel))
    parts = [p for p in rel.split("/") if p]
    folder = _walk(real_base, parts[:-1], rel, create=True)
    try:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(parts[-1], flags, 0o644, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _swapped(rel) from None
        raise
    finally:
        os.close(folder)
    with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as handle:
        handle.write(text)


def open_own(path: str, *, write: bool = False) -> int:
    """A descriptor of `path`, a file of evolve's own outside the workspace's tracked files (a
    cache or digest under `.git/`, or its temporary file), never reached through a link at its
    name: reading opens with `O_NOFOLLOW` (a link raises `OSError`, which such a cache reads as
    "no cache"); writing creates the file afresh, a leftover of the same name removed first and
    `O_EXCL` refusing whatever appears in between, so a planted link is never written through."""
    if not write:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:  # noqa: SIM105 - contextlib costs the reading commands start-up
        os.unlink(path)  # a link is removed itself, never its target
    except FileNotFoundError:
        pass
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, 0o644)
