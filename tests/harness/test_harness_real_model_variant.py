"""The real-model path: a llama.cpp server (SmolLM2-135M) writes a harness variant file from a
research card; its reply is parsed strictly; the sandboxed probe accepts or rejects it; an
accepted one waits for review, a rejected one writes nothing; nothing it wrote runs outside
the sandbox.

`.ci/llama_server.sh` prepares the server and exports EVOLVE_LLAMA_PYTHON and
EVOLVE_LLAMA_GGUF. Without them this skips, except where CI=true or
EVOLVE_REQUIRE_REAL_SERVER=1, where it fails. The model is tiny and mostly writes code that
is refused: the test checks the path, not the quality.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evolve import sandbox
from evolve.llm import make_llm
from evolve.workspace import Workspace
from factories import llama_server

pytestmark = [
    pytest.mark.real_server,
    pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap does not work here"),
]
READY_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("llama"), n_ctx=4096) as started:
        yield started.base_url


@dataclass(frozen=True)
class _Card:
    id: str = "recency"
    title: str = "Recency-first memory"
    summary: str = "Show the most recently learned memory lines first; keep every line as is."
    module: str = "memory"
    mechanism: str = "newest first"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def test_one_model_written_candidate_is_probed_in_the_sandbox(
    ws: Workspace, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evolve.review._variants import model_variant_cycle, pending_variants

    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-server-not-secret-4711")
    head = _git(ws.root, "rev-parse", "HEAD")
    llm = make_llm("openai/smollm2")
    cycle = model_variant_cycle(ws, llm, _Card(), "forgets the newest preference", max_tokens=256)
    print(cycle.to_json())  # the model's fate, in the test's output
    assert cycle.reason
    if cycle.accepted:
        assert cycle.probe is not None and cycle.probe.ok and cycle.probe.backend == "bwrap"
        assert cycle.proposal is not None and cycle.proposal.commit
        assert pending_variants(ws) == [("memory", cycle.name)]
    else:
        assert _git(ws.root, "rev-parse", "HEAD") == head
        assert not (ws.root / "harness").exists()
        if cycle.probe is not None:  # the reply parsed: it was probed, and only in the sandbox
            assert cycle.probe.backend == "bwrap" and not cycle.probe.ok
    assert "sk-real-server" not in str(cycle.to_json())
    assert _git(ws.root, "status", "--porcelain") == ""
