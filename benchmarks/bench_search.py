"""The module-level harness search on the sim: what it finds within its budget, and the
ablations (topic-guided against relevance-ranked card selection; module-wise against
whole-harness mutation).

Trains a fresh workspace with the `sim` models (`--recipe`, `--episodes`, corrective feedback),
then runs `evolve search`'s cycle (`evolve.search.run_search`) in a copy of it for each arm:

- `search`: the default (topics, module-wise, `--per-module` cards per module and generation);
- `relevance`: cards ranked by relevance to the capability brief instead of by topic;
- `whole`: whole-harness mutation (each candidate changes every module at once, no crossover).

The ablation arms get a tighter budget (`--ablation-budget`, `--ablation-per-module`), as
selection only matters when not every card fits. Each arm's final champion is scored on dev
(the split it was selected on) and holdout (never seen by the search), paired over tasks x runs
against the defaults and against the default arm (95% bootstrap intervals).

The best harness the sim's documented effects allow is found by brute force: every
combination of the built-in variants (3^5 = 243 harnesses, default parameters) scored on dev
as the search scores; the default arm must reach its dev success, and no arm's champion may
hold a mechanism that hurts on its own (an interval wholly below 0).

A champion move is the gate's decision, caps included: the sim's review step (`verify_first`)
costs about 1.6x the trained base's tokens per episode, past the default
`gate.max_token_factor` of 1.5x, so the bench sets the cap (`--max-token-factor`, 2.0 by
default; it is printed) and the ablations compare selection, not the cap. With 1.5 the default
arm's champion is the same (it costs 1.17x); the ablation arms, two cards a module, find no
champion the cap admits.

Run: `python benchmarks/bench_search.py [--persona alex] [--recipe ace] [--episodes 40]
[--runs 3] [--seed 0] [--budget 3000] [--per-module 6] [--ablation-budget 600]
[--ablation-per-module 2] [--max-token-factor 2.0] [--json]`. The sim's responses are designed (docs/sim.md, "Harness
variants"): the table shows that the search finds and rejects what is there to find, not how
the mechanisms behave with real models.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evolve.evaluate import run_split
from evolve.evaluate._report import SplitReport
from evolve.harness import BUILTINS, DEFAULTS, HARNESS_FILE, MODULES, dump_choice
from evolve.search import run_search
from evolve.stats import paired_gain
from evolve.train import train
from evolve.workspace import Workspace, init_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trained import interval, per_task, training_options  # noqa: E402


def _score(ws: Workspace, split: str, runs: int, seed: int) -> SplitReport:
    return run_split(ws, split, runs=runs, log=False, seed=seed)  # type: ignore[arg-type]


def _with(
    ws: Workspace, choice: dict[str, str] | None, split: str, runs: int, seed: int
) -> SplitReport:
    path = ws.root / HARNESS_FILE
    old = path.read_bytes() if path.exists() else None
    if choice is not None:
        full: dict[str, tuple[str, dict[str, int]]] = {
            m: (choice.get(m, DEFAULTS[m]), {}) for m in MODULES
        }
        path.write_text(dump_choice(full), encoding="utf-8")
    elif path.exists():
        path.unlink()
    try:
        return _score(ws, split, runs, seed)
    finally:
        if old is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(old)


def _gain(base: SplitReport, cand: SplitReport, seed: int) -> list[float]:
    g = paired_gain(per_task(base, "success"), per_task(cand, "success"), seed=seed)
    return [round(g.mean, 4), round(g.low, 4), round(g.high, 4)]


def _brute_force(ws: Workspace, runs: int, seed: int) -> dict[str, Any]:
    started = time.perf_counter()
    best: tuple[float, float, dict[str, str]] | None = None
    count = 0
    for names in itertools.product(*(list(BUILTINS[m]) for m in MODULES)):
        choice = dict(zip(MODULES, names, strict=True))
        report = _with(ws, choice, "dev", runs, seed)
        count += 1
        key = (round(report.score, 4), -report.tokens_per_episode)
        if best is None or key > best[:2]:
            best = (key[0], key[1], choice)
    assert best is not None
    return {
        "harnesses": count,
        "best_success": best[0],
        "best": best[2],
        "wall_s": round(time.perf_counter() - started, 1),
    }


def _harmful(ws: Workspace, base: SplitReport, runs: int, seed: int) -> list[str]:
    """The variants that hurt on their own, as bench_harness.py says `hurts`: success or
    task done with an interval wholly below 0, or violations wholly above."""
    out = []
    for module in MODULES:
        for name in BUILTINS[module]:
            if name == DEFAULTS[module]:
                continue
            cand = _with(ws, {module: name}, "dev", runs, seed)
            success = _gain(base, cand, seed)
            done = paired_gain(per_task(base, "done"), per_task(cand, "done"), seed=seed)
            viol = paired_gain(per_task(base, "viol"), per_task(cand, "viol"), seed=seed)
            if success[2] < 0 or done.high < 0 or viol.low > 0:
                out.append(f"{module}:{name}")
    return out


def _token_cap(root: Path, factor: float) -> None:
    """Set `gate.max_token_factor` in the workspace's evolve.yaml (one commit, as a user does)."""
    path = root / "evolve.yaml"
    text = path.read_text(encoding="utf-8")
    line = "  max_token_factor: 1.5\n"
    if line not in text:
        raise SystemExit("bench_search: evolve.yaml has no default max_token_factor to set")
    path.write_text(text.replace(line, f"  max_token_factor: {factor}\n"), encoding="utf-8")
    subprocess.run(["git", "commit", "-qam", "config: the gate's token cap"], cwd=root, check=True)


