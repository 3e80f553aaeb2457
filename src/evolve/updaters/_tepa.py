"""`tepa`: precedents keyed by attribute.

One active precedent per key; a new one revokes it (kept with `revoked_at` / `revoked_by`);
writing an archived text again under its key re-activates it, writing the active one again
re-affirms it (it counts as learned now); only active precedents render.
A precedent may also name (`replaces`, by id or key) precedents under *other* keys that it
supersedes, and `retire` revokes precedents with no successor: so a preference written once
under an off-vocabulary key (`other.*`) is replaced when it changes, whatever the wording.

Owed fix: keys are snapped to the vocabulary only when they name the *same detail* (after
folding app and detail aliases). A key that prefix or substring matching would fold into a
vocabulary key about a different detail is kept as `other.<key>` and the decision is logged,
so it never revokes an unrelated precedent.

No sentence under an invented key and another key. A precedent proposed under an invented
key (`other.*`) whose sentence an active precedent says word for word is that precedent: its
key maps onto the held one, and nothing is added (a note says so). A precedent proposed under
a vocabulary key takes over the same sentence held under an invented key: the new precedent
replaces it, and that invented key maps onto the vocabulary key from then on
(`learned_aliases`, read from the revoked precedent, so it survives between episodes). Two
vocabulary keys are two details, and one sentence may hold for both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from operator import itemgetter

from evolve._format._render import learned_key, tagged
from evolve.envs import ApiCall
from evolve.llm import JsonSchema
from evolve.memory import MemoryUnit
from evolve.memory._similarity import normalize
from evolve.ops import Op, Refusal
from evolve.updaters._base import (
    MAX_STATEMENT,
    RecipeContext,
    Update,
    ask,
    items,
    load_prompt,
    named_units,
    recipes,
    strict_fields,
)
from evolve.updaters._supersede import reaffirm
from evolve.workspace import EvolveConfig, RecipeCaps

VOCABULARY: tuple[str, ...] = (
    "sms.signoff", "sms.greeting", "sms.tone", "sms.length",
    "payment.visibility", "payment.card", "payment.note", "payment.amount_format",
    "note.format", "note.title", "note.checksum", "note.tags",
    "email.signoff", "email.subject", "email.cc", "email.greeting", "email.tone", "email.format",
    "contact.lookup", "general.confirmation", "general.language", "general.timezone", "general.units",
)  # fmt: skip

_APP_ALIASES = {
    "text": "sms", "texts": "sms", "message": "sms", "messages": "sms", "phone": "sms", "sms": "sms",
    "venmo": "payment", "pay": "payment", "payments": "payment", "payment": "payment",
    "mail": "email", "gmail": "email", "emails": "email", "email": "email",
    "notes": "note", "simple_note": "note", "simplenote": "note", "note": "note",
}  # fmt: skip
_DETAIL_ALIASES = {
    "signoff": "signoff", "sign": "signoff", "signature": "signoff", "closing": "signoff", "close": "signoff",
    "greeting": "greeting", "salutation": "greeting", "opening": "greeting", "greet": "greeting",
    "visibility": "visibility", "privacy": "visibility", "audience": "visibility", "visible": "visibility",
    "card": "card", "funding": "card", "method": "card",
    "note": "note", "memo": "note", "description": "note", "total": "note",
    "format": "format", "layout": "format", "list": "format", "items": "format", "body": "format",
    "title": "title", "heading": "title", "checksum": "checksum",
    "subject": "subject", "cc": "cc", "copy": "cc", "bcc": "cc",
}  # fmt: skip

SCHEMA = JsonSchema(
    "tepa_precedent",
    {
        "type": "object",
        "properties": {
            "precedents": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "key": {"type": "string"},
                        "sentence": {"type": "string"},
                        "replaces": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["key", "sentence"],
                },
            },
            "retire": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["precedents"],
    },
)


def _clean(key: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "_", key.strip().lower()).strip("._")


def naive_snap(key: str) -> str | None:
    """The seed's snapping (prefix, then substring): kept only to log what it would have done."""
    for vocab in VOCABULARY:
        if vocab.startswith(key) or key.startswith(vocab.split(".")[0] + "."):
            return vocab
    for vocab in VOCABULARY:
        if vocab.split(".")[1] in key:
            return vocab
    return None


