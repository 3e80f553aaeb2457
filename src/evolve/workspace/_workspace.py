"""The workspace: a git repository whose root holds `evolve.yaml`."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from evolve._checkout import SOURCE_CHECKOUT, source_checkout
from evolve.errors import NotAWorkspace, PathRefused
from evolve.store import GitStore
from evolve.workspace._paths import CONFIG_NAME, is_under, normalize_relpath, resolve

if TYPE_CHECKING:
    from evolve.workspace._config import EvolveConfig

PROMPTS = "prompts"
MEMORY = "memory"
EVALSET = "evalset"
TESTS = "tests"
GENERATIONS = "generations"
RUNS = "generations/runs"


def _exactly_under(path: PurePosixPath, prefix: str) -> bool:
    want = PurePosixPath(prefix.rstrip("/")).parts
    return path.parts[: len(want)] == want


def find_root(start: Path | None = None) -> Path:
    """Walk up from `start` (default: the current directory) to the folder holding `evolve.yaml`.

    Raises:
        NotAWorkspace: when no folder up to the file-system root has one.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    raise NotAWorkspace(
        f"no {CONFIG_NAME} found in {here} or any parent folder; run `evolve init DIR` to create "
        "a workspace, or pass --workspace."
    )


class Workspace:
    """An opened workspace: its root, configuration, git store and paths.

    The configuration is read and validated on opening, so a broken `evolve.yaml` is refused
    before anything is done. `read_config=False` defers that to the first use of `config`:
    `evolve log` and `evolve show` need no configuration, and building the pydantic model is
    most of their start-up.
    """

    def __init__(
        self, root: Path, config: EvolveConfig | None = None, *, read_config: bool = True
    ) -> None:
        self.root = root.resolve()
        if source_checkout(self.root):
            raise NotAWorkspace(SOURCE_CHECKOUT.format(root=self.root))
        if config is not None:
            self.config = config
        elif read_config:
            _ = self.config

    @cached_property
    def config(self) -> EvolveConfig:
        from evolve.workspace._config import load_config

        return load_config(self.root / CONFIG_NAME)

    @classmethod
    def find(cls, start: Path | None = None, *, read_config: bool = True) -> Workspace:
        return cls(find_root(start), read_config=read_config)

    @cached_property
    def store(self) -> GitStore:
        return GitStore(self.root)

    def resolve(self, path: str | PurePosixPath) -> Path:
        """Confine a workspace-relative path (see :func:`evolve.workspace.resolve`)."""
        return resolve(self.root, path)

    def is_protected(self, path: str | PurePosixPath) -> bool:
        """Whether `path` lies under a protected prefix of the configuration."""
        rel = normalize_relpath(path)
        return any(is_under(rel, prefix) for prefix in self.config.protected)

    def check_writable(self, path: str | PurePosixPath, allowed: tuple[str, ...]) -> Path:
        """Resolve `path` and refuse it unless it lies under one of `allowed` and is not protected.

        Both the path as named and the file it resolves to (through symlinks) are checked.
        The allow-list matches exactly; the protected list folds case and Unicode forms, so
        neither `TESTS/` nor a symlink into `evalset/` gets through.
        """
        full = self.resolve(path)
        named = normalize_relpath(path)
        target = PurePosixPath(full.relative_to(self.root).as_posix())
        for rel in (named, target):
            if self.is_protected(rel):
                raise PathRefused(f"refusing to modify protected path: {path}")
            if not any(_exactly_under(rel, prefix) for prefix in allowed):
                raise PathRefused(
                    f"refusing path {path}: only {', '.join(allowed)} may be changed here."
                )
        return full

    @property
    def memory_dir(self) -> Path:
        return self.root / MEMORY

    @property
    def prompts_dir(self) -> Path:
        return self.root / PROMPTS

    @property
    def evalset_dir(self) -> Path:
        return self.root / EVALSET

    @property
    def runs_dir(self) -> Path:
        return self.root / RUNS
