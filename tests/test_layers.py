"""The layer contract of docs/architecture.md (`[tool.importlinter]` in pyproject.toml).

CI runs `lint-imports`; these tests run it too, on the tree and on a copy of it with arrows
planted that must break it: one at module level, one inside a function (function-local
imports count), one under TYPE_CHECKING (counted on purpose), and a circle inside a package.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _lint(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with this checkout's contracts over the package under `src`."""
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo", str(PYPROJECT)],
        cwd=cwd,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _plant(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n" + text, encoding="utf-8")


def test_the_tree_keeps_the_contract() -> None:
    run = _lint(ROOT / "src", ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 3 kept, 0 broken." in run.stdout


def test_a_planted_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "evolve", src / "evolve", ignore=shutil.ignore_patterns("__pycache__")
    )
    assert _lint(src, tmp_path).returncode == 0  # the copy keeps it, as the tree does
    pkg = src / "evolve"
    # memory sits below train: an import at module level
    _plant(pkg / "memory" / "_unit.py", "from evolve.train import train as _planted_train\n")
    # skills (a proposer) sits below the applier: an import inside a function
    _plant(
        pkg / "skills" / "_plan.py",
        "def _planted_writer() -> object:\n"
        "    from evolve.applier import MemoryApplier\n\n"
        "    return MemoryApplier\n",
    )
    # a type named under TYPE_CHECKING is a dependency too
    _plant(
        pkg / "_io.py",
        "from typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n"
        "    from evolve.workspace import Workspace as _PlantedWorkspace\n",
    )
    # two modules of one package that import each other, one of them inside a function
    _plant(
        pkg / "executors" / "_failure.py",
        "def _planted_circle() -> object:\n"
        "    from evolve.executors._base import get_executor\n\n"
        "    return get_executor\n",
    )
    run = _lint(src, tmp_path)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "Contracts: 0 kept, 3 broken." in out
    assert "evolve.memory is not allowed to import evolve.train" in out
    assert "evolve.memory._unit -> evolve.train" in out
    assert "evolve.skills is not allowed to import evolve.applier" in out
    assert "evolve.skills._plan -> evolve.applier" in out
    assert "evolve._io is not allowed to import evolve.workspace" in out
    assert "No cycles are allowed in evolve.executors." in out
    # the proposers' contract names the function-local import as well
    proposers = out.split("proposers import neither the writer nor git")[-1]
    assert "evolve.skills._plan -> evolve.applier" in proposers


def test_no_module_reaches_itself_round_about() -> None:
    """No circle between any two files either (a package's `__init__` included, which the
    `acyclic` contract, between siblings, does not see); the contract's ignores aside."""
    graph = grimp.build_graph("evolve", cache_dir=None)
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (acyclic,) = [c for c in contracts if c["id"] == "acyclic"]
    for line in acyclic.get("ignore_imports", []):
        importer, imported = (part.strip() for part in line.split("->"))
        graph.remove_import(importer=importer, imported=imported)
    circles = [
        (module, other)
        for module in sorted(graph.modules)
        for other in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=other, imported=module)
    ]
    assert circles == []