def snap(key: str) -> tuple[str, str | None]:
    """The key to store under, and a log line when the key was not a vocabulary key."""
    cleaned = _clean(key)
    if cleaned in VOCABULARY or (cleaned.startswith("other.") and len(cleaned) > len("other.")):
        return cleaned, None  # a vocabulary key, or an other.* key this recipe kept before
    app, _, detail = cleaned.partition(".")
    app = _APP_ALIASES.get(app, app)
    words = [w for w in re.split(r"[._]", detail) if w]
    for candidate in (detail.replace(".", "_"), *words):
        folded = _DETAIL_ALIASES.get(candidate)
        if folded and f"{app}.{folded}" in VOCABULARY:
            return f"{app}.{folded}", f"key {key!r} snapped to {app}.{folded} (same detail)"
    kept = f"other.{cleaned or 'unnamed'}"
    naive = naive_snap(cleaned)
    extra = f"; prefix snapping would have folded it into {naive}" if naive else ""
    return kept, f"key {key!r} kept as {kept}: no vocabulary key for that detail{extra}"


# Each unit's rendered line and sort key, by unit object: a unit is frozen, so the same
# object always renders the same line. Training renders the precedents twice an episode (the
# agent's memory, then the updater's prompt) over the same unit objects, and the reader hands
# back the same objects for files that did not change, so a line is built once per unit
# version, not once per render. An edited unit is a new object, hence a new line.
_Row = tuple[MemoryUnit, tuple[datetime, str], str]
_LINES: dict[int, _Row] = {}
_SPARE = 256  # entries kept beyond twice the last render's before the cache is rebuilt
_by_key = itemgetter(1)


def render_precedents(units: Sequence[MemoryUnit]) -> str:
    """`evolve._format._render.render_keyed(units)`, byte for byte, reusing each unit's line."""
    cache = _LINES
    used: dict[int, _Row] = {}
    rows: list[_Row] = []
    for unit in units:
        if unit.status != "active":
            continue
        row = cache.get(id(unit))
        if row is None or row[0] is not unit:
            row = (unit, learned_key(unit), tagged(unit.id, f"[{unit.key}] {unit.text}"))
            cache[id(unit)] = row
        used[id(unit)] = row
        rows.append(row)
    if len(cache) > 2 * len(used) + _SPARE:  # units gone since: forget them
        cache.clear()
        cache.update(used)
    rows.sort(key=_by_key)  # stable, as `active_by_age` sorts
    return "\n".join(row[2] for row in rows)


def _twin(
    units: Iterable[MemoryUnit], key: str, sentence: str, named: Sequence[MemoryUnit]
) -> MemoryUnit | None:
    """An active precedent under another key that says `sentence` word for word (one the
    proposal names as replaced aside): the same preference under two keys."""
    gone = {u.id for u in named}
    text = normalize(sentence)
    return next(
        (
            u
            for u in units
            if u.status == "active"
            and u.key != key
            and _invented(key, u.key)
            and u.id not in gone
            and normalize(u.text) == text
        ),
        None,
    )


def _invented(*keys: str | None) -> bool:
    """Whether one of `keys` is invented (`other.*`): two vocabulary keys are two details, and
    one sentence may hold for both ("Sign off with - Alex." for texts and emails)."""
    return any((k or "").startswith("other.") for k in keys)


def _maps_onto(twin: MemoryUnit, key: str) -> bool:
    """A precedent kept under an invented key (`other.*`) that a vocabulary key now names:
    the new one replaces it, and the invented key maps onto the vocabulary key after."""
    return key in VOCABULARY and (twin.key or "").startswith("other.")


def learned_aliases(units: Iterable[MemoryUnit]) -> dict[str, str]:
    """Invented keys mapped onto vocabulary keys: an `other.*` precedent revoked by one under
    a vocabulary key that says the same sentence (`_maps_onto`)."""
    by_id = {u.id: u for u in units}
    out: dict[str, str] = {}
    for u in by_id.values():
        by = by_id.get(u.revoked_by or "")
        if (
            u.status == "revoked"
            and by is not None
            and by.key in VOCABULARY
            and (u.key or "").startswith("other.")
            and normalize(u.text) == normalize(by.text)
        ):
            out[u.key or ""] = by.key or ""
    return out


