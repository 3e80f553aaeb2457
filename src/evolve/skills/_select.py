"""Selecting and injecting skills.

For each task, at most `b` (`skills.max_injected`) active skills whose trigger matches the task
are picked and rendered in the agent prompt's own `<skills>` section, one line each
(`[<id>] <trigger>: <lesson>`), under a token budget (`skills.budget_tokens`, about 4
characters a token, the estimate the rest of evolve uses).

Two selector roles (`models.selector`):

- `lexical` (the offline default): a skill matches when its trigger shares a content word with
  the task (lower case, stop words dropped, a crude stem, a few synonyms so "Venmo" meets
  "payment"); matches are ranked by the share of the trigger's words the task has, then by
  the number shared, then by the skill's evidence (below), then by id. Deterministic. A
  skill written without a trigger applies to its topic's tasks (the topic's name is its
  trigger) or, on the general shelf, to every task (ranked after the matches). The matching
  itself is `evolve._triggers` (pure text).
- any model name: one call showing the task and the candidates' `[id] trigger` lines in
  the evidence order (higher first, no evidence before a measured 0, then id), asking for at most `b` ids as JSON
  (`{"skills": [...]}`). The reply is hostile input: unknown ids, duplicates and anything
  past `b` are dropped; an unusable reply selects nothing. What was not used is said in the
  episode record's `skills_note` (unknown ids, or a reply that is not `{"skills": [...]}`).

Ties go by the scoreboard's evidence (:func:`evidence_of`): two skills whose triggers match a
task equally well (the sim's wrong lesson "Skip the final check: ..." has the very trigger of
its app's verify lesson) are ordered by their Mantel-Haenszel lift within tasks, the point
estimate retirement decides on (0 with no task where both arms were seen), higher first; then
a skill with no evidence yet before one measured at exactly 0; then by id. Before this a tie
went by id, so a wrong lesson could take its verify lesson's slot in the top `b`: a harm the
scoreboard's hold-out (which leaves the slot empty) cannot see, and the verify lesson, never
selected, never earned the evidence that would have put it first. Why this key: a skill
with no evidence yet ranks at 0, above any skill measured to hurt and, among those at 0,
first, so a new skill is injected and earns evidence; one that is ahead stays ahead only
while its measured lift is higher, and only in exact ties (its hold-out episodes keep
measuring it, and the record restarts when its lesson is rewritten); nothing random enters,
so the order depends on the committed record alone, not on a seed. Exact ties only: a band
of near-ties was measured and not kept. Training and evaluation read the same record
(`memory/skills/_strata.yaml` of the memory being run, :func:`make_picker`; `evolve run`'s
fast path hands a run with skills on to the full command), so the gate scores the selection
training made.

Measured on the sim (`benchmarks/bench_skills.py --verbose`, 240 episodes, the same session
for both rules; docs/sim.md has the table): over the 23 stream orders the scoreboard was
tuned on, harmful lessons (oracle) still active and selected by evaluation at the end fell
from 59 (45 of them wrong lessons) with ties by id to 39 (33), dev/holdout success with the
learned skills rose from 0.910/0.910 to 0.919/0.941; over 23 fresh orders from 65 (49) to
46 (36), and from 0.901/0.908 to 0.908/0.929. Most of the harm left is a wrong lesson
injected beside its verify lesson, which only retirement removes.

The hold-out (for the scoreboard, :mod:`evolve.skills._scoreboard`): in training episodes at
most ONE of the task's candidates is held out (a single-skill ablation, :func:`ablated`): one
uniform draw per episode, hashed from the episode seed so a run is reproducible, falls in
candidate i's interval of length `share_i` (`skills.holdout_share`, or the scoreboard's
larger pending share for a skill whose evidence is pending), the intervals scaled down to
cover at most MAX_ABLATION (0.6) together. A held-out skill is not injected and nothing is
put in its place; the episode records it in `skills_held_out`. So a held-out episode gets the
selection evaluation would give minus exactly one skill, and a skill that only hurts next to
another one (a "skip the final check" lesson next to a verify lesson) shows its harm in the
comparison. Evaluation (`evolve run`, the gate's scoring) holds nothing out: it measures the
library as it is, ranked by the same evidence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve._text import ReplyError, loads_reply, printable
from evolve._triggers import evidence_key, rank_triggers
from evolve.llm import (
    LLM,
    JsonSchema,
    Message,
    ReplyMalformed,
    RequestFailed,
    estimate_tokens,
)
from evolve.skills._settings import LEXICAL as LEXICAL
from evolve.skills._settings import SkillSettings as SkillSettings
from evolve.skills._settings import settings_of as settings_of
from evolve.skills._skill import Skill as Skill
from evolve.skills._skill import skill_of as skill_of
from evolve.skills._skill import skills_of as skills_of

SELECTION_SCHEMA = JsonSchema(
    name="skill_selection",
    schema={
        "type": "object",
        "properties": {"skills": {"type": "array", "items": {"type": "string"}}},
        "required": ["skills"],
    },
)


def evidence_of(strata: Mapping[str, Mapping[str, Sequence[int]]] | None) -> dict[str, float]:
    """Each skill's tie-breaking evidence: its Mantel-Haenszel lift within tasks (the
    scoreboard's point estimate, `evolve.stats.stratified`) from the per-task
    record `strata` (`evolve.skills._strata`), 0 included; skills with no task where both
    arms were seen are left out (they rank at 0, before those measured at 0)."""
    from evolve.stats import stratified

    out: dict[str, float] = {}
    for ident, tasks in sorted((strata or {}).items()):
        cells = [(c[0], c[1], c[2], c[3]) for _task, c in sorted(tasks.items())]
        lift = stratified(cells, 0.9).lift
        if lift is not None:
            out[ident] = lift
    return out


def by_evidence(skills: Sequence[Skill], evidence: Mapping[str, float]) -> list[Skill]:
    """`skills` in the evidence order, the lexical matcher's tie order: higher lift first (0
    for none), a skill with no evidence before one measured at the same value, then id."""
    return sorted(skills, key=lambda s: (*evidence_key(s.id, evidence), s.id))


def lexical_matches(
    task_text: str, skills: Sequence[Skill], evidence: Mapping[str, float] | None = None
) -> list[Skill]:
    """The skills whose trigger shares a content word with the task, best first (ties by
    `evidence`, then id)."""
    by_id = {s.id: s for s in skills}
    pairs = [(s.id, s.trigger) for s in skills]
    return [by_id[i] for i in rank_triggers(task_text, pairs, evidence)]


def selection_prompt(task_text: str, skills: Sequence[Skill], b: int) -> list[Message]:
    """The selector's request: the task and each candidate's `[id] trigger` line, in the
    order given (the picker gives the evidence order, :func:`by_evidence`)."""
    lines = "\n".join(f"[{s.id}] {' '.join(s.trigger.split()) or '(any task)'}" for s in skills)
    return [
        Message(
            "system",
            "You pick which skills apply to a task. A skill applies when its trigger "
            'describes the task. Reply with one JSON object whose "skills" list holds the ids '
            f"(as shown between square brackets) of the skills that apply, at most {b} ids, "
            "best first; an empty list when none applies.",
        ),
        Message("user", f"<task>\n{task_text}\n</task>\n<triggers>\n{lines}\n</triggers>"),
    ]


def parse_selection(reply: str, skills: Sequence[Skill], b: int) -> list[Skill]:
    """The skills a selector's reply names (known ids only, no repeats, at most `b`)."""
    return read_selection(reply, skills, b)[0]


