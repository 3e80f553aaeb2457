"""Scoring splits: `evolve run`, and the scoring the gate reuses."""

from evolve.evaluate._report import RuleRate, SplitReport
from evolve.evaluate._run import episode_seed, open_env, run_split, score_tasks, write_run_log
from evolve.evaluate._setup import (
    INJECT_MODES,
    InjectMode,
    agent_memory,
    episode_setup,
    make_verifier,
)

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
