"""The reading commands (`log`, `show`, `memory`) import only what they use.

Their common forms are answered by the fast path (`evolve.cli._fast`, `evolve.quick`): no
click, pydantic, PyYAML, GitPython (whose import also starts a `git version` process) or rich;
`log` not even `re`, `subprocess` or `pathlib`. `memory` validates `evolve.yaml` with the
configuration model once per distinct file content (remembered in `.git/`), so only its
first run after the file changes imports pydantic. Checked through `sys.modules` in a fresh
interpreter, not by timing, so the test is deterministic.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.memory import MemoryUnit, dump_unit
from evolve.workspace import Workspace

UNIT = "ace-00000000ab"
NEVER = ("git", "rich", "httpx", "evolve.applier", "evolve.train", "evolve.generations")
FAST_NEVER = ("click", "pydantic", "yaml", "evolve.store", "evolve.workspace", "evolve.memory")
LOG_NEVER = ("re", "subprocess", "pathlib", "dataclasses", "typing", "json")
NO_CONFIG = ("evolve.workspace._config",)


def _loaded(root: Path, argv: list[str]) -> list[str]:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        f"rc = main({argv!r})\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rsplit("LOADED:", 1)[1].split()


@pytest.fixture
def small(workspace: Workspace) -> Path:
    unit = MemoryUnit(
        id=UNIT, recipe="ace", kind="bullet", scope="user:alex", created_episode=1,
        updated_episode=1, text="Ask before sharing a payment publicly.",
    )  # fmt: skip
    path = "memory/alex/" + UNIT + ".md"
    (workspace.root / path).parent.mkdir(parents=True, exist_ok=True)
    (workspace.root / path).write_text(dump_unit(unit), encoding="utf-8")
    workspace.store.commit(
        [path], "ace: add one", trailers=[("Evolve-Episode", "1"), ("Evolve-Kind", "train")]
    )
    return workspace.root


@pytest.mark.parametrize(
    "argv",
    [
        ["log"],
        ["log", "-n", "0", "--json"],
        ["log", "--jsonl"],
        ["show", UNIT],
        ["show", UNIT, "--json"],
    ],
)
def test_log_and_show_import_no_gitpython_rich_or_config_model(
    small: Path, argv: list[str]
) -> None:
    if argv[0] == "show":  # it reads `redact:` of evolve.yaml: validated once, then remembered
        _loaded(small, argv)
    loaded = _loaded(small, argv)
    heavy = [m for m in loaded if m.startswith(NEVER + NO_CONFIG)]
    assert heavy == [], f"evolve {' '.join(argv)} imported {heavy}"


@pytest.mark.parametrize("argv", [["memory"], ["memory", "--json"]])
def test_memory_imports_no_gitpython_or_rich(small: Path, argv: list[str]) -> None:
    loaded = _loaded(small, argv)
    heavy = [m for m in loaded if m.startswith(NEVER)]
    assert heavy == [], f"evolve {' '.join(argv)} imported {heavy}"


@pytest.mark.parametrize(
    "argv",
    [
        ["log"],
        ["log", "-n", "50"],
        ["log", "-n", "0", "--json"],
        ["log", "--jsonl"],
        ["show", UNIT],
        ["show", UNIT, "--json"],
        ["memory"],
        ["memory", "--json"],
        ["memory", "--as-of", "HEAD"],
    ],
)
def test_reading_commands_import_no_click_pydantic_or_yaml(small: Path, argv: list[str]) -> None:
    if argv[0] in ("memory", "show"):
        _loaded(small, argv)  # the first run validates evolve.yaml with the model, once
    loaded = _loaded(small, argv)
    heavy = [m for m in loaded if m.startswith(NEVER + FAST_NEVER)]
    assert heavy == [], f"evolve {' '.join(argv)} imported {heavy}"


@pytest.mark.parametrize("argv", [["log"], ["log", "-n", "50"]])
def test_log_imports_only_what_a_git_log_needs(small: Path, argv: list[str]) -> None:
    loaded = _loaded(small, argv)
    heavy = [m for m in loaded if m in LOG_NEVER]
    assert heavy == [], f"evolve {' '.join(argv)} imported {heavy}"


@pytest.mark.parametrize("argv", [["memory"], ["memory", "--json"]])
def test_memory_imports_no_pathlib_typing_or_re(small: Path, argv: list[str]) -> None:
    """The confined reads (`evolve._confine`) on `memory`'s path cost it no pathlib, typing or
    re (secrets and pathlib there added ~8 ms to every warm `evolve memory`)."""
    _loaded(small, argv)  # the first run validates evolve.yaml with the model, once
    loaded = _loaded(small, argv)
    never = ("pathlib", "typing", "secrets") + (
        () if "--json" in argv else ("re",)
    )  # json loads re
    heavy = [m for m in loaded if m in never]
    assert heavy == [], f"evolve {' '.join(argv)} imported {heavy}"
