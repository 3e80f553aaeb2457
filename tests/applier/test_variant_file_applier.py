"""The applier's variant-file op writes exactly `harness/<module>/<name>.py` and nothing else:
every other path, a link on the way, a protected path, a built-in's name, text that is not
Python or that holds a secret is refused with one sentence, and nothing is written."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from evolve.applier._variants import plan_variant_file
from evolve.errors import EvolveError
from evolve.review._variants import propose_variant
from evolve.workspace import Workspace

CODE = b"def retrieve(memory, task):\n    return memory\n"


def _head(ws: Workspace) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ws.root, capture_output=True, text=True, check=True
    ).stdout


def test_the_op_writes_exactly_its_one_file(ws: Workspace) -> None:
    changes, refused = plan_variant_file(ws, "memory", "mine", CODE)
    assert not refused and changes == {"harness/memory/mine.py": CODE}
    done = propose_variant(ws, "memory", "mine", CODE, reason="a test")
    assert done.commit and (ws.root / "harness/memory/mine.py").read_bytes() == CODE
    shown = subprocess.run(
        ["git", "show", "--name-only", "--format=%s", "HEAD"],
        cwd=ws.root, capture_output=True, text=True, check=True,
    ).stdout.split("\n")  # fmt: skip
    assert shown[0] == "harness: variant file memory/mine (awaits review)"
    assert [line for line in shown[1:] if line] == ["harness/memory/mine.py"]


@pytest.mark.parametrize(
    ("module", "name", "source", "why"),
    [
        ("gate", "x", CODE, "there is no harness module 'gate'"),
        ("memory", "../../evalset/splits", CODE, "lower-case letters, digits and _"),
        ("memory", "x.py", CODE, "lower-case letters, digits and _"),
        ("memory", "Mine", CODE, "lower-case letters, digits and _"),
        ("memory", "all", CODE, "all is a built-in memory variant"),
        ("memory", "big", b"x = 1\n" * 20000, "larger than 65536 bytes"),
        ("memory", "bad", b"def retrieve(:\n", "is not valid Python"),
        ("memory", "nul", b"x = '\x00'\n", "NUL"),
        ("memory", "latin", b"x = '\xff'\n", "not UTF-8"),
        ("memory", "key", b"KEY = 'sk-variant-attack-0123'\n", "holds a secret"),
    ],
)
def test_anything_else_is_refused_and_nothing_is_written(
    ws: Workspace,
    module: str,
    name: str,
    source: bytes,
    why: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-variant-attack-0123")
    head = _head(ws)
    changes, refused = plan_variant_file(ws, module, name, source)
    assert not changes
    assert why in refused[0].reason, refused[0].reason
    with pytest.raises(EvolveError):
        propose_variant(ws, module, name, source)
    assert _head(ws) == head and not (ws.root / "harness").exists()


@pytest.mark.parametrize("link", ["harness", "harness/memory", "harness/memory/mine.py"])
def test_a_link_on_the_way_is_refused(ws: Workspace, link: str) -> None:
    full = ws.root / link
    full.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(ws.evalset_dir / "splits.yaml" if link.endswith(".py") else ws.evalset_dir, full)
    before = (ws.evalset_dir / "splits.yaml").read_bytes()
    _, refused = plan_variant_file(ws, "memory", "mine", CODE)
    assert "is a link" in refused[0].reason
    assert (ws.evalset_dir / "splits.yaml").read_bytes() == before


def test_a_protected_harness_folder_is_refused(ws: Workspace) -> None:
    config = ws.root / "evolve.yaml"
    data = yaml.safe_load(config.read_text())
    data["protected"] = [*data["protected"], "harness/"]
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    _, refused = plan_variant_file(Workspace(ws.root), "memory", "mine", CODE)
    assert "protected" in refused[0].reason
