"""`evolve compare` writes its outputs (plan, cells, results) without following a link out of
the workspace (issue 28, item 2): a results folder that is a link to somewhere else is refused
by name, and nothing lands outside."""

from __future__ import annotations

from pathlib import Path

import pytest
from compare_helpers import write_small

from conftest import one_sentence, run_cli
from evolve.workspace import Workspace

pytestmark = pytest.mark.slow

_TINY = """\
name: small
personas: [alex]
feedback: [instance]
orders: [0]
eval_seeds: [0]
episodes: 2
splits: [dev]
bootstrap_samples: 100
arms:
  none: {}
"""


@pytest.mark.parametrize("link", ["generations/experiments", "generations/experiments/small"])
def test_a_results_folder_that_links_out_is_refused_and_nothing_lands_outside(
    ws: Workspace, capsys: pytest.CaptureFixture[str], tmp_path: Path, link: str
) -> None:
    write_small(ws.root, _TINY)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.txt").write_text("mine\n", encoding="utf-8")
    planted = ws.root / link
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(outside, target_is_directory=True)
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert code == 1
    line = one_sentence(err)
    assert "symbolic link" in line and link.split("/")[-1] in line
    assert sorted(p.name for p in outside.rglob("*")) == ["kept.txt"]
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--fresh")
    assert code == 1 and "symbolic link" in err
    assert sorted(p.name for p in outside.rglob("*")) == ["kept.txt"]
