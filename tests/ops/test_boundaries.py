"""Proposers cannot reach the writer: importing them loads neither the applier nor the store."""

from __future__ import annotations

import subprocess
import sys

import pytest

WRITER = ("evolve.applier", "evolve.store", "evolve.train", "evolve.gate")


@pytest.mark.parametrize(
    "module", ["evolve.updaters", "evolve.reflector", "evolve.sim", "evolve.ops"]
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
