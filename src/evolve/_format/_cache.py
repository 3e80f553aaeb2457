"""Answers remembered in `.git/`, keyed by content and by the code that produced them.

The reading commands and `evolve run`'s fast path remember what the full models computed
(units a hand wrote in YAML, the settings of `evolve.yaml`, the rendered memory, the
validated evalset, what the sim parsed of a prompt), so that an unchanged input costs neither
the parse nor the import of pydantic and PyYAML again. Every such file is a :class:`DiskCache`:

- an entry is found by its key, which the caller builds from the content it depends on (the
  bytes of a file, or the stat of every file under a folder: no edit leaves them all equal);
- the file also records the **code version** of its entries: every evolve module loaded in
  the process that wrote them (the producing code, with whatever it imported), by path, stat
  and a digest of its source. When any of those modules changes, the whole file is a miss.
  Nothing is listed by hand, and no version string is trusted: a development checkout
  changes its code without changing `evolve.__version__`;
- the file is replaced atomically (a reader sees the old file or the new one), holds at most
  `size` entries (the most recent), and a file that cannot be read or written only means
  computing again: a cache never fails a command.

Checking the code version on a hit costs one `stat` per recorded module; a module whose stat
moved is hashed again, so a `touch` or a checkout that rewrote the same bytes keeps the
entries. Values are what `marshal` can hold (the standard library's fastest loader).

A `.git/` folder can come from someone else (a copied workspace, an archive), and `marshal`
is not safe on crafted bytes. So every file is **sealed**: an HMAC of its bytes under a key of
this user's (`cache-key` in evolve's cache folder outside git, made on first use, mode 0600),
checked before anything in it is loaded. A file sealed elsewhere, or not sealed, is a miss
(`seal`, `unseal`; the log cache seals its header the same way).
"""

from __future__ import annotations

import os
import sys

from evolve._confine import open_own

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

FORMAT = 2  # 2: sealed (`seal`)
_SEAL = b"evolve-sealed-1\n"
# The caches in `.git/` (besides `evolve-log.cache`, `evolve.quick._logcache`'s stream of
# `evolve log --json` lines), and what produces their entries.
UNITS_CACHE = "evolve-units.cache"  # unit files read before (`quick._read`, `memory._files`)
CONFIG_CACHE = "evolve-config.cache"  # what `memory` and `run` read of evolve.yaml
MEMORY_CACHE = "evolve-memory.cache"  # the rendered memory `run` injects
EVALSET_CACHE = "evolve-evalset.cache"  # the validated evalset (`envs.persona_world`)
SIM_CACHE = "evolve-sim.cache"  # what the sim parsed from a prompt (`evolve.sim._parse`)
YAML_CACHE = "evolve-yaml.cache"  # plain YAML documents by text digest (`evolve._yaml.load`)
# path -> (mtime_ns, size, digest) of an evolve module's source
Stamp = dict[str, tuple[int, int, bytes]]

_FINGERPRINTS: dict[str, tuple[int, int, bytes]] = {}  # this process's, by path


def _digest(path: str) -> bytes:
    import hashlib

    with open(path, "rb") as f:
        return hashlib.blake2b(f.read(), digest_size=16).digest()


def fingerprint(path: str) -> tuple[int, int, bytes] | None:
    """(mtime_ns, size, digest of the bytes) of the file at `path`, None when it is gone;
    computed once per process and file."""
    known = _FINGERPRINTS.get(path)
    if known is not None:
        return known
    try:
        st = os.stat(path)
        found = (st.st_mtime_ns, st.st_size, _digest(path))
    except OSError:
        return None
    _FINGERPRINTS[path] = found
    return found


def loaded_sources() -> list[str]:
    """The source files of every evolve module this process has loaded."""
    out = []
    for name, module in list(sys.modules.items()):
        if name == "evolve" or name.startswith("evolve."):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path.endswith(".py"):
                out.append(path)
    return out


def code_version(paths: list[str] | None = None) -> Stamp:
    """The code version of what this process computes: the fingerprints of `paths` (by
    default every evolve module it has loaded)."""
    out: Stamp = {}
    for path in loaded_sources() if paths is None else paths:
        found = fingerprint(path)
        if found is not None:
            out[path] = found
    return out


def unchanged(stamp: object) -> bool:
    """Whether every module a recorded code version names still has the same source."""
    if not isinstance(stamp, dict):
        return False
    for path, recorded in stamp.items():
        if not (isinstance(path, str) and isinstance(recorded, tuple) and len(recorded) == 3):
            return False
        known = _FINGERPRINTS.get(path)
        if known is not None:
            if known[2] != recorded[2]:
                return False
            continue
        try:
            st = os.stat(path)
        except OSError:
            return False
        if (st.st_mtime_ns, st.st_size) == recorded[:2]:
            continue
        found = fingerprint(path)  # the stat moved: the bytes decide
        if found is None or found[2] != recorded[2]:
            return False
    return True


_KEY: list[bytes | None] = []  # this process's: [the key] once read (None: no key to be had)


def _key_dir() -> str:
    """Evolve's cache folder outside git (as `evolve.llm._paths.cache_root`)."""
    explicit = os.environ.get("EVOLVE_CACHE_DIR")
    if explicit:
        return os.path.expanduser(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = os.path.expanduser(xdg) if xdg else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "evolve")


