"""The experiment file of `evolve compare` and the plan of work it expands to.

An experiment file (YAML, under `experiments/` in the workspace) declares:

```yaml
name: q3                       # refs/evolve/arms/q3/..., generations/experiments/q3/
personas: [alex, blair]        # whose preferences are learned and scored
feedback: [instance, corrective]
orders: [0, 1, 2]              # stream orders: the training seeds
eval_seeds: [0, 1, 2]          # evaluation seeds: each task is scored once per seed
episodes: 24                   # training episodes per stream
splits: [dev, holdout]         # evaluation splits (the first is the headline)
models: {agent: sim, updater: sim}
arms:
  none: {type: none}           # no memory: the floor
  oracle: {type: oracle}       # the persona's own preference statements: the ceiling
  fixed: {type: fixed, match: ace}   # a neutral block as long as ace's memory (or chars: N)
  ace: {recipe: ace}           # any recipe (skills too, once registered), with parameters:
  rewrite: {recipe: rewrite, max_memory_chars: 1200, caps: {units: 1}}
  small: {type: none, models: {agent: openai/qwen2.5-0.5b}}  # an arm's own models
  mine: {recipe: ace, agent: "desk_agent:make_agent"}  # an arm's own agent (default: the
                               # workspace's agent.name or agent.command), trained and scored
```

Every mistake is one sentence (:class:`ExperimentError`) before anything runs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from evolve._yaml import load as load_yaml
from evolve.errors import EvolveError

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
ArmType = Literal["none", "oracle", "fixed", "recipe"]
TierName = Literal["instance", "corrective"]
SplitName = Literal["train", "dev", "holdout"]
ARMS_REF = "refs/evolve/arms"
# The training side ref of each arm's clone (refusal records, the persona's clock) is kept
# beside the arm, under a parallel name (a ref cannot also be a folder of refs).
ARM_RECORDS_REF = "refs/evolve/arm-records"


class ExperimentError(EvolveError):
    """The experiment file is wrong: one sentence, before anything runs."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelsSpec(_Strict):
    agent: str | None = None
    updater: str | None = None


class ArmCaps(_Strict):
    """An arm's caps on its recipe's units: the fields of `evolve.yaml`'s `caps:` entries
    (`evolve.workspace.RecipeCaps`, with the same bounds), checked here with the rest of the
    experiment file."""

    units: int | None = Field(default=None, ge=1, le=100_000)
    chars: int | None = Field(default=None, ge=1, le=1_000_000)
    memory_chars: int | None = Field(default=None, ge=1, le=10_000_000)


class ArmSpec(_Strict):
    """One arm: what the agent is given, and for recipe arms how memory is written."""

    type: ArmType = "recipe"
    recipe: str | None = None
    match: str | None = None  # fixed: token-match this recipe arm's memory, cell by cell
    chars: int | None = Field(default=None, ge=0, le=100_000)  # fixed: a constant length
    caps: ArmCaps | None = None  # recipe: the applier's caps for this recipe in this arm
    max_memory_chars: int | None = Field(default=None, ge=100, le=100_000)
    review: bool = False
    # This arm's own models over the experiment's (say another agent, scored beside none)
    models: ModelsSpec | None = None
    # This arm's own agent, by registry name (`model`, an entry point, `module:factory`);
    # None: the workspace's (`agent.name` or `agent.command` in evolve.yaml)
    agent: str | None = Field(default=None, min_length=1, max_length=400)


