"""`persona_world`: the embedded, deterministic, offline environment."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from evolve.envs._protocol import SPLITS, Feedback, Judgement, Split, Task, Tier, Violation
from evolve.envs._registry import environments
from evolve.envs.persona_world._evalset import EvalsetReader, read_yaml
from evolve.envs.persona_world._personas import Persona
from evolve.envs.persona_world._procedures import procedure_failure
from evolve.envs.persona_world._rules import (
    RULES,
    RULES_BY_NAME,
    CheckContext,
    most_used_card,
    note_checksum,
    total_paid,
)
from evolve.envs.persona_world._tasks import (
    FAMILIES_BY_NAME,
    contact_of,
    functional_failure,
    instruction,
    main_call,
)
from evolve.envs.persona_world._world import (
    CONTACTS_BY_KEY,
    Payment,
    PersonaWorld,
    PersonaWorldState,
    api_docs,
    tool_names,
)
from evolve.errors import ConfigError, UnknownName

_load_yaml = read_yaml  # an evalset file's document (its old name here)

# The formats of the harness-computed <stats> lines; the sim reads them back.
STAT_CARDS = "Payment cards used so far: {usage}; most used: {card} (payment_card_id {card_id})."
STAT_PAID = "Paid so far to {name}: ${total:.2f} (before this payment)."
STAT_CHECKSUM = "Checksum of this note's items: {checksum}."


@dataclass(frozen=True)
class History:
    """The user's payment history, kept across the episodes of a training stream."""

    payments: tuple[Payment, ...]


@environments.register("persona_world")
class PersonaWorldEnv:
    """The environment over a workspace's `evalset/` folder."""

    name = "persona_world"

    def __init__(self, evalset: Path, *, remember: str | None = None) -> None:
        """The environment over `evalset`; with `remember` (a cache file), the validated
        evalset is remembered there and read back while its files are unchanged (see
        `_evalset`).

        Raises:
            ConfigError: a missing or malformed evalset file, naming it.
        """
        self.evalset = evalset
        reader = EvalsetReader(evalset, remember)
        specs, split_of = reader.specs()
        self._tasks: dict[str, Task] = {}
        for task_id, family_name, params in specs:
            family = FAMILIES_BY_NAME.get(family_name)
            if family is None:
                raise ConfigError(f"task {task_id} names an unknown family {family_name!r}.")
            if task_id not in split_of:
                continue
            self._tasks[task_id] = Task(
                id=task_id,
                family=family_name,
                kind=family.kind,
                split=split_of[task_id],
                instruction=instruction(family, params),
                params=params,
            )
        missing = set(split_of) - set(self._tasks)
        if missing:
            raise ConfigError(
                f"splits.yaml names tasks that tasks.yaml lacks: {sorted(missing)[:3]}."
            )
        self._by_instruction = {t.instruction: t for t in self._tasks.values()}
        self._personas = reader.personas()
        reader.save()

    # --- tasks and personas -------------------------------------------------------------

    def tasks(self, split: Split) -> list[Task]:
        if split not in SPLITS:
            raise UnknownName(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}.")
        return [t for t in self._tasks.values() if t.split == split]

    def task(self, task_id: str) -> Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise UnknownName(f"unknown task {task_id!r}.") from None

    def task_by_instruction(self, text: str) -> Task | None:
        return self._by_instruction.get(text.strip())

    def personas(self) -> list[str]:
        return sorted(self._personas)

    def persona(self, name: str) -> Persona:
        try:
            return self._personas[name]
        except KeyError:
            raise UnknownName(
                f"unknown persona {name!r}; choose one of {', '.join(self.personas())}."
            ) from None

    def rule_names(self) -> list[str]:
        return [r.name for r in RULES]

    def persona_rules(self, persona: str) -> list[str]:
        return [p.rule for p in self.persona(persona).preferences]

    @cached_property
    def _docs(self) -> str:
        return api_docs()

    def api_docs(self) -> str:
        return self._docs

    def tools(self) -> list[str]:
        return tool_names()

    # --- episodes -----------------------------------------------------------------------

    def initial_history(self, persona: str) -> History:
        return History(self.persona(persona).initial_history)

    def advance_history(self, history: History, task: Task, persona: str, episode: int) -> History:
        """The history after the user's own intended payment in a training episode."""
        if task.kind != "payment":
            return history
        p = self.persona(persona)
        card = most_used_card(history.payments) or p.cards[0].id
        payment = Payment(str(task.params["contact"]), float(task.params["amount"]), card)
        return History((*history.payments, payment))

    def new_world(self, task: Task, persona: str, history: History) -> PersonaWorld:
        p = self.persona(persona)
        return PersonaWorld(PersonaWorldState(p.profile, p.card_objects, history.payments))

    def context(self, task: Task, persona: str, history: History) -> CheckContext:
        p = self.persona(persona)
        return CheckContext(task, p.profile, p.card_objects, history.payments, contact_of(task))

    def judge(
        self, task: Task, persona: str, world: Any, history: History, episode: int | None
    ) -> Judgement:
        """Score one episode: the task's own success and every applicable preference.

        `episode` is the persona's clock (its training episodes across every stream, which
        `evolve train` keeps) and picks the preference values held then; None scores against
        the persona as it is now (after every scheduled change).
        """
        p = self.persona(persona)
        ctx = self.context(task, persona, history)
        failure = functional_failure(task, world.calls, world.completed) or procedure_failure(
            task, world.calls
        )
        call = main_call(task, world.calls)
        applicable: list[str] = []
        violations: list[Violation] = []
        if call is not None:
            for pref in p.preferences:
                rule = RULES_BY_NAME[pref.rule]
                if not rule.applies(task):
                    continue
                applicable.append(rule.name)
                value = pref.value_at(episode)
                detail = rule.check(ctx, call.args, value)
                if detail is not None:
                    violations.append(Violation(rule.name, detail, rule.statement(value)))
        return Judgement(failure is None, failure, tuple(applicable), tuple(violations))

    def feedback(self, task: Task, judgement: Judgement, tier: Tier) -> Feedback:
        lines: list[tuple[str, str]] = []
        if judgement.failure:
            lines.append((judgement.failure, "task"))
        for v in judgement.violations:
            lines.append((v.instance if tier == "instance" else v.corrective, v.rule))
        return Feedback("\n".join(line for line, _ in lines), tuple(lines))

    def stats(self, task: Task, persona: str, history: History) -> list[str]:
        """Counts the harness computes (never preferences): for the prompt's <stats>."""
        p = self.persona(persona)
        out: list[str] = []
        if task.kind == "payment":
            names = {c.id: c.name for c in p.cards}
            counts: dict[int, int] = {}
            for pay in history.payments:
                counts[pay.card] = counts.get(pay.card, 0) + 1
            card = most_used_card(history.payments)
            if card is not None:
                usage = ", ".join(f"{names[c]} x{n}" for c, n in sorted(counts.items()))
                out.append(STAT_CARDS.format(usage=usage, card=names[card], card_id=card))
            contact = str(task.params["contact"])
            out.append(
                STAT_PAID.format(
                    name=CONTACTS_BY_KEY[contact].name, total=total_paid(history.payments, contact)
                )
            )
        elif task.kind == "note":
            out.append(STAT_CHECKSUM.format(checksum=note_checksum(list(task.params["items"]))))
        return out

    def oracle_statements(self, persona: str, episode: int | None) -> list[str]:
        """The persona's preferences as correction statements (the `oracle` injection mode)."""
        p = self.persona(persona)
        return [
            RULES_BY_NAME[pref.rule].statement(pref.value_at(episode)) for pref in p.preferences
        ]
