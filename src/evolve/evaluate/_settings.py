"""What scoring a split reads from `evolve.yaml` and `prompts/parameters.yaml`, remembered.

`evolve run` on its fast path (:mod:`evolve.evaluate._fast`) needs a dozen settings, and
validating `evolve.yaml` with the configuration model (pydantic, PyYAML) costs more than the
scoring of a dev split. So the settings are computed once per distinct pair of file contents
by the full model (:func:`compute`: `parse_config`, `max_turns`, the skills settings) and
remembered in `.git/evolve-config.cache` (beside what `evolve memory` reads of the same file),
keyed by those exact bytes and by the source of the code that computed them
(:mod:`evolve._format._cache`). A hit is exactly what the full model computed for the same files; a miss,
an invalid file or any error leaves the full command to answer (it reports the error in its
own words). This module imports only the standard library.
"""

from __future__ import annotations

import os

from evolve._format._cache import CONFIG_CACHE, DiskCache
from evolve._format._limits import read_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypedDict

    from evolve.workspace._config import EvolveConfig

    class Settings(TypedDict):
        """The values a run reads (see :func:`compute`)."""

        environment: str
        persona: str
        agent: str
        agent_command: bool
        agent_name: str
        cache: str
        agent_priced: bool
        runs: int
        seed: int
        concurrency: int
        inject: str
        stats: bool
        max_turns: int
        rendered: tuple[str, ...]
        redact_values: tuple[str, ...]
        redact_env: tuple[str, ...]
        skills: bool


RUN_CACHE = CONFIG_CACHE  # one file for what is read of evolve.yaml
PARAMETERS = ("prompts", "parameters.yaml")  # evolve.workspace._parameters.PARAMETERS_FILE


class Invalid(Exception):  # noqa: N818 - a signal: the full command reports the problem
    """The files are not valid; the full command says why."""


def compute(config: EvolveConfig, root: str) -> Settings:
    """The settings a dev run reads, from the validated configuration (and the workspace's
    `prompts/parameters.yaml`), as plain values.

    Raises:
        ConfigError: parameters.yaml is invalid.
    """
    from pathlib import Path

    from evolve.llm._cost import Rate, find_rate
    from evolve.skills._select import settings_of
    from evolve.workspace._parameters import max_turns

    m = config.models
    prices = {key: Rate(p.input, p.output) for key, p in config.prices.items()}
    return {
        "environment": config.environment,
        "persona": config.persona,
        "agent": m.agent,
        "agent_command": bool(config.agent.command),
        "agent_name": config.agent.agent_name,
        "cache": m.cache,
        "agent_priced": find_rate(m.agent.strip(), prices) is not None,
        "runs": config.run.runs,
        "seed": config.run.seed,
        "concurrency": config.run.concurrency,
        "inject": config.memory.inject,
        "stats": config.memory.stats,
        "max_turns": max_turns(Path(root), config),
        "rendered": tuple(config.rendered_recipes()),
        "redact_values": tuple(config.redact.values),
        "redact_env": tuple(config.redact.env),
        "skills": settings_of(config).enabled,
    }


_KEYS = {
    "environment", "persona", "agent", "agent_command", "agent_name", "cache", "agent_priced",
    "runs", "seed", "concurrency", "inject", "stats", "max_turns", "rendered", "redact_values",
    "redact_env", "skills",
}  # fmt: skip


def _read(path: str) -> bytes | None:
    """The bytes of the file at `path` (following links, as `Path.is_file` does), or None."""
    if not os.path.isfile(path):
        return None
    return read_path(path, os.path.basename(path))  # its size checked before it is parsed


def _valid(value: object) -> bool:
    return isinstance(value, dict) and set(value) == _KEYS


def load(root: str, git_dir: str, config_name: str = "evolve.yaml") -> Settings:
    """The settings of the workspace at `root`: remembered for these exact file contents, or
    computed by the full configuration model (and remembered).

    Raises:
        Invalid: evolve.yaml or parameters.yaml is not valid (nothing is remembered).
    """
    raw = _read(os.path.join(root, config_name))
    if raw is None:
        raise Invalid("no evolve.yaml")
    params = _read(os.path.join(root, *PARAMETERS))
    cache = DiskCache(os.path.join(git_dir, RUN_CACHE))
    key = ("run", raw, params)
    known = cache.get(key)
    if known is not None and _valid(known):
        return known  # type: ignore[return-value]
    from evolve.errors import EvolveError
    from evolve.workspace._config import parse_config

    try:
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text
        config = parse_config(text, source=os.path.join(root, config_name))
        value = compute(config, root)
    except (EvolveError, UnicodeDecodeError) as exc:
        raise Invalid(str(exc)) from exc
    if _read(os.path.join(root, *PARAMETERS)) == params:  # unchanged while it was read
        cache.put(key, value)
    return value
