"""The gate's cost constraint (`gate.max_cost`: US dollars per dev episode of a candidate, at
the prices in evolve.yaml), and the gate's scoring through the executor seam."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import yaml
from test_gate import _evidence as gate_evidence

import evolve.generations._loop as loop
from _alex import alex_statements
from conftest import run_cli
from evolve.evaluate import SplitReport, open_env
from evolve.gate import Gate, GateEvidence, Verdict, cost_cap_problem
from evolve.generations import evolve, load_records
from evolve.generations._loop import _Models
from evolve.llm import Message, MockLLM
from evolve.llm._cost import PricedLLM, Rate
from evolve.sim import SimLLM
from evolve.workspace import CONFIG_NAME, Workspace

RunGit = Callable[..., str]


def _evidence(**changes: object) -> GateEvidence:
    """The gate tests' accepted evidence, with a cost cap the base and candidate keep."""
    return gate_evidence(
        **{"base_cost": 0.0012, "candidate_cost": 0.0015, "max_cost": 0.002, **changes}
    )


def test_a_candidate_within_the_cost_cap_is_accepted() -> None:
    assert Gate().decide(_evidence()).accepted
    assert Gate().decide(_evidence(max_cost=None, candidate_cost=99.0)).accepted  # no cap
    assert Gate().decide(_evidence(candidate_cost=0.002)).accepted  # at the cap


def test_a_candidate_over_the_cost_cap_is_rejected_with_both_costs() -> None:
    verdict = Gate().decide(_evidence(candidate_cost=0.0031))
    assert verdict == Verdict(
        False,
        "cost per dev episode $0.003100 exceeds gate.max_cost $0.002000 (the base: $0.001200)",
    )


def test_the_cost_cap_cannot_be_checked_for_an_unpriced_http_model() -> None:
    assert cost_cap_problem(None, "openai/gpt-4o-mini", priced=False) is None
    assert cost_cap_problem(0.01, "openai/gpt-4o-mini", priced=True) is None
    assert cost_cap_problem(0.01, "sim", priced=False) is None  # a local model costs nothing
    problem = cost_cap_problem(0.01, "anthropic/claude-x", priced=False)
    assert problem is not None and "no price for the agent model anthropic/claude-x" in problem


# --- through the loop ---------------------------------------------------------------------


def _configure(
    ws: Workspace, run_git: RunGit, prices: dict[str, Any] | None = None, **gate: Any
) -> Workspace:
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["gate"].update(gate)
    if prices is not None:
        data["prices"] = prices
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: configure the gate")
    return Workspace(ws.root)


def _correct() -> MockLLM:
    """A reflector that moves the right preference statements into guidance (dev improves)."""

    def respond(messages: Sequence[Message], schema: object) -> str:
        return json.dumps({"guidance": alex_statements(messages[-1].content)})

    return MockLLM(respond)


RATE = Rate(input=2.0, output=8.0)  # dollars per million tokens


def _priced_models(ws: Workspace) -> _Models:
    env = open_env(ws)
    return _Models(agent=PricedLLM(SimLLM(env), RATE), updater=SimLLM(env), reflector=_correct())


@pytest.fixture
def stub_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's workspace-test subprocess passes (its own tests run the real one)."""
    monkeypatch.setattr(loop, "run_workspace_tests", lambda *a: (True, "4 passed (stubbed)\n"))


def test_a_candidate_over_gate_max_cost_is_rejected_and_the_record_says_why(
    workspace: Workspace, run_git: RunGit, stub_tests: None
) -> None:
    ws = _configure(workspace, run_git, train_episodes=0, runs=1, max_cost=0.0)
    base = run_git(ws.root, "rev-parse", "HEAD").strip()

    [record] = evolve(ws, generations=1, models=_priced_models(ws)).records

    assert record.dev is not None and record.dev_base is not None
    assert record.dev_gain is not None and record.dev_gain.low > 0.0  # it did improve dev
    per_episode = record.dev.cost / record.dev.episodes
    assert per_episode > 0.0
    assert record.verdict == "rejected"
    assert record.reason.startswith(f"cost per dev episode ${per_episode:.6f} exceeds ")
    assert "gate.max_cost $0.000000" in record.reason
    assert run_git(ws.root, "rev-parse", "HEAD").strip() == base  # rolled back
    [saved] = load_records(ws)
    assert saved.reason == record.reason


def test_the_same_candidate_under_a_higher_cap_is_accepted(
    workspace: Workspace, run_git: RunGit, stub_tests: None
) -> None:
    ws = _configure(workspace, run_git, train_episodes=0, runs=1, max_cost=1.0)
    [record] = evolve(ws, generations=1, models=_priced_models(ws)).records
    assert record.verdict == "accepted", record.reason
    assert record.dev is not None and 0.0 < record.dev.cost / record.dev.episodes <= 1.0


def test_max_cost_with_an_unpriced_http_agent_is_refused_before_any_work(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    _configure(ws, run_git, max_cost=0.01, prices={"openai/other-model": {"input": 1, "output": 1}})
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never asked
    head = run_git(ws.root, "rev-parse", "HEAD").strip()
    code, out, err = run_cli(capsys, "evolve", "--generations", "1", "--model", "openai/gpt-x")
    assert code != 0 and out == ""
    assert err.strip() == (
        "error: gate.max_cost is set, but evolve.yaml lists no price for the agent model "
        "openai/gpt-x, so its cost cannot be checked; add it under prices: (dollars per "
        "million input and output tokens) or remove gate.max_cost."
    )
    assert run_git(ws.root, "rev-parse", "HEAD").strip() == head
    assert load_records(ws) == []


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    real = loop.run_split  # type: ignore[attr-defined]

    def spy(ws: Workspace, split: Any, **kwargs: Any) -> SplitReport:
        calls.append({k: kwargs.get(k) for k in ("executor", "concurrency", "llm")})
        return real(ws, split, **kwargs)

    monkeypatch.setattr(loop, "run_split", spy)
    return calls


def test_the_gate_scores_through_the_executor_seam(
    workspace: Workspace, run_git: RunGit, stub_tests: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _configure(workspace, run_git, train_episodes=0, runs=1)
    calls = _recording(monkeypatch)
    models = _priced_models(ws)
    [record] = evolve(ws, generations=1, models=models, executor="threads", concurrency=3).records
    assert len(calls) == 4  # dev and holdout, base and candidate
    assert all(c["executor"] == "threads" and c["concurrency"] == 3 for c in calls)
    # the live model scores (counted by the generation's meter: evolve.llm._meter)
    assert all(getattr(c["llm"], "inner", c["llm"]) is models.agent for c in calls)
    assert record.verdict == "accepted", record.reason


@pytest.mark.slow
def test_a_process_pool_gate_rebuilds_the_configured_model_and_judges_the_same(
    workspace: Workspace, run_git: RunGit, stub_tests: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _configure(workspace, run_git, train_episodes=0, runs=1)
    calls = _recording(monkeypatch)
    [serial] = evolve(ws, generations=1, dry_run=True, executor="serial").records
    [pooled] = evolve(ws, generations=1, dry_run=True, executor="process", concurrency=2).records
    pooled_calls = calls[len(calls) // 2 :]
    assert pooled_calls and all(c["llm"] is None for c in pooled_calls)  # rebuilt by name
    keep = ("dev_base", "dev", "holdout_base", "holdout", "dev_gain", "verdict", "reason")
    assert {k: getattr(pooled, k) for k in keep} == {k: getattr(serial, k) for k in keep}
