"""The sim's answers for each update recipe's request (by JSON schema name).

Every answer starts from :func:`learn`: what a learner can read from the complaint text
(under the instance tier a value only where the complaint shows it, else a vague statement
that fixes none, see `evolve.sim._updater`). The recipe-specific parts reproduce the
behaviour docs/sim.md describes (ACE modifies an existing bullet about half the time, TEPA now and
then invents a key, rewrites are lossy, TRACE compiles what can be compiled).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from typing import Any

from evolve.agent import section
from evolve.envs.persona_world import RULES_BY_SLOT, Computed, Ref, recognize, split_sentences
from evolve.envs.persona_world._rules import resolve_ref
from evolve.envs.persona_world._world import Profile
from evolve.llm import Message
from evolve.sim._role import Sim, role
from evolve.sim._updater import (
    Shown,
    complaint_of,
    learn,
    proposals_from_complaint,
    replaced_ids,
    shown_units,
    slot_of,
    vague_slot_of,
)

# TEPA: the vocabulary key for each slot, and off-vocabulary keys a model might invent
# (the first of each list folds back by alias; the second names no vocabulary detail).
TEPA_KEYS = {
    "sms.signoff": ("sms.signoff", ("text.closing", "sms.final_words")),
    "sms.greeting": ("sms.greeting", ("texts.opening_line", "sms.hello_style")),
    "payment.visibility": ("payment.visibility", ("venmo.privacy", "payment.audience_level")),
    "payment.card": ("payment.card", ("venmo.funding_source", "payment.wallet")),
    "payment.note_total": ("payment.note", ("venmo.memo", "payment.running_sum")),
    "note.body_format": ("note.format", ("notes.layout", "note.style")),
    "note.title_format": ("note.title", ("notes.heading", "note.naming")),
    "note.checksum": ("note.checksum", ("notes.checksum", "note.integrity")),
    "email.signoff": ("email.signoff", ("mail.closing", "email.farewell")),
    "email.subject_prefix": ("email.subject", ("gmail.subject_line", "email.prefix")),
    "email.cc": ("email.cc", ("mail.copy", "email.self_copy")),
    "email.greeting": ("email.greeting", ("mail.salutation", "email.opener")),
}


def subject_of_slot(slot: str) -> str:
    """What a statement about `slot` is about, as an updater would name it when asked for a
    subject (ACE, topl): the slot in words ("payment visibility"), the same every time."""
    return slot.replace(".", " ").replace("_", " ")


def _user(messages: Sequence[Message]) -> str:
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def _profile(actions: str) -> Profile | None:
    match = re.search(r"supervisor__show_profile\(\{\}\) -> (\{.*\})", actions)
    if not match:
        return None
    try:
        p = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    return Profile(p.get("first_name", ""), p.get("last_name", ""), p.get("email", ""), "", "")


def _task_kind(sim: Sim, prompt: str) -> str | None:
    instruction = section(prompt, "task") or ""
    task = sim.env.task_by_instruction(instruction)
    return task.kind if task is not None else None


@role("ace_deltas")
def _ace(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    prompt = _user(messages)
    shown = shown_units(section(prompt, "bullets"))  # `[id] [subject] text` or `[id] text`
    bullets = [(u.id, u.text, slot_of(u.text)) for u in shown]
    proposals = learn(messages, rng, sim.rates.instance_vague, shown)
    operations: list[dict[str, Any]] = []
    for p in proposals:
        same = [b for b in bullets if b[2] == p.slot]
        # Every other bullet on the slot is named as replaced, whatever its wording.
        replaces = replaced_ids(shown, p.slot, p.statement)
        if p.fixes_value and same and rng.random() < sim.rates.ace_modify:
            target = same[-1][0]
            op: dict[str, Any] = {"op": "modify", "id": target, "text": p.statement}
            replaces = [i for i in replaces if i != target]
        else:
            op = {"op": "add", "text": p.statement}
        op["subject"] = subject_of_slot(p.slot)
        if replaces:
            op["replaces"] = replaces
        operations.append(op)
    # Every slot the complaint names, whether or not a statement was written for it.
    complained = {p.slot for p in proposals_from_complaint(complaint_of(list(messages)))}
    kind = _task_kind(sim, prompt)
    tags = []
    for ident, _, slot in bullets:
        if slot is None:
            continue
        if slot in complained:
            tags.append({"id": ident, "tag": "harmful"})
        elif kind is not None and RULES_BY_SLOT[slot].kind == kind:
            tags.append({"id": ident, "tag": "helpful"})
    return {"operations": operations, "bullet_tags": tags}


@role("tepa_precedent")
def _tepa(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    out = []
    shown = shown_units(section(_user(messages), "precedents"))
    for p in learn(messages, rng, sim.rates.instance_vague, shown):
        key, variants = TEPA_KEYS[p.slot]
        if rng.random() < sim.rates.tepa_off_vocabulary:
            key = variants[rng.randrange(len(variants))]
        entry: dict[str, Any] = {"key": key, "sentence": p.statement}
        replaces = replaced_ids(shown, p.slot, p.statement)
        if replaces:
            entry["replaces"] = replaces
        out.append(entry)
    return {"precedents": out}


def _compile(slot: str, statement: str, profile: Profile | None) -> dict[str, str] | None:
    directive = next((d for d in recognize(statement) if d.slot == slot), None)
    if directive is None or directive.negated:
        return None
    value = directive.value
    if isinstance(value, Ref):
        if profile is None:
            return None
        value = resolve_ref(value, profile)
    first = profile.first_name if profile else ""
    table: dict[str, tuple[str, str, str, str] | None] = {
        "sms.signoff": ("phone__send_text_message", "message", "endswith", f"- {value}"),
        "sms.greeting": ("phone__send_text_message", "message", "startswith", f"{value} "),
        "payment.visibility": ("venmo__send_payment", "visibility", "equals", str(value)),
        "payment.note_total": ("venmo__send_payment", "note", "contains", "(total to "),
        "note.body_format": (
            "simple_note__create_note",
            "content",
            "startswith",
            {"bullets": "- ", "numbered": "1. ", "checkbox": "[ ] "}.get(str(value), ""),
        ),
        "note.checksum": ("simple_note__create_note", "content", "contains", "Checksum:"),
        "email.signoff": ("gmail__send_email", "body", "endswith", f"{value},\n{first}"),
        "email.subject_prefix": ("gmail__send_email", "subject", "startswith", str(value)),
        "email.cc": (
            ("gmail__send_email", "cc", "equals", profile.email if value == "self" else str(value))
            if profile is not None
            else None
        ),
        "email.greeting": ("gmail__send_email", "body", "startswith", f"{value} "),
    }
    entry = table.get(slot)
    if (
        entry is None
        or isinstance(value, Computed)
        and slot not in ("payment.note_total", "note.checksum")
    ):
        return None
    api, argument, predicate, val = entry
    return {"api": api, "argument": argument, "predicate": predicate, "value": val}


@role("trace_checks")
def _trace(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    profile = _profile(section(_user(messages), "actions") or "")
    shown = shown_units(section(_user(messages), "checks"))
    checks: list[dict[str, Any]] = []
    for p in learn(messages, rng, sim.rates.instance_vague, shown):
        check: dict[str, Any] | None = _compile(p.slot, p.statement, profile)
        if check is None:
            continue
        # A compiled check on the same slot, or on the same argument with the same predicate
        # ("When sending a Venmo payment, the visibility must equal ..."), is replaced.
        head = _check_head(check)
        replaces = [
            u.id
            for u in shown
            if (p.slot in u.slots or u.text.startswith(head)) and u.text != _check_sentence(check)
        ]
        if replaces:
            check["replaces"] = replaces
        checks.append(check)
    return {"checks": checks}


def _check_sentence(check: dict[str, Any]) -> str:
    from evolve.updaters._trace import sentence

    return sentence(check["api"], check["argument"], check["predicate"], check["value"])


def _check_head(check: dict[str, Any]) -> str:
    """The rendered check sentence up to its value: api, argument and predicate."""
    text = _check_sentence(check)
    return text[: text.rfind(" '") + 1]


@role("reflection")
def _reflection(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    shown = shown_units(section(_user(messages), "reflections"))
    proposals = learn(messages, rng, sim.rates.instance_vague, shown)[:2]
    if not proposals:
        return {
            "reflection": "I should check the finished task against what was asked before completing it."
        }
    slots = {p.slot for p in proposals if p.fixes_value}
    text = " ".join(p.statement for p in proposals)
    answer: dict[str, Any] = {"reflection": text}
    replaces = [u.id for u in shown if u.slots & slots and u.text.strip() != text]
    if replaces:
        answer["replaces"] = replaces
    return answer


@role("memory_rewrite")
def _rewrite(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    prompt = _user(messages)
    current = section(prompt, "memory") or ""
    cap_match = re.search(r"in at most (\d+) characters", prompt)
    cap = int(cap_match.group(1)) if cap_match else 1200
    lines: list[tuple[str | None, str]] = []
    for line in split_sentences("" if current.strip() == "(empty)" else current):
        lines.append((slot_of(line), line))
    # Lossy: an older line is now and then dropped when the document is rewritten.
    kept = [(slot, line) for slot, line in lines if rng.random() >= sim.rates.rewrite_drop]
    # The memory's lines, as units the learner sees (a line that states a value for a slot
    # keeps a vague statement about it out).
    shown = [Shown(str(i), line) for i, (_, line) in enumerate(lines)]
    for p in learn(messages, rng, sim.rates.instance_vague, shown):
        if p.fixes_value:
            kept = [
                (slot, line)
                for slot, line in kept
                if slot != p.slot and vague_slot_of(line) != p.slot
            ]
        elif any(line == p.statement for _, line in kept):
            continue
        kept.append((p.slot if p.fixes_value else None, p.statement))
    text = ""
    for _, line in kept:
        if len(text) + len(line) + 1 > cap:
            break
        text += line + "\n"
    return {"memory": text.strip()}


@role("assertions")
def _assertions(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    shown = shown_units(section(_user(messages), "pool"))
    out: list[Any] = []
    for p in learn(messages, rng, sim.rates.instance_vague, shown):
        entry: dict[str, Any] = {"text": p.statement, "subject": subject_of_slot(p.slot)}
        replaces = replaced_ids(shown, p.slot, p.statement)
        if replaces:
            entry["replaces"] = replaces
        out.append(entry)
    return {"assertions": out}


GENERIC_ADVICE = (
    "Follow the user's preferences carefully.",
    "Double-check every message before sending it.",
    "Be thorough and complete in every task.",
)


@role("reflector_edits")
def _reflector(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    """Half the time, turn the most frequent complaints into guidance (which helps when the
    complaint shows the value); otherwise offer generic advice that no rule recognizes (flat)."""
    prompt = _user(messages)
    current = [
        ln.strip()[2:]
        for ln in (section(prompt, "guidance") or "").splitlines()
        if ln.strip().startswith("- ")
    ]
    failures = []
    for line in (section(prompt, "failures") or "").splitlines():
        count, _, text = line.partition("x ")
        if count.strip().isdigit():
            failures.append((int(count), text.strip()))
    if rng.random() < 0.5:
        lines = list(current)
        slots = {slot_of(g) for g in current}
        for _, text in sorted(failures, key=lambda f: -f[0]):
            for p in proposals_from_complaint(text):
                # Guidance states values; a vague statement (instance tier) is not guidance.
                if p.fixes_value and p.slot not in slots:
                    lines.append(p.statement)
                    slots.add(p.slot)
            if len(lines) >= len(current) + 2:
                break
        return {"guidance": lines}
    return {"guidance": [*current, GENERIC_ADVICE[rng.randrange(len(GENERIC_ADVICE))]]}
