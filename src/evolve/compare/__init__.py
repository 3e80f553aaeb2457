"""`evolve compare`: experiments over arms, personas, feedback tiers and stream orders.

Each recipe arm trains on its own ref, `refs/evolve/arms/<experiment>/<arm>/<persona>/<tier>/
<order>`, in a clone of the base commit, never on the workspace's branch; results (bootstrap
intervals, gap closed between none and oracle) go to `generations/experiments/<name>/` and
`refs/evolve/records`. See `_spec` (the file), `_cells` (one job), `_run` (resume),
`_results` and `_stats` (the numbers).
"""

from evolve.compare._results import build_results, results_markdown
from evolve.compare._run import Prepared, load_results, prepare, run
from evolve.compare._spec import (
    ARM_RECORDS_REF,
    ARMS_REF,
    ArmSpec,
    Experiment,
    ExperimentError,
    Job,
    load_experiment,
    parse_experiment,
    plan,
)
from evolve.compare._stats import gap_closed, gap_interval
from evolve.stats import Interval, rate_interval

__all__ = [
    "ARMS_REF",
    "ARM_RECORDS_REF",
    "ArmSpec",
    "Experiment",
    "ExperimentError",
    "Interval",
    "Job",
    "Prepared",
    "build_results",
    "gap_closed",
    "gap_interval",
    "load_experiment",
    "load_results",
    "parse_experiment",
    "plan",
    "prepare",
    "rate_interval",
    "results_markdown",
    "run",
]
