"""Helpers for the skills write-path tests: skill units and candidates made by hand."""

from __future__ import annotations

from evolve.memory import MemoryUnit
from evolve.skills import Candidate, Maker, specifics

APPS = ("venmo", "phone", "gmail", "simple_note")


def skill(
    ident: str,
    text: str,
    *,
    topic: str | None = None,
    recipe: str = "skills",
    status: str = "active",
    trigger: str = "a task",
) -> MemoryUnit:
    return MemoryUnit.model_validate(
        {
            "id": ident,
            "recipe": recipe,
            "kind": "skill",
            "status": status,
            "scope": "global",
            "shelf": "topic" if topic else "general",
            "topic": topic,
            "trigger": trigger,
            "evidence": ["episode 0 (seed-0)"],
            "valid_from": "2026-01-01T00:00:00+00:00",
            "text": text,
        }
    )


def candidate(
    ref: str,
    topic: str,
    lesson: str,
    *,
    episode: int = 1,
    task_id: str = "pay_back-1",
    instruction: str = "Pay Jamie Lee back $12.50 on Venmo for lunch.",
    actions: str = "",
) -> Candidate:
    return Candidate(
        ref=ref,
        episode=episode,
        task_id=task_id,
        topic=topic,
        lesson=lesson,
        trigger=f"a {topic} task",
        evidence="the verifier said no",
        scope_hint="topic",
        task=specifics(task_id, instruction, actions, APPS),
    )


def maker(batch: int = 0, status: str = "active") -> Maker:
    return Maker(
        stream="alex/skills/0/instance",
        batch=batch,
        episode=batch * 4 + 3,
        now="2026-02-01T00:00:00+00:00",
        status=status,  # type: ignore[arg-type]
    )
