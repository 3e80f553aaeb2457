"""Proposers cannot reach the writer: importing them loads neither the applier nor the store, and
neither does running them (training and evolving a skills stream)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

WRITER = ("evolve.applier", "evolve.store", "evolve.train", "evolve.gate")


@pytest.mark.parametrize(
    "module",
    [
        "evolve.updaters",
        "evolve.reflector",
        "evolve.sim",
        "evolve.ops",
        "evolve.skills",
        "evolve.skills._batch",
        "evolve.skills._plan",
        "evolve.skills._evolver",
        "evolve.skills._consolidate",
        "evolve.skills._scoreboard",
    ],
)
def test_proposer_imports_no_writer(module: str) -> None:
    code = (
        f"import sys, {module}\nprint(' '.join(m for m in sys.modules if m.startswith({WRITER!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"{module} imports the writer: {out}"


def test_op_and_refusal_live_outside_the_applier() -> None:
    from evolve.ops import Op, Refusal

    assert Op.__module__ == "evolve.ops._ops"
    assert Refusal.__module__ == "evolve.ops._ops"


# --- at run time ----------------------------------------------------------------------------
# Import time is not enough: a function-local import loads the writer only when the function
# runs (the skills recipe's `observe` once loaded the applier and the store that way). The
# probe runs `evolve init --skills`, `evolve train --recipe skills` and one generation in a
# fresh process and records every import statement with the proposers then running.

PROBE = Path(__file__).with_name("_import_probe.py")
SRC = Path(__file__).resolve().parents[2] / "src"


def _probe(src: Path, workdir: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    run = subprocess.run(
        [sys.executable, str(PROBE), str(workdir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (line,) = [x for x in run.stdout.splitlines() if x.startswith("PROBE ")]
    report: dict[str, Any] = json.loads(line.removeprefix("PROBE "))
    return report


def test_training_and_evolving_skills_load_no_writer_from_a_proposer(tmp_path: Path) -> None:
    report = _probe(SRC, tmp_path)
    assert report["violations"] == []
    # what makes the empty list mean something: the run loaded the writer, and the probe saw
    # the recipe's function-local import of the reflection as it ran
    assert report["writer_loaded"]
    assert (
        "evolve.updaters._skills -> evolve.skills._reflect"
        in report["function_local_proposer_imports"]
    )


@pytest.mark.slow
def test_the_probe_names_a_proposer_that_loads_the_writer(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SRC / "evolve", src / "evolve", ignore=shutil.ignore_patterns("__pycache__"))
    for name in (
        "evolve.yaml",
        "prompts",
        "memory",
        "evalset",
        "generations",
        "tests",
        "experiments",
    ):
        (tmp_path / name).symlink_to(SRC.parent / name)  # the default harness, beside src/
    recipe = src / "evolve" / "updaters" / "_skills.py"
    text = recipe.read_text(encoding="utf-8")
    anchor = "    def observe(self, ctx: RecipeContext) -> Update:\n"
    assert anchor in text
    planted = (
        "        import evolve.store  # noqa: F401  (planted)\n"
        "        from evolve.train import SkillsBatches  # noqa: F401  (planted)\n"
    )
    recipe.write_text(text.replace(anchor, anchor + planted), encoding="utf-8")
    (tmp_path / "run").mkdir()
    found = _probe(src, tmp_path / "run")["violations"]
    assert (
        "evolve.store imported by evolve.updaters._skills while evolve.updaters._skills ran"
        in found
    )
    # the proposer took a name from a module that loads the writer when it is imported
    chain = "evolve.updaters._skills imports evolve.train._batch -> "
    assert any(v.startswith(chain) for v in found), found
