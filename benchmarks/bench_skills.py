"""Skills under the `sim`: library, promotions, retirements, and success.

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

The scoreboard against an oracle. The sim reflector writes a wrong lesson ("Skip the final
check: ...", docs/sim.md) at a documented rate; per seed the table counts the wrong lessons
written (distinct skills that carried the wrong text in any commit), how many of them are
truly harmful, how many of those the scoreboard retired, and the right lessons (every other
skill) it retired although they were not harmful (false retirements). The oracle is a
with/without run, not the scoreboard's counters: for each skill, on the training tasks it is
injected into (in the library just before its retirement commit if it was retired, else in
the final library; nothing held out), every task x `--runs` seeds is run with the library and
with the library without the skill (its slot going to the next match, as retiring it would
leave it); the difference of pass rates (`task_success`, what the scoreboard counts) is the
skill's true lift, and a lift below -0.01 is harmful. The summary line also counts the wrong
lessons harmful with their slot left empty (the counterfactual the scoreboard's hold-out
compares); `--verbose` prints each skill's two lifts and its scoreboard record, and at the
end the figure a user meets: the harmful lessons (oracle) still active at the end AND
selected for some dev or holdout task by evaluation's selection, beside the dev/holdout
success with the learned skills.

Selection everywhere (training, the `skills` arm, the oracle's runs) is the shipped one:
lexical ties broken by the scoreboard's evidence in the record of the library run
(`evolve.skills._select.evidence_of`). `--tiebreak id` measures the previous rule (ties by
id: the evidence is ignored in training and evaluation alike), `--tiebreak lift` the lift
alone (a skill measured at 0 ties with one that has no evidence yet); `--band W` widens a
tie to lexical shares within W of each other (`evolve._triggers.TIE_BAND`). docs/sim.md
quotes the figures.

Run: `python benchmarks/bench_skills.py [--episodes 240] [--runs 2] [--seeds 0,1,2]
[--holdout 0.2] [--confidence 0.9] [--tiebreak evidence|lift|id] [--band 0] [--verbose]`.
The sweep the docs quote (23 stream orders): `--seeds 0,1,2,10,11,...,29` (about 2 min on
the sim), and the fresh orders `--seeds 30,31,...,52`.
The sim's numbers test the harness's mechanics; they say nothing about real models.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evolve import _triggers
from evolve._io import derive_seed
from evolve.agent import read_prompt_files
from evolve.envs import Task
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.envs.persona_world._procedures import write_procedures
from evolve.episode import EpisodeSetup, run_episode
from evolve.memory import load_units
from evolve.sim import SimLLM
from evolve.sim._skills import WRONG
from evolve.skills import _select
from evolve.skills._scoreboard import score_of
from evolve.skills._select import (
    Selection,
    SkillPicker,
    make_picker,
    render_skills,
    settings_of,
    skills_of,
)
from evolve.skills._strata import load_strata
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


HARMFUL_BELOW = -0.01  # an oracle lift below this is harmful


class LeftOut(SkillPicker):
    """The selection with one skill left out and its slot left empty."""

    def __init__(self, skills: list[Any], left_out: str, **kw: Any) -> None:
        super().__init__(skills=skills, **kw)
        self.left_out = left_out

    def pick(self, task_text: str, seed: int) -> Selection:
        full = super().pick(task_text, seed)
        by_id = {s.id: s for s in self.skills}
        kept = [by_id[i] for i in full.injected if i != self.left_out]
        return Selection(tuple(s.id for s in kept), (self.left_out,), render_skills(kept))


@dataclass
class Truth:
    """One skill as the oracle sees it."""

    id: str
    wrong: bool
    status: str
    lift: float | None  # None: injected into no training task
    eligible: int  # training tasks it is injected into
    direct: float | None = None  # the lift with its slot left empty (nothing in its place)
    record: str = ""  # the scoreboard's evidence at the end

    @property
    def harmful(self) -> bool:
        return self.lift is not None and self.lift < HARMFUL_BELOW

    @property
    def direct_harmful(self) -> bool:
        return self.direct is not None and self.direct < HARMFUL_BELOW


@dataclass
class Result:
    seed: int
    shelves: Counter[str] = field(default_factory=Counter)
    promotions: int = 0
    retirements: int = 0
    wrong_written: int = 0  # distinct skills that carried the wrong lesson in some commit
    truths: list[Truth] = field(default_factory=list)
    success: dict[tuple[str, str], float] = field(default_factory=dict)
    selected: set[str] = field(default_factory=set)  # injected into a dev/holdout task

    def still_selected(self) -> list[Truth]:
        """Harmful lessons (oracle) still active and selected in evaluation at the end."""
        return [
            t for t in self.truths if t.harmful and t.status == "active" and t.id in self.selected
        ]

    def wrong(self) -> list[Truth]:
        return [t for t in self.truths if t.wrong]

    def counts(self) -> dict[str, int]:
        wrong, right = self.wrong(), [t for t in self.truths if not t.wrong]
        return {
            "written": self.wrong_written,
            "harmful": sum(t.harmful for t in wrong),
            "retired": sum(t.status == "retired" for t in wrong),
            "harmful_retired": sum(t.harmful and t.status == "retired" for t in wrong),
            "right_retired": sum(t.status == "retired" for t in right),
            "false": sum(t.status == "retired" and not t.harmful for t in right),
            "right_harmful": sum(t.harmful for t in right),
            "direct_harmful": sum(t.direct_harmful for t in wrong),
            "direct_harmful_retired": sum(
                t.direct_harmful and t.status == "retired" for t in wrong
            ),
            "still_selected": len(self.still_selected()),
            "still_selected_wrong": sum(t.wrong for t in self.still_selected()),
        }


def _prepare(
    root: Path, episodes: int, holdout: float = 0.2, confidence: float | None = None
) -> Workspace:
    ws = init_workspace(root)
    write_procedures(ws.root / "evalset")
    config = yaml.safe_load((ws.root / "evolve.yaml").read_text())
    config.setdefault("train", {})["recipe"] = "skills"
    config.setdefault("skills", {})["enabled"] = True
    config["skills"]["holdout_share"] = holdout
    if confidence is not None:
        config["skills"]["retire_confidence"] = confidence
    (ws.root / "evolve.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    ws.store.commit(
        ["evalset/procedures.yaml", "evolve.yaml"], "bench: procedure tasks, recipe skills"
    )
    return Workspace(ws.root)


def _setup(ws: Workspace, picker: SkillPicker | None) -> EpisodeSetup:
    return EpisodeSetup(
        prompt_files=tuple(read_prompt_files(ws.prompts_dir)),
        memory="",
        persona=ws.config.persona,
        stats=ws.config.memory.stats,
        max_turns=max_turns(ws.root, ws.config),
        skills=picker,
    )


def _pass_rate(
    ws: Workspace, env: PersonaWorldEnv, picker: SkillPicker | None, tasks: list[Task], runs: int
) -> float:
    sim = SimLLM(env)
    setup = _setup(ws, picker)
    passed = total = 0
    for task in tasks:
        for run in range(runs):
            seed = derive_seed(ws.config.run.seed, task.id, run)
            history = env.initial_history(ws.config.persona)
            result = run_episode(env, sim, task, setup, history=history, seed=seed, run=run)
            passed += result.record.task_success
            total += 1
    return passed / total if total else float("nan")


def _evaluate(ws: Workspace, runs: int) -> tuple[dict[tuple[str, str], float], set[str]]:
    """The arms' pass rates per split, and the skills evaluation selects for some task."""
    env = PersonaWorldEnv(ws.root / "evalset")
    # Evaluation's own picker (evolve.evaluate._setup): nothing held out, the record's ties.
    units, strata = load_units(ws.root), load_strata(ws.root)
    learned = make_picker(ws.config, units, training=False, strata=strata)
    assert learned is not None
    selected = {
        ident
        for split in ("dev", "holdout")
        for task in env.tasks(split)
        for ident in learned.pick(task.instruction, 0).injected
    }
    arms: dict[str, SkillPicker | None] = {
        "none": None,
        "skills": learned,
        "generic": GenericPicker(learned),
    }
    success = {
        (arm, split): _pass_rate(ws, env, picker, env.tasks(split), runs)
        for arm, picker in arms.items()
        for split in ("dev", "holdout")
    }
    return success, selected


