"""`evolve train` survives a failing model and does not pay twice (issue 22): an episode whose
agent or updater request fails on every try is recorded as failed and the stream goes on;
a rerun resumes after the last episode run, not the last one that committed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from conftest import run_cli
from evolve.errors import ModelError
from evolve.llm import LLM, Completion, JsonSchema, Message, MockLLM, RequestFailed, make_role_llm
from evolve.train import train
from evolve.workspace import Workspace

NOTHING = json.dumps({"operations": []})


class Counting:
    """The sim agent, counting the episodes it is asked for (by seed), failing some."""

    def __init__(self, inner: LLM, fail: frozenset[int] = frozenset()) -> None:
        self.inner, self.name = inner, inner.name
        self.seeds: list[int | None] = []
        self.fail = fail  # the episodes (in the order asked) whose requests fail

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        if seed not in self.seeds:
            self.seeds.append(seed)
        if len(self.seeds) - 1 in self.fail:
            raise RequestFailed("the stub did not answer in time after 4 attempts.")
        return self.inner.complete(
            messages, json_schema=json_schema, temperature=temperature, seed=seed,
            max_tokens=max_tokens,
        )  # fmt: skip


def _agent(ws: Workspace, fail: frozenset[int] = frozenset()) -> Counting:
    from evolve.evaluate import open_env

    return Counting(make_role_llm(ws.config, "agent", env=open_env(ws)), fail)


def test_a_rerun_resumes_after_the_last_episode_run_not_the_last_commit(ws: Workspace) -> None:
    # The updater proposes nothing: no episode commits, so only the stream's own record of
    # the episodes it ran can tell where it stopped.
    first = _agent(ws)
    report = train(ws, episodes=3, agent_llm=first, updater_llm=MockLLM(lambda m, s: NOTHING))
    assert not report.commits and len(first.seeds) == 3
    second = _agent(ws)
    report = train(ws, episodes=5, agent_llm=second, updater_llm=MockLLM(lambda m, s: NOTHING))
    assert report.start == 3 and [o.episode for o in report.outcomes] == [3, 4]
    assert len(second.seeds) == 2  # episodes 3 and 4, each asked once


def test_an_interrupted_stream_resumes_after_its_last_finished_episode(ws: Workspace) -> None:
    agent = _agent(ws)
    calls = {"n": 0}

    def stop_at_third(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return NOTHING

    with pytest.raises(KeyboardInterrupt):
        train(ws, episodes=10, agent_llm=agent, updater_llm=MockLLM(stop_at_third))
    ran = len(agent.seeds)
    again = _agent(ws)
    report = train(ws, episodes=10, agent_llm=again, updater_llm=MockLLM(lambda m, s: NOTHING))
    # Every episode before the interrupted one ran to its end and is not run again.
    interrupted = report.start
    assert 0 < interrupted < ran + 1
    assert len(again.seeds) == 10 - interrupted


def test_an_agent_that_fails_makes_a_failed_episode_and_the_stream_goes_on(
    ws: Workspace,
) -> None:
    agent = _agent(ws, fail=frozenset({1}))
    report = train(ws, episodes=3, agent_llm=agent, updater_llm=MockLLM(lambda m, s: NOTHING))
    assert [o.episode for o in report.outcomes] == [0, 1, 2]
    failed = [o for o in report.outcomes if o.failed]
    assert [o.episode for o in failed] == [1]
    assert "did not answer in time" in (failed[0].failed or "")
    assert report.to_json()["failed"] == 1
    log = next((ws.root / "generations" / "runs").glob("train-*.jsonl"))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["model_error"] is not None for r in records] == [False, True, False]


def test_an_agent_that_never_answered_stops_train_in_one_sentence(ws: Workspace) -> None:
    agent = _agent(ws, fail=frozenset({0, 1, 2}))
    with pytest.raises(ModelError, match="did not answer in time"):
        train(ws, episodes=3, agent_llm=agent, updater_llm=MockLLM(lambda m, s: NOTHING))
    assert len(agent.seeds) == 1  # stopped at the first episode
    again = train(ws, episodes=3, agent_llm=_agent(ws), updater_llm=MockLLM(lambda m, s: NOTHING))
    assert again.start == 0  # the failed episode was not counted as run


def test_an_updater_that_fails_makes_a_failed_episode_and_the_stream_goes_on(
    ws: Workspace,
) -> None:
    def down(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        raise RequestFailed("the updater's server could not be reached after 4 attempts.")

    report = train(ws, episodes=3, agent_llm=_agent(ws), updater_llm=MockLLM(down))
    rejected = [o for o in report.outcomes if not o.accepted]
    assert rejected and all(o.failed and "could not be reached" in o.failed for o in rejected)
    assert not report.commits


def test_train_says_how_many_failed(
    ws: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import evolve.train._train as module

    real = module.make_role_llm  # type: ignore[attr-defined]

    def failing(config: Any, role: str, **kw: Any) -> Any:
        llm = real(config, role, **kw)  # type: ignore[arg-type]  # a role, as train passes
        return Counting(llm, frozenset({1, 2})) if role == "agent" else llm

    monkeypatch.setattr(module, "make_role_llm", failing)
    code, out, err = run_cli(capsys, "train", "--episodes", "3")
    assert code == 0, err
    assert "2 of 3 episodes failed" in " ".join(out.split())
