"""Statistics with no domain in them: intervals for proportions and their differences, the
stratified (Mantel-Haenszel) lift with its score interval, and bootstraps over tasks.

The skills scoreboard (`evolve.skills._scoreboard`), the gate (`evolve.gate`) and experiments
(`evolve.compare`) decide with these; what a count means to them stays with them. Standard
library only, so any layer may import it.
"""

from evolve.stats._bootstrap import (
    Counts,
    Interval,
    PairedGain,
    draws,
    paired_gain,
    percentiles,
    rate_interval,
    ratio,
    spread,
)
from evolve.stats._proportions import newcombe, wilson
from evolve.stats._stratified import Stratified, restricted_rates, score_z, stratified

__all__ = [
    "Counts",
    "Interval",
    "PairedGain",
    "Stratified",
    "draws",
    "newcombe",
    "paired_gain",
    "percentiles",
    "rate_interval",
    "ratio",
    "restricted_rates",
    "score_z",
    "spread",
    "stratified",
    "wilson",
]