@recipes.register("tepa")
class TepaRecipe:
    name = "tepa"

    def default_caps(self, config: EvolveConfig) -> RecipeCaps:
        return RecipeCaps(chars=MAX_STATEMENT)

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return render_precedents(units)

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        return []

    def observe(self, ctx: RecipeContext) -> Update:
        update = Update()
        mine = ctx.mine(self.name)
        state: dict[str, MemoryUnit] = {u.id: u for u in mine}
        changed: dict[str, tuple[str, MemoryUnit]] = {}

        def put(op: str, unit: MemoryUnit) -> None:
            prev = changed.get(unit.id)
            changed[unit.id] = (prev[0] if prev is not None and prev[0] == "add" else op, unit)
            state[unit.id] = unit

        prompt = load_prompt("tepa").safe_substitute(
            instruction=ctx.episode.instruction,
            actions=ctx.episode.actions,
            complaint=ctx.episode.complaint,
            precedents=self.render(mine) or "(none)",
            vocabulary=", ".join(VOCABULARY),
        )
        data = ask(ctx, SCHEMA, load_prompt("system").template, prompt, update)
        if data is None:
            return update
        shown = {u.id: u for u in mine if u.status == "active"}
        keys = {u.key: u.id for u in shown.values() if u.key}
        aliases = learned_aliases(mine)
        retired = named_units(data, shown, update, "retire", "retire", keys) or []
        for unit in retired:
            put("revoke", ctx.revoked(state[unit.id], by=None))
            update.notes.append(f"retire {unit.id}: retired by the updater")
        for entry in items(data, "precedents", update):
            if not strict_fields(
                entry, {"key", "sentence", "replaces"}, {"key", "sentence"}, update, "precedent"
            ):
                continue
            named = named_units(entry, shown, update, "precedent", keys=keys)
            if named is None:
                continue
            sentence = str(entry["sentence"]).strip()
            if len(sentence) > MAX_STATEMENT:
                update.refused.append(
                    Refusal(
                        op="precedent", what=sentence[:80], reason="sentence over 300 characters"
                    )
                )
                continue
            key, log = snap(str(entry["key"]))
            if log:
                update.notes.append(log)
            if key in aliases:
                update.notes.append(f"key {key} mapped onto {aliases[key]} (learned before)")
                key = aliases[key]
            current = next(
                (u for u in state.values() if u.key == key and u.status == "active"), None
            )
            if current is not None and normalize(current.text) == normalize(sentence):
                reaffirm(ctx, current, put, update, state.values())
                continue
            twin = _twin(state.values(), key, sentence, named)
            if twin is not None and not _maps_onto(twin, key):
                update.notes.append(
                    f"key {key} mapped onto {twin.key}: duplicate of active precedent {twin.id}"
                )
                continue
            if twin is not None:
                update.notes.append(f"key {twin.key} mapped onto {key}: {twin.id} says the same")
                named = [*named, twin]
            archived = next(
                (
                    u
                    for u in state.values()
                    if u.key == key
                    and u.status == "revoked"
                    and normalize(u.text) == normalize(sentence)
                ),
                None,
            )
            # The one in force under this key, and every precedent the updater named.
            by_id = {u.id: state[u.id] for u in (current, *named) if u is not None}
            olds = [u for u in by_id.values() if u.status == "active"]
            if archived is not None:
                for old in olds:
                    put("revoke", ctx.revoked(old, by=archived.id))
                put("reactivate", ctx.reactivated(archived))
                continue
            unit = ctx.new_unit(
                self.name, "precedent", sentence, key=key,
                supersedes=olds[0].id if olds else None,
            )  # fmt: skip
            put("add", unit)
            for old in olds:
                put("revoke", ctx.revoked(old, by=unit.id))
        update.ops = [Op(op=label, unit=unit) for label, unit in changed.values()]
        return update