def _wrong_written(ws: Workspace) -> int:
    """Distinct skills that carried the sim's wrong lesson in some commit of the history."""
    wrong = WRONG.general.split(":")[0]  # "Skip the final check"
    found: set[str] = set()
    for _info, patch in ws.store.log_patches(["memory/skills"]):
        current = ""
        for line in patch.splitlines():
            if line.startswith("+++ "):
                current = line[4:].removeprefix("b/")
            elif line.startswith("+" + wrong) and current.endswith(".md"):
                found.add(Path(current).stem)
    return len(found)


def _library_before(ws: Workspace, sha: str, into: Path) -> list[Any]:
    """The skill units as they stood just before commit `sha`."""
    archive = subprocess.run(
        ["git", "-C", str(ws.root), "archive", f"{sha}^", "memory"],
        check=True,
        capture_output=True,
    ).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return [u for u in load_units(into) if u.kind == "skill"]


def _retirements(ws: Workspace) -> dict[str, str]:
    """Each retired skill's retirement commit."""
    out: dict[str, str] = {}
    for info in ws.store.log(["memory"], max_count=None):
        trailers: dict[str, Any] = info.trailers
        if str(trailers.get("Evolve-Kind", "")) == "skill retire":
            ops = str(trailers.get("Evolve-Ops", ""))
            for part in ops.split():
                if part.startswith("retire="):
                    out[part.removeprefix("retire=")] = info.sha
    return out


