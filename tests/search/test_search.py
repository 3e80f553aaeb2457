"""The module-level harness search: candidates as commits on their own refs, crossover by
additive predicted gain, a champion replaced by one gated commit that `evolve revert` takes
back, the budget and patience, the probe, new cycles, and an interrupted search."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from conftest import GitRunner, run_cli, workspace_state
from evolve.errors import EvolveError
from evolve.harness import HARNESS_FILE, parse_choice
from evolve.harness._config import Choice
from evolve.research import Card, starter_pool
from evolve.search import (
    BuiltinMutator,
    Candidate,
    CardLike,
    Scorer,
    SearchResult,
    load_searches,
    probe,
    run_search,
)
from evolve.search._search import CANDIDATES_PREFIX, Search
from evolve.train import train
from evolve.workspace import Workspace

HARMFUL = {("context", "budget_fifo"), ("tools", "compact_docs"), ("workflow", "verify_finish")}
# The cards of the sim's documented effects: three that help (two that add up, one that does
# not add to the review), three that hurt.
CARDS = ("self_refine", "expel", "tool_documentation", "memgpt", "easytool", "reflexion")


def _cards(*ids: str) -> list[Card]:
    pool = {c.id: c for c in starter_pool()}
    return [pool[i] for i in ids]


@pytest.fixture
def trained(ws: Workspace) -> Workspace:
    train(ws, recipe="ace", episodes=24, feedback="corrective", persona="alex")
    return ws


def _search(ws: Workspace, **options: object) -> SearchResult:
    args: dict[str, object] = {"budget": 5000, "runs": 2, "seed": 0, "cards": _cards(*CARDS)}
    args.update(options)
    return run_search(ws, **args)  # type: ignore[arg-type]


def _active(ws: Workspace) -> Choice:
    path = ws.root / HARNESS_FILE
    return parse_choice(path.read_text(encoding="utf-8") if path.exists() else "")


def test_the_search_keeps_the_gains_that_add_up_and_rejects_every_harmful_mechanism(
    trained: Workspace, run_git: GitRunner
) -> None:
    before = run_git(trained.root, "rev-parse", "HEAD").strip()
    result = _search(trained)
    choice = _active(trained)
    # Checklist and the review add up; the lookup adds nothing to the review.
    assert choice["skills"][0] == "checklist"
    assert {choice["workflow"][0], choice["tools"][0]} & {"verify_first", "docs_on_demand"}
    assert not {(m, v) for m, (v, _) in choice.items()} & HARMFUL
    # One commit moved the branch, gated, with its trailers.
    assert run_git(trained.root, "rev-parse", "HEAD~1").strip() == before
    message = run_git(trained.root, "log", "-1", "--format=%B")
    assert "Evolve-Kind: harness" in message and "Evolve-Search: c1/" in message
    combos = [t for t in result.tried if t.kind == "combination"]
    assert combos and all(t.predicted is not None for t in combos)
    lookup_and_review = next(
        t for t in combos if set(t.variants.values()) == {"docs_on_demand", "verify_first"}
    )
    gain, predicted = lookup_and_review.gain, lookup_and_review.predicted
    assert gain is not None and predicted is not None
    assert gain[0] < predicted  # does not carry over
    assert result.path[0]["gain"][1] > trained.config.gate.min_gain
    assert result.path[0]["holdout_gain"] is not None
    # Every scored candidate is a commit on its ref whose only change is the harness file.
    for t in result.tried:
        if t.ref is None:
            continue
        assert t.ref.startswith(f"{CANDIDATES_PREFIX}/c1/")
        changed = run_git(trained.root, "diff", "--name-only", f"{t.ref}~1", t.ref).split()
        assert changed == [HARNESS_FILE]
        assert run_git(trained.root, "rev-parse", f"{t.ref}~1").strip() == before
    assert load_searches(trained)[0]["cycle"] == "c1"


def test_revert_of_the_champion_restores_the_previous_harness_byte_for_byte(
    trained: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    code, _, err = run_cli(capsys, "harness", "set", "memory", "newest_first")
    assert code == 0, err
    previous = (trained.root / HARNESS_FILE).read_bytes()
    result = _search(trained)
    champion = result.path[0]["commit"]
    assert (trained.root / HARNESS_FILE).read_bytes() != previous
    code, _, err = run_cli(capsys, "revert", champion)
    assert code == 0, err
    assert (trained.root / HARNESS_FILE).read_bytes() == previous


def test_a_dry_run_changes_nothing(trained: Workspace, run_git: GitRunner) -> None:
    state = workspace_state(trained.root, run_git)
    refs = run_git(trained.root, "for-each-ref")
    result = _search(trained, dry_run=True)
    assert result.dry_run and result.path
    assert workspace_state(trained.root, run_git) == state
    assert run_git(trained.root, "for-each-ref") == refs


def test_the_budget_bounds_the_episodes_played(trained: Workspace, run_git: GitRunner) -> None:
    head = run_git(trained.root, "rev-parse", "HEAD")
    result = _search(trained, budget=100)  # dev is 20 tasks x 2 runs: two scorings fit
    assert result.episodes <= 100
    assert len([t for t in result.tried if t.gain is not None]) == 1
    assert "budget" in result.stopped
    assert run_git(trained.root, "rev-parse", "HEAD") == head or result.path


def test_patience_stops_after_generations_without_a_confirmed_gain(trained: Workspace) -> None:
    flat = _cards("rag", "recency", "agent_workflow_memory", "relevance_budget")
    result = run_search(trained, budget=5000, runs=1, cards=flat, per_module=1, patience=2)
    assert not result.path and result.generations == 2
    assert result.stopped == "2 generation(s) without a confirmed gain"


def _tokens_cap(ws: Workspace, factor: float) -> Workspace:
    cfg = ws.config
    gate = cfg.gate.model_copy(update={"max_token_factor": factor})
    return Workspace(ws.root, config=cfg.model_copy(update={"gate": gate}))


def test_new_cards_start_a_new_cycle_from_the_champion(trained: Workspace) -> None:
    # The sim's review step (verify_first) costs about 1.6x the tokens of the trained base:
    # under the gate's default cap of 1.5x it would be refused (the next test but one).
    trained = _tokens_cap(trained, 3.0)
    first = run_search(trained, budget=5000, runs=2, cards=_cards("self_refine", "memgpt"))
    assert first.cycle == "c1" and first.path
    with pytest.raises(EvolveError, match="add one with `evolve research add`"):
        run_search(trained, budget=5000, runs=2, cards=_cards("self_refine", "memgpt"))
    second = run_search(
        trained, budget=5000, runs=2, cards=_cards("self_refine", "memgpt", "expel")
    )
    assert second.cycle == "c2"
    assert second.champion_before["workflow"] == "verify_first"  # from the champion
    assert [t.cards for t in second.tried] == [["expel"]]


def test_the_whole_harness_ablation_changes_every_module_at_once(trained: Workspace) -> None:
    result = _search(trained, mode="whole", dry_run=True, per_module=1)
    whole = [t for t in result.tried if t.kind == "whole"]
    assert whole and len(whole[0].modules) >= 3
    assert not [t for t in result.tried if t.kind == "combination"]


class _Broken:
    """A mutator whose candidates build but play no valid action."""

    def __call__(self, card: CardLike, champion: Choice, brief: str) -> Candidate:
        return BuiltinMutator()(card, champion, brief)


def test_the_probe_refuses_before_any_scoring(trained: Workspace) -> None:
    scored: list[str] = []

    class CountingScorer(Scorer):
        def __call__(self, commit: str, split: str = "dev"):  # type: ignore[no-untyped-def]
            scored.append(commit)
            return super().__call__(commit, split)

    search = Search(
        trained,
        lambda module, n, how, exclude: [c for c in _cards("self_refine") if c.module == module],
        cycle="c9",
        budget=5000,
        mutator=_Broken(),
        play=lambda choice: "no valid action on the probe task",
        scorer=CountingScorer(trained, 1, 0),
    )
    result = search.run()
    assert [t.verdict for t in result.tried] == ["refused: no valid action on the probe task"]
    assert len(scored) == 1  # the champion only
    assert not trained.store.ref_names(f"{CANDIDATES_PREFIX}/c9/")


def test_the_probe_checks_the_contract_and_the_build() -> None:
    card = _cards("self_refine")[0]
    champion = parse_choice("")
    good = BuiltinMutator()(card, champion, "")
    assert probe(good) is None
    assert "does not build" in (
        probe(replace(good, choice={**champion, "workflow": ("x", {})})) or ""
    )

    def crash(choice: Choice) -> str | None:
        raise ZeroDivisionError

    assert "the probe task failed: ZeroDivisionError" in (probe(good, crash) or "")
    with pytest.raises(EvolveError, match="needs a model"):
        BuiltinMutator()(_cards("react")[0], champion, "")


def test_an_interrupted_search_leaves_the_branch_where_it_was(
    trained: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = workspace_state(trained.root, run_git)
    from evolve.search import _search as module

    def interrupted(self: object, *args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(module.Search, "_holdout", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _search(trained)
    assert workspace_state(trained.root, run_git) == state


def test_a_branch_moved_meanwhile_keeps_the_champion(
    trained: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evolve.search import _search as module

    real = module.Search._holdout

    def moved(self: Search, base: str, t: object) -> object:
        run_git(trained.root, "commit", "--allow-empty", "-q", "-m", "someone else")
        return real(self, base, t)  # type: ignore[arg-type]

    monkeypatch.setattr(module.Search, "_holdout", moved)
    head = Path(trained.root, HARNESS_FILE).exists()
    with pytest.raises(EvolveError, match="the branch moved while the search ran"):
        _search(trained)
    assert Path(trained.root, HARNESS_FILE).exists() == head


def test_the_gates_caps_hold_for_the_champion_move(trained: Workspace, run_git: GitRunner) -> None:
    """A candidate with a confirmed dev gain that breaks one of the gate's caps (here the
    prompt size) is refused by the gate, as `evolve evolve` refuses such a generation: the
    champion does not move and the candidate says why."""
    cfg = trained.config
    capped = Workspace(
        trained.root,
        config=cfg.model_copy(
            update={"gate": cfg.gate.model_copy(update={"max_prompt_chars": 100})}
        ),
    )
    head = run_git(trained.root, "rev-parse", "HEAD")
    result = _search(capped, patience=1)
    assert not result.path
    refused = [t for t in result.tried if t.verdict.startswith("refused: prompt size")]
    assert refused and all(t.gain is not None and t.gain[1] > 0 for t in refused)
    assert "exceeds the cap 100" in refused[0].verdict
    assert run_git(trained.root, "rev-parse", "HEAD") == head


def test_a_candidate_past_the_token_cap_is_refused_by_the_gate(trained: Workspace) -> None:
    """verify_first helps (a confirmed dev gain) but costs about 1.6x the base's tokens: under
    the gate's default cap of 1.5x it does not become the champion."""
    result = run_search(trained, budget=5000, runs=2, cards=_cards("self_refine"))
    (verify,) = [t for t in result.tried if t.name == "workflow-verify_first"]
    assert verify.gain is not None and verify.gain[1] > 0
    assert verify.verdict.startswith("refused: tokens per episode")
    assert "exceed 1.5x the base" in verify.verdict
    assert not result.path
