"""Skills (issue 13) under the `sim`: library, promotions, retirements, and success.

For 3 stream orders (training seeds), trains a fresh persona_world workspace with the
procedure-shaped tasks (`evalset/procedures.yaml`) and the `skills` recipe (the sim's
reflector and evolver; lexical selector; the scoreboard's hold-out on), then prints per seed:
the final library (active skills per shelf), promotions, retirements, and the dev and
holdout task-success rate in three arms, each over every task x `--runs` evaluation seeds:

- `none`: no `<skills>` section;
- `skills`: the learned library, selected per task as training selects it (nothing held out);
- `generic`: a fixed block of generic careful-agent advice, cut per task to the same length
  as the `skills` arm's section for that task (a token-matched control; no section where the
  skills arm has none).

`wrong a/r`: the sim reflector's wrong lessons ("Skip the final check: ...", docs/sim.md) still
active / retired by the scoreboard at the end.

Run: `python benchmarks/bench_skills.py [--episodes 240] [--runs 2] [--seeds 0,1,2]`.
The sim's numbers test the harness's mechanics; they say nothing about real models.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evolve._io import derive_seed
from evolve.agent import read_prompt_files
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.envs.persona_world._procedures import write_procedures
from evolve.episode import EpisodeSetup, run_episode
from evolve.memory import load_units
from evolve.sim import SimLLM
from evolve.sim._skills import WRONG
from evolve.skills._select import Selection, SkillPicker, settings_of, skills_of
from evolve.train import train
from evolve.workspace import Workspace, init_workspace, max_turns

GENERIC = (
    "Work carefully and precisely. Read the whole task before acting. Use the exact names, "
    "amounts and words the task gives. Keep messages short and clear. Double-check your work "
    "before you finish. Do not trust your own summary of what you did. Think about what the "
    "user would expect. Prefer the simplest plan that does the task."
)


class GenericPicker(SkillPicker):
    """The token-matched control: generic advice as long as the skills arm's section."""

    def __init__(self, matched: SkillPicker) -> None:
        super().__init__(skills=())
        self.matched = matched

    def pick(self, task_text: str, seed: int) -> Selection:
        size = len(self.matched.pick(task_text, seed).section)
        if not size:
            return Selection()
        text = (GENERIC + " ") * (1 + size // len(GENERIC))
        cut = text[:size].rsplit(" ", 1)[0] if len(text) > size else text
        return Selection(("generic",), (), f"[generic] any task: {cut}"[:size])


@dataclass
class Result:
    seed: int
    shelves: Counter[str] = field(default_factory=Counter)
    promotions: int = 0
    retirements: int = 0
    wrong: tuple[int, int] = (0, 0)  # the sim's wrong lessons on the shelves: (active, retired)
    success: dict[tuple[str, str], float] = field(default_factory=dict)


def _prepare(root: Path, episodes: int, holdout: float = 0.2) -> Workspace:
    ws = init_workspace(root)
    write_procedures(ws.root / "evalset")
    config = yaml.safe_load((ws.root / "evolve.yaml").read_text())
    config.setdefault("train", {})["recipe"] = "skills"
    config.setdefault("skills", {})["enabled"] = True
    config["skills"]["holdout_share"] = holdout
    (ws.root / "evolve.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    ws.store.commit(
        ["evalset/procedures.yaml", "evolve.yaml"], "bench: procedure tasks, recipe skills"
    )
    return Workspace(ws.root)


def _evaluate(ws: Workspace, runs: int) -> dict[tuple[str, str], float]:
    env = PersonaWorldEnv(ws.root / "evalset")
    sim = SimLLM(env)
    s = settings_of(ws.config)
    learned = SkillPicker(
        skills_of(load_units(ws.root)), max_injected=s.max_injected, budget_tokens=s.budget_tokens
    )
    arms: dict[str, SkillPicker | None] = {
        "none": None,
        "skills": learned,
        "generic": GenericPicker(learned),
    }
    out: dict[tuple[str, str], float] = {}
    for arm, picker in arms.items():
        setup = EpisodeSetup(
            prompt_files=tuple(read_prompt_files(ws.prompts_dir)),
            memory="",
            persona=ws.config.persona,
            stats=ws.config.memory.stats,
            max_turns=max_turns(ws.root, ws.config),
            skills=picker,
        )
        for split in ("dev", "holdout"):
            passed = total = 0
            for task in env.tasks(split):
                for run in range(runs):
                    seed = derive_seed(ws.config.run.seed, task.id, run)
                    history = env.initial_history(ws.config.persona)
                    result = run_episode(env, sim, task, setup, history=history, seed=seed, run=run)
                    passed += result.record.task_success
                    total += 1
            out[(arm, split)] = passed / total
    return out


def _history_counts(ws: Workspace) -> tuple[int, int]:
    """(promotions, retirements) from the commit trailers."""
    promotions = retirements = 0
    for info in ws.store.log(["memory"], max_count=None):
        trailers: dict[str, Any] = info.trailers
        kind = str(trailers.get("Evolve-Kind", ""))
        if kind == "skill retire":
            retirements += 1
        promotions += sum(
            1 for part in str(trailers.get("Evolve-Ops", "")).split() if part.startswith("promote=")
        )
    return promotions, retirements


def bench(seed: int, episodes: int, runs: int, holdout: float = 0.2) -> Result:
    with tempfile.TemporaryDirectory() as tmp:
        ws = _prepare(Path(tmp) / "ws", episodes, holdout)
        train(ws, recipe="skills", episodes=episodes, seed=seed)
        result = Result(seed)
        wrong = WRONG.general.split(":")[0]  # "Skip the final check"
        units = [u for u in load_units(ws.root) if u.kind == "skill"]
        result.wrong = (
            sum(u.status == "active" and u.text.startswith(wrong) for u in units),
            sum(u.status == "retired" and u.text.startswith(wrong) for u in units),
        )
        for unit in units:
            if unit.status == "active":
                where = f"topics/{unit.topic}" if getattr(unit, "topic", None) else "general"
                result.shelves[where] += 1
        result.promotions, result.retirements = _history_counts(ws)
        result.success = _evaluate(ws, runs)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=240)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--holdout", type=float, default=0.2, help="skills.holdout_share")
    args = parser.parse_args()
    started = time.perf_counter()
    seeds = [int(s) for s in args.seeds.split(",")]
    print(
        f"skills under the sim: {args.episodes} training episodes, {args.runs} eval runs/task, "
        f"holdout_share {args.holdout}"
    )
    head = "seed  library (active per shelf)                        promo  retired  wrong a/r"
    print(head + "  dev none/skills/generic   holdout none/skills/generic")
    for seed in seeds:
        r = bench(seed, args.episodes, args.runs, args.holdout)
        shelves = ", ".join(f"{k} {v}" for k, v in sorted(r.shelves.items())) or "empty"
        dev = "/".join(f"{r.success[(a, 'dev')]:.2f}" for a in ("none", "skills", "generic"))
        hold = "/".join(f"{r.success[(a, 'holdout')]:.2f}" for a in ("none", "skills", "generic"))
        print(
            f"{seed:<5} {shelves:<50} {r.promotions:>5}  {r.retirements:>7}  "
            f"{r.wrong[0]:>5}/{r.wrong[1]:<3}  {dev:<22}  {hold}"
        )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
