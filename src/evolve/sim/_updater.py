"""The sim's learner roles: they answer from the update prompt only.

A corrective complaint line carries the rule's correction template, which is written back as
a statement. An instance line names the failure without the target value: the learner states
a value only when the line itself shows it (`Rule.instance_value`: visibility steps from the
value it shows; the running total, the checksum, the habitual card and CC-me are named by
it). For any other instance line it can only write the rule's *vague* statement ("Alex cares
about how emails are closed."), which names the slot and fixes no value, with probability
`SimRates.instance_vague`, and only when the prompt shows no unit that already states a value
for the slot. There is no default guess, so no persona's preference is reachable from the
instance tier unless its complaint shows it (docs/sim.md, "What each tier can teach").
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import msgspec

from evolve._lazy import pattern
from evolve.agent import section
from evolve.envs.persona_world import RULES, recognize
from evolve.llm import Message
from evolve.sim._parse import MAX_SENTENCE, recognized, sentences_of, slots_of

if TYPE_CHECKING:
    from evolve.envs.persona_world import Rule


# Built on first use (a run whose learner never reads a complaint compiles none of them).
@lru_cache(maxsize=1)
def _instance() -> list[tuple[Rule, re.Pattern[str]]]:
    return [(rule, rule.instance_regex()) for rule in RULES]


@lru_cache(maxsize=1)
def _vague() -> list[tuple[Rule, re.Pattern[str], str]]:
    """Each rule's vague statement as a pattern, with the text that pattern ends with (a
    statement that does not end so is not one: the pattern is tried only on those that do)."""
    return [
        (
            rule,
            rule.vague_regex(),
            rule.vague_template.replace("{rule}", rule.name).split("{who}")[-1],
        )
        for rule in RULES
    ]


_PROFILE = pattern(r"supervisor__show_profile\(\{\}\) -> (\{.*\})")

NOBODY = "The user"


@dataclass(frozen=True)
class Proposal:
    """A statement the learner would write, and the slot it is about (sim-internal).

    `fixes_value` is False for a vague statement: it names the slot and states no value."""

    slot: str
    statement: str
    fixes_value: bool = True


def complaint_of(messages: list[Message] | tuple[Message, ...]) -> str:
    """The text inside `<complaint>` of the last user message that has one."""
    for m in reversed(messages):
        if m.role == "user":
            found = section(m.content, "complaint")
            if found is not None:
                return found
    return ""


def user_name(messages: Sequence[Message]) -> str:
    """The user's first name from the `show_profile` result in the prompt's `<actions>`, or
    "The user" when the prompt shows none."""
    for m in reversed(messages):
        if m.role != "user":
            continue
        match = _PROFILE.search(section(m.content, "actions") or "")
        if match is None:
            continue
        try:
            profile = json.loads(match.group(1))
        except json.JSONDecodeError:
            return NOBODY
        first = profile.get("first_name") if isinstance(profile, dict) else None
        if isinstance(first, str) and re.fullmatch(r"[A-Z][A-Za-z-]{0,30}", first):
            return first
        return NOBODY
    return NOBODY


def proposals_from_complaint(complaint: str, who: str = NOBODY) -> list[Proposal]:
    """What a learner writes from a complaint: one statement per line it can read (a vague
    one for an instance line that shows no value; `who` names the user in it)."""
    out: list[Proposal] = []
    for line in complaint.splitlines():
        line = line.strip().lstrip("-* ").strip()
        if not line:
            continue
        # An instance complaint is matched first: it may mention a value (the one that was
        # wrong, e.g. "was public"), which is not a statement of the preference.
        instance = next(
            (
                (rule, match)
                for rule, regex in _instance()
                if (match := regex.fullmatch(line)) is not None
            ),
            None,
        )
        if instance is not None:
            rule, match = instance
            value = rule.instance_value(match)
            if value is None:
                out.append(Proposal(rule.slot, rule.vague(who), fixes_value=False))
            else:
                out.append(Proposal(rule.slot, rule.statement(value)))
            continue
        directives = recognize(line)
        if directives:
            out.append(Proposal(directives[0].slot, line))
    return out


def learn(
    messages: Sequence[Message],
    rng: random.Random,
    vague_rate: float,
    shown: list[Shown] | None = None,
) -> list[Proposal]:
    """The proposals an update request yields: those of its complaint, where a vague one is
    kept with probability `vague_rate` and only if no `shown` unit states a value for its
    slot (a competent updater does not bury a precise unit under a vague one). The draw is
    made only for vague proposals, so corrective-tier answers do not depend on the rate."""
    out = []
    for p in proposals_from_complaint(complaint_of(list(messages)), user_name(messages)):
        if not p.fixes_value:
            if any(p.slot in u.slots for u in shown or []):
                continue
            if rng.random() >= vague_rate:
                continue
        out.append(p)
    return out


def slot_of(statement: str) -> str | None:
    """The slot a statement states a value for, if the sim recognizes it."""
    found = recognized(statement)
    return found[0].slot if found else None


def vague_slot_of(statement: str) -> str | None:
    """The slot a vague statement (one that fixes no value) is about, if it is one."""
    text = statement.strip()
    return next(
        (
            rule.slot
            for rule, regex, tail in _vague()
            if text.endswith(tail) and regex.fullmatch(text)
        ),
        None,
    )


_ID = pattern(r"\[([A-Za-z0-9_.:-]+)\]")
_SHOWN = pattern(
    r"^\[([A-Za-z0-9_.:-]+)\]\s*(?:\[[A-Za-z0-9_.:-]+\]\s*)?(.*?)\s*(?:\(alpha [^)]*\))?$"
)
# `_SHOWN` for a line without "(alpha ": the text is then the rest of the (stripped) line,
# found without trying every end for the lazy group.
_SHOWN_PLAIN = pattern(r"^\[([A-Za-z0-9_.:-]+)\]\s*(?:\[[A-Za-z0-9_.:-]+\]\s*)?(.*)$")


def ids_in(text: str) -> list[str]:
    return _ID.findall(text)


class Shown(msgspec.Struct, frozen=True):
    """A unit as an updater prompt shows it: `[id] text` (a TEPA key or topl counts aside)."""

    id: str
    text: str

    @property
    def slots(self) -> frozenset[str]:
        """The slots the unit states a value for."""
        return slots_of(self.text)

    @property
    def vague_slots(self) -> set[str]:
        """The slots the unit names without a value (vague statements)."""
        if len(self.text) > MAX_SENTENCE:
            return set(_vague_slots_of.__wrapped__(self.text))
        return set(_vague_slots_of(self.text))


@lru_cache(maxsize=16_384)
def _vague_slots_of(text: str) -> frozenset[str]:
    """`Shown.vague_slots` of a unit's text, cached as `slots_of` is (an update request reads
    every shown unit, and `replaced_ids` reads them again for each proposal)."""
    return frozenset(v for s in sentences_of(text) if (v := vague_slot_of(s)) is not None)


def shown_units(section_text: str | None) -> list[Shown]:
    """The units listed in a prompt section, one `[id] text` line each."""
    out = []
    for line in (section_text or "").splitlines():
        line = line.strip()
        if "(alpha " in line:
            m = _SHOWN.match(line)
            if m:
                out.append(Shown(m.group(1), m.group(2)))
        elif plain := _SHOWN_PLAIN.match(line):
            out.append(Shown(plain.group(1), plain.group(2)))
    return out


def replaced_ids(shown: list[Shown], slot: str, statement: str) -> list[str]:
    """The shown units a new statement about `slot` supersedes: those on the same slot that
    say something else (what a competent updater would name, from the prompt alone). A vague
    statement supersedes nothing; a statement with a value also supersedes the vague units
    on its slot."""
    if slot_of(statement) != slot:
        return []
    return [
        u.id
        for u in shown
        if (slot in u.slots or slot in u.vague_slots) and u.text.strip() != statement.strip()
    ]
