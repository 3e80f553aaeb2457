"""The workspace: root discovery, configuration, path confinement and the writer lock.

Names are imported on first use (PEP 562), so that reading commands that need no
configuration (`evolve log`, `evolve show`) do not pay for building the pydantic config model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        ShelfCaps,
        SkillsConfig,
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

_WHERE = {
    "CONFIG_NAME": "evolve.workspace._paths",
    "DEFAULT_CAPS": "evolve.workspace._config",
    "RecipeCaps": "evolve.workspace._config",
    "AgentConfig": "evolve.workspace._config",
    "EvolveConfig": "evolve.workspace._config",
    "GateConfig": "evolve.workspace._config",
    "MemoryConfig": "evolve.workspace._config",
    "ModelRoles": "evolve.workspace._config",
    "ParameterRange": "evolve.workspace._config",
    "RunConfig": "evolve.workspace._config",
    "ShelfCaps": "evolve.workspace._config",
    "SkillsConfig": "evolve.workspace._config",
    "TrainConfig": "evolve.workspace._config",
    "load_config": "evolve.workspace._config",
    "parse_config": "evolve.workspace._config",
    "harness_root": "evolve.workspace._init",
    "init_workspace": "evolve.workspace._init",
    "WriterLock": "evolve.workspace._lock",
    "PARAMETERS_FILE": "evolve.workspace._parameters",
    "check_parameter": "evolve.workspace._parameters",
    "load_parameters": "evolve.workspace._parameters",
    "max_turns": "evolve.workspace._parameters",
    "is_under": "evolve.workspace._paths",
    "normalize_relpath": "evolve.workspace._paths",
    "resolve": "evolve.workspace._paths",
    "EVALSET": "evolve.workspace._workspace",
    "GENERATIONS": "evolve.workspace._workspace",
    "MEMORY": "evolve.workspace._workspace",
    "PROMPTS": "evolve.workspace._workspace",
    "RUNS": "evolve.workspace._workspace",
    "TESTS": "evolve.workspace._workspace",
    "Workspace": "evolve.workspace._workspace",
    "find_root": "evolve.workspace._workspace",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evolve.workspace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
    "ShelfCaps",
    "SkillsConfig",
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
