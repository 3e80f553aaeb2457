"""Topic labels from a real model (llama.cpp with SmolLM2-135M, prepared by
`.ci/llama_server.sh`): each topic is asked, and every label the command prints is either the
model's phrase, found word for word in the topic's cards, or the term label. The tiny model's
phrases are mostly refused; the test checks the path, not the wording."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import cli_json
from evolve.research import Topic, check_label, starter_pool, topics
from evolve.workspace import Workspace

pytestmark = pytest.mark.real_server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    python, gguf = os.environ.get("EVOLVE_LLAMA_PYTHON"), os.environ.get("EVOLVE_LLAMA_GGUF")
    if not python or not gguf:
        message = 'EVOLVE_LLAMA_PYTHON and EVOLVE_LLAMA_GGUF are not set; run eval "$(bash .ci/llama_server.sh)" first.'
        required = (
            os.environ.get("CI") == "true" or os.environ.get("EVOLVE_REQUIRE_REAL_SERVER") == "1"
        )
        if required:
            pytest.fail(message)
        pytest.skip(message)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        python, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
        "--n_threads", "1", "--n_threads_batch", "1",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"the llama.cpp server exited early: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("the llama.cpp server was not ready in 120 s.")
            time.sleep(0.25)
        yield url, log
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def test_topic_labels_from_a_real_model_are_checked(
    ws: Workspace,
    server: tuple[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base_url, log = server
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("EVOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("EVOLVE_REFLECTOR_MODEL", raising=False)
    found = cli_json(
        capsys, "research", "topics", "--module", "workflow", "--model", "openai/smollm2"
    )
    offline = topics(starter_pool(), "workflow")
    asked = log.read_text(errors="replace").count("POST /v1/chat/completions")
    assert asked >= len(offline)  # each topic was asked (a refused structured rung may add one)
    assert [t["cards"] for t in found["workflow"]] == [[c.id for c in t.cards] for t in offline]
    for got, term in zip(found["workflow"], offline, strict=True):
        if got["labelled_by"] == "terms":
            assert got["label"] == term.label
        else:
            topic = Topic("", term.cards)
            assert (
                got["labelled_by"] == "model"
                and check_label(got["label"], topic, []) == got["label"]
            )
