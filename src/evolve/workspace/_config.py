"""The `evolve.yaml` configuration model.

Every section is a msgspec Struct checked by `evolve.workspace._fields`, which refuses an
unknown key (a misspelt key is an error that names the key instead of a setting that silently
does nothing) and words every refusal as pydantic did.
"""

import os
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, Self

import msgspec
from msgspec import Meta, field

from evolve._format._cache import YAML_CACHE
from evolve._format._limits import read_path
from evolve._lazy import pattern
from evolve._yaml import load as load_yaml
from evolve.errors import ConfigError
from evolve.workspace._fields import Before, Check, Invalid, parse
from evolve.workspace._paths import CONFIG_NAME as CONFIG_NAME
from evolve.workspace._paths import is_under

CONFIG_VERSION = 1

# A workspace can come from someone else, so every value here is input: numbers are finite and
# in sane ranges (an infinite timeout overflowed the HTTP client), names are one printable
# word, and the protected list keeps what the gate stands on.
_HOUR = 3600.0
_WEEK = 7 * 24 * _HOUR
Seed = Annotated[int, Meta(ge=0, le=2**63 - 1)]
Usd = Annotated[float, Meta(ge=0, le=1_000_000)]  # US dollars per million tokens


def _one_word(value: str) -> str:
    """A name (model, recipe, persona, environment): printable, no space, not empty."""
    if not value or len(value) > 300:
        raise ValueError("must be 1 to 300 characters long")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError("must be one word of printable characters (no space or control)")
    return value


Name = Annotated[str, Check(_one_word)]


class _Frozen(ValueError, AttributeError):
    """A section's field was assigned to (sections are read-only). A ValueError, as
    pydantic's refusal was."""


def _read_only(self: object, name: str, value: object) -> None:
    raise _Frozen(f"{type(self).__name__} is read-only; use model_copy(update=...)")


class _Section(msgspec.Struct, frozen=True, dict=True):
    """A section of `evolve.yaml`: read-only, built by :func:`_fields.parse` (which refuses
    unknown keys and words refusals as pydantic did), with the part of pydantic's model API
    evolve uses (`model_validate`, `model_dump`, `model_copy`, `model_fields_set`)."""

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """An instance from `data` (a mapping), checked.

        Raises:
            Invalid: every problem (`errors()`, as pydantic's ValidationError).
        """
        made: Self = parse(cls, data)
        return made

    @property
    def model_fields_set(self) -> frozenset[str]:
        """The fields given when this was validated (or updated by `model_copy`); for one
        built directly, those that differ from their defaults."""
        given = self.__dict__.get("_given")
        if given is None:
            given = frozenset(
                f.name
                for f in msgspec.structs.fields(self)
                if getattr(self, f.name) != _default_of(f)
            )
        return frozenset(given)

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        """A copy with `update`'s fields replaced (not checked, as pydantic's)."""
        made: Self = msgspec.structs.replace(self, **(update or {}))
        given = self.__dict__.get("_given")
        if given is not None:
            msgspec.structs.force_setattr(made, "_given", given | set(update or ()))
        return made

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """The fields as plain values (sections as dicts; tuples as lists in `json` mode)."""
        return {f: _dump(getattr(self, f), mode) for f in self.__struct_fields__}


def _default_of(f: msgspec.structs.FieldInfo) -> Any:
    """A field's default (a required field has none: nothing equals it)."""
    if f.default is not msgspec.NODEFAULT:
        return f.default
    if f.default_factory is not msgspec.NODEFAULT:
        return f.default_factory()
    return msgspec.NODEFAULT


def _dump(value: Any, mode: str) -> Any:
    if isinstance(value, _Section):
        return value.model_dump(mode=mode)  # type: ignore[arg-type]
    if isinstance(value, dict):
        return {k: _dump(v, mode) for k, v in value.items()}
    if isinstance(value, tuple):
        items = [_dump(v, mode) for v in value]
        return items if mode == "json" else tuple(items)
    return value


class MaxTokens(_Section, frozen=True):
    """The reply bound sent with each role's requests (what a reply may cost at most)."""

    agent: Annotated[int, Meta(ge=16, le=1_000_000)] = 512
    updater: Annotated[int, Meta(ge=16, le=1_000_000)] = 1024
    reflector: Annotated[int, Meta(ge=16, le=1_000_000)] = 2048
    evolver: Annotated[int, Meta(ge=16, le=1_000_000)] = 2048
    selector: Annotated[int, Meta(ge=16, le=1_000_000)] = 256


