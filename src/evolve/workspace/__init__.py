"""The workspace: root discovery, configuration and path confinement (the
writer lock is `evolve.txn`'s).

Names are imported on first use (PEP 562), so that reading commands that need no
configuration (`evolve log`, `evolve show`) do not pay for building the config model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.workspace._config import (
        CONFIG_NAME,
        AgentConfig,
        EvolveConfig,
        GateConfig,
        MemoryConfig,
        ModelRoles,
        ParameterRange,
        RecipeCaps,
        RunConfig,
        ShelfCaps,
        SkillsConfig,
        TrainConfig,
        load_config,
        parse_config,
    )
    from evolve.workspace._drivers import drivers_installed, install_merge_drivers
    from evolve.workspace._init import harness_root, init_workspace
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

_MODULES = {
    "evolve.workspace._paths": ("CONFIG_NAME", "is_under", "normalize_relpath", "resolve"),
    "evolve.workspace._config": (
        "RecipeCaps",
        "AgentConfig",
        "EvolveConfig",
        "GateConfig",
        "MemoryConfig",
        "ModelRoles",
        "ParameterRange",
        "RunConfig",
        "ShelfCaps",
        "SkillsConfig",
        "TrainConfig",
        "load_config",
        "parse_config",
    ),
    "evolve.workspace._drivers": ("drivers_installed", "install_merge_drivers"),
    "evolve.workspace._init": ("harness_root", "init_workspace"),
    "evolve.workspace._parameters": (
        "PARAMETERS_FILE",
        "check_parameter",
        "load_parameters",
        "max_turns",
    ),
    "evolve.workspace._workspace": (
        "EVALSET",
        "GENERATIONS",
        "MEMORY",
        "PROMPTS",
        "RUNS",
        "TESTS",
        "Workspace",
        "find_root",
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)


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
    "EvolveConfig",
    "RecipeCaps",
    "GateConfig",
    "MemoryConfig",
    "ModelRoles",
    "RunConfig",
    "ShelfCaps",
    "SkillsConfig",
    "TrainConfig",
    "Workspace",
    "find_root",
    "drivers_installed",
    "harness_root",
    "init_workspace",
    "install_merge_drivers",
    "is_under",
    "load_config",
    "normalize_relpath",
    "parse_config",
    "resolve",
]
