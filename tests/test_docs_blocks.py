"""The documentation's code runs: every ```python block of a page under docs/ is executed
(each page's blocks in order, in one namespace, in a temporary folder) and every ```bash block
is run. Synopses and sample output are plain ``` blocks, which are not code. docs/api.md's
blocks run as a walk-through of their own (tests/api/test_api_docs.py), and the README's
through .ci/newcomer.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```(python|bash)\n(.*?)^```", re.M | re.S)
OWN_RUNNER = {"api.md"}


def _pages() -> list[Path]:
    return sorted(
        p for p in DOCS.rglob("*.md") if p.name not in OWN_RUNNER and BLOCK.search(p.read_text())
    )


def test_the_docs_have_code_to_run() -> None:
    assert _pages(), "no page under docs/ has a python or bash block: the test must see some"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_every_code_block_of_a_page_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for n, match in enumerate(BLOCK.finditer(page.read_text("utf-8")), start=1):
        kind, code = match.groups()
        where = f"{page.relative_to(ROOT)} block {n}"
        if kind == "python":
            exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the docs' own code
        else:
            env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path, env=env,
                capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            assert done.returncode == 0, f"{where}:\n{done.stdout}\n{done.stderr}"


def test_a_planted_failing_block_fails(tmp_path: Path) -> None:
    page = "```python\nassert 1 == 2\n```\n"
    ((kind, code),) = [m.groups() for m in BLOCK.finditer(page)]
    with pytest.raises(AssertionError):
        exec(compile(code, "planted", "exec"), {})  # noqa: S102