class RetryBudgets(_Section, frozen=True):
    """Retries each role's model may make in one command, all its requests together: a
    server that is down then costs each further request one try, not all of them."""

    agent: Annotated[int, Meta(ge=0, le=100_000)] = 64
    updater: Annotated[int, Meta(ge=0, le=100_000)] = 32
    reflector: Annotated[int, Meta(ge=0, le=100_000)] = 16
    evolver: Annotated[int, Meta(ge=0, le=100_000)] = 16
    selector: Annotated[int, Meta(ge=0, le=100_000)] = 32


class RetrySettings(_Section, frozen=True):
    """How a request that timed out or failed in a way that may pass (a lost connection,
    429, 5xx) is tried again: up to `attempts` tries, waiting `backoff_s` and then twice as
    long each time (up to `max_backoff_s`, a quarter of it drawn at random), within the
    role's `budget`. A request that still fails makes its episode a failed one; the run goes
    on."""

    attempts: Annotated[
        int, Meta(ge=1, le=20, description="Tries per request, the first included.")
    ] = 4
    backoff_s: Annotated[float, Meta(ge=0, le=600)] = 0.5
    max_backoff_s: Annotated[float, Meta(ge=0, le=3600)] = 8.0
    budget: RetryBudgets = field(default_factory=RetryBudgets)


def _yaml_off(value: Any) -> Any:
    return "off" if value is False else value  # YAML 1.1 reads a bare `off` as false


class ModelRoles(_Section, frozen=True):
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
    structured: Annotated[
        Literal["auto", "json_schema", "json_object", "tools", "prompt"],
        Meta(description="How to ask an OpenAI-compatible server for JSON; auto negotiates."),
    ] = "auto"
    max_tokens: MaxTokens = field(default_factory=MaxTokens)
    timeout_s: Annotated[
        float, Meta(gt=0, le=_HOUR, description="Seconds one request may take.")
    ] = 120.0
    total_timeout_s: (
        Annotated[
            float,
            Meta(
                gt=0, le=_WEEK, description="Seconds all of one role's requests in a run may take."
            ),
        ]
        | None
    ) = None
    max_retry_wait_s: Annotated[
        float, Meta(ge=0, le=_HOUR, description="The longest a server's Retry-After is honoured.")
    ] = 60.0
    cache: Annotated[
        Literal["off", "read", "write", "replay"],
        Before(_yaml_off),
        Meta(description="The request cache (outside git); replay needs no model."),
    ] = "off"
    retry: RetrySettings = field(default_factory=RetrySettings)
    context_tokens: (
        Annotated[
            int,
            Meta(
                ge=256,
                le=100_000_000,
                description="The model's context window in tokens, where its server does not say "
                "(llama.cpp's /props and /v1/models metadata do).",
            ),
        ]
        | None
    ) = None


class Price(_Section, frozen=True):
    """A model's price in US dollars per million tokens."""

    input: Usd
    output: Usd


class MemoryConfig(_Section, frozen=True):
    """How memory is injected into the agent's prompt."""

    inject: Literal["none", "recipe", "oracle", "fixed"] = "recipe"
    stats: Annotated[
        bool, Meta(description="Put harness-computed counts (card use, running totals) in <stats>.")
    ] = False
    max_memory_chars: Annotated[int, Meta(ge=100, le=100_000)] = 1200


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


class AgentConfig(_Section, frozen=True):
    """Who plays each episode, and its turn limit.

    `name` is an agent of the `agents` registry (`evolve plugins` lists them): `model`, evolve's
    own function-call loop over the agent role's model (the default), an installed package's
    `evolve.agents` entry point, or an import path `module:factory`. At most one way of naming
    the agent may be set. `path` lists workspace folders (each under a protected prefix) put
    on the import path before the agent or a model is imported by name.
    """

    name: Annotated[
        Name | None, Meta(description="The agent that plays episodes (default: model).")
    ] = None
    path: Annotated[
        Annotated[tuple[str, ...], Check(_folders)],
        Meta(
            description="Workspace folders (each protected) on the import path for `name` and models."
        ),
    ] = ()
    max_turns: Annotated[int, Meta(ge=2, le=100)] = 12
    # Command mode (docs/command-agents.md): a program run per episode in the sandbox.
    command: Annotated[tuple[str, ...] | None, Check(_argv)] = None
    env: Annotated[tuple[str, ...], Check(_env_names)] = ()
    read: tuple[Annotated[str, Check(_one_word)], ...] = ()
    timeout_s: Annotated[float, Meta(gt=0, le=_HOUR)] = 120.0
    cpu_s: Annotated[int, Meta(ge=1, le=int(_HOUR))] = 120
    memory_mb: Annotated[int, Meta(ge=64, le=1_048_576)] = 4096
    processes: Annotated[int, Meta(ge=1, le=4096)] = 64
    max_output_bytes: Annotated[int, Meta(ge=1024, le=1024**3)] = 8 * 1024**2

    def _check(self) -> None:
        # Each way of naming the agent is a field of this section; only one may be given.
        given = [key for key in ("name", "command") if getattr(self, key, None) is not None]
        if len(given) > 1:
            raise ValueError(f"set one of {' or '.join(given)}, not both")

    @property
    def agent_name(self) -> str:
        """The registry name of the agent (`model` when none is set)."""
        return self.name or "model"