def _arm(
    template: Path, tmp: Path, name: str, runs: int, seed: int, **options: Any
) -> dict[str, Any]:
    root = tmp / name
    shutil.copytree(template, root, symlinks=True)
    ws = Workspace(root)
    started = time.perf_counter()
    result = run_search(ws, runs=runs, seed=seed, **options)
    wall = time.perf_counter() - started
    after = {m: v.split(" ")[0] for m, v in result.champion_after.items()}
    return {
        "arm": name,
        "options": {k: v for k, v in options.items()},
        "champion": after,
        "changed": {m: v for m, v in after.items() if v != DEFAULTS[m]},
        "moves": len(result.path),
        "generations": result.generations,
        "candidates_scored": len([t for t in result.tried if t.gain is not None]),
        "episodes": result.episodes,
        "wall_s": round(wall, 1),
        "stopped": result.stopped,
        "tried": [
            {
                "name": t.name,
                "kind": t.kind,
                "predicted": t.predicted,
                "gain": t.gain,
                "verdict": t.verdict,
            }
            for t in result.tried
            if t.gain is not None
        ],  # fmt: skip
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        ws = init_workspace(tmp / "trained", persona=args.persona)
        _token_cap(ws.root, args.max_token_factor)
        ws = Workspace(ws.root)
        started = time.perf_counter()
        train(ws, recipe=args.recipe, episodes=args.episodes, feedback=args.feedback,
              persona=args.persona)  # fmt: skip
        train_s = time.perf_counter() - started
        base_dev = _with(ws, None, "dev", args.runs, args.seed)
        base_hold = _with(ws, None, "holdout", args.runs, args.seed)
        harmful = _harmful(ws, base_dev, args.runs, args.seed)
        brute = _brute_force(ws, args.runs, args.seed)
        arms = [
            _arm(ws.root, tmp, "search", args.runs, args.seed, budget=args.budget,
                 per_module=args.per_module, patience=args.patience),
            _arm(ws.root, tmp, "topics", args.runs, args.seed, budget=args.ablation_budget,
                 per_module=args.ablation_per_module, patience=args.patience),
            _arm(ws.root, tmp, "relevance", args.runs, args.seed, budget=args.ablation_budget,
                 per_module=args.ablation_per_module, patience=args.patience,
                 strategy="relevance"),
            _arm(ws.root, tmp, "modules", args.runs, args.seed, budget=args.ablation_budget,
                 per_module=args.ablation_per_module, patience=args.patience),
            _arm(ws.root, tmp, "whole", args.runs, args.seed, budget=args.ablation_budget,
                 per_module=args.ablation_per_module, patience=args.patience, mode="whole"),
        ]  # fmt: skip
        reports: dict[str, tuple[SplitReport, SplitReport]] = {}
        for arm in arms:
            dev = _with(ws, arm["champion"], "dev", args.runs, args.seed)
            hold = _with(ws, arm["champion"], "holdout", args.runs, args.seed)
            reports[arm["arm"]] = (dev, hold)
            arm["dev_success"] = round(dev.score, 4)
            arm["holdout_success"] = round(hold.score, 4)
            arm["tokens_per_episode"] = round(dev.tokens_per_episode, 1)
            arm["dev_gain_over_defaults"] = _gain(base_dev, dev, args.seed)
            arm["holdout_gain_over_defaults"] = _gain(base_hold, hold, args.seed)
            arm["harmful_kept"] = [
                f"{m}:{v}" for m, v in arm["changed"].items() if f"{m}:{v}" in harmful
            ]
        ablations = []
        for a, b, what in (
            ("topics", "relevance", "topic-guided vs relevance-ranked selection"),
            ("modules", "whole", "module-wise vs whole-harness mutation"),
        ):
            ablations.append(
                {
                    "ablation": what,
                    "arms": [a, b],
                    "dev_gain": _gain(reports[b][0], reports[a][0], args.seed),
                    "holdout_gain": _gain(reports[b][1], reports[a][1], args.seed),
                }
            )
        found_best = arms[0]["dev_success"] >= brute["best_success"]
    return {
        "persona": args.persona,
        "recipe": args.recipe,
        "episodes_trained": args.episodes,
        "runs": args.runs,
        "seed": args.seed,
        "max_token_factor": args.max_token_factor,
        "dev_episodes_per_scoring": len(base_dev.episodes),
        "defaults": {
            "dev": round(base_dev.score, 4),
            "holdout": round(base_hold.score, 4),
            "tokens_per_episode": round(base_dev.tokens_per_episode, 1),
        },
        "harmful_alone": harmful,
        "brute_force": brute,
        "found_the_best": found_best,
        # The module-wise arms are the search; the whole-harness arm is the ablation's baseline,
        # which cannot tell a harmful module from a helpful one in the same candidate.
        "rejected_every_harmful": all(not a["harmful_kept"] for a in arms if a["arm"] != "whole"),
        "whole_harness_kept": arms[-1]["harmful_kept"],
        "arms": arms,
        "ablations": ablations,
        "train_s": round(train_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    training_options(parser)
    parser.add_argument("--budget", type=int, default=3000)
    parser.add_argument("--per-module", type=int, default=6)
    parser.add_argument("--patience", type=int, default=1)
    parser.add_argument("--ablation-budget", type=int, default=900)
    parser.add_argument("--ablation-per-module", type=int, default=2)
    parser.add_argument("--max-token-factor", type=float, default=2.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = measure(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    d = out["defaults"]
    print(
        f"persona {out['persona']}, {out['recipe']} trained {out['episodes_trained']} episodes; "
        f"dev {out['dev_episodes_per_scoring']} episodes a scoring ({out['runs']} runs), seed "
        f"{out['seed']}; token cap {out['max_token_factor']:g}x; defaults: dev {d['dev']:.3f}, "
        f"holdout {d['holdout']:.3f}"
    )
    b = out["brute_force"]
    best = ", ".join(f"{m}: {v}" for m, v in b["best"].items() if v != DEFAULTS[m])
    print(
        f"brute force over {b['harnesses']} harnesses: best dev {b['best_success']:.3f} "
        f"({best}; fewest tokens among the best) in {b['wall_s']:.1f}s; defaults "
        f"{out['defaults']['tokens_per_episode']:.0f} tokens/episode"
    )
    print(f"harmful on their own: {', '.join(out['harmful_alone'])}")
    head = (
        f"{'arm':<10} {'budget':>6} {'played':>6} {'wall':>6} {'cands':>5}  "
        f"{'dev':>5} {'gain over defaults':>24}  {'holdout':>7} {'gain over defaults':>24}  "
        f"{'tok/ep':>6}  champion"
    )
    print(head)
    for a in out["arms"]:
        changed = ", ".join(f"{m}: {v}" for m, v in a["changed"].items()) or "(defaults)"
        print(
            f"{a['arm']:<10} {a['options']['budget']:>6} {a['episodes']:>6} {a['wall_s']:>5.1f}s "
            f"{a['candidates_scored']:>5}  {a['dev_success']:>5.3f} "
            f"{interval(a['dev_gain_over_defaults']):>24}  {a['holdout_success']:>7.3f} "
            f"{interval(a['holdout_gain_over_defaults']):>24}  {a['tokens_per_episode']:>6.0f}  {changed}"
        )
    for ab in out["ablations"]:
        print(
            f"ablation {ab['ablation']}: {ab['arms'][0]} - {ab['arms'][1]}: dev "
            f"{interval(ab['dev_gain'])}, holdout {interval(ab['holdout_gain'])}"
        )
    print(
        f"found the best: {'yes' if out['found_the_best'] else 'NO'}; rejected every harmful "
        f"mechanism (module-wise arms): {'yes' if out['rejected_every_harmful'] else 'NO'}; "
        f"harmful kept by the whole-harness arm: {', '.join(out['whole_harness_kept']) or 'none'}; "
        f"train {out['train_s']:.1f}s"
    )


if __name__ == "__main__":
    main()
