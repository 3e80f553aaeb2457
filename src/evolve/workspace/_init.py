"""`evolve init`: scaffold a workspace from the default harness and make the first commit."""

from __future__ import annotations

import re
import shutil
from importlib import resources
from pathlib import Path

from evolve._format._message import KIND
from evolve._io import atomic_write
from evolve.errors import EvolveError
from evolve.store import GitStore
from evolve.workspace._config import CONFIG_NAME, parse_config
from evolve.workspace._drivers import attributes_text, install_merge_drivers
from evolve.workspace._workspace import Workspace

# What a workspace takes from the harness, relative to the harness root.
HARNESS_ITEMS = (
    CONFIG_NAME,
    "prompts",
    "memory",
    "evalset",
    "generations",
    "tests/health",
    "experiments",  # experiment files for `evolve compare` (q3.yaml)
)

PERSONA_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
# `memory/skills/` holds the skill shelves, so no persona's memory folder may be named so.
RESERVED_PERSONAS = ("skills",)  # evolve.memory.SKILLS_FOLDER

GITIGNORE = """\
# evolve: run logs and generation records never make the tree dirty
/generations/runs/
/generations/*.json
/generations/*.md
/generations/report/
/generations/experiments/
# the temporary file of a write that was killed before its rename (removed by recovery)
.*.tmp
__pycache__/
.pytest_cache/
"""


def harness_root() -> Path:
    """Where the default harness lives: inside an installed wheel, or the project checkout."""
    packaged = Path(str(resources.files("evolve"))) / "_harness"
    if (packaged / CONFIG_NAME).is_file():
        return packaged
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / CONFIG_NAME).is_file() and (checkout / "evalset").is_dir():
        return checkout
    raise EvolveError("the default harness is missing from this installation; reinstall evolve.")


def _first_missing(target: Path) -> Path | None:
    """The outermost folder of `target`'s path that does not exist yet (what init creates,
    and removes again when it fails), or None when `target` exists."""
    if target.exists():
        return None
    missing = target
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    return missing


def _check_persona(target: Path, env: str, persona: str) -> None:
    """Refuse a persona the new workspace's evalset does not know: every later command
    (`run`, `train`, ...) would refuse it, so init says so before it commits anything. The
    environment reads only the evalset's persona files here (AppWorld needs no data)."""
    from evolve.envs import make_env, personas_of

    known = personas_of(make_env(env, target / "evalset"))
    if known is not None and persona not in known:
        raise EvolveError(
            f"unknown persona {persona!r} for the {env} evalset; choose one of {', '.join(known)}."
        )


def _section_key(text: str, section: str, key: str, value: str, note: str) -> str:
    """`text` (evolve.yaml) with `key` of the top-level `section` set to `value`, the line's
    comment replaced by `note`; every other line (and comment) kept as it is."""
    out: list[str] = []
    inside = done = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            inside = line.split(":", 1)[0] == section
        if inside and not done and line.strip().startswith(f"{key}:"):
            indent = line[: len(line) - len(line.lstrip())]
            line = f"{indent}{key}: {value}".ljust(25) + f"# {note}"
            done = True
        out.append(line)
    if not done:  # the packaged evolve.yaml always has it; a broken install does not
        raise EvolveError(f"the default {CONFIG_NAME} has no {section}.{key}; reinstall evolve.")
    return "\n".join(out) + "\n"


def init_workspace(
    target: Path, *, persona: str | None = None, env: str | None = None, skills: bool = False
) -> Workspace:
    """Create a workspace at `target` (which must not exist or be empty) and commit it.

    `env` picks the environment: persona_world (the default), appworld, or files (a minimal
    evalset of tasks, checkers and tools to edit into your own). `skills` sets the
    workspace up for skill compilation: `train.recipe: skills` (which turns
    selection and injection on) and, for persona_world, the procedure-shaped tasks in
    `evalset/procedures.yaml`, the failures skills are for.

    Raises:
        EvolveError: if `target` is a non-empty folder or already a workspace, or `persona`
            is not a valid name, is reserved (`skills`), or is not a persona of the chosen
            environment's evalset (every later command would refuse it); nothing is left
            written then.
    """
    target = target.resolve()
    if persona is not None and not PERSONA_NAME.match(persona):
        raise EvolveError(
            f"persona {persona!r} is not a valid name; use lower-case letters, digits, '-' or '_'."
        )
    if persona in RESERVED_PERSONAS:
        raise EvolveError(
            f"persona {persona!r} is reserved (memory/{persona}/ holds the skill shelves); "
            "pick another name."
        )
    if (target / CONFIG_NAME).exists():
        raise EvolveError(
            f"{target} is already an evolve workspace; use it, or pick another folder."
        )
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise EvolveError(f"{target} exists and is not empty; pick a new or empty folder.")
    if env not in (None, "persona_world", "appworld", "files"):
        raise EvolveError(f"unknown environment {env!r}; choose persona_world, appworld or files.")
    source = harness_root()
    created = _first_missing(target)
    try:
        target.mkdir(parents=True, exist_ok=True)
        for item in HARNESS_ITEMS:
            src = source / item
            dst = target / item
            if src.is_dir():
                shutil.copytree(
                    src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "runs")
                )
            elif src.is_file():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        for folder in ("memory", "prompts", "generations"):
            keep = target / folder / ".gitkeep"
            if not any((target / folder).iterdir()):
                keep.touch()
        if persona is not None:
            config_path = target / CONFIG_NAME
            text = config_path.read_text(encoding="utf-8")
            lines = [
                f"persona: {persona}" if line.startswith("persona:") else line
                for line in text.splitlines()
            ]
            new_text = "\n".join(lines) + "\n"
            parse_config(new_text)
            atomic_write(config_path, new_text)
        if skills:
            config_path = target / CONFIG_NAME
            text = _section_key(
                config_path.read_text(encoding="utf-8"),
                "train",
                "recipe",
                "skills",
                "evolve init --skills (the default is ace)",
            )
            parse_config(text)
            atomic_write(config_path, text)
            if env in (None, "persona_world"):
                from evolve.envs.persona_world._procedures import write_procedures

                write_procedures(target / "evalset")
        if env == "appworld":
            from evolve.envs.appworld._scaffold import scaffold

            scaffold(target)
        if env == "files":
            from evolve.envs.files import write_scaffold

            write_scaffold(target, persona_given=persona is not None)
        if persona is not None:
            _check_persona(target, env or "persona_world", persona)
        atomic_write(target / ".gitignore", GITIGNORE)
        atomic_write(target / ".gitattributes", attributes_text())
        store = GitStore.init(target)
        install_merge_drivers(target)  # the config git never carries
        paths = sorted(
            str(p.relative_to(target))
            for p in target.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(target).parts
        )
        store.commit(paths, "evolve: initialize workspace", trailers={KIND: "init"})
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        else:
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise
    return Workspace(target)
