"""Topic labels from a real model (llama.cpp with SmolLM2-135M, prepared by
`.ci/llama_server.sh`): each topic is asked, and every label the command prints is either the
model's phrase, found word for word in the topic's cards, or the term label. The tiny model's
phrases are mostly refused; the test checks the path, not the wording."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import cli_json
from evolve.research import Topic, check_label, starter_pool, topics
from evolve.workspace import Workspace
from factories import llama_server

pytestmark = pytest.mark.real_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with llama_server(tmp_path_factory.mktemp("llama"), n_ctx=4096) as started:
        yield started.base_url, started.log


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