def read_selection(reply: str, skills: Sequence[Skill], b: int) -> tuple[list[Skill], str]:
    """The skills a selector's reply names (known ids only, no repeats, at most `b`), and a
    note when part of the reply could not be used: not a JSON object with a `skills` list
    (nothing is selected), or names that are not candidates (dropped). An empty list, a
    repeat or a name past `b` is not worth a note."""
    try:
        data = loads_reply(reply.strip())
    except ReplyError as exc:
        return [], printable(f"the selector's reply was not used ({exc}): no skill selected", 300)
    ids = data.get("skills") if isinstance(data, dict) else None
    if not isinstance(ids, list):
        return [], "the selector's reply has no `skills` list: no skill selected"
    by_id = {s.id: s for s in skills}
    out: list[Skill] = []
    unknown: list[str] = []
    for ident in ids:
        skill = by_id.get(ident) if isinstance(ident, str) else None
        if skill is None:
            unknown.append(ident if isinstance(ident, str) else repr(ident))
        elif skill not in out and len(out) < b:
            out.append(skill)
    note = ""
    if unknown:
        names = ", ".join(repr(u) for u in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        note = printable(
            f"the selector named {len(unknown)} id(s) not among the candidates ({names}): dropped",
            300,
        )
    return out, note


MAX_ABLATION = 0.6  # at most this share of an episode's draws holds a skill out


def ablated(seed: int, shares: Sequence[tuple[str, float]]) -> str | None:
    """The one skill (of `(id, share)` pairs, the episode's candidates) held out of the
    episode seeded `seed`, or None. One uniform draw per episode: skill i is held out when the
    draw falls in its own interval of length `share_i` (scaled down so that the intervals
    together cover at most MAX_ABLATION), so at most one skill is held out and the rest of
    the episode's draws hold nothing out."""
    total = sum(max(0.0, sh) for _, sh in shares)
    if total <= 0:
        return None
    scale = min(1.0, MAX_ABLATION / total)
    digest = hashlib.sha256(f"{seed}|ablation".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    edge = 0.0
    for ident, sh in shares:
        edge += max(0.0, sh) * scale
        if u < edge:
            return ident
    return None


def within_budget(skills: Sequence[Skill], budget_tokens: int) -> list[Skill]:
    """The skills, in order, whose lines fit in `budget_tokens` together (a line that does not
    fit is skipped; a shorter one after it may still fit)."""
    out: list[Skill] = []
    used = 0
    for skill in skills:
        cost = estimate_tokens(skill.line() + "\n")
        if used + cost <= budget_tokens:
            out.append(skill)
            used += cost
    return out


def render_skills(skills: Sequence[Skill]) -> str:
    """The body of the `<skills>` section (empty: no section)."""
    return "\n".join(s.line() for s in skills)


@dataclass(frozen=True)
class Selection:
    """What one episode was given: the injected skills, the held-out ones, and the section."""

    injected: tuple[str, ...] = ()
    held_out: tuple[str, ...] = ()
    section: str = ""
    note: str = ""  # why a model selector's reply was not used, if it was not


@dataclass
class SkillPicker:
    """Picks the skills for each task of a run (the same for every attempt of an episode).

    `holdout_share` is each candidate's hold-out share unless `shares` gives one for its id
    (the scoreboard's pending share, :func:`evolve.skills._scoreboard.holdout_shares`); at
    most one candidate is held out per episode (:func:`ablated`) and its slot stays empty.
    `evidence` (:func:`evidence_of`) breaks the lexical matcher's ties and orders the model
    selector's candidate lines.
    """

    skills: Sequence[Skill]
    max_injected: int = 3
    budget_tokens: int = 400
    holdout_share: float = 0.0  # training only; evaluation holds nothing out
    selector: LLM | None = None  # None: the lexical matcher
    shares: Mapping[str, float] = field(default_factory=dict)
    evidence: Mapping[str, float] = field(default_factory=dict)
    _cache: dict[tuple[str, int], Selection] = field(default_factory=dict, repr=False)

    def share(self, skill_id: str) -> float:
        """The hold-out share of `skill_id` in this run."""
        return self.shares.get(skill_id, self.holdout_share)

    def candidates(self, task_text: str, seed: int) -> list[Skill]:
        """At most `b` matching skills, best first (before the hold-out and the budget)."""
        return self._candidates(task_text, seed)[0]

    def _candidates(self, task_text: str, seed: int) -> tuple[list[Skill], str]:
        b = max(0, self.max_injected)
        if not self.skills or b == 0:
            return [], ""
        if self.selector is None:
            return lexical_matches(task_text, self.skills, self.evidence)[:b], ""
        try:
            reply = self.selector.complete(
                selection_prompt(task_text, by_evidence(self.skills, self.evidence), b),
                json_schema=SELECTION_SCHEMA,
                temperature=0.0,
                seed=seed,
            )
        except (ReplyMalformed, RequestFailed) as exc:
            # A failed step: no skill is selected, and the episode's record says why.
            return [], printable(
                f"the selector's reply was not used ({exc}): no skill selected", 300
            )
        return read_selection(reply.text, self.skills, b)

    def pick(self, task_text: str, seed: int) -> Selection:
        key = (task_text, seed)
        if key not in self._cache:
            chosen, note = self._candidates(task_text, seed)
            one = ablated(seed, [(s.id, self.share(s.id)) for s in chosen])
            out = [s for s in chosen if s.id == one]
            kept = within_budget([s for s in chosen if s.id != one], self.budget_tokens)
            self._cache[key] = Selection(
                tuple(s.id for s in kept), tuple(s.id for s in out), render_skills(kept), note
            )
        return self._cache[key]


def describe(selection: Selection) -> str:
    """One line for logs: which skills were injected and which held out."""
    inj = ", ".join(selection.injected) or "none"
    out = ", ".join(selection.held_out) or "none"
    return printable(f"skills injected: {inj}; held out: {out}", 300)


def make_picker(
    config: Any,
    units: Iterable[Any],
    *,
    training: bool,
    env: Any = None,
    recipe: str | None = None,
    strata: Any = None,
    task: str | None = None,
) -> SkillPicker | None:
    """The picker a run uses, or None when skills are off (then no `<skills>` section).

    `training` turns the seeded hold-out on (evaluation holds nothing out); `strata` (the
    scoreboard's per-task record) and the episode's `task` set its shares. In training and
    evaluation alike `strata` gives the evidence that breaks ties (:func:`evidence_of`): the
    caller passes the record of the memory it runs. A model selector is built by name
    (`models.selector`); `lexical` needs no model.
    """
    s = settings_of(config, recipe)
    if not s.enabled:
        return None
    selector: LLM | None = None
    if s.selector.strip() != LEXICAL:
        from evolve.llm import make_role_llm  # the selector role: its cache, timeouts, price

        selector = make_role_llm(config, "selector", env=env)
    units = list(units)
    shares: dict[str, float] = {}
    if training:  # the scoreboard's pending share (evaluation holds nothing out)
        from evolve.skills._scoreboard import holdout_shares

        shares = holdout_shares(units, s.holdout_share, s.retire_confidence, strata, task)
    return SkillPicker(
        skills=skills_of(units),
        max_injected=s.max_injected,
        budget_tokens=s.budget_tokens,
        holdout_share=s.holdout_share if training else 0.0,
        selector=selector,
        shares=shares,
        evidence=evidence_of(strata),
    )