def local_key() -> bytes | None:
    """This user's key for sealing caches (32 random bytes in `<cache folder>/cache-key`,
    made once, atomically, readable by this user only); None when it cannot be had (no home,
    a read-only one): then nothing is cached."""
    if _KEY:
        return _KEY[0]
    folder = _key_dir()
    path = os.path.join(folder, "cache-key")
    key: bytes | None = None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        fd = -1
    except OSError:
        fd = -2
    if fd == -1:  # made here: written aside, then linked into place (never half a key)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
                f.write(os.urandom(32))
            try:
                os.link(tmp, path)  # FileExistsError: another process made it first
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            fd = -2
    if fd >= 0:
        with os.fdopen(fd, "rb") as f:
            data = f.read(64)
        key = data if len(data) == 32 else None
    _KEY.append(key)
    return key


def _mac(key: bytes, data: bytes) -> bytes:
    import hmac

    return hmac.new(key, data, "sha256").digest()


def sign(data: bytes) -> bytes | None:
    """This user's HMAC of `data`; None when there is no key."""
    key = local_key()
    return None if key is None else _mac(key, data)


def seal(data: bytes) -> bytes | None:
    """`data` with this user's seal in front; None when there is no key."""
    key = local_key()
    return None if key is None else _SEAL + _mac(key, data) + data


def unseal(sealed: bytes) -> bytes | None:
    """The bytes `seal` sealed, when this user's key sealed them; else None."""
    key = local_key()
    n = len(_SEAL)
    if key is None or not sealed.startswith(_SEAL) or len(sealed) < n + 32:
        return None
    import hmac

    mac, data = sealed[n : n + 32], sealed[n + 32 :]
    return data if hmac.compare_digest(mac, _mac(key, data)) else None


# Inside `frozen()` (a dry run: it changes nothing, not even inside .git) no cache file is
# written; lookups still read, and what a process learns stays in its memory.
_FROZEN = [0]


class frozen:  # noqa: N801 - used as `with frozen():`, as contextlib's helpers are
    """Within the block, every `DiskCache` of this process only reads (nestable)."""

    def __enter__(self) -> None:
        _FROZEN[0] += 1

    def __exit__(self, *exc: object) -> None:
        _FROZEN[0] -= 1


class DiskCache:
    """The file at `path`: entries `key -> value`, valid for the code that wrote them (see
    the module docstring; `code` names the source files that produce the entries, when they
    are known, instead of every module loaded). `path` None: no file, every lookup misses.

    `valid(value)` says whether a loaded value has the shape its reader expects (a file an
    older evolve wrote, or a damaged one): other entries are dropped, not served.
    """

    def __init__(
        self,
        path: str | None,
        *,
        size: int | None = 8,
        valid: Callable[[object], bool] | None = None,
        code: list[str] | None = None,
    ) -> None:
        self.path = path
        self.size = size
        self.valid = valid
        self.code = code  # the sources that produce its entries (None: every loaded module)
        self._entries: dict[object, object] | None = None
        self._stamp: Stamp = {}

    def entries(self) -> dict[object, object]:
        """Every entry the file holds for the current code (read once)."""
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def _load(self) -> dict[object, object]:
        if self.path is None:
            return {}
        import marshal

        try:
            with os.fdopen(open_own(self.path), "rb") as f:
                payload = unseal(f.read())
            if payload is None:  # sealed by someone else, or not at all: never unmarshalled
                return {}
            data = marshal.loads(payload)
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        if (
            not isinstance(data, tuple)
            or len(data) != 3
            or data[0] != (FORMAT, sys.version_info[:2])
            or not isinstance(data[2], dict)
            or not unchanged(data[1])
        ):
            return {}
        self._stamp = data[1]
        if self.valid is None:
            return data[2]
        return {k: v for k, v in data[2].items() if self.valid(v)}

    def get(self, key: object) -> object | None:
        """The value remembered for `key`, or None."""
        return self.entries().get(key)

    def put(self, key: object, value: object) -> None:
        """Remember `value` for `key` (the most recent entry; the oldest beyond `size` go)."""
        entries = self.entries()
        entries.pop(key, None)
        entries[key] = value
        self.save(entries)

    def save(self, entries: dict[object, object]) -> None:
        """Replace the file's entries with `entries` (its last `size`), stamped with the code
        version of this process (and of the entries it kept); never fails the command."""
        if self.path is None:
            return
        import marshal

        if self.size is not None and len(entries) > self.size:
            entries = dict(list(entries.items())[-self.size :])
        self._entries = entries
        if _FROZEN[0]:
            return
        stamp = {**self._stamp, **code_version(self.code)}
        self._stamp = stamp
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            sealed = seal(marshal.dumps(((FORMAT, sys.version_info[:2]), stamp, entries)))
            if sealed is None:  # no key to seal with: nothing is remembered
                return
            with os.fdopen(open_own(tmp, write=True), "wb") as f:
                f.write(sealed)
            os.replace(tmp, self.path)
        except (OSError, ValueError):  # ValueError: a value marshal cannot hold
            try:  # noqa: SIM105 - contextlib costs start-up here
                os.unlink(tmp)
            except OSError:
                pass

    def exists(self) -> bool:
        return self.path is not None and os.path.exists(self.path)
