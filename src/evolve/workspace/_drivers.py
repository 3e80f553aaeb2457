"""Registering evolve's merge drivers with git: `.gitattributes` and the config.

Counter sidecars merge three-way (`evolve.merge._drivers`); git runs a driver only when a
file's attributes name it (`merge=evolve-counters`) AND the repository's config says what to
run for that name (`merge.evolve-counters.driver`). `evolve init` writes both (the attributes
committed in `.gitattributes`, so every clone has them); `evolve clone` (and anyone, with
:func:`install_merge_drivers`) writes the config, which git never carries. A clone made with
plain `git clone` has the attributes but no config: git then merges the sidecars line by line
as before, and `evolve merge --fix` (or any evolve writer's refusal) says so.

The config runs this Python (`sys.executable -m evolve merge-driver ...`), so the driver is
the evolve that registered it, whatever `PATH` git sees.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

KINDS = ("counters", "strata", "failed", "staging")  # evolve.merge._drivers.KINDS
DRIVERS = {kind: f"evolve-{kind}" for kind in KINDS}
PATTERNS = {
    "counters": "memory/**/_counters.yaml",
    "strata": "memory/skills/_strata.yaml",
    "failed": "memory/skills/_failed_tasks.yaml",
    "staging": "memory/skills/_staging.yaml",
}
ATTRIBUTES_HEADER = (
    "# evolve: counter sidecars merge three-way (evolve merge-driver; docs/sharing.md)"
)


def attribute_lines() -> list[str]:
    """The `.gitattributes` lines that name evolve's drivers."""
    return [f"{PATTERNS[kind]} merge={DRIVERS[kind]}" for kind in KINDS]


def attributes_text() -> str:
    """What `evolve init` writes to a new workspace's `.gitattributes`."""
    return "\n".join([ATTRIBUTES_HEADER, *attribute_lines()]) + "\n"


def driver_command(kind: str, python: str | None = None) -> str:
    """The command git runs for `kind` (`%O %A %B %P`: base, ours, theirs, path)."""
    exe = shlex.quote(python or sys.executable)
    return f"{exe} -m evolve merge-driver {kind} %O %A %B %P"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, encoding="utf-8", check=False
    )


def _missing_attributes(root: Path) -> list[str]:
    """The driver lines neither `.gitattributes` nor `.git/info/attributes` holds."""
    have: set[str] = set()
    for path in (root / ".gitattributes", _info_attributes(root)):
        if path is not None and path.is_file() and not path.is_symlink():
            try:
                have.update(line.strip() for line in path.read_text("utf-8").splitlines())
            except (OSError, UnicodeDecodeError):
                continue
    return [line for line in attribute_lines() if line not in have]


def _info_attributes(root: Path) -> Path | None:
    done = _git(root, "rev-parse", "--git-path", "info/attributes")
    if done.returncode != 0 or not done.stdout.strip():
        return None
    path = Path(done.stdout.strip())
    return path if path.is_absolute() else root / path


def install_merge_drivers(repo_root: Path | str, *, python: str | None = None) -> list[str]:
    """Register evolve's merge drivers in the repository at `repo_root`: each driver's
    command in its local config, and the attribute lines its `.gitattributes` lacks in
    `.git/info/attributes` (local, never committed: the working tree stays clean).
    Idempotent; returns the config keys it set.

    Raises:
        EvolveError: `repo_root` is not a git repository, or git refused the config.
    """
    from evolve.errors import EvolveError

    root = Path(repo_root)
    set_keys: list[str] = []
    for kind in KINDS:
        name = DRIVERS[kind]
        for key, value in (
            (f"merge.{name}.name", f"evolve: three-way merge of {kind} counts"),
            (f"merge.{name}.driver", driver_command(kind, python)),
        ):
            done = _git(root, "config", "--local", key, value)
            if done.returncode != 0:
                raise EvolveError(
                    f"git could not register evolve's merge driver in {root} "
                    f"({done.stderr.strip() or 'git config failed'}); run it inside the "
                    "workspace's repository."
                )
            set_keys.append(key)
    missing = _missing_attributes(root)
    if missing:
        info = _info_attributes(root)
        if info is None:
            raise EvolveError(f"{root} is not a git repository; run `evolve init` first.")
        info.parent.mkdir(parents=True, exist_ok=True)
        old = info.read_text("utf-8") if info.is_file() and not info.is_symlink() else ""
        sep = "" if not old or old.endswith("\n") else "\n"
        with open(info, "a", encoding="utf-8") as f:
            f.write(sep + "\n".join([ATTRIBUTES_HEADER, *missing]) + "\n")
    return set_keys


def drivers_installed(repo_root: Path | str) -> bool:
    """Whether the repository's config names a command for every evolve merge driver."""
    root = Path(repo_root)
    for kind in KINDS:
        done = _git(root, "config", "--get", f"merge.{DRIVERS[kind]}.driver")
        if done.returncode != 0 or not done.stdout.strip():
            return False
    return not _missing_attributes(root)
