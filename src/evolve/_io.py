"""Small I/O helpers: atomic writes, canonical JSON and the files shipped in evolve's packages.

Canonical JSON (sorted keys, no insignificant whitespace, UTF-8) is what every hash in evolve
is taken over; changing it changes every hash.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


def canonical_json(value: Any) -> str:
    """Serialize `value` in evolve's canonical JSON form."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(data: str | bytes) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


# File names are at most 255 bytes on common file systems; mkstemp adds 8 random characters
# and we add ".tmp", so the name part of a temporary file's prefix keeps this many bytes.
_NAME_BYTES = 255 - len(".") - len(".") - 8 - len(".tmp")


def temp_prefix(name: str) -> str:
    """The prefix of a temporary file next to a file called `name` (".<name>."), with the
    name cut so that the whole temporary name fits in 255 bytes, at a character boundary."""
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) > _NAME_BYTES:
        name = raw[:_NAME_BYTES].decode("utf-8", "ignore")
    return f".{name}."


def atomic_write(path: Path, data: str | bytes, *, fsync: bool = False) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a part.

    The rename makes the write atomic against a killed process; `fsync=True` also makes it
    durable against power loss, at a cost of milliseconds per file.
    """
    io_fault(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644  # what a new file gets under the usual umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def derive_seed(*parts: object) -> int:
    """A 32-bit seed derived from `parts`; stable across processes and Python versions."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big")


_IO_FAULTS = ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EFBIG")


def io_fault(path: object) -> None:
    """The test seam for write errors: fail this write of `path` with the `OSError` that
    `EVOLVE_FAULT=io:<ERRNO>[:<text>]` names when `path` contains `<text>` (see
    `evolve._faults`); otherwise do nothing."""
    spec = os.environ.get("EVOLVE_FAULT")
    if not spec or not spec.startswith("io:"):
        return
    name, _, text = spec[3:].partition(":")
    if name not in _IO_FAULTS or text not in str(path):
        return
    code = getattr(errno, name)
    raise OSError(code, os.strerror(code), str(path))


def package_files(package: str) -> Path | Traversable:
    """The files shipped in `package`, as `importlib.resources.files(package)` gives them: the
    package's own folder where it is one on disk (an installed or checked-out evolve), so that
    reading a prompt imports neither `importlib.resources` nor `zipfile`; the resource reader
    otherwise (a package in a zip file, say)."""
    spec = importlib.import_module(package).__spec__
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    if len(folders) == 1 and os.path.isdir(folders[0]):
        return Path(folders[0])
    from importlib import resources

    return resources.files(package)


def package_text(package: str, *parts: str) -> str:
    """The text (UTF-8) of the file at `parts` in `package` (see :func:`package_files`)."""
    return package_files(package).joinpath(*parts).read_text("utf-8")
