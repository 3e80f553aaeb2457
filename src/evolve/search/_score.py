"""Scoring a candidate commit on a split: a temporary export of exactly its tree, as the
evolve loop scores a generation, so nothing in the working tree is scored."""

from __future__ import annotations

from dataclasses import dataclass

from evolve.evaluate import SplitReport, open_env, run_split
from evolve.gate import export_tree, temp_copy
from evolve.llm import LLM
from evolve.stats import PairedGain, paired_gain
from evolve.workspace import Workspace


def per_task(report: SplitReport) -> dict[str, list[float]]:
    """Success (the episode accepted: 1, else 0) per task, runs in order."""
    out: dict[str, list[float]] = {}
    for e in sorted(report.episodes, key=lambda e: (e.task_id, e.run)):
        out.setdefault(e.task_id, []).append(1.0 if e.accepted else 0.0)
    return out


@dataclass
class Scorer:
    """Scores commits on a split (cached per commit), counting the episodes it played."""

    ws: Workspace
    runs: int
    seed: int
    llm: LLM | None = None
    episodes: int = 0

    def __post_init__(self) -> None:
        self.cache: dict[tuple[str, str], SplitReport] = {}

    def episodes_per_score(self, split: str = "dev") -> int:
        return len(open_env(self.ws).tasks(split)) * self.runs  # type: ignore[arg-type]

    def __call__(self, commit: str, split: str = "dev") -> SplitReport:
        key = (commit, split)
        if key not in self.cache:
            with temp_copy("search") as tmp:
                root = tmp / "ws"
                root.mkdir()
                export_tree(self.ws.store, commit, root)
                snapshot = Workspace(root, config=self.ws.config)
                self.cache[key] = run_split(
                    snapshot,
                    split,  # type: ignore[arg-type]
                    llm=self.llm,
                    runs=self.runs,
                    log=False,
                    seed=self.seed,
                )
            self.episodes += len(self.cache[key].episodes)
        return self.cache[key]

    def gain(self, base: str, candidate: str, split: str = "dev") -> PairedGain:
        """The paired gain in success of `candidate` over `base`, tasks x runs."""
        return paired_gain(
            per_task(self(base, split)), per_task(self(candidate, split)), seed=self.seed
        )
