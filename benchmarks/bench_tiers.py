"""What each feedback tier can teach: gap closed per recipe x tier x persona.

For each persona, scores dev and holdout with no memory (`none`) and with the persona's own
statements (`oracle`); then for each recipe x feedback tier trains a fresh workspace with the
`sim` models and scores it with the recipe's memory (`recipe`) and with a neutral block of the
same length (`fixed`, the token-matched control). Gap closed = (none - arm) / (none - oracle)
on the violation rate, in percent ("n/a" when none = oracle).

Run: `python benchmarks/bench_tiers.py [--personas alex,casey] [--recipes ace,tepa]
[--tiers instance,corrective] [--episodes 40] [--runs 1] [--seed 0] [--json]`.
The sim's numbers test the harness's mechanics; they say nothing about real models.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from evolve.envs import Split
from evolve.evaluate import InjectMode, run_split
from evolve.train import train
from evolve.updaters import RECIPES
from evolve.workspace import Workspace, init_workspace

SPLITS: tuple[Split, ...] = ("dev", "holdout")


def gap_closed(none: float, oracle: float, arm: float) -> float | None:
    """Percent of the none-to-oracle gap an arm closes; None when there is no gap."""
    if abs(none - oracle) < 1e-12:
        return None
    return 100.0 * (none - arm) / (none - oracle)


def _workspace(root: Path, persona: str, recipe: str, tier: str) -> Workspace:
    ws = init_workspace(root, persona=persona)
    cfg = ws.config
    cfg = cfg.model_copy(
        update={
            "train": cfg.train.model_copy(update={"recipe": recipe, "feedback": tier}),
            "render": cfg.render.model_copy(update={"recipes": (recipe,)}),
        }
    )
    return Workspace(ws.root, cfg)


def _rates(
    ws: Workspace, persona: str, inject: InjectMode, runs: int, seed: int
) -> dict[str, float]:
    return {
        split: run_split(
            ws,
            split,
            runs=runs,
            persona=persona,
            inject=inject,
            log=False,
            seed=seed,
        ).violation_rate
        for split in SPLITS
    }


def measure(
    persona: str, recipes: list[str], tiers: list[str], episodes: int, runs: int, seed: int
) -> dict[str, Any]:
    out: dict[str, Any] = {"persona": persona, "arms": {}}
    with tempfile.TemporaryDirectory() as tmp:
        base = _workspace(Path(tmp) / "base", persona, "ace", "instance")
        out["none"] = _rates(base, persona, "none", runs, seed)
        out["oracle"] = _rates(base, persona, "oracle", runs, seed)
        for recipe in recipes:
            for tier in tiers:
                ws = _workspace(Path(tmp) / f"{recipe}-{tier}", persona, recipe, tier)
                train(ws, recipe=recipe, episodes=episodes, feedback=tier, persona=persona)  # type: ignore[arg-type]
                injects: tuple[InjectMode, ...] = ("recipe", "fixed")
                for inject in injects:
                    rates = _rates(ws, persona, inject, runs, seed)
                    out["arms"][f"{recipe}/{tier}/{inject}"] = {
                        split: {
                            "violation_rate": round(rates[split], 4),
                            "gap_closed": gap_closed(
                                out["none"][split], out["oracle"][split], rates[split]
                            ),
                        }
                        for split in SPLITS
                    }
    return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--personas", default="alex,casey")
    parser.add_argument("--recipes", default=",".join(RECIPES))
    parser.add_argument("--tiers", default="instance,corrective")
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    recipes = [r for r in args.recipes.split(",") if r]
    tiers = [t for t in args.tiers.split(",") if t]
    started = time.perf_counter()
    results = [
        measure(p, recipes, tiers, args.episodes, args.runs, args.seed)
        for p in args.personas.split(",")
        if p
    ]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"gap closed, % of none->oracle on the violation rate (dev/holdout); sim, "
        f"{args.episodes} training episodes, {args.runs} run(s), evaluation seed {args.seed}"
    )
    for r in results:
        print(
            f"\n{r['persona']}: none {r['none']['dev']:.3f}/{r['none']['holdout']:.3f}, "
            f"oracle {r['oracle']['dev']:.3f}/{r['oracle']['holdout']:.3f}"
        )
        print(f"{'recipe':<10}" + "".join(f"{t + ' (fixed)':>24}" for t in tiers))
        for recipe in recipes:
            cells = []
            for tier in tiers:
                arm = r["arms"][f"{recipe}/{tier}/recipe"]
                fixed = r["arms"][f"{recipe}/{tier}/fixed"]
                cells.append(
                    f"{_pct(arm['dev']['gap_closed'])}/{_pct(arm['holdout']['gap_closed'])}"
                    f" ({_pct(fixed['dev']['gap_closed'])}/{_pct(fixed['holdout']['gap_closed'])})"
                )
            print(f"{recipe:<10}" + "".join(f"{c:>24}" for c in cells))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
