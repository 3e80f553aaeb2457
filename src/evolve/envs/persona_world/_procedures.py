"""Procedure-shaped failures: tasks that fail unless the agent follows a
procedure, spread over the four apps so that a lesson can be promoted across topics.

Two procedures, each required by some task instances (`procedure:` in the task's params):

- **verify**: after the task's write (text, payment, note, e-mail), read the app's record of
  what was written back (`phone__show_text_messages`, `venmo__show_sent_payments`,
  `simple_note__show_notes`, `gmail__show_sent_emails`) to confirm the final state.
- **lookup**: before the write, look up what it depends on: the contact
  (`phone__search_contacts`) for a text or an e-mail, the past payments
  (`venmo__show_transactions`) for a payment, the existing notes (`simple_note__show_notes`)
  for a note.

The checker reads the recorded calls (as every persona_world checker does); a task whose
procedure was not followed fails with one sentence saying what was missing (the complaint the
learner sees), whatever the persona.

The instances are frozen data like the other tasks, in an optional `evalset/procedures.yaml`
(each entry: id, family, split, params with `procedure`). The shipped evalset leaves it out,
so its splits, scores and figures stay as they were; :func:`write_procedures` writes the
default set (:data:`PROCEDURE_TASKS`: 2 per procedure and app in train, 1 in dev, 1 in
holdout, in the split's own families so train stays disjoint from dev and holdout).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evolve.envs._protocol import ApiCall, Task
from evolve.envs.persona_world._tasks import MAIN_TOOL
from evolve.envs.persona_world._world import PersonaWorldState, api

PROCEDURES = ("verify", "lookup")
PROCEDURES_FILE = "procedures.yaml"

# The read-back API of each kind (what `verify` needs after the write).
READ_BACK = {
    "sms": "phone__show_text_messages",
    "payment": "venmo__show_sent_payments",
    "note": "simple_note__show_notes",
    "email": "gmail__show_sent_emails",
}
# The look-up API of each kind (what `lookup` needs before the write).
LOOK_UP = {
    "sms": "phone__search_contacts",
    "payment": "venmo__show_transactions",
    "note": "simple_note__show_notes",
    "email": "phone__search_contacts",
}
# The app (skill topic) of each kind.
APP = {"sms": "phone", "payment": "venmo", "note": "simple_note", "email": "gmail"}
_THING = {"sms": "text", "payment": "payment", "note": "note", "email": "email"}
_DONE = {"sms": "sent", "payment": "sent", "note": "saved", "email": "sent"}
_LOOKED = {
    "sms": "the contact",
    "payment": "the past payments",
    "note": "the existing notes",
    "email": "the contact",
}


# --- read-back APIs (registered with the world's other APIs) ---------------------------
@api("phone")
def show_text_messages(self: PersonaWorldState) -> list[dict[str, Any]]:
    """List the text messages sent so far: message_id, phone_number, message."""
    return [{"message_id": i + 1, **t} for i, t in enumerate(self.texts)]


@api("venmo")
def show_sent_payments(self: PersonaWorldState, access_token: str) -> list[dict[str, Any]]:
    """List the payments sent so far: payment_id, receiver_email, amount, note, visibility."""
    self._auth(access_token)
    return [{"payment_id": i + 1, **p} for i, p in enumerate(self.payments)]


@api("simple_note")
def show_notes(self: PersonaWorldState) -> list[dict[str, Any]]:
    """List the user's notes: note_id, title, content."""
    return [{"note_id": i + 1, **n} for i, n in enumerate(self.notes)]


@api("gmail")
def show_sent_emails(self: PersonaWorldState) -> list[dict[str, Any]]:
    """List the emails sent so far: email_id, to, subject, body, cc."""
    return [{"email_id": i + 1, **e} for i, e in enumerate(self.emails)]


# --- the checker -----------------------------------------------------------------------
def _index(calls: Sequence[ApiCall], tool: str) -> list[int]:
    return [i for i, c in enumerate(calls) if c.ok and c.tool == tool]


def procedure_failure(task: Task, calls: Sequence[ApiCall]) -> str | None:
    """None if the task's procedure (if any) was followed, else one sentence saying how not.

    Judged only on a task whose write happened (the functional check reports the rest).
    """
    procedure = task.params.get("procedure")
    if procedure not in PROCEDURES or task.kind not in MAIN_TOOL:
        return None
    writes = _index(calls, MAIN_TOOL[task.kind])
    if not writes:
        return None
    thing, done = _THING[task.kind], _DONE[task.kind]
    if procedure == "verify":
        if any(i > writes[-1] for i in _index(calls, READ_BACK[task.kind])):
            return None
        return (
            f"The {thing} was {done} but never checked: nobody read it back afterwards to "
            f"confirm the final state."
        )
    if any(i < writes[0] for i in _index(calls, LOOK_UP[task.kind])):
        return None
    return f"The {thing} was {done} before {_LOOKED[task.kind]} had been looked up."


