"""A skill as selection and the scoreboard read it: the view of a `kind: skill` memory unit.

Below both: selection (`_select`) ranks and injects these views, the scoreboard (`_scoreboard`)
lists them with their record, and both refuse two active skills with one id here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evolve.errors import EvolveError

_LIVE = "active"


@dataclass(frozen=True)
class Skill:
    """What selection needs of a skill unit (`evolve.memory.MemoryUnit` with `kind: skill`)."""

    id: str
    trigger: str
    text: str
    shelf: str = "general"
    topic: str | None = None
    status: str = _LIVE

    @property
    def where(self) -> str:
        """`general`, or `topics/<topic>`."""
        return f"topics/{self.topic}" if self.shelf == "topic" and self.topic else "general"

    def line(self) -> str:
        """The skill as the agent sees it: `[<id>] <trigger>: <lesson>` on one line."""
        lesson = " ".join(self.text.split())
        trigger = " ".join(self.trigger.split()).rstrip(":")
        return f"[{self.id}] {trigger}: {lesson}" if trigger else f"[{self.id}] {lesson}"


def skill_of(unit: Any) -> Skill | None:
    """The :class:`Skill` view of a memory unit, or None if it is not a skill."""
    if getattr(unit, "kind", None) != "skill":
        return None
    # A skill written with no trigger (a plain hand-written file): a topic skill applies to
    # its topic's tasks (the topic's name is its trigger), a general one to every task.
    topic = getattr(unit, "topic", None)
    return Skill(
        id=str(unit.id),
        trigger=str(getattr(unit, "trigger", None) or topic or ""),
        text=str(unit.text),
        shelf=str(getattr(unit, "shelf", None) or "general"),
        topic=getattr(unit, "topic", None),
        status=str(unit.status),
    )


def skills_of(units: Iterable[Any]) -> list[Skill]:
    """The active skills among `units`, by id (retired, revoked, pending ones are never picked).

    Raises:
        EvolveError: two of them share an id (hand-written files): selection, the injected
            lines and the scoreboard's record go by id, so one lesson would be shown twice
            and the other never, both counted as one.
    """
    out = sorted(
        (s for u in units if (s := skill_of(u)) is not None and s.status == _LIVE),
        key=lambda s: (s.id, s.where),
    )
    for one, two in zip(out, out[1:], strict=False):
        if one.id == two.id:
            raise EvolveError(
                f"two active skills share the id {one.id!r} ({one.where} and {two.where}); "
                "give one of them another id."
            )
    return out
