"""Scores of a set of episodes: success, violation rate per rule, tokens, time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evolve.episode._records import EpisodeRecord


@dataclass(frozen=True)
class RuleRate:
    violations: int
    applicable: int

    @property
    def rate(self) -> float:
        return self.violations / self.applicable if self.applicable else 0.0


@dataclass
class SplitReport:
    """The result of scoring one split."""

    split: str
    persona: str
    model: str
    runs: int
    episodes: list[EpisodeRecord] = field(default_factory=list)
    duration_s: float = 0.0
    log_dir: str | None = None
    seed: int | None = None  # the evaluation seed (evolve run --seed), when known

    @property
    def score(self) -> float:
        """Fraction of episodes accepted (task done, no preference violated)."""
        return _mean([1.0 if e.accepted else 0.0 for e in self.episodes])

    @property
    def task_success_rate(self) -> float:
        return _mean([1.0 if e.task_success else 0.0 for e in self.episodes])

    @property
    def violation_rate(self) -> float:
        """Violations over applicable rule checks, pooled over rules."""
        v = sum(len(e.violations) for e in self.episodes)
        a = sum(len(e.applicable_rules) for e in self.episodes)
        return v / a if a else 0.0

    def rule_rates(self) -> dict[str, RuleRate]:
        counts: dict[str, list[int]] = {}
        for e in self.episodes:
            for rule in e.applicable_rules:
                entry = counts.setdefault(rule, [0, 0])
                entry[1] += 1
                if rule in e.violations:
                    entry[0] += 1
        return {rule: RuleRate(v, a) for rule, (v, a) in sorted(counts.items())}

    @property
    def tokens(self) -> int:
        return sum(e.tokens for e in self.episodes)

    @property
    def tokens_per_episode(self) -> float:
        return self.tokens / len(self.episodes) if self.episodes else 0.0

    @property
    def cost(self) -> float:
        """US dollars the episodes' model requests cost, at the prices in evolve.yaml."""
        return sum(e.cost for e in self.episodes)

    @property
    def failed(self) -> int:
        """Episodes that ended early because a model request failed on every try it was
        allowed (`EpisodeRecord.model_error`); each counts as not accepted."""
        return sum(1 for e in self.episodes if e.model_error is not None)

    def failed_line(self) -> str:
        """What the run says of its failed episodes ("" when none failed)."""
        if not self.failed:
            return ""
        n = len(self.episodes)
        return (
            f"{self.failed} of {n} episode{'s' if n != 1 else ''} failed: a model request did "
            "not succeed on any try (models.timeout_s, models.retry); they count as not "
            "accepted, and their records say why."
        )

    def per_task(self) -> dict[str, list[float]]:
        """Accepted (1/0) per task, one value per run, in run order: the paired-test input."""
        out: dict[str, list[float]] = {}
        for e in sorted(self.episodes, key=lambda e: (e.task_id, e.run)):
            out.setdefault(e.task_id, []).append(1.0 if e.accepted else 0.0)
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "persona": self.persona,
            "model": self.model,
            "runs": self.runs,
            "seed": self.seed,
            "episodes": len(self.episodes),
            "failed_episodes": self.failed,
            "score": round(self.score, 4),
            "task_success_rate": round(self.task_success_rate, 4),
            "violation_rate": round(self.violation_rate, 4),
            "rules": {
                rule: {
                    "violations": r.violations,
                    "applicable": r.applicable,
                    "rate": round(r.rate, 4),
                }
                for rule, r in self.rule_rates().items()
            },
            "tokens": self.tokens,
            "tokens_per_episode": round(self.tokens_per_episode, 1),
            "cost": round(self.cost, 6),
            "duration_s": round(self.duration_s, 3),
            "log_dir": self.log_dir,
        }

    def to_json(self) -> dict[str, Any]:
        out = self.summary()
        out["tasks"] = [
            {
                "task_id": e.task_id,
                "family": e.family,
                "run": e.run,
                "accepted": e.accepted,
                "task_success": e.task_success,
                "failure": e.failure,
                "violations": e.violations,
                "applicable_rules": e.applicable_rules,
                "tokens": e.tokens,
                "cost": e.cost,
                "duration_s": e.duration_s,
                "model_error": e.model_error,
            }
            for e in self.episodes
        ]
        return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
