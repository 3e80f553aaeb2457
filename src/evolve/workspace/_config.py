"""The `evolve.yaml` configuration model.

Every section is a pydantic model with ``extra="forbid"``, so a misspelt key is an error that
names the key instead of a setting that silently does nothing.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evolve._format._limits import read_path
from evolve._yaml import load as load_yaml
from evolve.errors import ConfigError
from evolve.workspace._paths import CONFIG_NAME as CONFIG_NAME
from evolve.workspace._paths import is_under

CONFIG_VERSION = 1

# A workspace can come from someone else, so every value here is input: numbers are finite and
# in sane ranges (an infinite timeout overflowed the HTTP client), names are one printable
# word, and the protected list keeps what the gate stands on.
_HOUR = 3600.0
_WEEK = 7 * 24 * _HOUR
_SEED = Field(default=0, ge=0, le=2**63 - 1)
_PRICE = Field(ge=0, le=1_000_000)  # US dollars per million tokens


def _one_word(value: str) -> str:
    """A name (model, recipe, persona, environment): printable, no space, not empty."""
    if not value or len(value) > 300:
        raise ValueError("must be 1 to 300 characters long")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError("must be one word of printable characters (no space or control)")
    return value


Name = Annotated[str, AfterValidator(_one_word)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class MaxTokens(_Section):
    """The reply bound sent with each role's requests (what a reply may cost at most)."""

    agent: int = Field(default=512, ge=16, le=1_000_000)
    updater: int = Field(default=1024, ge=16, le=1_000_000)
    reflector: int = Field(default=2048, ge=16, le=1_000_000)
    evolver: int = Field(default=2048, ge=16, le=1_000_000)
    selector: int = Field(default=256, ge=16, le=1_000_000)


class RetryBudgets(_Section):
    """Retries each role's model may make in one command, all its requests together: a
    server that is down then costs each further request one try, not all of them."""

    agent: int = Field(default=64, ge=0, le=100_000)
    updater: int = Field(default=32, ge=0, le=100_000)
    reflector: int = Field(default=16, ge=0, le=100_000)
    evolver: int = Field(default=16, ge=0, le=100_000)
    selector: int = Field(default=32, ge=0, le=100_000)


class RetrySettings(_Section):
    """How a request that timed out or failed in a way that may pass (a lost connection,
    429, 5xx) is tried again: up to `attempts` tries, waiting `backoff_s` and then twice as
    long each time (up to `max_backoff_s`, a quarter of it drawn at random), within the
    role's `budget`. A request that still fails makes its episode a failed one; the run goes
    on."""

    attempts: int = Field(
        default=4, ge=1, le=20, description="Tries per request, the first included."
    )
    backoff_s: float = Field(default=0.5, ge=0, le=600)
    max_backoff_s: float = Field(default=8.0, ge=0, le=3600)
    budget: RetryBudgets = RetryBudgets()


