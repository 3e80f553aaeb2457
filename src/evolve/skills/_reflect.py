"""Reflect on one failed episode: a candidate lesson.

One model call over the compressed trajectory and the verifier's own words; it does not see
the library (the evolver decides what is new). The reply is hostile input: a reply that is not
the JSON asked for, or a lesson the mechanical filter refuses, is a `Refusal` with its reason.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from string import Template

from evolve._io import package_text
from evolve._text import fragment
from evolve.llm import LLM, JsonSchema, Message, ReplyMalformed, RequestFailed
from evolve.memory import TOPIC_PATTERN
from evolve.ops import Refusal, parse_json_reply
from evolve.skills._filter import TaskSpecifics, screen, specifics

MAX_LESSON = 400
MAX_TRIGGER = 200
REFLECT_SCHEMA = JsonSchema(
    "skill_reflection",
    {
        "type": "object",
        "properties": {
            "lesson": {"type": "string"},
            "trigger": {"type": "string"},
            "evidence": {"type": "string"},
            "scope_hint": {"type": "string", "enum": ["general", "topic"]},
            "topic": {"type": "string"},
        },
        "required": ["lesson", "trigger"],
    },
)
_SKIP_APPS = frozenset({"supervisor", "api_docs"})
_CALL = re.compile(r"^\s*([a-z][a-z0-9_]*)__[a-z0-9_]+\(", re.M)


def load_prompt(name: str) -> Template:
    text = package_text("evolve.skills", "prompts", f"{name}.md")
    return Template(text)


@dataclass
class Candidate:
    """A lesson proposed from one failed episode, before the evolver has seen it."""

    ref: str  # c1, c2, ... within the batch
    episode: int
    task_id: str
    topic: str
    lesson: str
    trigger: str
    evidence: str  # the verifier's words (commit body only)
    scope_hint: str
    task: TaskSpecifics = field(repr=False)


@dataclass
class Reflection:
    candidate: Candidate | None
    refused: list[Refusal] = field(default_factory=list)


# The shelf of a lesson from a trajectory that called no app (the agent gave up, or only read
# docs): a topic shelf like any other, but not an app, so it never counts toward promotion.
NO_APP_TOPIC = "general_tasks"


def topic_of(actions: str, apps: frozenset[str] = frozenset()) -> str | None:
    """The app the trajectory used most (the last on ties), supervisor and docs aside."""
    calls = [app for app in _CALL.findall(actions) if app not in _SKIP_APPS]
    if apps:
        calls = [app for app in calls if app in apps]
    if not calls:
        return None
    counts = Counter(calls)
    best = max(counts.values())
    return str(next(app for app in reversed(calls) if counts[app] == best))


def apps_of(tools: tuple[str, ...] | list[str]) -> frozenset[str]:
    return frozenset(t.split("__", 1)[0] for t in tools if "__" in t) - _SKIP_APPS


def reflect(
    llm: LLM,
    *,
    ref: str,
    episode: int,
    task_id: str,
    instruction: str,
    actions: str,
    verifier: str,
    tools: tuple[str, ...] | list[str],
    seed: int,
) -> Reflection:
    """Ask for one candidate lesson about a failed episode, and screen it."""
    apps = apps_of(tools)
    topic = topic_of(actions, apps) or NO_APP_TOPIC
    prompt = load_prompt("reflect").safe_substitute(
        instruction=instruction, topic=topic, actions=actions or "(no calls)", verifier=verifier
    )
    out = Reflection(None)
    try:
        completion = llm.complete(
            [
                Message("system", load_prompt("reflect_system").template.strip()),
                Message("user", prompt),
            ],
            json_schema=REFLECT_SCHEMA,
            temperature=0.0,
            seed=seed,
        )
    except (ReplyMalformed, RequestFailed) as exc:  # a failed step, logged; no lesson
        out.refused.append(Refusal(op="reflect", what="", reason=fragment(str(exc), 300)))
        return out
    try:
        data = parse_json_reply(completion.text, REFLECT_SCHEMA)
    except ValueError as exc:
        out.refused.append(Refusal(op="reflect", what=fragment(completion.text), reason=str(exc)))
        return out
    if not isinstance(data, dict):
        out.refused.append(
            Refusal(op="reflect", what=fragment(completion.text), reason="not a JSON object")
        )
        return out
    lesson = _text(data.get("lesson"))
    trigger = _text(data.get("trigger"))
    if not lesson or not trigger:
        out.refused.append(
            Refusal(op="reflect", what=fragment(completion.text), reason="no lesson or trigger")
        )
        return out
    if len(lesson) > MAX_LESSON or len(trigger) > MAX_TRIGGER:
        out.refused.append(
            Refusal(
                op="reflect",
                what=lesson[:80],
                reason=f"too long (lesson <= {MAX_LESSON}, trigger <= {MAX_TRIGGER} characters)",
            )
        )
        return out
    named = _text(data.get("topic")).lower()
    # The model may correct the harness's guess, within the known apps; a trajectory that called
    # no app has no guess to correct (its lesson stays off every app's count toward promotion).
    if topic != NO_APP_TOPIC and named in apps and TOPIC_PATTERN.match(named):
        topic = named
    task = specifics(task_id, instruction, actions, sorted(apps))
    for what, text in (("lesson", lesson), ("trigger", trigger)):
        why = screen(text, task)
        if why is not None:
            out.refused.append(Refusal(op="filter", what=text[:80], reason=f"the {what} {why}"))
            return out
    hint = _text(data.get("scope_hint")).lower()
    out.candidate = Candidate(
        ref=ref,
        episode=episode,
        task_id=task_id,
        topic=topic,
        lesson=lesson,
        trigger=trigger,
        evidence=_text(data.get("evidence"))[:300] or _text(verifier)[:300],
        scope_hint=hint if hint in ("general", "topic") else "topic",
        task=task,
    )
    return out


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""
