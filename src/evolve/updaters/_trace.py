"""`trace`: compiled checks on API arguments, enforced by retrying the episode.

A check is (api, argument, predicate, value). Values over 24 characters are refused except
with `equals`. After each attempt the active checks are evaluated on the recorded calls; a
check whose API or argument is absent is inapplicable; a failing check retries the episode in
a fresh world, up to three attempts, in training and in evaluation. FIFO cap of 12.

Checks can be retired and replaced, or a stale check would make every later attempt fail: a
check may name (`replaces`) the checks it supersedes and `retire` revokes checks with no
successor, by the ids the prompt shows, whatever they say. Safety net when the updater names
nothing: a new check on the same api, argument and predicate whose value cannot hold together
with an active one (`equals` another value; `startswith`/`endswith` a value that is not a
prefix/suffix of the other) revokes it. A check proposed again is re-affirmed (it counts as
learned now, and the FIFO cap counts it as new).

A check's provenance (`complaint`) is the complaint line that produced it, found by what the
line says about the check's app, argument, predicate and value (`source_line`), one line per
check of an episode where there are enough.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from evolve._format._render import render_plain
from evolve.envs import ApiCall
from evolve.llm import JsonSchema
from evolve.memory import MemoryUnit
from evolve.memory._similarity import trigram_cosine
from evolve.ops import Op, Refusal
from evolve.updaters._base import MAX_ATTEMPTS as MAX_ATTEMPTS  # re-exported
from evolve.updaters._base import (
    RecipeContext,
    Update,
    active_by_age,
    ask,
    evictions,
    items,
    load_prompt,
    named_units,
    recipes,
    strict_fields,
)
from evolve.updaters._supersede import newest, reaffirmed
from evolve.workspace import EvolveConfig, RecipeCaps

PREDICATES = ("equals", "contains", "startswith", "endswith", "not_contains")
MAX_VALUE = 24

_API_PHRASES = {
    "phone__send_text_message": "sending a text message",
    "venmo__send_payment": "sending a Venmo payment",
    "gmail__send_email": "sending an email",
    "simple_note__create_note": "creating a note",
}
_PREDICATE_PHRASES = {
    "equals": "equal",
    "contains": "contain",
    "startswith": "start with",
    "endswith": "end with",
    "not_contains": "not contain",
}

SCHEMA = JsonSchema(
    "trace_checks",
    {
        "type": "object",
        "properties": {
            "checks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "api": {"type": "string"},
                        "argument": {"type": "string"},
                        "predicate": {"enum": list(PREDICATES)},
                        "value": {"type": "string"},
                        "replaces": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["api", "argument", "predicate", "value"],
                },
            },
            "retire": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["checks"],
    },
)


# What a complaint line about a check says, word by word: the app it is about, what the
# predicate does to the argument ("didn't end with my usual sign-off"), the argument itself.
_APP_WORDS = {
    "phone__send_text_message": {"text", "texts", "message", "messages", "sms"},
    "venmo__send_payment": {"payment", "payments", "paid", "pay", "venmo"},
    "gmail__send_email": {"email", "emails", "mail"},
    "simple_note__create_note": {"note", "notes"},
}
_PREDICATE_WORDS = {
    "endswith": {"end", "ended", "ends", "ending", "close", "closed", "closing", "sign",
                 "signoff", "signature", "last"},
    "startswith": {"open", "opened", "opens", "opening", "start", "started", "starts",
                   "begin", "began", "greet", "greeting", "greeted", "tag", "prefix", "first"},
    "contains": set(),
    "not_contains": set(),
    "equals": set(),
}  # fmt: skip
_ARGUMENT_WORDS = {
    "cc": {"cc", "copy", "copied"},
    "visibility": {"visibility", "visible", "audience", "public", "private", "friends"},
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def source_line(
    complaint: str, api: str, argument: str, predicate: str, value: str, taken: set[str]
) -> str:
    """The complaint line a check came from: the one that names its value, its argument,
    what its predicate does and its app (in that weight), a line no other check of the
    episode took first; ties go to the most similar line, then the first.

    The check's sentence ("When sending an email, the body must start with 'Hi '") shares
    few letters with the line that produced it ("My email didn't open with my usual
    greeting"), so likeness of text alone points at the wrong line."""
    lines = [ln.strip().lstrip("-*• ").strip() for ln in complaint.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        return ""
    text = sentence(api, argument, predicate, value)
    values = {w for w in _words(value) if len(w) >= 3}
    arguments = _words(argument.replace("_", " ")) | _ARGUMENT_WORDS.get(argument, set())
    cues = _PREDICATE_WORDS.get(predicate, set())
    apps = _APP_WORDS.get(api, _words(api.replace("__", " ").replace("_", " ")))

    def score(i: int) -> tuple[int, float, int]:
        words = _words(lines[i])
        hits = 4 * bool(values & words) + 3 * bool(arguments & words)
        hits += 2 * len(cues & words) + len(apps & words)
        return hits, trigram_cosine(lines[i], text), -i

    free = [i for i in range(len(lines)) if lines[i] not in taken] or list(range(len(lines)))
    return lines[max(free, key=score)]


def sentence(api: str, argument: str, predicate: str, value: str) -> str:
    """A check as a sentence the agent reads."""
    phrase = _API_PHRASES.get(api, f"calling {api}")
    shown = value.replace("\n", "\\n")
    return f"When {phrase}, the {argument} must {_PREDICATE_PHRASES[predicate]} '{shown}'."


def holds(predicate: str, actual: object, value: str) -> bool:
    if isinstance(actual, list):
        text = "\n".join(str(a) for a in actual)
        if predicate == "equals":
            return value in [str(a) for a in actual]
    else:
        text = "" if actual is None else str(actual)
    if predicate == "equals":
        return text == value
    if predicate == "contains":
        return value in text
    if predicate == "startswith":
        return text.startswith(value)
    if predicate == "endswith":
        return text.rstrip().endswith(value)
    return value not in text


def exclusive(old: MemoryUnit, api: str, argument: str, predicate: str, value: str) -> bool:
    """Whether a check (api, argument, predicate, value) cannot hold together with `old`."""
    if (old.api, old.argument, old.predicate) != (api, argument, predicate):
        return False
    was = old.value or ""
    if predicate == "equals":
        return was != value
    if predicate == "startswith":
        return not (was.startswith(value) or value.startswith(was))
    if predicate == "endswith":
        return not (was.endswith(value) or value.endswith(was))
    return False


@recipes.register("trace")
class TraceRecipe:
    name = "trace"
    cap: ClassVar[int] = 12

    evict_rule: ClassVar[str] = f"FIFO cap of {cap}: the oldest check goes first"

    def default_caps(self, config: EvolveConfig) -> RecipeCaps:
        return RecipeCaps(units=self.cap)

    def evict_order(self, units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
        """FIFO: the oldest-learned check leaves first."""
        return active_by_age(units)

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return render_plain(units)

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        failures = []
        for u in units:
            if (
                u.recipe != self.name
                or u.status != "active"
                or not (u.api and u.argument and u.predicate)
            ):
                continue
            relevant = [c for c in calls if c.ok and c.tool == u.api and u.argument in c.args]
            if not relevant:
                continue  # the API or the argument is absent: inapplicable
            if not holds(u.predicate, relevant[-1].args[u.argument], u.value or ""):
                failures.append(f"Check failed: {u.text}")
        return failures

    def observe(self, ctx: RecipeContext) -> Update:
        update = Update()
        mine = ctx.mine(self.name)
        active = active_by_age(mine)
        prompt = load_prompt("trace").safe_substitute(
            instruction=ctx.episode.instruction,
            actions=ctx.episode.actions,
            complaint=ctx.episode.complaint,
            checks=self.render(active) or "(none)",
            tools=", ".join(ctx.tools),
        )
        data = ask(ctx, SCHEMA, load_prompt("system").template, prompt, update)
        if data is None:
            return update
        ops: list[Op] = []
        shown = {u.id: u for u in active}

        def retire(victim: MemoryUnit, by: str | None, why: str) -> None:
            current = next((u for u in active if u.id == victim.id), None)
            if current is None:
                return
            active.remove(current)
            ops[:] = [op for op in ops if not (op.op == "reaffirm" and op.id == victim.id)]
            ops.append(Op(op="revoke", unit=ctx.revoked(victim, by=by)))
            update.notes.append(f"revoke {victim.id}: {why}")

        for victim in named_units(data, shown, update, "retire", "retire") or []:
            retire(victim, None, "retired by the updater")
        fields = {"api", "argument", "predicate", "value"}
        taken: set[str] = set()  # complaint lines a check of this episode came from
        for entry in items(data, "checks", update):
            if not strict_fields(entry, {*fields, "replaces"}, fields, update, "check"):
                continue
            named = named_units(entry, shown, update, "check")
            if named is None:
                continue
            api, argument, predicate, value = (
                str(entry[k]) for k in ("api", "argument", "predicate", "value")
            )
            what = f"{api}.{argument} {predicate} {value!r}"
            if predicate not in PREDICATES:
                update.refused.append(
                    Refusal(op="check", what=what, reason=f"unknown predicate {predicate!r}")
                )
                continue
            if ctx.tools and api not in ctx.tools:
                update.refused.append(
                    Refusal(op="check", what=what, reason=f"there is no API named {api!r}")
                )
                continue
            if len(value) > MAX_VALUE and predicate != "equals":
                update.refused.append(
                    Refusal(
                        op="check",
                        what=what,
                        reason=f"values over {MAX_VALUE} characters are allowed only with equals",
                    )
                )
                continue
            same = next(
                (
                    u
                    for u in active
                    if (u.api, u.argument, u.predicate, u.value)
                    == (api, argument, predicate, value)
                ),
                None,
            )
            if same is not None:
                update.notes.append(f"duplicate check {what}")
                if not newest(same, active) and not any(op.id == same.id for op in ops):
                    again = reaffirmed(ctx, same)
                    active[active.index(same)] = again
                    active.append(active.pop(active.index(again)))  # the FIFO cap counts it new
                    ops.append(Op(op="reaffirm", unit=again))
                continue
            if not named:  # the safety net, only when the updater names nothing
                named = [u for u in active if exclusive(u, api, argument, predicate, value)]
                why = "cannot hold together with newer check"
            else:
                why = "replaced by"
            line = source_line(ctx.episode.complaint, api, argument, predicate, value, taken)
            taken.add(line)
            unit = ctx.new_unit(
                self.name, "check", sentence(api, argument, predicate, value), complaint=line,
                api=api, argument=argument, predicate=predicate, value=value,
                supersedes=named[0].id if named else None,
            )  # fmt: skip
            for old in named:
                retire(old, unit.id, f"{why} {unit.id}")
            ops.append(Op(op="add", unit=unit))
            active.append(unit)
        ops = self._cap(ops, active, update)
        update.ops = ops
        return update

    def _cap(self, ops: list[Op], active: list[MemoryUnit], update: Update) -> list[Op]:
        """FIFO beyond the cap; each evict goes with the new check it makes room for."""
        victims: list[MemoryUnit] = []
        while len(active) > self.cap:
            victim = active.pop(0)
            if any(op.unit.id == victim.id and op.op == "add" for op in ops):
                ops = [op for op in ops if op.unit.id != victim.id]
            else:
                ops = [op for op in ops if not (op.op == "reaffirm" and op.id == victim.id)]
                victims.append(victim)
            update.notes.append(f"cap: evicted oldest check {victim.id} (FIFO)")
        return ops + evictions(victims, ops, f"FIFO cap of {self.cap}")
