"""Scoring splits: `evolve run`, and the scoring the gate reuses.

Names are imported on first use (PEP 562): `evolve run` imports the modules it scores with,
not every module this package holds.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evolve.evaluate._report import RuleRate, SplitReport
    from evolve.evaluate._run import (
        episode_seed,
        open_env,
        run_split,
        score_tasks,
        write_run_log,
    )
    from evolve.evaluate._setup import (
        INJECT_MODES,
        InjectMode,
        agent_memory,
        episode_setup,
        make_verifier,
    )

_WHERE = {
    "RuleRate": "evolve.evaluate._report",
    "SplitReport": "evolve.evaluate._report",
    "episode_seed": "evolve.evaluate._run",
    "open_env": "evolve.evaluate._run",
    "run_split": "evolve.evaluate._run",
    "score_tasks": "evolve.evaluate._run",
    "write_run_log": "evolve.evaluate._run",
    "INJECT_MODES": "evolve.evaluate._setup",
    "InjectMode": "evolve.evaluate._setup",
    "agent_memory": "evolve.evaluate._setup",
    "episode_setup": "evolve.evaluate._setup",
    "make_verifier": "evolve.evaluate._setup",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evolve.evaluate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "INJECT_MODES",
    "InjectMode",
    "RuleRate",
    "SplitReport",
    "agent_memory",
    "episode_seed",
    "episode_setup",
    "make_verifier",
    "open_env",
    "run_split",
    "score_tasks",
    "write_run_log",
]
