"""Scoring splits: `evolve run`, and the scoring the gate reuses.

Names are imported on first use (PEP 562): `evolve run` imports the modules it scores with,
not every module this package holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

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
        with_agent,
    )

_MODULES = {
    "evolve.evaluate._report": ("RuleRate", "SplitReport"),
    "evolve.evaluate._run": (
        "episode_seed",
        "open_env",
        "run_split",
        "score_tasks",
        "write_run_log",
    ),
    "evolve.evaluate._setup": (
        "INJECT_MODES",
        "InjectMode",
        "agent_memory",
        "episode_setup",
        "make_verifier",
        "with_agent",
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)


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
    "with_agent",
    "write_run_log",
]
