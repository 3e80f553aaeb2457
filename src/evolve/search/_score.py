"""Scoring a candidate commit on a split: a temporary export of exactly its tree, as the
evolve loop scores a generation, so nothing in the working tree is scored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evolve.evaluate import SplitReport, open_env, run_split
from evolve.gate import export_tree, temp_copy
from evolve.harness._config import Choice
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
            with temp_copy("score") as tmp:
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


def probe_player(ws: Workspace, llm: LLM | None = None) -> Callable[[Choice], str | None]:
    """The health probe's last check: the candidate's harness plays the first training task
    of the workspace's world once (seed 0) and must make a valid action: at least one call,
    no model failure, no unusable reply only."""
    from dataclasses import replace

    from evolve.episode import run_episode
    from evolve.evaluate._setup import episode_setup
    from evolve.harness import build_harness
    from evolve.llm import make_role_llm

    env = open_env(ws)
    persona = ws.config.persona
    tasks = env.tasks("train") or env.tasks("dev")
    model = llm or make_role_llm(ws.config, "agent", env=env)

    def play(choice: Choice) -> str | None:
        if not tasks:
            return None
        setup = replace(episode_setup(ws, env, persona), harness=build_harness(choice, ws.root))
        result = run_episode(
            env, model, tasks[0], setup, history=env.initial_history(persona), seed=0
        )
        trace = result.trace
        if trace.model_error:
            return f"the model failed on the probe task: {trace.model_error[:200]}"
        if not trace.calls:
            return "no valid action on the probe task"
        return None

    return play