def _oracle(ws: Workspace, runs: int) -> list[Truth]:
    """Each skill's true lift on the training tasks (see the module doc): a retired skill's in
    the library just before its retirement, any other skill's in the final library."""
    env = PersonaWorldEnv(ws.root / "evalset")
    s = settings_of(ws.config)
    wrong = WRONG.general.split(":")[0]
    units = [u for u in load_units(ws.root) if u.kind == "skill"]
    final = [u for u in units if u.status == "active"]
    retired_at = _retirements(ws)
    strata = load_strata(ws.root)
    tasks = sorted(env.tasks("train"), key=lambda t: t.id)
    kw: dict[str, Any] = {"max_injected": s.max_injected, "budget_tokens": s.budget_tokens}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for unit in units:
            sha = retired_at.get(unit.id)
            if sha is not None and unit.status == "retired":
                library = _library_before(ws, sha, Path(tmp) / sha)
                evidence = _select.evidence_of(load_strata(Path(tmp) / sha))
            else:
                library = [u for u in final if u.id != unit.id] + [unit.with_(status="active")]
                evidence = _select.evidence_of(strata)
            skills = skills_of(library)
            kw["evidence"] = evidence  # the order selection had with that record
            with_it = SkillPicker(skills, **kw)
            # Without it: the library without it (its slot goes to the next match), or the
            # same selection with it left out (its slot empty, as the scoreboard holds out).
            without = SkillPicker([k for k in skills if k.id != unit.id], **kw)
            direct = LeftOut(skills, unit.id, **kw)
            eligible = [t for t in tasks if unit.id in with_it.pick(t.instruction, 0).injected]
            lift = lift_direct = None
            if eligible:
                base = _pass_rate(ws, env, with_it, eligible, runs)
                lift = base - _pass_rate(ws, env, without, eligible, runs)
                lift_direct = base - _pass_rate(ws, env, direct, eligible, runs)
            is_wrong = unit.text.startswith(wrong)
            truth = Truth(unit.id, is_wrong, unit.status, lift, len(eligible), lift_direct)
            truth.record = score_of(unit, s.retire_confidence, strata).evidence()
            out.append(truth)
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


