"""Memory after a preference changes (issue 8): does each recipe follow the new value?

For each recipe x {alex's payment visibility (private -> friends at episode 12), casey's
e-mail sign-off (Cheers -> Warmly at episode 15)} x {instance, corrective} feedback, trains a
fresh workspace for 30 episodes with the `sim` models, then prints the dev violations on the
drifted rule (dev is judged by the preference as it holds now) and whether a unit stating
the stale value is still rendered to the agent.

Run: `python benchmarks/bench_drift.py [--episodes N] [--recipes ace,tepa]`.
The sim's numbers test the harness's mechanics; they say nothing about real models.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from evolve.envs.persona_world import recognize, split_sentences
from evolve.evaluate import run_split
from evolve.memory import load_units, scope_for
from evolve.train import train
from evolve.updaters import RECIPES, render_for
from evolve.workspace import Workspace, init_workspace


@dataclass(frozen=True)
class Drift:
    persona: str
    rule: str
    slot: str
    stale: str
    label: str
    # docs/sim.md: the instance complaint never names the new value, so the learner can only
    # guess (e.g. "Best" for an e-mail sign-off); corrective feedback is the real test.
    unreachable_by_instance: bool = False


DRIFTS = (
    Drift("alex", "payment_visibility", "payment.visibility", "private", "alex payments"),
    Drift("casey", "email_signoff", "email.signoff", "Cheers", "casey sign-off", True),
)
TIERS = ("instance", "corrective")


def stale_lines(rendered: str, drift: Drift) -> list[str]:
    """Rendered lines that state the stale value for the drifted slot."""
    out = []
    for line in rendered.splitlines():
        for sentence in split_sentences(line):
            for d in recognize(sentence):
                if d.slot == drift.slot and not d.negated and str(d.value) == drift.stale:
                    out.append(line)
    return out


def measure(recipe: str, drift: Drift, tier: str, episodes: int) -> tuple[int, int, bool, str]:
    """(violations, applicable dev episodes, stale unit rendered, rendered memory)."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = init_workspace(Path(tmp) / "ws", persona=drift.persona)
        cfg = ws.config
        cfg = cfg.model_copy(
            update={
                "train": cfg.train.model_copy(update={"recipe": recipe, "feedback": tier}),
                "render": cfg.render.model_copy(update={"recipes": (recipe,)}),
            }
        )
        ws = Workspace(ws.root, cfg)
        train(ws, recipe=recipe, episodes=episodes, feedback=tier, persona=drift.persona)  # type: ignore[arg-type]
        report = run_split(ws, "dev", runs=1, log=False, persona=drift.persona)
        applicable = [e for e in report.episodes if drift.rule in e.applicable_rules]
        violated = [e for e in applicable if drift.rule in e.violations]
        rendered = render_for(load_units(ws.root), scope_for(drift.persona), (recipe,))
        return len(violated), len(applicable), bool(stale_lines(rendered, drift)), rendered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--recipes", default=",".join(RECIPES))
    parser.add_argument("--show-memory", action="store_true", help="print each final memory")
    args = parser.parse_args()
    recipes = [r for r in args.recipes.split(",") if r]
    print(f"dev violations on the drifted rule after {args.episodes} training episodes (sim)")
    print(f"{'recipe':<10} {'drift':<16} {'feedback':<11} {'violations':>10}  stale unit rendered")
    started = time.perf_counter()
    for recipe in recipes:
        for drift in DRIFTS:
            for tier in TIERS:
                bad, n, stale, rendered = measure(recipe, drift, tier, args.episodes)
                note = (
                    "  (new value unreachable from instance feedback)"
                    if (tier == "instance" and drift.unreachable_by_instance)
                    else ""
                )
                print(
                    f"{recipe:<10} {drift.label:<16} {tier:<11} {f'{bad}/{n}':>10}  "
                    f"{'yes' if stale else 'no'}{note}",
                    flush=True,
                )
                if args.show_memory:
                    print("    " + rendered.replace("\n", "\n    "))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
