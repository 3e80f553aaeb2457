"""The sim's skills roles: the skill reflector, the evolver and the consolidator (docs/sim.md).

They answer only from what their prompts show: the reflector from the `<task>`, `<topic>`,
`<trajectory>` and `<verifier>` sections; the evolver from the `<shelves>`, `<staging>` and
`<candidates>` lines (`evolve.skills._evolver` documents their form); the consolidator from
`<shelves>`. Deterministic for the request (the sim's seeded rng).

The reflector knows a few **failure shapes**, recognized in the verifier's words (SHAPES);
for a failure that is none of them it reads the complaint as the preference learners do
(`proposals_from_complaint`) and writes a procedure about the field the preference is about
("set the sign-off explicitly ..."), so sign-off failures in texts and in e-mails are one
shape under two topics. Its documented failure modes:

- NAME_LEAK_RATE: the lesson names the task's contact (the first capitalized word of the
  instruction that does not open it); the mechanical filter must refuse it.
- WRONG_LESSON_RATE: a plausible procedure that hurts, ``Skip the final check: once the <app>
  write call returns success, complete the task at once.`` (shape `skip-final-check`); the sim
  agent that follows it stops verifying, so the scoreboard must retire it.

The evolver merges a candidate into a skill on its shelf that says nearly the same (trigram
cosine >= 0.6), adds it while the shelf has room, and on a full shelf merges it into the most
similar skill (>= 0.3) or skips it, except that at ADD_ON_FULL_RATE it answers ADD on a full
shelf anyway (as models do: the code refuses it). For each shape seen under two or more
topics (batch and staging) it writes the shape's context-free lesson under `general`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evolve.agent import section
from evolve.llm import Message
from evolve.memory._similarity import trigram_cosine
from evolve.sim._role import Sim, role
from evolve.sim._updater import proposals_from_complaint

NAME_LEAK_RATE = 0.15
WRONG_LESSON_RATE = 0.10
ADD_ON_FULL_RATE = 0.25
MERGE_SIMILARITY = 0.6
FULL_MERGE_SIMILARITY = 0.3


@dataclass(frozen=True)
class Shape:
    name: str
    pattern: re.Pattern[str]
    lesson: str  # {app}: the topic
    trigger: str
    general: str
    general_trigger: str


SHAPES: tuple[Shape, ...] = (
    Shape(
        "verify-final-state",
        re.compile(
            r"not verified|never (?:read|checked|verified)|final state|did not "
            r"(?:check|verify|confirm)|unverified|without checking|read (?:it )?back",
            re.I,
        ),
        "After the last {app} write, read the changed item back and confirm it matches the "
        "request before completing the task.",
        "a {app} task that changes stored state",
        "After the last write, read the changed item back and confirm it matches the request "
        "before completing the task.",
        "a task that changes stored state (send, pay, text, email, save, note)",
    ),
    Shape(
        "lookup-before-write",
        re.compile(
            r"look(?:ed)? ?up|guess(?:ed)?|not found|unknown (?:recipient|contact|address)|"
            r"without (?:searching|a search)|wrong recipient",
            re.I,
        ),
        "In {app}, look up the recipient with a search call and use the identifier it "
        "returns; never type an address or number from memory.",
        "a {app} task that sends something to a person",
        "Look up the record you write to with a search call and use the identifier it "
        "returns; never type an identifier from memory.",
        "a task that sends or writes to a person (pay, text, email)",
    ),
    Shape(
        "complete-task",
        re.compile(r"complete_task|not (?:marked )?complete|never completed|did not finish", re.I),
        "End every {app} task by calling complete_task once the work is done.",
        "any {app} task",
        "End every task by calling complete_task once the work is done.",
        "any task (pay, text, email, note)",
    ),
)
WRONG = Shape(
    "skip-final-check",
    re.compile(r"(?!)"),
    "Skip the final check: once the {app} write call returns success, complete the task at once.",
    "a {app} task that changes stored state",
    "Skip the final check: once a write call returns success, complete the task at once.",
    "a task that changes stored state (send, pay, text, email, save, note)",
)
FIELD_WORDS = {
    "signoff": "sign-off",
    "greeting": "greeting",
    "visibility": "visibility",
    "card": "funding card",
    "note_total": "running-total note",
    "body_format": "body format",
    "title_format": "title format",
    "checksum": "checksum line",
    "subject_prefix": "subject prefix",
    "cc": "cc list",
}
_FIELD_LESSON = (
    "Before the final {app} call, set the {field} explicitly to what the user's memory says; "
    "never leave it at the default."
)
_FIELD_GENERAL = (
    "Before the final write call, set the {field} explicitly to what the user's memory says; "
    "never leave it at the default."
)
_FIELD = re.compile(r"set the (.+?) explicitly")


# The words a task of each app is asked in: triggers carry them so that a lexical selector
# can match a trigger against a task's text.
APP_WORDS = {
    "venmo": "pay, payment, venmo",
    "phone": "text, message",
    "gmail": "email, mail",
    "simple_note": "note, list",
}


def _words(app: str) -> str:
    words = APP_WORDS.get(app)
    return f" ({words})" if words else ""


def _user(messages: Sequence[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def _contact(instruction: str) -> str | None:
    words = instruction.split()
    for word in words[1:]:
        clean = re.sub(r"[^A-Za-z'-]", "", word)
        if clean[:1].isupper() and clean.lower() not in ("venmo", "i"):
            return clean
    return None


@role("skill_reflection")
def _reflect(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    prompt = _user(messages)
    app = (section(prompt, "topic") or "").strip() or "general_tasks"  # the harness's no-app topic
    verifier = section(prompt, "verifier") or ""
    instruction = (section(prompt, "task") or "").strip()
    evidence = " ".join(verifier.split())[:200]
    shape = next((s for s in SHAPES if s.pattern.search(verifier)), None)
    if rng.random() < WRONG_LESSON_RATE:
        shape = WRONG
    if shape is not None:
        lesson = shape.lesson.format(app=app)
        trigger = shape.trigger.format(app=app) + _words(app)
    else:
        proposals = proposals_from_complaint(verifier)
        if proposals:
            field = proposals[0].slot.split(".", 1)[-1]
            words = FIELD_WORDS.get(field, field.replace("_", " "))
            lesson = _FIELD_LESSON.format(app=app, field=words)
        else:
            lesson = (
                f"Before the final {app} call, re-read the request and check every field of "
                "the call against it."
            )
        trigger = f"a {app} task" + _words(app)
    if rng.random() < NAME_LEAK_RATE:
        name = _contact(instruction)
        if name is not None:
            lesson = f"{lesson} This matters with {name}."
    return {
        "lesson": lesson,
        "trigger": trigger,
        "evidence": evidence,
        "scope_hint": "topic",
        "topic": app,
    }


_SKILL = re.compile(
    r"^\[([^\]]+)\] shelf=(\S+)( \(hand-written\))? \| trigger: (.*?) \| lesson: (.*)$"
)
_HEADER = re.compile(r"^## (\S+) \((\d+)/(\d+)")
_CAND = re.compile(r"^\[(c\d+)\] topic=(\S+) \| trigger: (.*?) \| lesson: (.*?) \| verifier: (.*)$")
_STAGED = re.compile(r"^- shape (\S+): seen (\d+) time\(s\) under (.*)$")


@dataclass
class _Skill:
    id: str
    shelf: str
    hand: bool
    trigger: str
    lesson: str


def _shelves(text: str) -> tuple[list[_Skill], dict[str, tuple[int, int]]]:
    skills, counts = [], {}
    for line in text.splitlines():
        line = line.strip()
        if m := _HEADER.match(line):
            counts[m.group(1)] = (int(m.group(2)), int(m.group(3)))
        elif m := _SKILL.match(line):
            skills.append(_Skill(m.group(1), m.group(2), bool(m.group(3)), m.group(4), m.group(5)))
    return skills, counts


def shape_of(lesson: str, app: str) -> tuple[str, str | None, str | None]:
    """(shape, its general lesson, general trigger) as the sim evolver recognizes a lesson."""
    best, score = None, 0.0
    for shape in (*SHAPES, WRONG):
        s = trigram_cosine(lesson, shape.lesson.format(app=app))
        if s > score:
            best, score = shape, s
    if best is not None and score >= 0.55:
        return best.name, best.general, best.general_trigger
    if m := _FIELD.search(lesson):
        field = m.group(1)
        name = "explicit-" + "-".join(re.findall(r"[a-z0-9]+", field.lower()))
        trigger = "a task that writes for the user (pay, text, email, note)"
        return name[:48], _FIELD_GENERAL.format(field=field), trigger
    words = re.findall(r"[a-z0-9]+", lesson.lower())[:5]
    return "-".join(words)[:48] or "shape", None, None


@role("skill_evolve")
def _evolve(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    prompt = _user(messages)
    skills, counts = _shelves(section(prompt, "shelves") or "")
    used = {shelf: n for shelf, (n, _) in counts.items()}
    caps = {shelf: cap for shelf, (_, cap) in counts.items()}
    verdicts: list[dict[str, Any]] = []
    shapes: dict[str, tuple[set[str], str | None, str | None]] = {}
    for line in (section(prompt, "candidates") or "").splitlines():
        m = _CAND.match(line.strip())
        if not m:
            continue
        ref, topic, trigger, lesson = m.group(1), m.group(2), m.group(3), m.group(4)
        shelf = f"topics/{topic}"
        name, general, general_trigger = shape_of(lesson, topic)
        entry = shapes.setdefault(name, (set(), general, general_trigger))
        entry[0].add(topic)
        mine = [s for s in skills if s.shelf == shelf and not s.hand]
        scored = sorted(((trigram_cosine(lesson, s.lesson), s.id) for s in mine), reverse=True)
        n, cap = used.get(shelf, 0), caps.get(shelf, 5)
        verdict: dict[str, Any] = {"candidate": ref, "shape": name, "trigger": trigger}
        if scored and scored[0][0] >= MERGE_SIMILARITY:
            target = next(s for s in mine if s.id == scored[0][1])
            verdict |= {"verdict": "MERGE", "target": target.id, "lesson": target.lesson,
                        "why": f"says what {target.id} says"}  # fmt: skip
        elif n < cap or rng.random() < ADD_ON_FULL_RATE:
            verdict |= {"verdict": "ADD", "target": None, "lesson": lesson, "why": "new lesson"}
            used[shelf] = n + 1
            skills.append(_Skill(f"new-{ref}", shelf, False, trigger, lesson))
        elif scored and scored[0][0] >= FULL_MERGE_SIMILARITY:
            verdict |= {"verdict": "MERGE", "target": scored[0][1], "lesson": lesson,
                        "why": "shelf full; closest incumbent"}  # fmt: skip
        else:
            verdict |= {"verdict": "SKIP", "target": None, "why": "shelf full, nothing close"}
        if isinstance(verdict.get("target"), str) and verdict["target"].startswith("new-"):
            verdict |= {"verdict": "SKIP", "target": None, "why": "same as a candidate added now"}
        verdicts.append(verdict)
    for line in (section(prompt, "staging") or "").splitlines():
        if (m := _STAGED.match(line.strip())) and m.group(1) in shapes:
            shapes[m.group(1)][0].update(t.strip() for t in m.group(3).split(","))
    general_skills = [s for s in skills if s.shelf == "general" and not s.hand]
    rewrites = []
    for name, (topics, g_lesson, g_trigger) in sorted(shapes.items()):
        if len(topics) < 2 or g_lesson is None or g_trigger is None:
            continue
        ranked = sorted(
            ((trigram_cosine(g_lesson, s.lesson), s.id) for s in general_skills), reverse=True
        )
        into = ranked[0][1] if ranked and ranked[0][0] >= MERGE_SIMILARITY else None
        rewrites.append({"shape": name, "lesson": g_lesson, "trigger": g_trigger, "target": into})
    return {"verdicts": verdicts, "general": rewrites}


@role("skill_consolidate")
def _consolidate(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    skills, _ = _shelves(section(_user(messages), "shelves") or "")
    actions: list[dict[str, Any]] = []
    merged: set[str] = set()
    for i, a in enumerate(skills):
        if a.hand or a.id in merged:
            continue
        same = [
            b.id
            for b in skills[i + 1 :]
            if not b.hand
            and b.shelf == a.shelf
            and b.id not in merged
            and trigram_cosine(a.lesson, b.lesson) >= MERGE_SIMILARITY
        ]
        if same:
            merged.update(same)
            actions.append(
                {
                    "action": "merge",
                    "ids": [a.id, *same],
                    "lesson": a.lesson,
                    "trigger": a.trigger,
                    "why": "they say the same",
                }  # fmt: skip
            )
    return {"actions": actions}