class RunConfig(_Section, frozen=True):
    runs: Annotated[int, Meta(ge=1, le=50)] = 1
    seed: Seed = 0
    concurrency: Annotated[int, Meta(ge=1, le=64)] = 1


class TrainConfig(_Section, frozen=True):
    recipe: Name = "ace"
    episodes: Annotated[int, Meta(ge=1, le=100_000)] = 24
    feedback: Literal["instance", "corrective"] = "instance"
    seed: Seed = 0
    review: bool = False


class GateConfig(_Section, frozen=True):
    """The accept rule of the evolve loop."""

    runs: Annotated[int, Meta(ge=1, le=20)] = 3
    min_gain: Annotated[float, Meta(ge=-1.0, le=1.0)] = 0.0
    confidence: Annotated[float, Meta(gt=0.5, lt=1.0)] = 0.95
    bootstrap_samples: Annotated[int, Meta(ge=100, le=100_000)] = 2000
    max_prompt_chars: Annotated[int, Meta(ge=100, le=10_000_000)] = 6000
    max_token_factor: Annotated[float, Meta(ge=1.0, le=1000.0)] = 1.5
    max_cost: (
        Annotated[
            float,
            Meta(
                ge=0,
                le=1_000_000,
                description="US dollars one dev episode of a candidate may cost on average, at the "
                "prices in `prices:` (null: no cap).",
            ),
        ]
        | None
    ) = None
    generations: Annotated[int, Meta(ge=1, le=50)] = 5
    max_generations: Annotated[int, Meta(ge=1, le=50)] = 5
    train_episodes: Annotated[int, Meta(ge=0, le=10_000)] = 8
    seed: Seed = 0

    def _check(self) -> None:
        if self.generations > self.max_generations:
            raise ValueError(
                f"generations ({self.generations}) exceeds max_generations ({self.max_generations})"
            )


class RenderConfig(_Section, frozen=True):
    """What the agent is shown of memory/."""

    recipes: Annotated[
        tuple[Name, ...],
        Meta(
            description="Recipes whose units are rendered, besides hand notes; empty: train.recipe."
        ),
    ] = ()


class RecipeCaps(_Section, frozen=True):
    """Limits the applier enforces on one recipe's units in one scope (None: no limit).

    `units`: active units at once; `chars`: characters of one unit's text; `memory_chars`:
    characters of all its active units' text together (what it puts in the prompt).
    """

    units: Annotated[int, Meta(ge=1, le=100_000)] | None = None
    chars: Annotated[int, Meta(ge=1, le=1_000_000)] | None = None
    memory_chars: Annotated[int, Meta(ge=1, le=10_000_000)] | None = None


class ShelfCaps(_Section, frozen=True):
    """Active skills a shelf may hold at once (enforced by the applier and the recipe)."""

    general: Annotated[int, Meta(ge=1, le=1000)] = 5
    per_topic: Annotated[int, Meta(ge=1, le=1000)] = 5


class SkillsConfig(_Section, frozen=True):
    """Skill compilation: shelves, batches, promotion, the scoreboard."""

    enabled: Annotated[
        bool, Meta(description="Select and inject skills (also on with recipe: skills).")
    ] = False
    caps: ShelfCaps = field(default_factory=ShelfCaps)
    max_injected: Annotated[int, Meta(ge=0, le=50)] = 3
    budget_tokens: Annotated[int, Meta(ge=0, le=100_000)] = 400
    holdout_share: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.2
    promote_min_topics: Annotated[int, Meta(ge=1, le=100)] = 2
    staging_threshold: Annotated[
        int, Meta(ge=1, le=1000, description="Sightings in the staging area before a promotion.")
    ] = 2
    consolidate_every: Annotated[
        int, Meta(ge=0, le=10_000, description="Batches between sleep passes (0: never).")
    ] = 4
    batch_size: Annotated[int, Meta(ge=1, le=1000)] = 4
    near_misses: bool = False
    retire_confidence: Annotated[float, Meta(gt=0.5, lt=1.0)] = 0.9


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


