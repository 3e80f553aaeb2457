"""Personas over AppWorld: `persona_world`'s rules applied to AppWorld's calls.

The checkers of `persona_world` read the arguments of a task's final call in persona_world's
shape. AppWorld's calls are mapped into that shape here (the rules themselves are reused, not
copied):

- `phone__send_text_message(phone_number, message)`            -> an `sms` call, same args;
- `venmo__create_transaction(receiver_email, amount, description, private, payment_card_id)`
  -> a `payment` call: `note` = description, `visibility` = private -> "private" else "public";
- `simple_note__create_note(title, content)`                   -> a `note` call, same args;
- `gmail__send_email(email_addresses, subject, body)`          -> an `email` call: `to` = the
  first address, `cc` = the others.

The kind of an AppWorld episode is that of its last successful such call, so a persona's rules
apply to any AppWorld task that touches those apps.

The note rules read, on persona_world, fields its note tasks state (`items`, `title`, `date`).
On AppWorld they are taken from the created note itself and the AppWorld task's date, so they
apply to any task that creates a note (`note_fields`):

- `items`: the note's content lines (without its `Checksum:` line), each stripped of one list
  marker (`- `, `* `, `1. `, `[ ] ` ...). `private_note_format` then checks the layout the
  persona wants (every line carries that style's marker, numbers in sequence) and
  `note_checksum` checks the last line is `Checksum: N` with N the characters of those items.
  What the items should say is AppWorld's evaluation's business, not the persona's.
- `title`: the created title without a leading `YYYY-MM-DD ` date; `note_title_format` then
  checks the title starts with the AppWorld task's own date (its `datetime`, the world's
  "today"), or is in capitals. When the task has no date the `date` style cannot be checked,
  and the rule does not apply to that episode.
The user's profile is the AppWorld supervisor; cards are those the episode's
`venmo__show_payment_cards` returned; the history is the payments of earlier training episodes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from evolve.envs._protocol import ApiCall, Task, Violation
from evolve.envs.appworld._shapes import CardLike
from evolve.envs.persona_world._personas import Persona
from evolve.envs.persona_world._rules import RULES_BY_NAME, CheckContext
from evolve.envs.persona_world._world import Card, Contact, Payment, Profile

# Rules that read what only a persona_world task states: none since the note rules read their
# fields off the created note (`note_fields`). Kept as the one place to name such a rule.
NOT_ON_APPWORLD: frozenset[str] = frozenset()

_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022] |\d+[.)] |\[[ xX]\] )")
_DATED = re.compile(r"^\d{4}-\d{2}-\d{2} +")

MAIN_APIS = {
    ("phone", "send_text_message"): "sms",
    ("venmo", "create_transaction"): "payment",
    ("simple_note", "create_note"): "note",
    ("gmail", "send_email"): "email",
}


def map_call(call: ApiCall) -> tuple[str, dict[str, Any]] | None:
    """(kind, persona_world-shaped args) for a main call; None for any other call."""
    kind = MAIN_APIS.get((call.app, call.api))
    if kind is None or not call.ok:
        return None
    a = dict(call.args)
    if kind == "payment":
        return kind, {
            "receiver_email": a.get("receiver_email", ""),
            "amount": a.get("amount", 0.0),
            "note": a.get("description", ""),
            "visibility": "private" if a.get("private") else "public",
            "payment_card_id": a.get("payment_card_id"),
        }
    if kind == "email":
        to = a.get("email_addresses") or []
        to = [to] if isinstance(to, str) else list(to)
        return kind, {
            "to": to[0] if to else "",
            "cc": to[1:],
            "subject": a.get("subject", ""),
            "body": a.get("body", ""),
        }
    return kind, a


def note_fields(args: Mapping[str, Any]) -> dict[str, Any]:
    """The persona_world note task fields (`items`, `title`) read off a created note's args."""
    lines = [ln for ln in str(args.get("content") or "").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("Checksum:")]
    items = [_LIST_MARKER.sub("", ln, count=1).strip() for ln in lines]
    return {"items": items, "title": _DATED.sub("", str(args.get("title") or ""), count=1)}


