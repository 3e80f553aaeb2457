"""A reflector test double that knows alex, the default persona.

The failures a reflector sees are instance complaints, which name the slot but mostly not the
value (docs/sim.md, "What each tier can teach"), so a double that should improve dev is told
alex's values; it writes the right statement for every slot its <failures> name.
"""

from __future__ import annotations

from pathlib import Path

from evolve.agent import section
from evolve.envs.persona_world import RULES_BY_NAME, load_personas
from evolve.sim import proposals_from_complaint

ALEX = {
    RULES_BY_NAME[p.rule].slot: RULES_BY_NAME[p.rule].statement(p.value_at(None))
    for p in load_personas(Path(__file__).resolve().parents[1] / "evalset" / "personas")[
        "alex"
    ].preferences
}


def alex_statements(prompt: str) -> list[str]:
    """The right preference statements for the slots the reflector's <failures> name."""
    out: list[str] = []
    slots: set[str] = set()
    for line in (section(prompt, "failures") or "").splitlines():
        _, _, text = line.partition("x ")
        for p in proposals_from_complaint(text):
            if p.slot not in slots and p.slot in ALEX:
                slots.add(p.slot)
                out.append(ALEX[p.slot])
    return out