class ModelRoles(_Section):
    """Which model backend plays each role (see `evolve.llm`), and how it is asked.

    The roles can also be set per command (`--model`, `--updater-model`, `--reflector-model`)
    or per shell (`EVOLVE_MODEL`, `EVOLVE_UPDATER_MODEL`, `EVOLVE_REFLECTOR_MODEL`); a flag
    beats the environment, which beats this file.
    """

    agent: Name = "sim"
    # The `skills` recipe's reflection on a failed episode is the updater's job (its model).
    updater: Name = "sim"
    reflector: Name = "sim"
    # skills: the batch evolver (ADD/MERGE/REVISE/SKIP), and the selector that picks
    # the skills injected into a task (`lexical`: the offline trigger matcher).
    evolver: Name = "sim"
    selector: Name = "lexical"
    structured: Literal["auto", "json_schema", "json_object", "tools", "prompt"] = Field(
        default="auto",
        description="How to ask an OpenAI-compatible server for JSON; auto negotiates.",
    )
    max_tokens: MaxTokens = MaxTokens()
    timeout_s: float = Field(
        default=120.0, gt=0, le=_HOUR, description="Seconds one request may take."
    )
    total_timeout_s: float | None = Field(
        default=None,
        gt=0,
        le=_WEEK,
        description="Seconds all of one role's requests in a run may take.",
    )
    max_retry_wait_s: float = Field(
        default=60.0, ge=0, le=_HOUR, description="The longest a server's Retry-After is honoured."
    )
    cache: Literal["off", "read", "write", "replay"] = Field(
        default="off", description="The request cache (outside git); replay needs no model."
    )
    retry: RetrySettings = RetrySettings()
    context_tokens: int | None = Field(
        default=None,
        ge=256,
        le=100_000_000,
        description="The model's context window in tokens, where its server does not say "
        "(llama.cpp's /props and /v1/models metadata do).",
    )

    @field_validator("cache", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML 1.1 reads a bare `off` as false


class Price(_Section):
    """A model's price in US dollars per million tokens."""

    input: float = _PRICE
    output: float = _PRICE


class MemoryConfig(_Section):
    """How memory is injected into the agent's prompt."""

    inject: Literal["none", "recipe", "oracle", "fixed"] = "recipe"
    stats: bool = Field(
        default=False,
        description="Put harness-computed counts (card use, running totals) in <stats>.",
    )
    max_memory_chars: int = Field(default=1200, ge=100, le=100_000)


def _argv(value: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """A command line: 1 to 64 non-empty printable strings (no control characters)."""
    if value is None:
        return None
    if not 1 <= len(value) <= 64:
        raise ValueError("must list the program and its arguments (1 to 64 strings)")
    for arg in value:
        if not arg or len(arg) > 4096 or any(not c.isprintable() for c in arg):
            raise ValueError("each part must be 1 to 4096 printable characters")
    return value


def _folders(value: tuple[str, ...]) -> tuple[str, ...]:
    """Folders of the workspace, relative to its root, in POSIX form (no ``..``)."""
    for entry in value:
        path = PurePosixPath(entry)
        if not entry or path.is_absolute() or ".." in path.parts or "\\" in entry:
            raise ValueError(f"{entry!r} is not a folder relative to the workspace")
    return value


def _env_names(value: tuple[str, ...]) -> tuple[str, ...]:
    bad = [n for n in value if not n or not n.replace("_", "A").isalnum() or n[0].isdigit()]
    if bad:
        raise ValueError(f"{bad[0]!r} is not an environment variable name")
    return value


class AgentConfig(_Section):
    """Who plays each episode, and its turn limit.

    `name` is an agent of the `agents` registry (`evolve plugins` lists them): `model`, evolve's
    own function-call loop over the agent role's model (the default), an installed package's
    `evolve.agents` entry point, or an import path `module:factory`. At most one way of naming
    the agent may be set. `path` lists workspace folders (each under a protected prefix) put
    on the import path before the agent or a model is imported by name.
    """

    name: Name | None = Field(
        default=None, description="The agent that plays episodes (default: model)."
    )
    path: Annotated[tuple[str, ...], AfterValidator(_folders)] = Field(
        default=(),
        description="Workspace folders (each protected) on the import path for `name` and models.",
    )
    max_turns: int = Field(default=12, ge=2, le=100)
    # Command mode (docs/command-agents.md): a program run per episode in the sandbox.
    command: Annotated[tuple[str, ...] | None, AfterValidator(_argv)] = None
    env: Annotated[tuple[str, ...], AfterValidator(_env_names)] = ()
    read: tuple[Annotated[str, AfterValidator(_one_word)], ...] = ()
    timeout_s: float = Field(default=120.0, gt=0, le=_HOUR)
    cpu_s: int = Field(default=120, ge=1, le=int(_HOUR))
    memory_mb: int = Field(default=4096, ge=64, le=1_048_576)
    processes: int = Field(default=64, ge=1, le=4096)
    max_output_bytes: int = Field(default=8 * 1024**2, ge=1024, le=1024**3)

    @model_validator(mode="after")
    def _one_agent(self) -> AgentConfig:
        # Each way of naming the agent is a field of this section; only one may be given.
        given = [key for key in ("name", "command") if getattr(self, key, None) is not None]
        if len(given) > 1:
            raise ValueError(f"set one of {' or '.join(given)}, not both")
        return self

    @property
    def agent_name(self) -> str:
        """The registry name of the agent (`model` when none is set)."""
        return self.name or "model"


class RunConfig(_Section):
    runs: int = Field(default=1, ge=1, le=50)
    seed: int = _SEED
    concurrency: int = Field(default=1, ge=1, le=64)


class TrainConfig(_Section):
    recipe: Name = "ace"
    episodes: int = Field(default=24, ge=1, le=100_000)
    feedback: Literal["instance", "corrective"] = "instance"
    seed: int = _SEED
    review: bool = False


class GateConfig(_Section):
    """The accept rule of the evolve loop."""

    runs: int = Field(default=3, ge=1, le=20)
    min_gain: float = Field(default=0.0, ge=-1.0, le=1.0)
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    bootstrap_samples: int = Field(default=2000, ge=100, le=100_000)
    max_prompt_chars: int = Field(default=6000, ge=100, le=10_000_000)
    max_token_factor: float = Field(default=1.5, ge=1.0, le=1000.0)
    max_cost: float | None = Field(
        default=None,
        ge=0,
        le=1_000_000,
        description="US dollars one dev episode of a candidate may cost on average, at the "
        "prices in `prices:` (null: no cap).",
    )
    generations: int = Field(default=5, ge=1, le=50)
    max_generations: int = Field(default=5, ge=1, le=50)
    train_episodes: int = Field(default=8, ge=0, le=10_000)
    seed: int = _SEED

    @model_validator(mode="after")
    def _bounded(self) -> GateConfig:
        if self.generations > self.max_generations:
            raise ValueError(
                f"generations ({self.generations}) exceeds max_generations ({self.max_generations})"
            )
        return self


class RenderConfig(_Section):
    """What the agent is shown of memory/."""

    recipes: tuple[Name, ...] = Field(
        default=(),
        description="Recipes whose units are rendered, besides hand notes; empty: train.recipe.",
    )


class RecipeCaps(_Section):
    """Limits the applier enforces on one recipe's units in one scope (None: no limit).

    `units`: active units at once; `chars`: characters of one unit's text; `memory_chars`:
    characters of all its active units' text together (what it puts in the prompt).
    """

    units: int | None = Field(default=None, ge=1, le=100_000)
    chars: int | None = Field(default=None, ge=1, le=1_000_000)
    memory_chars: int | None = Field(default=None, ge=1, le=10_000_000)


class ShelfCaps(_Section):
    """Active skills a shelf may hold at once (enforced by the applier and the recipe)."""

    general: int = Field(default=5, ge=1, le=1000)
    per_topic: int = Field(default=5, ge=1, le=1000)


class SkillsConfig(_Section):
    """Skill compilation: shelves, batches, promotion, the scoreboard."""

    enabled: bool = Field(
        default=False, description="Select and inject skills (also on with recipe: skills)."
    )
    caps: ShelfCaps = ShelfCaps()
    max_injected: int = Field(default=3, ge=0, le=50)
    budget_tokens: int = Field(default=400, ge=0, le=100_000)
    holdout_share: float = Field(default=0.2, ge=0.0, le=1.0)
    promote_min_topics: int = Field(default=2, ge=1, le=100)
    staging_threshold: int = Field(
        default=2, ge=1, le=1000, description="Sightings in the staging area before a promotion."
    )
    consolidate_every: int = Field(
        default=4, ge=0, le=10_000, description="Batches between sleep passes (0: never)."
    )
    batch_size: int = Field(default=4, ge=1, le=1000)
    near_misses: bool = False
    retire_confidence: float = Field(default=0.9, gt=0.5, lt=1.0)


DEFAULT_PROTECTED = ("evalset/", "tests/", "evolve.yaml", ".gitignore")
# What the gate stands on: the scoring data, the workspace's tests and this file itself.
REQUIRED_PROTECTED = ("evalset/", "tests/", "evolve.yaml")


def _protected_paths(value: tuple[str, ...]) -> tuple[str, ...]:
    for entry in value:
        path = PurePosixPath(entry.rstrip("/"))
        if not entry.strip() or path.is_absolute() or ".." in path.parts or not path.parts:
            raise ValueError(
                f"{entry!r} is not a path inside the workspace (relative, without '..')"
            )
    missing = [
        need
        for need in REQUIRED_PROTECTED
        if not any(is_under(PurePosixPath(need.rstrip("/")), entry) for entry in value)
    ]
    if missing:
        raise ValueError(
            f"must keep {', '.join(missing)} (the gate scores with them; list them with any others)"
        )
    return value


class ParameterRange(_Section):
    """A numeric parameter the evolve loop may tune, and its bounds (inclusive)."""

    min: float = Field(ge=-1e12, le=1e12)
    max: float = Field(ge=-1e12, le=1e12)
    integer: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> ParameterRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self


class RedactConfig(_Section):
    """Secrets to hide by value in everything evolve writes, beyond the built-in shapes.

    `values` are literal strings (evolve.yaml is committed, so list only what may sit in the
    repository); `env` names environment variables whose values are hidden (the safe place
    for real secrets). OPENAI_API_KEY and ANTHROPIC_API_KEY are always hidden.
    """

    values: tuple[str, ...] = ()
    env: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _usable(self) -> RedactConfig:
        short = [v for v in self.values if len(v) < 4]
        if short:
            raise ValueError(
                "each value must be at least 4 characters (shorter ones hide ordinary text)"
            )
        bad = [n for n in self.env if not n or not n.replace("_", "A").isalnum()]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an environment variable name")
        return self


_SCOPE = re.compile(r"global|skills|user:[a-z0-9][a-z0-9_-]{0,39}")


class ShareConfig(_Section):
    """Which scopes' memory `evolve push` may send (docs/sharing.md): `all`, or a list of
    `global`, `skills` and `user:<persona>`."""

    scopes: Literal["all"] | tuple[str, ...] = "all"

    @model_validator(mode="after")
    def _known(self) -> ShareConfig:
        if self.scopes != "all":
            bad = [s for s in self.scopes if not _SCOPE.fullmatch(s)]
            if bad:
                raise ValueError(f"{bad[0]!r} is not a scope (global, skills or user:<persona>)")
        return self

    def shared(self, scope: str) -> bool:
        return self.scopes == "all" or scope in self.scopes


DEFAULT_PARAMETERS = {"agent.max_turns": ParameterRange(min=4, max=30)}


class EvolveConfig(_Section):
    """The whole of `evolve.yaml`."""

    version: Literal[1] = 1
    environment: Name = "persona_world"
    persona: Name = "alex"
    models: ModelRoles = ModelRoles()
    prices: dict[Name, Price] = Field(default_factory=dict)
    memory: MemoryConfig = MemoryConfig()
    agent: AgentConfig = AgentConfig()
    run: RunConfig = RunConfig()
    train: TrainConfig = TrainConfig()
    render: RenderConfig = RenderConfig()
    gate: GateConfig = GateConfig()
    protected: Annotated[tuple[str, ...], AfterValidator(_protected_paths)] = DEFAULT_PROTECTED
    redact: RedactConfig = RedactConfig()
    share: ShareConfig = ShareConfig()
    skills: SkillsConfig = SkillsConfig()
    parameters: dict[Name, ParameterRange] = Field(default_factory=lambda: dict(DEFAULT_PARAMETERS))
    # Per recipe; a recipe or field given here overrides that default only (null: no limit).
    caps: dict[Name, RecipeCaps] = Field(default_factory=dict)

    def caps_for(self, recipe: str, default: RecipeCaps | None = None) -> RecipeCaps:
        """The caps on `recipe`'s units: `default` (the recipe's own, see
        `evolve.updaters.recipe_caps`; none if not given) with `caps:` laid over, field by
        field."""
        base = default or RecipeCaps()
        given = self.caps.get(recipe)
        if given is None:
            return base
        return base.model_copy(update={f: getattr(given, f) for f in given.model_fields_set})

    def rendered_recipes(self) -> tuple[str, ...]:
        """The recipes whose units the agent sees: `render.recipes`, else `train.recipe`."""
        return self.render.recipes or (self.train.recipe,)


def _describe_error(err: dict[str, Any]) -> str:
    parts = [str(part) for part in err.get("loc", ())]
    named = parts[-1:] == ["[key]"]  # a mapping's key itself (a name under `prices:`, ...)
    if named:
        parts = parts[:-2]
    loc = ".".join(parts) or "(top level)"
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return f"unknown key '{loc}'"
    if kind == "missing":
        return f"missing key '{loc}'"
    got = err.get("input")
    shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if named:
        return f"key '{loc}': the name {shown} {msg}"
    return f"key '{loc}': {msg} (got {shown})"


def parse_config(text: str, *, source: str = CONFIG_NAME) -> EvolveConfig:
    """Parse and validate the text of an `evolve.yaml`.

    Raises:
        ConfigError: one sentence naming the offending key and what was expected.
    """
    try:
        data = load_yaml(text, source, error=ConfigError)  # a key given twice: refused
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{source} is not valid YAML{where}; fix the syntax and retry.") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source} must be a mapping of keys to values, not a {type(data).__name__}."
        )
    try:
        return EvolveConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise ConfigError(f"{source}: {_describe_error(dict(first))}{extra}.") from exc


def load_config(path: Path) -> EvolveConfig:
    """Read and validate `evolve.yaml` at `path`."""
    try:
        text = read_path(str(path), CONFIG_NAME).decode("utf-8")  # its size checked first
    except FileNotFoundError as exc:
        raise ConfigError(
            f"{path} does not exist; run `evolve init` to create a workspace."
        ) from exc
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; save it as UTF-8 and retry.") from None
    return parse_config(text, source=str(path))
