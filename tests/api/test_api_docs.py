"""docs/api.md ("Bring your own agent") runs as written: every code block, in order, in an
empty folder (Python blocks in one namespace, shell blocks with this evolve on PATH, YAML
blocks parsed as evolve.yaml, TOML blocks parsed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from evolve.workspace import parse_config

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


def blocks() -> list[tuple[str, str]]:
    return [(m[1], m[2]) for m in BLOCK.finditer(DOC.read_text("utf-8"))]


def test_the_page_has_blocks_of_each_kind() -> None:
    kinds = [kind for kind, _ in blocks()]
    assert kinds.count("python") >= 6 and kinds.count("bash") >= 3
    assert set(kinds) <= {"python", "bash", "yaml", "toml"}


@pytest.mark.slow
def test_every_block_runs_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "agents"))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    namespace: dict[str, Any] = {"__name__": "docs_api"}
    for number, (kind, code) in enumerate(blocks(), 1):
        where = f"docs/api.md block {number} ({kind})"
        if kind == "python":
            exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the page's own code
        elif kind == "bash":
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code],
                cwd=tmp_path,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, f"{where} failed:\n{done.stdout}\n{done.stderr}"
        elif kind == "yaml":
            parse_config(code, source=where)
        else:
            tomllib.loads(code)
    assert namespace["done"].commit is not None