def bench(
    seed: int, episodes: int, runs: int, holdout: float = 0.2, confidence: float | None = None
) -> Result:
    with tempfile.TemporaryDirectory() as tmp:
        ws = _prepare(Path(tmp) / "ws", episodes, holdout, confidence)
        train(ws, recipe="skills", episodes=episodes, seed=seed)
        result = Result(seed)
        units = [u for u in load_units(ws.root) if u.kind == "skill"]
        for unit in units:
            if unit.status == "active":
                where = f"topics/{unit.topic}" if getattr(unit, "topic", None) else "general"
                result.shelves[where] += 1
        result.promotions, result.retirements = _history_counts(ws)
        result.success, result.selected = _evaluate(ws, runs)
        result.wrong_written = _wrong_written(ws)
        result.truths = _oracle(ws, runs)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=240)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--holdout", type=float, default=0.2, help="skills.holdout_share")
    parser.add_argument(
        "--confidence", type=float, default=None, help="skills.retire_confidence (default: its)"
    )
    parser.add_argument(
        "--tiebreak",
        choices=("evidence", "lift", "id"),
        default="evidence",
        help="how lexical ties are broken (id: the previous rule, for comparison)",
    )
    parser.add_argument("--band", type=float, default=None, help="evolve._triggers.TIE_BAND")
    parser.add_argument("--verbose", action="store_true", help="each skill's oracle lift")
    args = parser.parse_args()
    if args.tiebreak == "id":  # the previous rule: no evidence, in training and evaluation
        _select.evidence_of = lambda strata: {}
    elif args.tiebreak == "lift":  # the lift alone: a measured 0 ties with no evidence
        measured = _select.evidence_of
        _select.evidence_of = lambda strata: {k: v for k, v in measured(strata).items() if v}
    if args.band is not None:
        _triggers.TIE_BAND = args.band
    started = time.perf_counter()
    seeds = [int(s) for s in args.seeds.split(",")]
    print(
        f"skills under the sim: {args.episodes} training episodes, {args.runs} eval runs/task, "
        f"holdout_share {args.holdout}"
    )
    print(
        "seed  library (active per shelf)                        promo  retired  "
        "wrong w/h/r/hr  right r/false  dev none/skills/generic   holdout none/skills/generic"
    )
    total: Counter[str] = Counter()
    means: Counter[tuple[str, str]] = Counter()
    for seed in seeds:
        r = bench(seed, args.episodes, args.runs, args.holdout, args.confidence)
        c = r.counts()
        total.update(c)
        means.update(r.success)
        shelves = ", ".join(f"{k} {v}" for k, v in sorted(r.shelves.items())) or "empty"
        dev = "/".join(f"{r.success[(a, 'dev')]:.2f}" for a in ("none", "skills", "generic"))
        hold = "/".join(f"{r.success[(a, 'holdout')]:.2f}" for a in ("none", "skills", "generic"))
        wrong = f"{c['written']}/{c['harmful']}/{c['retired']}/{c['harmful_retired']}"
        right = f"{c['right_retired']}/{c['false']}"
        print(
            f"{seed:<5} {shelves:<50} {r.promotions:>5}  {r.retirements:>7}  {wrong:<14}  "
            f"{right:<13}  {dev:<22}  {hold}"
        )
        if args.verbose:
            for t in r.truths:
                lift = "n/a" if t.lift is None else f"{t.lift:+.2f}"
                kind = "wrong" if t.wrong else "right"
                direct = "n/a" if t.direct is None else f"{t.direct:+.2f}"
                print(
                    f"      {t.id} {kind} {t.status:<8} eligible {t.eligible:>2}  lift {lift}"
                    f"  direct {direct}  ({t.record})"
                )
            still = ", ".join(t.id for t in r.still_selected()) or "none"
            print(f"      harmful, active and selected in evaluation at the end: {still}")
    print(
        f"all   wrong written {total['written']}, harmful {total['harmful']}, retired "
        f"{total['retired']} (harmful retired {total['harmful_retired']}); right retired "
        f"{total['right_retired']} (false {total['false']}; harmful right {total['right_harmful']})"
        f"; wrong harmful with the slot left empty {total['direct_harmful']} (retired "
        f"{total['direct_harmful_retired']})"
    )
    n = len(seeds)
    print(
        "mean success (none/skills/generic): dev "
        + "/".join(f"{means[(a, 'dev')] / n:.3f}" for a in ("none", "skills", "generic"))
        + ", holdout "
        + "/".join(f"{means[(a, 'holdout')] / n:.3f}" for a in ("none", "skills", "generic"))
    )
    print(
        "wrong w/h/r/hr: wrong lessons written / truly harmful (oracle) / retired / harmful "
        "and retired; right r/false: right lessons retired / of them not harmful"
    )
    if args.verbose:
        skills_dev, skills_hold = means[("skills", "dev")] / n, means[("skills", "holdout")] / n
        print(
            f"tie-break {args.tiebreak} (band {_triggers.TIE_BAND:g}): harmful retired "
            f"{total['harmful_retired']} of {total['harmful']}, false retirements "
            f"{total['false']}, harmful still active and selected in evaluation at the end "
            f"{total['still_selected']} (wrong lessons {total['still_selected_wrong']}), "
            f"dev/holdout success with the learned skills {skills_dev:.3f}/{skills_hold:.3f}"
        )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
