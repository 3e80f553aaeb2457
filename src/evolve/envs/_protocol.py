"""The environment seam: tasks by split, a fresh world per episode, recorded calls, checkers.

The environment knows nothing of memory. Rule provenance (which rule produced which complaint
line) stays in :class:`Feedback` on the driver side and is never shown to a learner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from evolve.errors import ConfigError

Split = Literal["train", "dev", "holdout"]
SPLITS: tuple[Split, ...] = ("train", "dev", "holdout")
Tier = Literal["instance", "corrective"]


@dataclass(frozen=True)
class Task:
    """One task instance: an instruction and the parameters its checkers use."""

    id: str
    family: str
    kind: str
    split: Split
    instruction: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ApiCall:
    """One recorded API call: what was asked and what came back."""

    app: str
    api: str
    args: Mapping[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None

    @property
    def tool(self) -> str:
        return f"{self.app}__{self.api}"


@dataclass(frozen=True)
class Violation:
    """A preference rule the episode broke.

    `instance` is the checker's detail without the target value; `corrective` is the rule's
    correction template with the value filled in. Which one the learner sees is the feedback
    tier.
    """

    rule: str
    instance: str
    corrective: str


@dataclass(frozen=True)
class Judgement:
    """What the checkers found in one episode."""

    task_success: bool
    failure: str | None
    applicable: tuple[str, ...]
    violations: tuple[Violation, ...]

    @property
    def accepted(self) -> bool:
        return self.task_success and not self.violations


@dataclass(frozen=True)
class Feedback:
    """The complaint the learner sees, and (driver-side only) which rule produced each line."""

    text: str
    provenance: tuple[tuple[str, str], ...] = ()


class World(Protocol):
    """A fresh world for one episode; every call is recorded."""

    @property
    def calls(self) -> Sequence[ApiCall]: ...

    @property
    def completed(self) -> bool: ...

    def call(self, tool: str, args: Mapping[str, Any]) -> ApiCall: ...


class CoreEnvironment(Protocol):
    """What every environment implements: tasks by split; one episode's world
    with its calls recorded; the judge (task success, optional named rule violations); the
    user's complaint in the two feedback tiers.

    The harness passes its context to `new_world` and `judge`: `persona` is the workspace's
    user (``persona:`` in evolve.yaml; one implicit user when the environment declares no
    :class:`Personas`), `history` is what :class:`Drift` keeps across a training stream (None
    when the environment declares none), `episode` the training episode (None when scoring).
    An environment that has no use for them ignores them.
    """

    name: str

    def tasks(self, split: Split) -> list[Task]: ...

    def task(self, task_id: str) -> Task: ...

    def api_docs(self) -> str: ...

    def tools(self) -> list[str]: ...

    def new_world(self, task: Task, persona: str, history: Any) -> World: ...

    def judge(
        self, task: Task, persona: str, world: World, history: Any, episode: int | None
    ) -> Judgement: ...

    def feedback(self, task: Task, judgement: Judgement, tier: Tier) -> Feedback: ...


# --- optional capabilities: an environment declares one by implementing its methods --------


@runtime_checkable
class Personas(Protocol):
    """Several users, each with its own preferences (``--persona``, experiments' personas)."""

    def personas(self) -> list[str]: ...


@runtime_checkable
class Drift(Protocol):
    """A user history kept across a training stream (a habitual card, running totals), so a
    preference may change or depend on what came before."""

    def initial_history(self, persona: str) -> Any: ...

    def advance_history(self, history: Any, task: Task, persona: str, episode: int) -> Any: ...


@runtime_checkable
class Stats(Protocol):
    """Harness-computed counts for the agent's ``<stats>`` section (``memory.stats: true``)."""

    def stats(self, task: Task, persona: str, history: Any) -> list[str]: ...


@runtime_checkable
class Oracle(Protocol):
    """The user's own statements of their preferences (``memory.inject: oracle``, the
    experiments' oracle arm)."""

    def oracle_statements(self, persona: str, episode: int | None) -> list[str]: ...


@runtime_checkable
class RuleNames(Protocol):
    """The names of the rules the judge may report as violated (reports, skills)."""

    def rule_names(self) -> list[str]: ...


CAPABILITIES: dict[str, type] = {
    "personas": Personas,
    "drift": Drift,
    "stats": Stats,
    "oracle": Oracle,
    "rule_names": RuleNames,
}


def capabilities(env: object) -> frozenset[str]:
    """The optional capabilities `env` declares (names of :data:`CAPABILITIES`)."""
    inner = env.inner if isinstance(env, Filled) else env
    return frozenset(name for name, proto in CAPABILITIES.items() if isinstance(inner, proto))


def personas_of(env: object) -> list[str] | None:
    """The users `env` knows, or None for one implicit user (whatever evolve.yaml names)."""
    inner = env.inner if isinstance(env, Filled) else env
    return inner.personas() if isinstance(inner, Personas) else None


@runtime_checkable
class Environment(CoreEnvironment, Personas, Drift, Stats, Oracle, RuleNames, Protocol):
    """What the harness calls: the core and every capability. `make_env` gives an
    environment that lacks some of them the defaults of :class:`Filled`; persona_world and
    AppWorld implement them all."""


class Filled:
    """An environment with the capabilities it does not declare filled in: one implicit user
    (any name), no drift (history None), no stats, no rule names; an oracle it cannot give is
    refused in one sentence."""

    def __init__(self, inner: CoreEnvironment) -> None:
        self.inner = inner
        self.name = inner.name

    def __getattr__(self, attribute: str) -> Any:  # the environment's own extras
        if attribute == "inner":  # not set yet (a copy being built)
            raise AttributeError(attribute)
        return getattr(self.inner, attribute)

    def tasks(self, split: Split) -> list[Task]:
        return self.inner.tasks(split)

    def task(self, task_id: str) -> Task:
        return self.inner.task(task_id)

    def api_docs(self) -> str:
        return self.inner.api_docs()

    def tools(self) -> list[str]:
        return self.inner.tools()

    def new_world(self, task: Task, persona: str, history: Any) -> World:
        return self.inner.new_world(task, persona, history)

    def judge(
        self, task: Task, persona: str, world: World, history: Any, episode: int | None
    ) -> Judgement:
        return self.inner.judge(task, persona, world, history, episode)

    def feedback(self, task: Task, judgement: Judgement, tier: Tier) -> Feedback:
        return self.inner.feedback(task, judgement, tier)

    def personas(self) -> list[str]:
        inner = self.inner
        return inner.personas() if isinstance(inner, Personas) else []

    def initial_history(self, persona: str) -> Any:
        inner = self.inner
        return inner.initial_history(persona) if isinstance(inner, Drift) else None

    def advance_history(self, history: Any, task: Task, persona: str, episode: int) -> Any:
        inner = self.inner
        if isinstance(inner, Drift):
            return inner.advance_history(history, task, persona, episode)
        return history

    def stats(self, task: Task, persona: str, history: Any) -> list[str]:
        inner = self.inner
        return inner.stats(task, persona, history) if isinstance(inner, Stats) else []

    def oracle_statements(self, persona: str, episode: int | None) -> list[str]:
        inner = self.inner
        if isinstance(inner, Oracle):
            return inner.oracle_statements(persona, episode)
        raise ConfigError(
            f"the environment {self.name!r} states no user preferences (no oracle); "
            "use memory.inject none, recipe or fixed."
        )

    def rule_names(self) -> list[str]:
        inner = self.inner
        return inner.rule_names() if isinstance(inner, RuleNames) else []


def harnessed(env: CoreEnvironment) -> Environment:
    """`env` as the harness calls it: itself when it declares every capability, else
    :class:`Filled` around it.

    Raises:
        ConfigError: `env` lacks a method of the core protocol (one sentence naming them).
    """
    if isinstance(env, Environment):
        return env
    missing = [m for m in _CORE if not callable(getattr(env, m, None))]
    if not isinstance(getattr(env, "name", None), str):
        missing.insert(0, "name")
    if missing:
        raise ConfigError(
            f"{type(env).__module__}:{type(env).__name__} is not an environment: it lacks {', '.join(missing)} "
            "(see evolve.envs.CoreEnvironment)."
        )
    return Filled(env)


_CORE = ("tasks", "task", "api_docs", "tools", "new_world", "judge", "feedback")