# --- the task instances ----------------------------------------------------------------
_FAMILIES = {  # split -> kind -> family (the split's own families)
    "train": {
        "sms": "text_update",
        "payment": "pay_back",
        "note": "note_todo",
        "email": "email_followup",
    },
    "dev": {
        "sms": "text_invite",
        "payment": "pay_gift",
        "note": "note_recipe",
        "email": "email_invite",
    },
    "holdout": {
        "sms": "text_thanks",
        "payment": "pay_share",
        "note": "note_packing",
        "email": "email_thanks",
    },
}
_CONTACTS = ("sam", "jordan", "riley", "morgan", "taylor", "jamie", "priya", "omar")
_TOPICS = (
    "the plumber comes at noon",
    "the car is back from the shop",
    "the train is delayed",
    "the tickets are booked",
)
_REASONS = ("the concert tickets", "the taxi", "the groceries", "the birthday cake")
_ITEMS = (
    ("call the bank", "renew the passport"),
    ("flour", "eggs", "butter"),
    ("charger", "socks", "sunscreen"),
    ("book the vet", "water the plants"),
)


def _params(kind: str, procedure: str, n: int) -> dict[str, Any]:
    tag = "P" if procedure == "verify" else "L"
    date = f"2026-05-{n + 1:02d}"
    contact = _CONTACTS[n % len(_CONTACTS)]
    topic = _TOPICS[n % len(_TOPICS)]
    if kind == "sms":
        return {"contact": contact, "message": f"Heads up, {topic} ({tag}{n}).", "date": date}
    if kind == "payment":
        return {
            "contact": contact,
            "amount": round(11.25 + 3.5 * n, 2),
            "reason": f"{_REASONS[n % len(_REASONS)]} ({tag}{n})",
            "date": date,
        }
    if kind == "note":
        return {"title": f"List {tag}{n}", "items": list(_ITEMS[n % len(_ITEMS)]), "date": date}
    return {
        "contact": contact,
        "subject": f"Update {tag}{n}",
        "message": f"Just so you know, {topic}.",
        "date": date,
    }


def _build() -> tuple[dict[str, Any], ...]:
    out: list[dict[str, Any]] = []
    n = 0
    for split, per in (("train", 2), ("dev", 1), ("holdout", 1)):
        for procedure in PROCEDURES:
            for kind, family in _FAMILIES[split].items():
                for _ in range(per):
                    n += 1
                    params = {**_params(kind, procedure, n), "procedure": procedure}
                    out.append(
                        {"id": f"{family}-{procedure}-{n}", "family": family, "split": split,
                         "params": params}
                    )  # fmt: skip
    return tuple(out)


PROCEDURE_TASKS: tuple[dict[str, Any], ...] = _build()


def write_procedures(evalset: Path) -> Path:
    """Write the default procedure tasks to `evalset/procedures.yaml` (returns the path)."""
    path = evalset / PROCEDURES_FILE
    text = "# Procedure-shaped tasks: see evolve.envs.persona_world._procedures.\n"
    import yaml  # PyYAML: only where the file is written or read

    text += yaml.safe_dump(list(PROCEDURE_TASKS), sort_keys=False, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_procedure_specs(evalset: Path) -> list[dict[str, Any]]:
    """The entries of `evalset/procedures.yaml` ([] when there is none); validated by the env."""
    path = evalset / PROCEDURES_FILE
    return procedure_specs(path.read_bytes() if path.is_file() else None, path)


def procedure_specs(raw: bytes | None, path: Path) -> list[dict[str, Any]]:
    """The entries the bytes `raw` of the procedures file at `path` hold (already read there:
    exactly these bytes are parsed; None: there is no such file, so [])."""
    if raw is None:
        return []
    from evolve._yaml import load as load_strict  # PyYAML: only where the file is read
    from evolve.errors import ConfigError

    data = load_strict(raw.decode("utf-8"), str(path), error=ConfigError)
    if data is None:
        return []
    if not isinstance(data, list):
        raise ConfigError(f"{path} must be a list of tasks, not {type(data).__name__}.")
    return list(data)
