"""Each built-in harness variant against the defaults, one module at a time.

Trains a fresh workspace with the `sim` models (`--recipe`, `--episodes`, corrective feedback
by default), scores dev with the default harness, then with each single-module variant
(`prompts/harness.yaml` naming it, every other module at its default), on the same tasks,
runs and seeds. Each row gives success (episodes accepted), task done, and the violation rate,
with the paired gain over the defaults (tasks x runs, the gate's paired bootstrap) and its
interval, tokens per episode, and a verdict: `hurts` when an interval lies wholly on the wrong
side of 0 (success or task done lower, violations higher), `helps` when none does and one lies
on the right side, else `costs` (over 10% more tokens) or `flat`. The default row is checked against `evolve run --split dev --json` run
on the same workspace: the figures must be equal.

Run: `python benchmarks/bench_harness.py [--persona alex] [--recipe ace] [--episodes 40]
[--feedback corrective] [--runs 3] [--seed 0] [--json]`.
The sim's responses to the variants are designed (docs/sim.md, "Harness variants"): the
table shows that a search has something to find and something to reject, not how the
mechanisms behave with real models.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evolve.evaluate import run_split
from evolve.evaluate._report import SplitReport
from evolve.harness import BUILTINS, DEFAULTS, HARNESS_FILE, MODULES
from evolve.stats import paired_gain
from evolve.train import train
from evolve.workspace import Workspace, init_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trained import interval, per_task, training_options  # noqa: E402


def _figures(report: SplitReport) -> dict[str, float]:
    return {
        "success": round(report.score, 4),
        "done": round(report.task_success_rate, 4),
        "violations": round(report.violation_rate, 4),
        "tokens_per_episode": round(report.tokens_per_episode, 1),
    }


def _gains(base: SplitReport, cand: SplitReport, seed: int) -> dict[str, list[float]]:
    out = {}
    for value in ("success", "done", "violations"):
        g = paired_gain(per_task(base, value), per_task(cand, value), seed=seed)
        out[value] = [round(g.mean, 4), round(g.low, 4), round(g.high, 4)]
    return out


def _verdict(gains: dict[str, list[float]], base: dict[str, float], row: dict[str, float]) -> str:
    """`hurts` when any interval lies on the wrong side of 0 (success or done below, violations
    above); `helps` when none does and one lies on the right side; else `costs` or `flat`."""
    success, done, violations = gains["success"], gains["done"], gains["violations"]
    if success[2] < 0 or done[2] < 0 or violations[1] > 0:
        return "hurts"
    if success[1] > 0 or done[1] > 0 or violations[2] < 0:
        return "helps"
    if row["tokens_per_episode"] > 1.1 * base["tokens_per_episode"]:
        return "costs"
    return "flat"


def _cli_run(root: Path, runs: int, seed: int) -> dict[str, Any]:
    """`evolve run --split dev --json` as a person runs it, on the same workspace."""
    done = subprocess.run(
        [sys.executable, "-m", "evolve", "run", "--split", "dev", "--runs", str(runs),
         "--seed", str(seed), "--json", "-C", str(root)],
        capture_output=True, text=True, check=True, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def measure(
    persona: str, recipe: str, episodes: int, feedback: str, runs: int, seed: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        ws: Workspace = init_workspace(Path(tmp) / "ws", persona=persona)
        started = time.perf_counter()
        train(ws, recipe=recipe, episodes=episodes, feedback=feedback, persona=persona)  # type: ignore[arg-type]
        trained = time.perf_counter() - started

        def score() -> SplitReport:
            return run_split(ws, "dev", runs=runs, persona=persona, log=False, seed=seed)

        started = time.perf_counter()
        base = score()
        base_row = _figures(base)
        cli = _cli_run(ws.root, runs, seed)
        same = (
            cli["score"] == base_row["success"]
            and cli["task_success_rate"] == base_row["done"]
            and cli["violation_rate"] == base_row["violations"]
            and cli["tokens_per_episode"] == base_row["tokens_per_episode"]
        )
        rows = []
        for module in MODULES:
            for name, variant in BUILTINS[module].items():
                if name == DEFAULTS[module]:
                    continue
                (ws.root / HARNESS_FILE).write_text(f"{module}: {name}\n", encoding="utf-8")
                try:
                    report = score()
                finally:
                    (ws.root / HARNESS_FILE).unlink()
                row = _figures(report)
                gains = _gains(base, report, seed)
                rows.append(
                    {
                        "module": module,
                        "variant": name,
                        "mechanism": variant.mechanism,
                        **row,
                        "gain": gains,
                        "verdict": _verdict(gains, base_row, row),
                    }
                )
        scored = time.perf_counter() - started
    return {
        "persona": persona,
        "recipe": recipe,
        "feedback": feedback,
        "episodes_trained": episodes,
        "runs": runs,
        "seed": seed,
        "dev_episodes_per_row": len(base.episodes),
        "default": base_row,
        "evolve_run": {
            k: cli[k]
            for k in ("score", "task_success_rate", "violation_rate", "tokens_per_episode")
        },
        "default_equals_evolve_run": same,
        "variants": rows,
        "train_s": round(trained, 2),
        "score_s": round(scored, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    training_options(parser)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = measure(args.persona, args.recipe, args.episodes, args.feedback, args.runs, args.seed)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    d = out["default"]
    print(
        f"dev, persona {out['persona']}, {out['recipe']} trained {out['episodes_trained']} "
        f"episodes ({out['feedback']}), {out['runs']} runs x {out['dev_episodes_per_row'] // out['runs']} "
        f"tasks = {out['dev_episodes_per_row']} episodes a row, seed {out['seed']}"
    )
    print(
        f"default: success {d['success']:.3f}  done {d['done']:.3f}  violations "
        f"{d['violations']:.3f}  tokens/ep {d['tokens_per_episode']:.0f}   "
        f"equals `evolve run --split dev`: {'yes' if out['default_equals_evolve_run'] else 'NO'}"
    )
    head = (
        f"{'module':<9} {'variant':<17} {'success':>7} {'gain [95%]':>26} {'done':>6} "
        f"{'gain [95%]':>26} {'viol.':>6} {'gain [95%]':>26} {'tok/ep':>7}  verdict"
    )
    print(head)
    for r in out["variants"]:
        g = r["gain"]
        print(
            f"{r['module']:<9} {r['variant']:<17} {r['success']:>7.3f} {interval(g['success']):>26} "
            f"{r['done']:>6.3f} {interval(g['done']):>26} {r['violations']:>6.3f} "
            f"{interval(g['violations']):>26} {r['tokens_per_episode']:>7.0f}  {r['verdict']}"
        )
    helps = [f"{r['module']}:{r['variant']}" for r in out["variants"] if r["verdict"] == "helps"]
    hurts = [f"{r['module']}:{r['variant']}" for r in out["variants"] if r["verdict"] == "hurts"]
    print(f"helps: {', '.join(helps) or 'none'}")
    print(f"hurts: {', '.join(hurts) or 'none'}")
    print(f"time: train {out['train_s']:.1f}s, scoring {out['score_s']:.1f}s")


if __name__ == "__main__":
    main()
