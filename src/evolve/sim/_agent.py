"""The sim's agent role.

It reads statements from the rendered system prompt (prompt files and `<memory>`, never
`<api_docs>`), lets the last directive per slot win, fills slots from directives and leaves
the others at the world's default, and computes computed values at the calibrated rates:
correctly from `<stats>` when the harness gives a value, else from the transactions it looks
up. Everything it knows about the user comes from the prompt and the tool results.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from evolve._lazy import pattern
from evolve.agent import RESULT_PREFIX, section, without_sections
from evolve.envs import Task
from evolve.envs.persona_world import (
    CONTACTS,
    MAIN_TOOL,
    RULES,
    Card,
    CheckContext,
    Computed,
    Directive,
    Payment,
    PersonaWorldEnv,
    Profile,
    Ref,
    Value,
    contact_of,
    reference_args,
    split_sentences,
)
from evolve.envs.persona_world._procedures import READ_BACK
from evolve.envs.persona_world._rules import Rule
from evolve.harness import DOC_TOOL, FINISH_NOTE, REVIEW_NOTE
from evolve.llm import Message
from evolve.sim._parse import DiskMemo, PromptCache, recognized
from evolve.sim._rates import SimRates

SENT_PAYMENTS = READ_BACK["payment"]  # the one read-back call that needs the access token

_COMPUTED_RATES = {
    "payment.card": ("habitual_card_stated", "habitual_card_given"),
    "payment.note_total": ("running_total_stated", "running_total_given"),
    "note.checksum": ("checksum_stated", "checksum_given"),
}


# A rendered memory line starts with its unit id, and a TEPA line then with its key:
# `[tepa-1a2b] [payment.visibility] Payments ...`. Only the last leading tag is left for
# `split_sentences` to drop, so a key never reads as a value (e.g. an e-mail subject tag).
_LEADING_TAGS = pattern(r"(?m)^([ \t]*(?:[-*•][ \t]*)?)(?:\[[\w.:-]+\][ \t]*)+(?=\[[\w.:-]+\])")


def _indent(match: re.Match[str]) -> str:
    """What `_LEADING_TAGS` keeps of a line's start (a function: no template to expand)."""
    return match.group(1)


def read_directives(system_prompt: str) -> dict[str, Directive]:
    """The directive in force for each slot: the last one stated wins.

    Every turn of an episode, and every episode until memory changes, sends the same system
    prompt, so what it states is parsed once per distinct prompt (keyed by a digest of its
    content), and each sentence once (evolve.sim._parse).
    """
    return dict(_directives_of(system_prompt))


# Distinct system prompts whose directives are kept (a dev run has one per persona and
# memory state; a training stream one per memory change).
PROMPTS: PromptCache[tuple[tuple[str, Directive], ...]] = PromptCache(64)


def _directives_of(system_prompt: str) -> tuple[tuple[str, Directive], ...]:
    return PROMPTS.get(system_prompt, _parse_or_recall)


def _parse_or_recall(system_prompt: str) -> tuple[tuple[str, Directive], ...]:
    store = STORE
    if store is None:
        return _parse_directives(system_prompt)
    return store.get(system_prompt, _parse_directives)


# Where parsed prompts are also kept across processes (see `remember_directives`), if anywhere.
STORE: DiskMemo[tuple[tuple[str, Directive], ...]] | None = None


def remember_directives(path: str | None) -> None:
    """Keep what `read_directives` parses in the file at `path` as well (None: stop), so a
    process that sends a prompt another process parsed reads the answer instead of parsing a
    thousand units again. `evolve run` sets it (in `.git/`): its prompt is the same from run to
    run until memory changes. The answer is keyed by a digest of the prompt and by the source
    of the code that parses it (see `evolve.sim._parse.DiskMemo`)."""
    global STORE
    STORE = DiskMemo(path, _dump_directives, _load_directives) if path else None


def _dump_directives(found: tuple[tuple[str, Directive], ...]) -> object:
    return tuple((slot, d.slot, *_dump_value(d.value), d.negated) for slot, d in found)


def _dump_value(value: Value) -> tuple[str, str]:
    if isinstance(value, Ref):
        return ("ref", value.field)
    if isinstance(value, Computed):
        return ("computed", value.what)
    return ("text", value)


def _load_directives(raw: object) -> tuple[tuple[str, Directive], ...]:
    """The directives `_dump_directives` wrote; ValueError for anything else."""
    out = []
    for item in raw if isinstance(raw, tuple) else ():
        if not (isinstance(item, tuple) and len(item) == 5):
            raise ValueError("not a remembered directive")
        key, slot, kind, value, negated = item
        if not all(isinstance(v, str) for v in (key, slot, kind, value)) or not isinstance(
            negated, bool
        ):
            raise ValueError("not a remembered directive")
        loaded: Value = (
            Ref(value) if kind == "ref" else Computed(value) if kind == "computed" else value
        )
        if kind not in ("ref", "computed", "text"):
            raise ValueError("not a remembered directive")
        out.append((key, Directive(slot, loaded, negated)))
    if not isinstance(raw, tuple):
        raise ValueError("not remembered directives")
    return tuple(out)


