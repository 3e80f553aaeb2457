"""The core protocol and the optional capabilities: persona_world and AppWorld implement the
whole of it; a core-only environment gets the defaults; a non-environment is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evolve.envs import (
    CAPABILITIES,
    CoreEnvironment,
    Environment,
    Feedback,
    Filled,
    Judgement,
    Task,
    Tier,
    World,
    capabilities,
    harnessed,
    personas_of,
)
from evolve.envs.appworld import AppWorldEnv
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def _whole(env: PersonaWorldEnv | AppWorldEnv) -> Environment:
    return env  # mypy strict checks that both implement every capability


def _core(env: PersonaWorldEnv | AppWorldEnv) -> CoreEnvironment:
    return env


def test_persona_world_and_appworld_declare_every_capability() -> None:
    assert _whole is not None and _core is not None
    world = PersonaWorldEnv(ROOT / "evalset")
    assert capabilities(world) == set(CAPABILITIES)
    assert harnessed(world) is world
    for capability in CAPABILITIES.values():  # AppWorld's class (its data is not here)
        for method in vars(capability):
            if not method.startswith("_"):
                assert callable(getattr(AppWorldEnv, method)), method


class Bare:
    """The core and nothing else."""

    name = "bare"

    def tasks(self, split: str) -> list[Task]:
        return [Task("t", "f", "k", "dev", "do it")] if split == "dev" else []

    def task(self, task_id: str) -> Task:
        return self.tasks("dev")[0]

    def api_docs(self) -> str:
        return ""

    def tools(self) -> list[str]:
        return []

    def new_world(self, task: Task, persona: str, history: Any) -> World:
        raise NotImplementedError

    def judge(
        self, task: Task, persona: str, world: World, history: Any, episode: int | None
    ) -> Judgement:
        raise NotImplementedError

    def feedback(self, task: Task, judgement: Judgement, tier: Tier) -> Feedback:
        return Feedback("")

    def extra(self) -> str:
        return "its own"


def test_a_core_only_environment_gets_the_defaults_and_keeps_its_own_extras() -> None:
    env = harnessed(Bare())
    assert isinstance(env, Filled) and capabilities(env) == frozenset()
    task = env.task("t")
    assert personas_of(env) is None and env.personas() == []
    history = env.initial_history("anyone")
    assert history is None and env.advance_history(history, task, "anyone", 0) is None
    assert env.stats(task, "anyone", None) == [] and env.rule_names() == []
    with pytest.raises(ConfigError, match="^the environment 'bare' states no user preferences"):
        env.oracle_statements("anyone", None)
    assert env.extra() == "its own"


class WithPersonas(Bare):
    def personas(self) -> list[str]:
        return ["ann", "bo"]


def test_a_declared_capability_is_used_the_rest_filled() -> None:
    env = harnessed(WithPersonas())
    assert capabilities(env) == {"personas"} and personas_of(env) == ["ann", "bo"]
    assert env.personas() == ["ann", "bo"] and env.initial_history("ann") is None


def test_something_that_is_not_an_environment_is_named() -> None:
    class Half:
        name = "half"

        def tasks(self, split: str) -> list[Task]:
            return []

    with pytest.raises(ConfigError) as caught:
        harnessed(Half())  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"{__name__}:Half is not an environment: it lacks task, api_docs, tools, new_world, judge, "
        "feedback (see evolve.envs.CoreEnvironment)."
    )