class Experiment(_Strict):
    name: str
    description: str = ""
    personas: tuple[str, ...] = Field(min_length=1)
    feedback: tuple[TierName, ...] = Field(default=("instance",), min_length=1)
    orders: tuple[StrictInt, ...] = Field(default=(0,), min_length=1)
    eval_seeds: tuple[StrictInt, ...] = Field(default=(0,), min_length=1)
    episodes: int = Field(default=24, ge=1, le=100_000)
    splits: tuple[SplitName, ...] = Field(default=("dev",), min_length=1)
    models: ModelsSpec = ModelsSpec()
    bootstrap_samples: int = Field(default=1000, ge=100, le=100_000)
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    arms: dict[str, ArmSpec] = Field(min_length=1)

    # --- views ---------------------------------------------------------------------------

    def arm_names(self, *types: str) -> list[str]:
        return [n for n, a in self.arms.items() if not types or a.type in types]

    def _plain(self) -> dict[str, Any] | None:
        # An arm that names no agent is dumped without the key, so an experiment written
        # before arms could name one keeps its digest (its results) and its results' plan.
        plain = {name: {"agent"} for name, arm in self.arms.items() if arm.agent is None}
        return {"arms": plain} if plain else None

    def document(self) -> dict[str, Any]:
        """The experiment as the results show it (JSON types)."""
        return self.model_dump(mode="json", exclude=self._plain())

    def digest(self) -> str:
        text = self.model_dump_json(exclude=self._plain())
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _sentence(err: Any) -> str:
    where = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
    msg = str(err.get("msg", "is not valid")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        return f"unknown key {where!r}"
    if err.get("type") == "missing":
        return f"{where!r} is missing"
    return f"{where}: {msg}" if where else msg


def parse_experiment(
    text: str,
    *,
    source: str,
    personas: list[str],
    recipes: list[str],
    splits: dict[str, list[str]] | None = None,
) -> Experiment:
    """Parse and check an experiment file against the workspace's personas and recipes.

    Raises:
        ExperimentError: bad YAML, an unknown key, arm type, recipe, persona or split, or an
            arm that cannot be run; one sentence naming the file.
    """
    try:
        # A key given twice (a second `ace:` arm) is refused, not silently the last one.
        data = load_yaml(text, source, error=ExperimentError)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ExperimentError(f"{source} is not valid YAML{where}; fix the file.") from None
    if not isinstance(data, dict):
        raise ExperimentError(f"{source} must be a YAML mapping with name, personas and arms.")
    arms = data.get("arms")
    if isinstance(arms, dict):
        for arm_name, arm in arms.items():
            if arm is None:
                arms[arm_name] = arm = {}
            if isinstance(arm, dict) and "type" in arm and arm["type"] not in (
                "none", "oracle", "fixed", "recipe"
            ):  # fmt: skip
                raise ExperimentError(
                    f"{source}: arm {arm_name!r} has unknown type {arm['type']!r}; choose "
                    "none, oracle, fixed or recipe."
                )
            if isinstance(arm, dict) and "type" not in arm:
                if arm_name in ("none", "oracle", "fixed"):
                    arm["type"] = arm_name  # an arm named after a type is of that type
                elif "recipe" not in arm:
                    arm["recipe"] = arm_name  # `ace: {}` is the ace recipe
    try:
        exp = Experiment.model_validate(data)
    except ValidationError as exc:
        raise ExperimentError(
            f"{source}: {_sentence(exc.errors()[0])}; see `evolve compare --help`."
        ) from None
    _check(exp, source, personas, recipes, splits or {})
    return exp


def _check(
    exp: Experiment,
    source: str,
    personas: list[str],
    recipes: list[str],
    splits: dict[str, list[str]],
) -> None:
    def fail(what: str) -> ExperimentError:
        return ExperimentError(f"{source}: {what}.")

    if not NAME.match(exp.name):
        raise fail(f"name {exp.name!r} must be lower-case letters, digits, '-' or '_'")
    for p in exp.personas:
        if p not in personas:
            raise fail(f"unknown persona {p!r}; choose from {', '.join(personas)}")
    for label, values in (
        ("personas", exp.personas),
        ("feedback", exp.feedback),
        ("orders", exp.orders),
        ("eval_seeds", exp.eval_seeds),
        ("splits", exp.splits),
    ):
        if len(set(values)) != len(values):
            raise fail(f"{label} lists a value twice")
    for split in exp.splits:
        if split in splits and not splits[split]:
            raise fail(f"split {split!r} has no tasks in this workspace's evalset")
    for name, arm in exp.arms.items():
        if not NAME.match(name):
            raise fail(f"arm name {name!r} must be lower-case letters, digits, '-' or '_'")
        if arm.type == "recipe":
            if arm.recipe is None:
                raise fail(f"arm {name!r} needs a recipe")
            if arm.recipe not in recipes:
                raise fail(f"arm {name!r} names unknown recipe {arm.recipe!r}; choose from "
                           f"{', '.join(recipes)}")  # fmt: skip
        elif (
            arm.recipe is not None
            or arm.caps is not None
            or arm.max_memory_chars is not None
            or arm.review
        ):
            raise fail(f"arm {name!r} of type {arm.type} takes no recipe parameters")
        if arm.type == "fixed":
            if (arm.match is None) == (arm.chars is None):
                raise fail(f"fixed arm {name!r} needs one of match (a recipe arm) or chars")
            if arm.match is not None and (
                arm.match not in exp.arms or exp.arms[arm.match].type != "recipe"
            ):
                raise fail(f"fixed arm {name!r} matches {arm.match!r}, which is not a recipe arm")
        elif arm.match is not None or arm.chars is not None:
            raise fail(f"arm {name!r} is not fixed; match and chars belong to fixed arms")
        if arm.type != "recipe" and arm.models is not None and arm.models.updater:
            raise fail(f"arm {name!r} of type {arm.type} learns nothing; it takes no updater model")


def load_experiment(
    path: Path,
    *,
    personas: list[str],
    recipes: list[str],
    splits: dict[str, list[str]] | None = None,
) -> Experiment:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ExperimentError(
            f"{path} does not exist; give an experiment file such as experiments/q3.yaml."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExperimentError(f"cannot read {path}: {exc}.") from None
    return parse_experiment(
        text, source=str(path), personas=personas, recipes=recipes, splits=splits
    )


# --- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One unit of work, run in one process from one clone of the base commit.

    A `train` job trains one recipe arm on one (persona, tier, order) stream, evaluates it,
    and evaluates every fixed arm that token-matches it in the same cell. A `base` job
    evaluates the arms that learn nothing (none, oracle, fixed with a constant length) for one
    persona: they do not depend on the feedback tier or the stream order.
    """

    kind: Literal["train", "base"]
    persona: str
    arm: str | None = None
    tier: str | None = None
    order: int | None = None

    @property
    def key(self) -> str:
        if self.kind == "base":
            return f"base--{self.persona}"
        return f"train--{self.arm}--{self.persona}--{self.tier}--{self.order}"

    def ref(self, experiment: str) -> str | None:
        if self.kind == "base":
            return None
        return f"{ARMS_REF}/{experiment}/{self.arm}/{self.persona}/{self.tier}/{self.order}"

    def records_ref(self, experiment: str) -> str | None:
        if self.kind == "base":
            return None
        return f"{ARM_RECORDS_REF}/{experiment}/{self.arm}/{self.persona}/{self.tier}/{self.order}"

    def label(self) -> str:
        if self.kind == "base":
            return f"baselines for {self.persona}"
        return f"{self.arm} · {self.persona} · {self.tier} · order {self.order}"


def plan(exp: Experiment) -> list[Job]:
    """Every job of `exp`, baselines first, then recipe arms (persona, tier, order, arm)."""
    jobs: list[Job] = []
    if exp.arm_names("none", "oracle") or any(
        a.type == "fixed" and a.chars is not None for a in exp.arms.values()
    ):
        jobs += [Job("base", p) for p in exp.personas]
    for persona in exp.personas:
        for tier in exp.feedback:
            for order in exp.orders:
                for arm in exp.arm_names("recipe"):
                    jobs.append(Job("train", persona, arm, tier, order))
    return jobs
