"""The evolver's and the consolidator's prompts and calls (what the model is shown).

The prompts list skills and candidates one per line in a fixed form the sim reads back:

    [<skill id>] shelf=<general|topics/<t>> | trigger: <trigger> | lesson: <lesson>
    [<c1>] topic=<t> | trigger: <trigger> | lesson: <lesson> | verifier: <evidence>
    - shape <slug>: seen <n> time(s) under <t1>, <t2>

Each shelf opens with a header `## <shelf> (<used>/<cap>)`, with `FULL: ADD unavailable` once
at its cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evolve._text import fragment
from evolve.llm import LLM, JsonSchema, Message, ReplyMalformed, RequestFailed
from evolve.memory import MemoryUnit, by_learned
from evolve.ops import Refusal, parse_json_reply
from evolve.skills._plan import cap_of, live_skills, occupancy, shelf_key
from evolve.skills._reflect import Candidate, load_prompt
from evolve.skills._staging import Staging
from evolve.workspace import ShelfCaps

_ENTRY = {
    "type": "object",
    "properties": {
        "candidate": {"type": "string"},
        "verdict": {"type": "string", "enum": ["ADD", "MERGE", "REVISE", "SKIP"]},
        "target": {"type": ["string", "null"]},
        "lesson": {"type": "string"},
        "trigger": {"type": "string"},
        "shape": {"type": "string"},
        "why": {"type": "string"},
    },
    "required": ["candidate", "verdict"],
}
_GENERAL = {
    "type": "object",
    "properties": {
        "shape": {"type": "string"},
        "lesson": {"type": "string"},
        "trigger": {"type": "string"},
        "target": {"type": ["string", "null"]},
    },
    "required": ["shape", "lesson", "trigger"],
}
EVOLVE_SCHEMA = JsonSchema(
    "skill_evolve",
    {
        "type": "object",
        "properties": {
            "verdicts": {"type": "array", "items": _ENTRY},
            "general": {"type": "array", "items": _GENERAL},
        },
        "required": ["verdicts"],
    },
)
CONSOLIDATE_SCHEMA = JsonSchema(
    "skill_consolidate",
    {
        "type": "object",
        "properties": {
            "actions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["merge", "cut", "revise"]},
                        "id": {"type": "string"},
                        "ids": {"type": "array", "items": {"type": "string"}},
                        "lesson": {"type": "string"},
                        "trigger": {"type": "string"},
                        "why": {"type": "string"},
                    },
                    "required": ["action"],
                },
            }
        },
        "required": ["actions"],
    },
)


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def render_shelves(
    units: Sequence[MemoryUnit], caps: ShelfCaps, extra_topics: Sequence[str] = ()
) -> str:
    skills = live_skills(units)
    used = occupancy(skills)
    shelves = sorted({"general", *used, *(f"topics/{t}" for t in extra_topics)})
    shelves.sort(key=lambda s: (s != "general", s))
    lines: list[str] = []
    for shelf in shelves:
        cap = cap_of(shelf, caps)
        n = used.get(shelf, 0)
        full = ", FULL: ADD unavailable" if n >= cap else ""
        lines.append(f"## {shelf} ({n}/{cap}{full})")
        mine = by_learned(u for u in skills.values() if shelf_key(u) == shelf)
        for unit in mine:
            hand = " (hand-written)" if unit.is_hand_written else ""
            lines.append(
                f"[{unit.id}] shelf={shelf}{hand} | trigger: {_one_line(unit.trigger) or '(any task)'}"
                f" | lesson: {_one_line(unit.text)}"
            )
        if not mine:
            lines.append("(empty)")
    return "\n".join(lines)


def render_candidates(candidates: Sequence[Candidate]) -> str:
    return "\n".join(
        f"[{c.ref}] topic={c.topic} | trigger: {_one_line(c.trigger)} | lesson: "
        f"{_one_line(c.lesson)} | verifier: {_one_line(c.evidence)[:200]}"
        for c in candidates
    )


def render_staging(staging: Staging) -> str:
    if not staging:
        return "(none)"
    return "\n".join(
        f"- shape {shape}: seen {s.count} time(s) under {', '.join(s.topics)}"
        for shape, s in sorted(staging.items())
    )


def _ask(
    llm: LLM, schema: JsonSchema, prompt: str, seed: int, refused: list[Refusal], op: str
) -> Any:
    try:
        completion = llm.complete(
            [
                Message("system", load_prompt("evolver_system").template.strip()),
                Message("user", prompt),
            ],
            json_schema=schema,
            temperature=0.0,
            seed=seed,
        )
    except (ReplyMalformed, RequestFailed) as exc:  # a failed step, logged; nothing decided
        refused.append(Refusal(op=op, what="", reason=fragment(str(exc), 300)))
        return None
    try:
        return parse_json_reply(completion.text)
    except ValueError as exc:
        refused.append(Refusal(op=op, what=fragment(completion.text), reason=str(exc)))
        return None


def ask_evolver(
    llm: LLM,
    units: Sequence[MemoryUnit],
    candidates: Sequence[Candidate],
    staging: Staging,
    caps: ShelfCaps,
    seed: int,
    refused: list[Refusal],
) -> Any:
    """The evolver's parsed reply (None, with a refusal, when it is not JSON)."""
    prompt = load_prompt("evolve").safe_substitute(
        cap_general=caps.general,
        cap_topic=caps.per_topic,
        shelves=render_shelves(units, caps, sorted({c.topic for c in candidates})),
        staging=render_staging(staging),
        candidates=render_candidates(candidates),
    )
    return _ask(llm, EVOLVE_SCHEMA, prompt, seed, refused, "evolve")


def ask_consolidator(
    llm: LLM, units: Sequence[MemoryUnit], caps: ShelfCaps, seed: int, refused: list[Refusal]
) -> Any:
    prompt = load_prompt("consolidate").safe_substitute(
        cap_general=caps.general, cap_topic=caps.per_topic, shelves=render_shelves(units, caps)
    )
    return _ask(llm, CONSOLIDATE_SCHEMA, prompt, seed, refused, "consolidate")
