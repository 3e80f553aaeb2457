"""Model-written variant files in the search: with a real evolver model, a card no built-in
implements goes to the model, whose file is probed in the sandbox and waits in review; a file
a person approved is the next cycle's candidate, scored against the champion as a card's is,
and tried once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import evolve.llm
from evolve import sandbox
from evolve.errors import EvolveError
from evolve.harness._sandboxed import close_workers
from evolve.llm import MockLLM
from evolve.research import Card
from evolve.review._variants import approve_variant, pending_variants, propose_variant
from evolve.search import run_search
from evolve.workspace import Workspace

needs_bwrap = pytest.mark.skipif(
    not sandbox.bwrap_works(),
    reason="bubblewrap is not installed or may not create namespaces here (CI installs it)",
)
NEWEST = "def retrieve(memory, task):\n    return '\\n'.join(memory.splitlines()[::-1])\n"
# A card of a mechanism no built-in variant implements: only a model can write it.
CARD = Card(
    id="recency_first",
    title="Recency ordering of memories",
    authors=("A. Person",),
    year=2024,
    identifier="arXiv:2401.00001",
    summary="Show the newest memories first, so a later preference is read before an old one.",
    module="memory",
    mechanism="recency ordering",
    variant=None,
    params={},
    provenance="a test",
)


@pytest.fixture(autouse=True)
def _no_workers_left() -> Iterator[None]:
    close_workers()
    yield
    close_workers()


@needs_bwrap
def test_an_approved_variant_file_is_a_candidate_scored_once(ws: Workspace) -> None:
    propose_variant(ws, "memory", "newest", NEWEST.encode())
    approve_variant(ws, "memory", "newest")
    head = ws.store.head()

    result = run_search(ws, budget=1000, runs=1, seed=0, cards=[], write=False)

    tried = [t for t in result.tried if t.cards == ["file:memory/newest"]]
    assert len(tried) == 1, [(t.name, t.verdict) for t in result.tried]
    assert tried[0].gain is not None and tried[0].ref is not None, tried[0]
    assert tried[0].variants == {"memory": "newest"}
    assert ws.store.read(tried[0].ref, "prompts/harness.yaml") is not None
    assert result.episodes > 0
    with pytest.raises(EvolveError, match="every research card was tried"):
        run_search(ws, budget=1000, runs=1, seed=0, cards=[], write=False)
    assert head is not None


def test_an_unapproved_variant_file_is_never_a_candidate(ws: Workspace) -> None:
    propose_variant(ws, "memory", "newest", NEWEST.encode())
    with pytest.raises(EvolveError, match="every research card was tried"):
        run_search(ws, budget=1000, runs=1, seed=0, cards=[], write=False)


@needs_bwrap
def test_a_card_without_a_built_in_goes_to_the_model_and_waits_for_review(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = MockLLM([f"```python\n{NEWEST}```"])
    monkeypatch.setattr(evolve.llm, "make_role_llm", lambda *a, **k: llm)
    head = ws.store.head()

    result = run_search(ws, budget=1000, runs=1, seed=0, cards=[CARD], write=True)

    written = [t for t in result.tried if t.kind == "written"]
    assert len(written) == 1, [(t.name, t.verdict) for t in result.tried]
    assert written[0].verdict.startswith("awaits review"), written[0].verdict
    assert written[0].cards == ["recency_first"] and written[0].gain is None
    module, name = pending_variants(ws)[0]
    assert module == "memory" and written[0].variants == {"memory": name}
    assert ws.store.head() != head  # the file's commit, waiting; nothing of it was scored
    assert not [t for t in result.tried if t.gain is not None]


@needs_bwrap
def test_a_file_the_probe_rejects_writes_nothing(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = "def retrieve(memory, task):\n    return 1\n"
    monkeypatch.setattr(
        evolve.llm, "make_role_llm", lambda *a, **k: MockLLM([f"```python\n{bad}```"])
    )
    head = ws.store.head()
    result = run_search(ws, budget=1000, runs=1, seed=0, cards=[CARD], write=True)
    (written,) = [t for t in result.tried if t.kind == "written"]
    assert written.verdict.startswith("refused: the probe rejected it"), written.verdict
    assert ws.store.head() == head and pending_variants(ws) == []