def _undecidable(rule: str, value: Any, params: Mapping[str, Any]) -> bool:
    """A rule this episode cannot check: a dated title on a task with no date."""
    return rule == "note_title_format" and str(value) == "date" and not params.get("date")


def main_call(calls: Sequence[ApiCall]) -> tuple[str, dict[str, Any]] | None:
    for call in reversed(calls):
        mapped = map_call(call)
        if mapped is not None:
            return mapped
    return None


def _records(value: Any) -> list[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        return [value, *(r for v in value.values() for r in _records(v))]
    if isinstance(value, list):
        return [r for v in value for r in _records(v)]
    return []


def _contact(calls: Sequence[ApiCall], key: str) -> Contact | None:
    """The person `key` (a phone number or an email) names, from what the episode saw."""
    if not key:
        return None
    for call in calls:
        for rec in _records(call.result):
            if key not in (rec.get("phone_number"), rec.get("email")):
                continue
            name = str(rec.get("name") or f"{rec.get('first_name', '')} {rec.get('last_name', '')}")
            if name.strip():
                return Contact(key, name.strip(), str(rec.get("phone_number") or ""),
                               str(rec.get("email") or ""), "")  # fmt: skip
    local = key.split("@")[0].replace(".", " ").title()
    return Contact(key, local or key, key if "@" not in key else "", key if "@" in key else "", "")


def _cards(calls: Sequence[ApiCall]) -> tuple[Card, ...]:
    cards: list[Card] = []
    for call in calls:
        if (call.app, call.api) != ("venmo", "show_payment_cards") or not call.ok:
            continue
        for rec in call.result if isinstance(call.result, list) else []:
            card = CardLike.parse(rec)
            if card is not None:
                cards.append(Card(card.id, card.name))
    return tuple(cards)


def episode_payment(calls: Sequence[ApiCall]) -> Payment | None:
    mapped = main_call(calls)
    if mapped is None or mapped[0] != "payment":
        return None
    args = mapped[1]
    card = args.get("payment_card_id")
    return Payment(str(args["receiver_email"]), float(args["amount"] or 0.0), int(card or 0))


def check_persona(
    persona: Persona,
    task: Task,
    calls: Sequence[ApiCall],
    supervisor: Mapping[str, str],
    history: Any,
    episode: int | None,
) -> tuple[list[str], list[Violation]]:
    """(applicable rule names, violations) of `persona` over one AppWorld episode."""
    mapped = main_call(calls)
    if mapped is None:
        return [], []
    kind, args = mapped
    key = str(args.get("phone_number") or args.get("receiver_email") or args.get("to") or "")
    contact = _contact(calls, key)
    params: dict[str, Any] = dict(task.params)
    if kind == "payment":
        params["amount"] = float(args.get("amount") or 0.0)
        params["contact"] = key
    if kind == "note":
        params.update(note_fields(args))
    view = replace(task, kind=kind, params=params)
    profile = Profile(
        str(supervisor.get("first_name", persona.first_name)),
        str(supervisor.get("last_name", persona.last_name)),
        str(supervisor.get("email", persona.email)),
        str(supervisor.get("phone_number", persona.phone_number)),
        "",
    )
    ctx = CheckContext(view, profile, _cards(calls), tuple(history.payments), contact)
    applicable: list[str] = []
    violations: list[Violation] = []
    for pref in persona.preferences:
        rule = RULES_BY_NAME[pref.rule]
        if rule.name in NOT_ON_APPWORLD or not rule.applies(view):
            continue
        value = pref.value_at(episode)
        if _undecidable(rule.name, value, params):
            continue
        applicable.append(rule.name)
        detail = rule.check(ctx, args, value)
        if detail is not None:
            violations.append(Violation(rule.name, detail, rule.statement(value)))
    return applicable, violations
