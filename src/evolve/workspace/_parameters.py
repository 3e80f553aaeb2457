"""Tunable numeric parameters: ranges in `evolve.yaml` (protected), values in
`prompts/parameters.yaml` (evolvable), so the evolve loop can change a value but never its
bounds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evolve._format._cache import YAML_CACHE
from evolve._yaml import load as load_yaml
from evolve.errors import ConfigError
from evolve.workspace._config import EvolveConfig, ParameterRange

PARAMETERS_FILE = "prompts/parameters.yaml"


def check_parameter(config: EvolveConfig, name: str, value: Any) -> float | int:
    """The value if `name` is declared and `value` lies in its range, else ConfigError."""
    spec: ParameterRange | None = config.parameters.get(name)
    if spec is None:
        raise ConfigError(f"parameter {name!r} is not declared under parameters: in evolve.yaml.")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"parameter {name!r} must be a number, not {value!r}.")
    if spec.integer and float(value) != int(value):
        raise ConfigError(f"parameter {name!r} must be a whole number, not {value!r}.")
    if not spec.min <= value <= spec.max:
        raise ConfigError(
            f"parameter {name!r} = {value} is outside its range [{spec.min:g}, {spec.max:g}]."
        )
    return int(value) if spec.integer else float(value)


def load_parameters(root: Path, config: EvolveConfig) -> dict[str, float | int]:
    """The tuned values in `prompts/parameters.yaml`, each checked against its range.

    The parsed document is remembered in the workspace's YAML cache (as `evolve.yaml` is), so
    a run whose file has not changed neither parses it nor imports PyYAML.
    """
    path = root / PARAMETERS_FILE
    if not path.is_file():
        return {}
    git_dir = os.path.join(root, ".git")
    cache = os.path.join(git_dir, YAML_CACHE) if os.path.isdir(git_dir) else None
    try:
        text = path.read_text(encoding="utf-8")
        data = load_yaml(text, PARAMETERS_FILE, error=ConfigError, cache=cache)
        data = {} if data is None else data
    except UnicodeDecodeError:
        raise ConfigError(f"{PARAMETERS_FILE} is not UTF-8 text; save it as UTF-8.") from None
    except ConfigError:
        raise
    except Exception as exc:
        import yaml  # loaded already: it raised this

        if not isinstance(exc, yaml.YAMLError):
            raise
        raise ConfigError(f"{PARAMETERS_FILE} is not valid YAML.") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{PARAMETERS_FILE} must map parameter names to numbers.")
    return {str(k): check_parameter(config, str(k), v) for k, v in data.items()}


def max_turns(root: Path, config: EvolveConfig) -> int:
    return int(load_parameters(root, config).get("agent.max_turns", config.agent.max_turns))
