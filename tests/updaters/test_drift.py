"""Issue 8: after a preference drifts, the recipes follow the new value (sim, 30 episodes).

On the old main, alex's payments (private -> friends at episode 12) stayed 5/5 violated on dev
for trace and topl, and casey's corrective sign-off (Cheers -> Warmly at 15) for reflexion
and topl. Each case must now reach <= 1/5 with no unit stating the stale value rendered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve.envs.persona_world import recognize, split_sentences
from evolve.evaluate import run_split
from evolve.memory import load_units, scope_for
from evolve.train import train
from evolve.updaters import render_for
from evolve.workspace import Workspace, init_workspace

CASES = [
    ("trace", "alex", "instance", "payment_visibility", "payment.visibility", "private"),
    ("topl", "alex", "instance", "payment_visibility", "payment.visibility", "private"),
    ("topl", "casey", "corrective", "email_signoff", "email.signoff", "Cheers"),
    ("reflexion", "casey", "corrective", "email_signoff", "email.signoff", "Cheers"),
]


@pytest.mark.parametrize(
    ("recipe", "persona", "tier", "rule", "slot", "stale"),
    CASES,
    ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES],
)
def test_recipe_follows_a_drifted_preference(
    tmp_path: Path, recipe: str, persona: str, tier: str, rule: str, slot: str, stale: str
) -> None:
    ws = init_workspace(tmp_path / "ws", persona=persona)
    cfg = ws.config.model_copy(
        update={"render": ws.config.render.model_copy(update={"recipes": (recipe,)})}
    )
    ws = Workspace(ws.root, cfg)
    train(ws, recipe=recipe, episodes=30, feedback=tier, persona=persona)  # type: ignore[arg-type]
    report = run_split(ws, "dev", runs=1, log=False, persona=persona)
    applicable = [e for e in report.episodes if rule in e.applicable_rules]
    violated = [e for e in applicable if rule in e.violations]
    assert len(applicable) == 5 and len(violated) <= 1
    rendered = render_for(load_units(ws.root), scope_for(persona), (recipe,))
    stale_lines = [
        line
        for line in rendered.splitlines()
        for sentence in split_sentences(line)
        for d in recognize(sentence)
        if d.slot == slot and not d.negated and str(d.value) == stale
    ]
    assert stale_lines == [], rendered