def _parse_directives(system_prompt: str) -> tuple[tuple[str, Directive], ...]:
    readable = _LEADING_TAGS.sub(_indent, without_sections(system_prompt, ("api_docs", "stats")))
    found: dict[str, Directive] = {}
    for sentence in split_sentences(readable):
        for directive in recognized(sentence):
            found[directive.slot] = directive
    return tuple(found.items())


@dataclass(frozen=True)
class Stats:
    habitual_card: int | None = None
    paid_before: float | None = None
    checksum: int | None = None


# The `<stats>` a system prompt gives, read once per distinct prompt as its directives are
# (finding the section scans the whole prompt, a thousand units long).
STATS: PromptCache[Stats] = PromptCache(64)


def read_stats(system_prompt: str) -> Stats:
    return STATS.get(system_prompt, _parse_stats)


def _parse_stats(system_prompt: str) -> Stats:
    body = section(system_prompt, "stats") or ""
    card = re.search(r"most used: .*?\(payment_card_id (\d+)\)", body)
    paid = re.search(r"Paid so far to .*?: \$(\d+(?:\.\d+)?)", body)
    checksum = re.search(r"Checksum of this note's items: (\d+)", body)
    return Stats(
        int(card.group(1)) if card else None,
        float(paid.group(1)) if paid else None,
        int(checksum.group(1)) if checksum else None,
    )


