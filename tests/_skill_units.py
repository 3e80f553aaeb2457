"""A skill unit for tests that plant shelves through the applier (sidecars, revert records)."""

from __future__ import annotations

from evolve.memory import MemoryUnit


def skill_unit(
    ident: str, text: str, topic: str | None = None, *, evidence: list[str] | None = None
) -> MemoryUnit:
    """An active, global skill on `topic`'s shelf (the general shelf without one)."""
    return MemoryUnit.model_validate(
        {
            "id": ident,
            "recipe": "skills",
            "kind": "skill",
            "status": "active",
            "scope": "global",
            "shelf": "topic" if topic else "general",
            "topic": topic,
            "trigger": f"a {topic or 'write'} task",
            "evidence": evidence,
            "valid_from": "2026-01-01T00:00:00+00:00",
            "text": text,
        }
    )


# A hand-written general skill file (`memory/skills/general/verify-after.md`) with every field
# written out, as the CLI, report and real-server tests plant it.
VERIFY_AFTER = """---
id: verify-after
recipe: hand
kind: skill
status: active
scope: global
shelf: general
trigger: sending a text, payment or email, or saving a note
---
Verify the final state after writing: read it back.
"""
