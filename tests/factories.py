"""Builders for what tests plant: memory units, skill units, hand-written skill files, and the
skills batch's candidates and maker; and a counter of the full unit parser's calls.

One definition each, so a field the unit model gains is added here once. A test that needs
other values passes them (`memory_unit("u-1", "text", created_episode=0)`); every extra keyword is a
unit field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from evolve.memory import MemoryUnit
from evolve.skills import Candidate, Maker, specifics

ALEX = "user:alex"  # the default persona's scope
APPS = ("venmo", "phone", "gmail", "simple_note")
# A general skill's trigger that matches every task that writes.
WRITE_TRIGGER = "a task that changes stored state (send, pay, text, email, save, note)"


def memory_unit(
    uid: str = "u-1",
    text: str = "",
    *,
    recipe: str = "ace",
    kind: str = "bullet",
    scope: str = ALEX,
    **fields: Any,
) -> MemoryUnit:
    """A validated unit: an ace bullet in alex's scope unless told otherwise (`id=` in
    `fields` overrides `uid`)."""
    return MemoryUnit.model_validate(
        {"id": uid, "recipe": recipe, "kind": kind, "scope": scope, "text": text, **fields}
    )


def skill(
    ident: str,
    text: str,
    topic: str | None = None,
    *,
    recipe: str = "skills",
    status: str = "active",
    trigger: str = "a task",
    evidence: Sequence[str] | None = ("episode 0 (seed-0)",),
    **fields: Any,
) -> MemoryUnit:
    """A global skill on `topic`'s shelf (the general shelf without one), learned in episode 0
    unless `evidence` says otherwise (None: no evidence field)."""
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
            "evidence": None if evidence is None else list(evidence),
            "valid_from": "2026-01-01T00:00:00+00:00",
            "text": text,
            **fields,
        }
    )


def shelf_skill(
    ident: str, text: str, topic: str | None = None, *, evidence: list[str] | None = None
) -> MemoryUnit:
    """An active skill as the sidecar and revert-record tests plant it through the applier:
    its trigger names its topic (`a venmo task`, `a write task` on the general shelf), and it
    carries `evidence` only when given."""
    return skill(ident, text, topic, trigger=f"a {topic or 'write'} task", evidence=evidence)


def skill_file(
    ident: str, lesson: str, trigger: str, *, scope: str = "global", topic: str | None = None
) -> str:
    """A hand-written skill file (`recipe: hand`) with every field written out, on the general
    shelf or `topic`'s."""
    shelf = f"shelf: topic\ntopic: {topic}\n" if topic else "shelf: general\n"
    return (
        f"---\nid: {ident}\nrecipe: hand\nkind: skill\nstatus: active\nscope: {scope}\n"
        f"{shelf}trigger: {trigger}\n---\n{lesson}\n"
    )


# `memory/skills/general/verify-after.md` as the CLI, report and real-server tests plant it.
VERIFY_AFTER = skill_file(
    "verify-after",
    "Verify the final state after writing: read it back.",
    "sending a text, payment or email, or saving a note",
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
    """A skill reflector's candidate lesson from one failed episode."""
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
    """Who makes a skills batch's units: the stream, batch, episode and time they record."""
    return Maker(
        stream="alex/skills/0/instance",
        batch=batch,
        episode=batch * 4 + 3,
        now="2026-02-01T00:00:00+00:00",
        status=status,  # type: ignore[arg-type]
    )


def count_full_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths `evolve.memory.parse_unit` (the full YAML and pydantic parser) is called with
    from now on, in order: how the units-cache tests see what the fast path parsed. Files
    written just now count as old, so the cache may keep them."""
    import evolve.memory
    from evolve.quick import _read

    monkeypatch.setattr(_read, "RACY_NS", -(10**12))
    calls: list[str] = []
    real = evolve.memory.parse_unit

    def counting(path: str, raw: str) -> MemoryUnit:
        calls.append(path)
        return real(path, raw)

    monkeypatch.setattr(evolve.memory, "parse_unit", counting)
    return calls