class ParameterRange(_Section, frozen=True):
    """A numeric parameter the evolve loop may tune, and its bounds (inclusive)."""

    min: Annotated[float, Meta(ge=-1e12, le=1e12)]
    max: Annotated[float, Meta(ge=-1e12, le=1e12)]
    integer: bool = True

    def _check(self) -> None:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")


class RedactConfig(_Section, frozen=True):
    """Secrets to hide by value in everything evolve writes, beyond the built-in shapes.

    `values` are literal strings (evolve.yaml is committed, so list only what may sit in the
    repository); `env` names environment variables whose values are hidden (the safe place
    for real secrets). OPENAI_API_KEY and ANTHROPIC_API_KEY are always hidden.
    """

    values: tuple[str, ...] = ()
    env: tuple[str, ...] = ()

    def _check(self) -> None:
        short = [v for v in self.values if len(v) < 4]
        if short:
            raise ValueError(
                "each value must be at least 4 characters (shorter ones hide ordinary text)"
            )
        bad = [n for n in self.env if not n or not n.replace("_", "A").isalnum()]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an environment variable name")


_SCOPE = pattern(r"global|skills|user:[a-z0-9][a-z0-9_-]{0,39}")


class ShareConfig(_Section, frozen=True):
    """Which scopes' memory `evolve push` may send (docs/sharing.md): `all`, or a list of
    `global`, `skills` and `user:<persona>`."""

    scopes: Literal["all"] | tuple[str, ...] = "all"

    def _check(self) -> None:
        if self.scopes != "all":
            bad = [s for s in self.scopes if not _SCOPE.fullmatch(s)]
            if bad:
                raise ValueError(f"{bad[0]!r} is not a scope (global, skills or user:<persona>)")

    def shared(self, scope: str) -> bool:
        return self.scopes == "all" or scope in self.scopes


DEFAULT_PARAMETERS = {"agent.max_turns": ParameterRange(min=4.0, max=30.0)}


class EvolveConfig(_Section, frozen=True):
    """The whole of `evolve.yaml`."""

    version: Literal[1] = 1
    environment: Name = "persona_world"
    persona: Name = "alex"
    models: ModelRoles = field(default_factory=ModelRoles)
    prices: dict[Name, Price] = field(default_factory=dict)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    run: RunConfig = field(default_factory=RunConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    protected: Annotated[tuple[str, ...], Check(_protected_paths)] = DEFAULT_PROTECTED
    redact: RedactConfig = field(default_factory=RedactConfig)
    share: ShareConfig = field(default_factory=ShareConfig)
    skills: SkillsConfig = field(default_factory=SkillsConfig)
    parameters: dict[Name, ParameterRange] = field(default_factory=lambda: dict(DEFAULT_PARAMETERS))
    # Per recipe; a recipe or field given here overrides that default only (null: no limit).
    caps: dict[Name, RecipeCaps] = field(default_factory=dict)

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


for _cls in (
    MaxTokens, RetryBudgets, RetrySettings, ModelRoles, Price, MemoryConfig, AgentConfig,
    RunConfig, TrainConfig, GateConfig, RenderConfig, RecipeCaps, ShelfCaps, SkillsConfig,
    ParameterRange, RedactConfig, ShareConfig, EvolveConfig,
):  # fmt: skip
    type.__setattr__(_cls, "__setattr__", _read_only)  # a ValueError, not msgspec's own


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


def parse_config(text: str, *, source: str = CONFIG_NAME, cache: str | None = None) -> EvolveConfig:
    """Parse and validate the text of an `evolve.yaml`.

    `cache`: a cache file (`evolve._yaml.load`) that may keep the parsed document, unless the
    file lists `redact.values` (secrets are kept out of cache files).

    Raises:
        ConfigError: one sentence naming the offending key and what was expected.
    """
    try:
        data = load_yaml(text, source, error=ConfigError, cache=cache, keep=_no_secrets)
    except ConfigError:
        raise
    except Exception as exc:
        import yaml  # loaded already: it raised this

        if not isinstance(exc, yaml.YAMLError):
            raise
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
        config: EvolveConfig = parse(EvolveConfig, data)
    except Invalid as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise ConfigError(f"{source}: {_describe_error(dict(first))}{extra}.") from exc
    return config


def _no_secrets(document: Any) -> bool:
    """Whether a parsed `evolve.yaml` may be kept in a cache file: it lists no
    `redact.values` (literal secrets)."""
    redact = document.get("redact") if isinstance(document, dict) else None
    return not (isinstance(redact, dict) and redact.get("values"))


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
    git_dir = os.path.join(path.parent, ".git")  # a workspace's own repository keeps the cache
    cache = os.path.join(git_dir, YAML_CACHE) if os.path.isdir(git_dir) else None
    return parse_config(text, source=str(path), cache=cache)
