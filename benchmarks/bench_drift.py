"""Memory after a preference changes: does each recipe follow the new value?

For each recipe x {alex's payment visibility (private -> friends at episode 12), casey's
e-mail sign-off (Cheers -> Warmly at episode 15)} x {instance, corrective} feedback, trains a
fresh workspace for 30 episodes with the `sim` models, then prints the dev violations on the
drifted rule (dev is judged by the preference as it holds now) and whether a unit stating
the stale value is still rendered to the agent.

Run: `python benchmarks/bench_drift.py [--episodes N] [--recipes ace,tepa] [--unnamed]
[--no-subject]`.
`--unnamed` strips every field that names an existing unit from the sim updater's replies
(`replaces`, `retire`, and ACE's `modify`, which becomes a plain `add` of its text; a tag of a
bullet is kept, it names no replacement): supersession then rests on what the recipe can tell
without the updater's help (re-affirmed duplicates, subjects and keys, the similarity net).
A statement's `subject` (ACE, topl) names no unit, so `--unnamed` keeps it; `--no-subject`
strips it too, to show what re-affirming and the similarity net do on their own.
The sim's numbers test the harness's mechanics; they say nothing about real models.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve.envs.persona_world import recognize, split_sentences
from evolve.evaluate import open_env, run_split
from evolve.llm import LLM, Completion, JsonSchema, Message
from evolve.memory import load_units, scope_for
from evolve.sim import SimLLM
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
    # docs/sim.md: the instance complaint never names the new value, so the learner can write
    # no value for it (only a vague statement); corrective feedback is the real test.
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


_NAMING = ("replaces", "retire")


def _unnamed(data: Any, drop: tuple[str, ...] = _NAMING) -> Any:
    if isinstance(data, dict):
        if data.get("op") == "modify":  # ACE: a modify names the bullet it corrects
            data = {**{k: v for k, v in data.items() if k != "id"}, "op": "add"}
        return {k: _unnamed(v, drop) for k, v in data.items() if k not in drop}
    if isinstance(data, list):
        return [_unnamed(v, drop) for v in data]
    return data


class Unnamed:
    """The sim updater with every named replacement removed from its replies."""

    def __init__(self, inner: LLM, drop: tuple[str, ...] = _NAMING) -> None:
        self.inner = inner
        self.drop = drop
        self.name = f"unnamed:{inner.name}"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        out = self.inner.complete(
            messages, json_schema=json_schema, temperature=temperature, seed=seed,
            max_tokens=max_tokens,
        )  # fmt: skip
        try:
            data = json.loads(out.text)
        except json.JSONDecodeError:
            return out
        return Completion(json.dumps(_unnamed(data, self.drop)), out.usage, out.model)


def measure(
    recipe: str,
    drift: Drift,
    tier: str,
    episodes: int,
    unnamed: bool = False,
    no_subject: bool = False,
) -> tuple[int, int, bool, str]:
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
        drop = (*_NAMING, "subject") if no_subject else _NAMING
        updater = Unnamed(SimLLM(open_env(ws)), drop) if unnamed or no_subject else None
        train(
            ws, recipe=recipe, episodes=episodes, feedback=tier, persona=drift.persona,  # type: ignore[arg-type]
            updater_llm=updater,
        )  # fmt: skip
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
    parser.add_argument(
        "--unnamed", action="store_true", help="strip named replacements from updater replies"
    )
    parser.add_argument(
        "--no-subject",
        action="store_true",
        help="also strip each statement's subject (ACE, topl): re-affirming and similarity only",
    )
    args = parser.parse_args()
    recipes = [r for r in args.recipes.split(",") if r]
    how = ", updater names nothing" if args.unnamed else ""
    how += ", no subjects" if args.no_subject else ""
    print(f"dev violations on the drifted rule after {args.episodes} training episodes (sim{how})")
    print(f"{'recipe':<10} {'drift':<16} {'feedback':<11} {'violations':>10}  stale unit rendered")
    started = time.perf_counter()
    for recipe in recipes:
        for drift in DRIFTS:
            for tier in TIERS:
                bad, n, stale, rendered = measure(
                    recipe, drift, tier, args.episodes, args.unnamed, args.no_subject
                )
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
