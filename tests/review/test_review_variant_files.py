"""`evolve review variants` lists the model-written variant files waiting for a person, and
`evolve review approve-variant` approves one as it stands (one commit); a change waits again."""

from __future__ import annotations

import pytest

from conftest import cli_json, run_cli
from evolve.review._variants import propose_variant
from evolve.workspace import Workspace

CODE = b"def retrieve(memory, task):\n    return memory\n"


def test_a_proposed_variant_waits_in_review_until_approved(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_json(capsys, "review", "variants", "--json") == []
    propose_variant(ws, "memory", "mine", CODE)
    assert cli_json(capsys, "review", "variants", "--json") == [
        {"module": "memory", "name": "mine", "path": "harness/memory/mine.py"}
    ]
    code, out, _ = run_cli(capsys, "harness", "set", "memory", "mine")
    assert code != 0
    code, out, _ = run_cli(capsys, "review", "approve-variant", "memory", "mine")
    assert code == 0 and out.startswith("approved memory/mine in ")
    assert cli_json(capsys, "review", "variants", "--json") == []
    code, out, _ = run_cli(capsys, "harness", "set", "memory", "mine")
    assert code == 0, out
    propose_variant(ws, "memory", "mine", CODE + b"# changed\n")
    assert len(cli_json(capsys, "review", "variants", "--json")) == 1


def test_approving_a_missing_variant_is_one_sentence(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "review", "approve-variant", "memory", "nothing")
    assert code != 0 and "harness/memory/nothing.py could not be read" in err
