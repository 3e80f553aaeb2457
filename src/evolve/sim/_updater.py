"""The sim's learner roles: they answer from the complaint text only.

A corrective complaint line carries the rule's correction template, which is written back as
a statement. An instance line names the failure without the target value; the learner
guesses a value from what the line shows, so part of the gap stays unreachable (as in
seed 000's Q3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evolve.agent import section
from evolve.envs.persona_world import RULES, recognize
from evolve.llm import Message
from evolve.sim._parse import recognized, slots_of

_INSTANCE = [(rule, rule.instance_regex()) for rule in RULES]


@dataclass(frozen=True)
class Proposal:
    """A statement the learner would write, and the slot it is about (sim-internal)."""

    slot: str
    statement: str


def complaint_of(messages: list[Message] | tuple[Message, ...]) -> str:
    """The text inside `<complaint>` of the last user message that has one."""
    for m in reversed(messages):
        if m.role == "user":
            found = section(m.content, "complaint")
            if found is not None:
                return found
    return ""


def proposals_from_complaint(complaint: str) -> list[Proposal]:
    """What a learner writes from a complaint: one statement per line it can read."""
    out: list[Proposal] = []
    for line in complaint.splitlines():
        line = line.strip().lstrip("-* ").strip()
        if not line:
            continue
        # An instance complaint is matched first: it may mention a value (the one that was
        # wrong, e.g. "was public"), which is not a statement of the preference.
        guessed = next(
            (
                Proposal(rule.slot, rule.guess(match))
                for rule, pattern in _INSTANCE
                if (match := pattern.fullmatch(line)) is not None
            ),
            None,
        )
        if guessed is not None:
            out.append(guessed)
            continue
        directives = recognize(line)
        if directives:
            out.append(Proposal(directives[0].slot, line))
    return out


def slot_of(statement: str) -> str | None:
    """The slot a statement is about, if the sim recognizes it."""
    found = recognized(statement)
    return found[0].slot if found else None


_ID = re.compile(r"\[([A-Za-z0-9_.:-]+)\]")
_SHOWN = re.compile(
    r"^\[([A-Za-z0-9_.:-]+)\]\s*(?:\[[A-Za-z0-9_.:-]+\]\s*)?(.*?)\s*(?:\(alpha [^)]*\))?$"
)


def ids_in(text: str) -> list[str]:
    return _ID.findall(text)


@dataclass(frozen=True)
class Shown:
    """A unit as an updater prompt shows it: `[id] text` (a TEPA key or topl counts aside)."""

    id: str
    text: str

    @property
    def slots(self) -> frozenset[str]:
        return slots_of(self.text)


def shown_units(section_text: str | None) -> list[Shown]:
    """The units listed in a prompt section, one `[id] text` line each."""
    out = []
    for line in (section_text or "").splitlines():
        m = _SHOWN.match(line.strip())
        if m:
            out.append(Shown(m.group(1), m.group(2)))
    return out


def replaced_ids(shown: list[Shown], slot: str, statement: str) -> list[str]:
    """The shown units a new statement about `slot` supersedes: those on the same slot that
    say something else (what a competent updater would name, from the prompt alone)."""
    return [u.id for u in shown if slot in u.slots and u.text.strip() != statement.strip()]
