"""The workspace: root discovery, configuration, path confinement and the writer lock."""

from evolve.workspace._config import (
    CONFIG_NAME,
    DEFAULT_CAPS,
    AgentConfig,
    EvolveConfig,
    GateConfig,
    MemoryConfig,
    ModelRoles,
    ParameterRange,
    RecipeCaps,
    RunConfig,
    TrainConfig,
    load_config,
    parse_config,
)
from evolve.workspace._init import harness_root, init_workspace
from evolve.workspace._lock import WriterLock
from evolve.workspace._parameters import (
    PARAMETERS_FILE,
    check_parameter,
    load_parameters,
    max_turns,
)
from evolve.workspace._paths import is_under, normalize_relpath, resolve
from evolve.workspace._workspace import (
    EVALSET,
    GENERATIONS,
    MEMORY,
    PROMPTS,
    RUNS,
    TESTS,
    Workspace,
    find_root,
)

__all__ = [
    "PARAMETERS_FILE",
    "ParameterRange",
    "check_parameter",
    "load_parameters",
    "max_turns",
    "CONFIG_NAME",
    "EVALSET",
    "GENERATIONS",
    "MEMORY",
    "PROMPTS",
    "RUNS",
    "TESTS",
    "AgentConfig",
    "DEFAULT_CAPS",
    "EvolveConfig",
    "RecipeCaps",
    "GateConfig",
    "MemoryConfig",
    "ModelRoles",
    "RunConfig",
    "TrainConfig",
    "Workspace",
    "WriterLock",
    "find_root",
    "harness_root",
    "init_workspace",
    "is_under",
    "load_config",
    "normalize_relpath",
    "parse_config",
    "resolve",
]
