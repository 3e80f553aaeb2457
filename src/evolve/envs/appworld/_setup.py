"""`evolve appworld setup` and `evolve appworld splits`: the venv, the install, the data."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evolve.envs.appworld._client import START_TIMEOUT_S, WorkerClient
from evolve.envs.appworld._paths import APPWORLD_VERSION, home, root_file, venv_dir, venv_python
from evolve.errors import EvolveError

Say = Callable[[str], None]

# AppWorld's own dataset files, when the data has them: train / dev / holdout.
DATASET_SPLITS = {"train": ("train",), "dev": ("dev",), "holdout": ("test_normal",)}


@dataclass(frozen=True)
class SetupReport:
    venv: Path
    version: str
    root: Path | None
    tasks: int
    missing: str | None  # one sentence when no data was found


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise EvolveError(f"{what} failed ({tail[0][:200]}); see the command `{' '.join(cmd)}`.")
    return proc.stdout


def _installed_version(python: Path) -> str | None:
    if not python.is_file():
        return None
    proc = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('appworld'))"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stdout.strip() if proc.returncode == 0 else None


def _apps_unpacked(python: Path) -> bool:
    proc = subprocess.run(
        [str(python), "-c", "import appworld.apps.phone.apis, appworld.apps.venmo.apis"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.returncode == 0


def setup(root: Path | None, say: Say) -> SetupReport:
    """Create (or reuse) the AppWorld venv, unpack the apps, and look for the data."""
    venv = venv_dir()
    python = venv_python()
    version = _installed_version(python)
    if version == APPWORLD_VERSION:
        say(f"[1/3] AppWorld {version} already installed in {venv}")
    else:
        say(f"[1/3] creating {venv} with appworld=={APPWORLD_VERSION} (about 20 s)")
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        try:
            _run([sys.executable, "-m", "venv", str(venv)], "creating the AppWorld venv")
            _run(
                [str(python), "-m", "pip", "install", "-q", f"appworld=={APPWORLD_VERSION}"],
                f"installing appworld=={APPWORLD_VERSION} (pip needs its index)",
            )
        except BaseException:
            shutil.rmtree(venv, ignore_errors=True)  # nothing half-installed is reused
            raise
        version = APPWORLD_VERSION
    if _apps_unpacked(python):
        say("[2/3] AppWorld's apps are unpacked")
    else:
        say("[2/3] unpacking AppWorld's apps (appworld install)")
        _run([str(venv / "bin" / "appworld"), "install"], "appworld install")
        if not _apps_unpacked(python):
            raise EvolveError("`appworld install` ran but the apps are still missing.")
    if root is not None:
        root = root.expanduser().resolve()
        root_file().parent.mkdir(parents=True, exist_ok=True)
        root_file().write_text(str(root) + "\n", encoding="utf-8")
    else:
        raw = os.environ.get("APPWORLD_ROOT")
        root = Path(raw).expanduser().resolve() if raw else None
        if root is None and root_file().is_file():
            text = root_file().read_text(encoding="utf-8").strip()
            root = Path(text) if text else None
    say(f"[3/3] looking for AppWorld data under {root or '$APPWORLD_ROOT (unset)'}")
    tasks = count_tasks(root)
    missing: str | None = None
    if root is None:
        missing = (
            "No AppWorld data found: set APPWORLD_ROOT or pass --root DIR for a folder holding "
            f"data/ (get it with `{venv}/bin/appworld download data --root DIR`)."
        )
    elif tasks == 0:
        missing = (
            f"No AppWorld tasks under {root}/data/tasks: download them with "
            f"`{venv}/bin/appworld download data --root {root}` on a machine with internet."
        )
    return SetupReport(venv, version or "", root, tasks, missing)


def count_tasks(root: Path | None) -> int:
    tasks = root / "data" / "tasks" if root is not None else None
    if tasks is None or not tasks.is_dir():
        return 0
    return sum(1 for p in tasks.iterdir() if (p / "specs.json").is_file())


def _bucket(family: str) -> str:
    """A scenario's split when the data has no dataset files: 60/20/20 by a stable hash."""
    h = int(hashlib.sha256(family.encode()).hexdigest()[:8], 16) % 10
    return "train" if h < 6 else ("dev" if h < 8 else "holdout")


def build_splits(root: Path) -> dict[str, list[str]]:
    """Splits over the tasks installed under `root`, families (scenarios) disjoint.

    AppWorld's own dataset files decide where they exist (train, dev, test_normal as
    holdout); other installed tasks go by a stable hash of their scenario.
    """
    from evolve.envs.appworld._env import family_of

    client = WorkerClient(root)
    try:
        answer = client.request("tasks", timeout=START_TIMEOUT_S)
    finally:
        client.stop()
    installed = sorted(answer["tasks"])
    datasets: dict[str, list[str]] = answer.get("datasets", {})
    split_of: dict[str, str] = {}
    for split, names in DATASET_SPLITS.items():
        for name in names:
            for task_id in datasets.get(name, []):
                if task_id in answer["tasks"]:
                    split_of.setdefault(family_of(task_id), split)
    out: dict[str, list[str]] = {"train": [], "dev": [], "holdout": []}
    for task_id in installed:
        family = family_of(task_id)
        out[split_of.setdefault(family, _bucket(family))].append(task_id)
    return out


def splits_yaml(splits: dict[str, list[str]], root: Path) -> str:
    lines = [
        "# AppWorld task ids by split (families = scenarios, disjoint across splits).",
        f"# Rebuilt by `evolve appworld splits` from the tasks installed under {root}.",
    ]
    for split in ("train", "dev", "holdout"):
        ids = splits.get(split, [])
        lines.append(f"{split}: {json.dumps(ids)}" if not ids else f"{split}:")
        lines.extend(f"- {json.dumps(t)}" for t in ids)
    return "\n".join(lines) + "\n"


__all__ = ["SetupReport", "build_splits", "count_tasks", "home", "setup", "splits_yaml"]
