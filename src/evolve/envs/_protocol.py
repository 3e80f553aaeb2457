"""The environment seam: tasks by split, a fresh world per episode, recorded calls, checkers.

The environment knows nothing of memory. Rule provenance (which rule produced which complaint
line) stays in :class:`Feedback` on the driver side and is never shown to a learner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

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


class Environment(Protocol):
    """A task environment (DESIGN.md §3): `persona_world` here, AppWorld behind an adapter."""

    name: str

    def tasks(self, split: Split) -> list[Task]: ...

    def task(self, task_id: str) -> Task: ...

    def personas(self) -> list[str]: ...

    def api_docs(self) -> str: ...

    def tools(self) -> list[str]: ...

    def new_world(self, task: Task, persona: str, history: Any) -> World: ...

    def initial_history(self, persona: str) -> Any: ...

    def advance_history(self, history: Any, task: Task, persona: str, episode: int) -> Any: ...

    def judge(
        self, task: Task, persona: str, world: World, history: Any, episode: int | None
    ) -> Judgement: ...

    def feedback(self, task: Task, judgement: Judgement, tier: Tier) -> Feedback: ...

    def stats(self, task: Task, persona: str, history: Any) -> list[str]: ...

    def oracle_statements(self, persona: str, episode: int | None) -> list[str]: ...

    def rule_names(self) -> list[str]: ...