def _results(messages: Sequence[Message]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in messages:
        if m.role == "user" and m.content.startswith(RESULT_PREFIX):
            head, _, body = m.content.partition(":\n")
            tool = head[len(RESULT_PREFIX) :]
            try:
                out[tool] = json.loads(body)
            except json.JSONDecodeError:
                continue
    return out


# The phrase of the checklist skill (evolve.harness.CHECKLIST) the sim recognizes.
_CHECKLIST = "go through every preference"


def _documented(system: str, messages: Sequence[Message], tool: str) -> bool:
    """Whether the agent has read `tool`'s arguments: its entry in the prompt's docs, or
    an entry the harness gave it on demand."""
    if f"- {tool}(" in system:
        return True
    head = f"{RESULT_PREFIX}{DOC_TOOL}:"
    return any(
        m.role == "user" and m.content.startswith(head) and f"- {tool}(" in m.content
        for m in messages
    )


def _checklist(system: str) -> bool:
    """Whether `<skills>` holds the checklist skill."""
    return _CHECKLIST in system and _CHECKLIST in (section(system, "skills") or "")


def _looked_up(messages: Sequence[Message], tool: str) -> bool:
    """Whether the harness gave `tool`'s entry on demand in this episode."""
    head = f"{RESULT_PREFIX}{DOC_TOOL}:"
    return any(
        m.role == "user" and m.content.startswith(head) and f"- {tool}(" in m.content
        for m in messages
    )


def _plan(task: Task, need_history: bool) -> list[str]:
    steps = ["supervisor__show_profile"]
    if task.kind == "payment":
        steps += ["supervisor__show_account_passwords", "venmo__login", "venmo__show_payment_cards"]
        if need_history:
            steps.append("venmo__show_transactions")
    if task.kind in ("sms", "payment", "email"):
        steps.append("phone__search_contacts")
    steps += [MAIN_TOOL[task.kind], "supervisor__complete_task"]
    return steps


class SimAgent:
    """Chooses the next API call for a task, deterministically from the seed."""

    def __init__(self, env: PersonaWorldEnv, rates: SimRates) -> None:
        self.env = env
        self.rates = rates

    def act(self, messages: Sequence[Message], seed: int) -> dict[str, Any]:
        system = messages[0].content
        first_user = next((m.content for m in messages if m.role == "user"), "")
        instruction = first_user.split("\n", 1)[0].removeprefix("Task: ").strip()
        task = self.env.task_by_instruction(instruction)
        if task is None:
            return {"tool": "supervisor__complete_task", "arguments": {"answer": "unknown task"}}
        directives = read_directives(system)
        stats = read_stats(system)
        need_history = self._needs_history(task, directives, stats)
        steps = _plan(task, need_history)
        if "<skills>" in system:  # the injected skills change the plan (loaded only then)
            from evolve.sim._skills_agent import follow_skills

            steps = follow_skills(steps, task, system)
        # Harness modules reach the sim only through what they put in the messages
        # (docs/sim.md, "Harness variants"): a review note, a looked-up API entry.
        note = messages[-1].content if messages[-1].role == "user" else ""
        if note.startswith(FINISH_NOTE):
            return self._finish_check(messages, task, directives, stats, seed)
        review = note.startswith(REVIEW_NOTE)
        # The turn counts the actions that ran: a lookup of the docs is none, and under
        # review the draft (the last assistant message) has not run yet.
        turn = sum(1 for m in messages if m.role == "assistant" and DOC_TOOL not in m.content)
        drafts = [m for m in messages if m.role == "assistant"][-1:]
        turn -= 1 if review and drafts and DOC_TOOL not in drafts[0].content else 0
        if turn >= len(steps):
            return {"tool": "supervisor__complete_task", "arguments": {}}
        tool = steps[turn]
        results = _results(messages)
        rates = self._rates(system, reviewed=review, looked_up=_looked_up(messages, tool))
        if tool == MAIN_TOOL[task.kind] and not _documented(system, messages, tool):
            if DOC_TOOL in system:
                return {"tool": DOC_TOOL, "arguments": {"api": tool}}
            args = self._arguments(tool, task, results, directives, stats, seed, rates)
            # Without the API's arguments in the docs it sends only those the task names.
            keep = set(reference_args(task)) | {"access_token"}
            return {"tool": tool, "arguments": {k: v for k, v in args.items() if k in keep}}
        # A checklist skill catches the gross computed-value misses (docs/sim.md).
        gross = self.rates.checklist_catch if _checklist(system) else 0.0
        return {
            "tool": tool,
            "arguments": self._arguments(
                tool, task, results, directives, stats, seed, rates, gross=gross
            ),
        }

    def _rates(self, system: str, *, reviewed: bool, looked_up: bool = False) -> SimRates:
        """The rates for this call: a checklist skill in `<skills>` lowers the lapse; a
        review (Self-Refine) makes no lapse; a review and an API entry looked up on demand
        each catch a share of the computed-value misses, the near ones (the same draws: the
        two do not add up). The checklist's catch of the gross ones is in `_value`."""
        rates = self.rates
        if _checklist(system):
            rates = replace(rates, lapse=rates.checklist_lapse)
        catch = rates.lookup_catch if looked_up else 0.0
        if reviewed:
            rates = replace(rates, lapse=0.0)
            catch = max(catch, rates.review_catch)
        if catch:
            keep = 1.0 - catch
            rates = replace(
                rates,
                habitual_card_stated=rates.habitual_card_stated * keep,
                habitual_card_given=rates.habitual_card_given * keep,
                running_total_stated=rates.running_total_stated * keep,
                running_total_given=rates.running_total_given * keep,
                checksum_stated=rates.checksum_stated * keep,
                checksum_given=rates.checksum_given * keep,
            )
        return rates

    def _finish_check(
        self,
        messages: Sequence[Message],
        task: Task,
        directives: dict[str, Directive],
        stats: Stats,
        seed: int,
    ) -> dict[str, Any]:
        """The answer to a check before finishing: the task's write made again with no lapse
        and fresh draws for computed values; sent again when it differs from the one sent."""
        finish = {"tool": "supervisor__complete_task", "arguments": {}}
        tool = MAIN_TOOL[task.kind]
        sent = None
        for m in messages:
            if m.role == "assistant" and tool in m.content:
                try:
                    data = json.loads(m.content)
                except json.JSONDecodeError:
                    continue
                if isinstance(data, dict) and data.get("tool") == tool:
                    sent = data.get("arguments")
        if sent is None:
            return finish
        rates = replace(self.rates, lapse=0.0)
        again = self._arguments(
            tool, task, _results(messages), directives, stats, seed, rates, salt="|finish"
        )
        return finish if again == sent else {"tool": tool, "arguments": again}

    @staticmethod
    def _needs_history(task: Task, directives: dict[str, Directive], stats: Stats) -> bool:
        if task.kind != "payment":
            return False
        card = directives.get("payment.card")
        total = directives.get("payment.note_total")
        need_card = (
            card is not None and isinstance(card.value, Computed) and stats.habitual_card is None
        )
        need_total = total is not None and not total.negated and stats.paid_before is None
        return need_card or need_total

    def _arguments(
        self,
        tool: str,
        task: Task,
        results: dict[str, Any],
        directives: dict[str, Directive],
        stats: Stats,
        seed: int,
        rates: SimRates | None = None,
        salt: str = "",
        *,
        gross: float = 0.0,
    ) -> dict[str, Any]:
        profile = results.get("supervisor__show_profile") or {}
        token = (results.get("venmo__login") or {}).get("access_token", "")
        if tool == "venmo__login":
            passwords = results.get("supervisor__show_account_passwords") or []
            password = next(
                (p["password"] for p in passwords if p.get("account_name") == "venmo"), ""
            )
            return {"username": profile.get("email", ""), "password": password}
        if tool in ("venmo__show_payment_cards", "venmo__show_transactions", SENT_PAYMENTS):
            return {"access_token": token}
        if tool == "phone__search_contacts":
            contact = contact_of(task)
            return {"query": contact.name if contact else ""}
        if tool == MAIN_TOOL[task.kind]:
            args = reference_args(task)
            if task.kind == "payment":
                args["access_token"] = token
            self._apply_preferences(
                task, args, results, directives, stats, seed, rates or self.rates, salt, gross
            )
            return args
        return {}

    def _apply_preferences(
        self,
        task: Task,
        args: dict[str, Any],
        results: dict[str, Any],
        directives: dict[str, Directive],
        stats: Stats,
        seed: int,
        rates: SimRates,
        salt: str = "",
        gross: float = 0.0,
    ) -> None:
        rng = random.Random(f"{seed}|agent|{task.id}")
        # A fresh draw of the computed values (the finish check's); the lapses stay as drawn.
        fresh = random.Random(f"{seed}|agent|{task.id}{salt}") if salt else None
        ctx = self._context(task, results)
        # Format slots first, computed ones after, so appended lines land at the end.
        for rule in sorted(RULES, key=lambda r: r.rule_class == "computed"):
            lapse = rng.random()
            draw = rng.random()
            if fresh is not None:
                draw = fresh.random()
            if rule.kind != task.kind:
                continue
            directive = directives.get(rule.slot)
            if directive is None or lapse < rates.lapse:
                continue
            if directive.negated:
                rule.render_negated(ctx, args, directive.value)
                continue
            value = self._value(rule, directive, ctx, stats, draw, rates, gross)
            if value:
                rule.render(ctx, args, value)

    def _context(self, task: Task, results: dict[str, Any]) -> CheckContext:
        p = results.get("supervisor__show_profile") or {}
        profile = Profile(
            p.get("first_name", ""),
            p.get("last_name", ""),
            p.get("email", ""),
            p.get("phone_number", ""),
            "",
        )
        cards = tuple(
            Card(int(c["payment_card_id"]), str(c["name"]))
            for c in results.get("venmo__show_payment_cards") or []
        )
        by_email = {c.email: c.key for c in CONTACTS}
        history = tuple(
            Payment(
                by_email.get(str(t["receiver_email"]), ""),
                float(t["amount"]),
                int(t["payment_card_id"]),
            )
            for t in results.get("venmo__show_transactions") or []
        )
        return CheckContext(task, profile, cards, history, contact_of(task))

    def _value(
        self,
        rule: Rule,
        directive: Directive,
        ctx: CheckContext,
        stats: Stats,
        draw: float,
        rates: SimRates,
        gross: float = 0.0,
    ) -> str:
        value = directive.value
        if isinstance(value, Ref):
            return rule.resolve(ctx, value)
        if not isinstance(value, Computed):
            return rule.resolve(ctx, value)
        stated, given = _COMPUTED_RATES[rule.slot]
        truth, have = self._computed_truth(rule, ctx, stats)
        fail = getattr(rates, given if have else stated)
        # A gross miss (a draw below `gross` x the unreviewed rate) is caught by a checklist
        # skill; the review and a looked-up entry catch the near ones (the draws above).
        if draw >= fail or draw < gross * getattr(self.rates, given if have else stated):
            return truth
        return self._computed_error(rule, ctx, truth, draw)

    def _computed_truth(self, rule: Rule, ctx: CheckContext, stats: Stats) -> tuple[str, bool]:
        if rule.slot == "payment.card":
            if stats.habitual_card is not None:
                return str(stats.habitual_card), True
            return rule.compute(ctx), False
        if rule.slot == "payment.note_total":
            amount = float(ctx.params.get("amount", 0.0))
            if stats.paid_before is not None:
                return f"{stats.paid_before + amount:.2f}", True
            return rule.compute(ctx), False
        if stats.checksum is not None:
            return str(stats.checksum), True
        return rule.compute(ctx), False

    @staticmethod
    def _computed_error(rule: Rule, ctx: CheckContext, truth: str, draw: float) -> str:
        """A plausible wrong value: the most recent card, a total without this payment, an
        off-by-a-few checksum."""
        if rule.slot == "payment.card":
            recent = [p.card for p in reversed(ctx.history) if str(p.card) != truth]
            others = [c.payment_card_id for c in ctx.cards if str(c.payment_card_id) != truth]
            pick = recent[0] if recent else (others[0] if others else None)
            return str(pick) if pick is not None else truth
        if rule.slot == "payment.note_total":
            amount = float(ctx.params.get("amount", 0.0))
            return f"{max(0.0, float(truth or 0) - amount):.2f}"
        return str(int(truth or 0) + 1 + int(draw * 1000) % 5)
