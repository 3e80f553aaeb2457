"""The skills scoreboard: does a skill help when it is injected?

Per skill, four counters kept in its shelf's counter sidecar
(`memory/skills/general/_counters.yaml`, `memory/skills/topics/<t>/_counters.yaml`), moved
only by the applier's `count` op:

- `injected`, `injected_pass`: training episodes whose prompt carried the skill, and how many
  of them passed;
- `held_out`, `held_out_pass`: training episodes where the skill was selected (its trigger
  matched) but the seeded hold-out kept it out, and how many passed.

"Passed" is the task's own verdict (`task_success`): skills are procedures, and the
persona's preferences (which memory learns, not skills) would otherwise drown the signal.
Only training episodes count: `evolve run` and the gate evaluate the whole library with
nothing held out, and counting their dev episodes would let the scoreboard fit the split the
gate accepts on. With the `skills` recipe a batch's episodes are counted in the batch's own
commit (`count_ops_after`, applied with the batch's verdicts); with any other recipe (and
`skills.enabled`) each eligible episode is counted in a commit of its own
(`Evolve-Kind: skill count`). Either carries the episode number, so a resumed stream never
counts an episode twice; an episode whose memory commit was made but not its count commit (the
process stopped between the two) is counted on resume from the memory commit's
`Evolve-Skills-Seen` trailer (`evolve.train._train._rescore`). Retirement is checked after
each count.

The experiment (`evolve.skills._select.ablated`). Each training episode holds out at most ONE
of its candidates (a single-skill ablation), and the comparison is restricted to comparable
episodes: a skill's held-out arm counts the episodes where it alone was held out, its
injected arm the episodes where nothing was held out (`tally`). The two arms then differ by
exactly that skill, every other candidate injected in both, which is what a skill that hurts
only next to another needs: the sim's wrong lesson ("Skip the final check: ...") changes
nothing alone and undoes a verify lesson injected with it; with independent hold-outs its
held-out episodes often lacked the verify lesson too, and its harm was diluted away.

The hold-out share is adaptive (`holdout_shares`), so evidence accrues where a decision is
pending: a skill with fewer than PENDING_HELD_OUT (4) held-out episodes in the tasks with
both arms, or whose within-task lift so far is negative (below), is held out at PENDING_SHARE (0.5) instead of `skills.holdout_share` (0.2); one
whose lift is 0 or more drops back. The shares of an episode's candidates are scaled down to
cover at most 60 % of its draws (`MAX_ABLATION`). The draw is seeded by the episode, so the
hold-out is random given the record: a valid randomized comparison, whose allocation
depends on earlier outcomes (a response-adaptive design).

The pooled counters count only episodes of tasks that failed before (`evolve.skills._failed`):
an episode is counted there when skills were selected for it AND its task failed in an
EARLIER training episode of the workspace (recorded in `memory/skills/_failed_tasks.yaml`,
committed with the count or the batch, so a resumed stream keeps it). Pooled over tasks, the
tasks the agent always passes dilute both arms; the stratum cut that dilution. The pooled
lift (`injected_pass/injected - held_out_pass/held_out`, Newcombe's hybrid score interval,
method 10 of Newcombe 1998) is shown by `evolve skills` and the report; it no longer decides.

What decides: the arms compared WITHIN each task (`stratified`). The task is fixed before the
hold-out is drawn, so within a task the comparison is randomized; a task where both arms
agree (always pass, always fail) carries no evidence either way and, compared within it, adds
no noise, while pooled it adds between-task noise (the two arms hold different task mixes by
chance). The per-task record (`evolve.skills._strata`, `memory/skills/_strata.yaml`,
committed with the count or the batch) counts EVERY eligible episode (skills selected), not
only tasks that failed before: within a task there is no dilution to cut, and the first
episodes of a task (before its first failure) are evidence too (the sim's wrong lesson meets
3 to 8 episodes of the tasks its harm lives on in 240). Only tasks with both arms observed
contribute. The estimate is the Mantel-Haenszel risk difference (weights n1 n0 / (n1 + n0)
per task); its interval is the stratified score interval of Miettinen and Nurminen (1985)
with those weights: every common lift d whose score statistic
`sum w (p1 - p0 - d) / sqrt(sum w^2 V(d))` lies within the normal quantile, V(d) the task's
variance at its maximum-likelihood rates under lift d, times N/(N-1). Why this one: it is a
score interval like the Newcombe interval it replaces (it behaves at 0 and 100 % and with a
handful of episodes, where a Wald interval such as Sato's variance around the MH estimate is
degenerate: 0 of 1 against 1 of 1 gives a zero-width interval); at d = 0 its statistic is the
Cochran-Mantel-Haenszel test with the exact conditional (hypergeometric) variance, so a task
whose arms agree adds exactly nothing; a single task gives back the two-proportion score
interval. Without the N/(N-1) (the unconditional variance) it retired far more harm in the
sweep but also 2.5 times the false retirements (docs/sim.md).

A rewritten lesson is a new treatment: when a batch's MERGE or REVISE changes a skill's text,
its record restarts at 0 (`count_ops_after`, `strata_after`: the counters and its per-task
entry), so a wrong lesson written over a good skill does not inherit the good record, nor a
good lesson a wrong one's. A revert takes back what the reverted commit added to the
per-task record, as it does for the counters. A revert that brings a retired skill back
restarts its record the same way (`evolve.history._unretire`), so the user's revert sticks:
only new evidence retires it again.

A skill is retired when the stratified interval at `skills.retire_confidence` lies wholly
below 0 and each arm has at least `MIN_EACH` episodes in the tasks with both arms: its status
becomes `retired` (never rendered nor injected again) with the evidence in `reason`, in one
commit of its own (`Evolve-Kind: skill retire`; the body carries both the within-task and the
pooled figures).

Within the episode's task a biased coin (Efron 1971) balances the arms (`holdout_shares`): a skill whose held-out arm trails its injected arm on this task is held out at 2/3,
one whose held-out arm leads at the base share. Both are fixed before the draw.

Bound (tested): a skill that makes every eligible episode of one task fail while held-out
episodes of it pass is retired once that task has 2 episodes in each arm (the score
statistic is then -1.73, below -1.645); spread over tasks with one episode per arm each it
takes three such tasks.

Error rates (stated, not controlled; the interval is looked at after every count, so over a
stream the chance that a skill with no effect is retired exceeds the 5 % one side of a 90 %
interval). By simulation (`tests/skills/test_scoreboard_error_rate.py`, the rule as trained,
against the pooled rule it replaced): a skill with no effect, pass rate 0.9, two other
candidates, 60 eligible episodes: retired about 9 % of the time (pooled 9 %); one that
lowers the pass rate from 0.95 by 0.22: 79 % (75 %). Nine tasks of one app as in the sim, two
where the skill matters and seven that nearly always pass or nearly always fail, 120
episodes: a skill that lowers the two from 0.95 to 0.35 is retired 80 % of the time (pooled
65 %), one with no effect 11 % (pooled 22 %). With noisy tasks instead (pass rates 0.05 to
0.95, noise within each task) the stratified rule is no better than the pooled one: no
effect 22 % (24 %), the harm at 0.7 -> 0.1 62 % (64 %); the gain is the between-task noise
removed, and where the noise is within tasks there is none to remove.

Measured on the sim (`benchmarks/bench_skills.py`, an oracle with/without run for every skill,
240 episodes per stream order), the same session for both rules. The 23 stream orders
the previous rules were tuned on (seeds 0-2, 10-29): 34 of 79 wrong lessons that hurt when
injected retired (pooled rule: 34 of 78), 34 of 61 of those harmful with the slot left empty
(31 of 60), 4 right lessons the oracle found harmless retired (4). 23 fresh orders (seeds
30-52, run after the rule was chosen): 30 of 79 (26 of 78), 30 of 59 (23 of 60), 4 false
(7). A modest gain, not a large one: most wrong lessons left active met one or two episodes
of their verify tasks per arm. See docs/sim.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from evolve.skills._skill import skills_of
from evolve.skills._strata import Cell, Outcome, Strata, strata_files
from evolve.stats import Stratified, newcombe, stratified

SKILL_COUNTERS: tuple[str, ...] = ("injected", "injected_pass", "held_out", "held_out_pass")
MIN_EACH = 2
PENDING_SHARE = 0.5  # the hold-out share of a skill whose evidence is pending
PENDING_HELD_OUT = 4  # held-out episodes a skill needs before its share can drop back
BALANCE_SHARE = 2 / 3  # the share of a skill whose held-out arm trails on the episode's task


@dataclass(frozen=True)
class Score:
    """One skill's record on the scoreboard: the pooled counters and, per task, the two arms
    (`strata`: (injected, injected_pass, held_out, held_out_pass) per task)."""

    injected: int = 0
    injected_pass: int = 0
    held_out: int = 0
    held_out_pass: int = 0
    confidence: float = 0.9
    strata: tuple[Cell, ...] = ()

    @property
    def rate_injected(self) -> float | None:
        return self.injected_pass / self.injected if self.injected else None

    @property
    def rate_held_out(self) -> float | None:
        return self.held_out_pass / self.held_out if self.held_out else None

    @property
    def lift(self) -> float | None:
        """The pooled lift (shown; retirement decides on the stratified one)."""
        a, b = self.rate_injected, self.rate_held_out
        return None if a is None or b is None else a - b

    @property
    def interval(self) -> tuple[float, float] | None:
        """Newcombe's interval on the pooled counts (shown; not what retires)."""
        return newcombe(
            self.injected_pass, self.injected, self.held_out_pass, self.held_out, self.confidence
        )

    @cached_property
    def within(self) -> Stratified:
        """The lift compared within each task and combined (what retirement decides on)."""
        return stratified(self.strata, self.confidence)

    @property
    def harmful(self) -> bool:
        """Confidently negative: at least MIN_EACH episodes in each arm over the tasks where
        both arms were seen, and the stratified interval below 0."""
        st = self.within
        few = st.injected < MIN_EACH or st.held_out < MIN_EACH
        return not few and st.below_zero

    def as_dict(self) -> dict[str, Any]:
        iv = self.interval
        st = self.within
        siv = st.interval
        return {
            "injections": self.injected,
            "injected_passes": self.injected_pass,
            "held_out": self.held_out,
            "held_out_passes": self.held_out_pass,
            "pass_rate_injected": _round(self.rate_injected),
            "pass_rate_held_out": _round(self.rate_held_out),
            "lift": _round(self.lift),
            "interval": [round(iv[0], 4), round(iv[1], 4)] if iv is not None else None,
            "stratified": {
                "tasks": st.tasks,
                "injected": st.injected,
                "held_out": st.held_out,
                "lift": _round(st.lift),
                "interval": [round(siv[0], 4), round(siv[1], 4)] if siv is not None else None,
            },
            "confidence": self.confidence,
        }

    def evidence(self) -> str:
        """One line: the numbers a retirement is based on."""
        iv = self.interval
        shown = f"[{iv[0]:+.3f}, {iv[1]:+.3f}]" if iv is not None else "n/a"
        st = self.within
        siv = st.interval
        sshown = f"[{siv[0]:+.3f}, {siv[1]:+.3f}]" if siv is not None else "n/a"
        return (
            f"injected {self.injected} (passed {self.injected_pass}, rate "
            f"{_pct(self.rate_injected)}), held out {self.held_out} (passed "
            f"{self.held_out_pass}, rate {_pct(self.rate_held_out)}), pooled lift "
            f"{_signed(self.lift)} {shown}; within tasks ({st.tasks} with both arms, "
            f"{st.injected} injected and {st.held_out} held out) lift {_signed(st.lift)}, "
            f"{self.confidence:.0%} interval {sshown}"
        )


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def score_of(unit: Any, confidence: float = 0.9, strata: Strata | None = None) -> Score:
    """The scoreboard record a unit's counters give (0 for counters it does not carry), with
    its per-task counts from `strata` (the record `evolve.skills._strata` keeps)."""
    a, b, c, d = (int(getattr(unit, name, None) or 0) for name in SKILL_COUNTERS)
    cells = tuple(cell for _task, cell in sorted((strata or {}).get(str(unit.id), {}).items()))
    return Score(a, b, c, d, confidence=confidence, strata=cells)


def holdout_shares(
    units: Iterable[Any],
    base: float,
    confidence: float,
    strata: Strata | None = None,
    task: str | None = None,
) -> dict[str, float]:
    """Each skill's hold-out share in a training episode: PENDING_SHARE while its evidence is
    pending (fewer than PENDING_HELD_OUT held-out episodes, or a negative lift so far), else
    `base` (`skills.holdout_share`); nothing when `base` is 0 (hold-out off).

    With the per-task record (`strata`) the evidence is the one retirement decides on (the
    tasks with both arms), and the episode's `task` balances the arms within it, a biased coin
    (Efron 1971): a skill whose held-out arm on this task trails its injected arm is held out
    at BALANCE_SHARE, one whose held-out arm leads at `base`. The task and the record are
    fixed before the draw, so the hold-out stays randomized within the task."""
    out: dict[str, float] = {}
    if base <= 0:
        return out
    for unit in units:
        if getattr(unit, "kind", None) != "skill":
            continue
        score = score_of(unit, confidence, strata)
        if strata is None:
            held, lift = score.held_out, score.lift
        else:
            within = score.within
            held, lift = within.held_out, within.lift
        pending = held < PENDING_HELD_OUT or (lift is not None and lift < 0)
        share = max(base, PENDING_SHARE) if pending else base
        if strata is not None and task is not None:
            cell = strata.get(str(unit.id), {}).get(task)
            if cell is not None and cell[2] < cell[0]:
                share = max(share, BALANCE_SHARE)
            elif cell is not None and cell[2] > cell[0]:
                share = base
        out[str(unit.id)] = share
    return out


def tally(outcomes: Iterable[Outcome]) -> dict[str, dict[str, int]]:
    """Counter increments per skill id from episodes' (injected, held_out, passed).

    An episode with a skill held out counts for that skill's held-out arm only; an episode
    with nothing held out counts for every injected skill's injected arm (see the module
    doc: the two arms then differ by exactly one skill)."""
    out: dict[str, dict[str, int]] = {}
    for injected, held, passed, _task, before in outcomes:
        if not before:  # the pooled counters: only tasks that failed before
            continue
        ids, arm = (held, "held_out") if held else (injected, "injected")
        for ident in dict.fromkeys(ids):
            entry = out.setdefault(ident, dict.fromkeys(SKILL_COUNTERS, 0))
            entry[arm] += 1
            entry[f"{arm}_pass"] += int(bool(passed))
    return out


def counted(unit: Any, increments: Mapping[str, int]) -> dict[str, int]:
    """The unit's skill counters after `increments`."""
    return {
        name: int(getattr(unit, name, None) or 0) + int(increments.get(name, 0))
        for name in SKILL_COUNTERS
    }


def board(
    units: Iterable[Any], confidence: float = 0.9, strata: Strata | None = None
) -> list[dict[str, Any]]:
    """Every skill unit (any status) with its scoreboard record, by shelf then id.

    Raises:
        EvolveError: two active skills share an id: the sentence `run` and `train` give
            (`evolve.skills._skill.skills_of`), not two rows that read one record.
    """
    units = list(units)
    skills_of(units)
    rows: list[dict[str, Any]] = []
    for unit in units:
        if getattr(unit, "kind", None) != "skill":
            continue
        shelf = str(getattr(unit, "shelf", None) or "general")
        topic = getattr(unit, "topic", None)
        rows.append(
            {
                "id": unit.id,
                "shelf": shelf,
                "topic": topic,
                "where": f"topics/{topic}" if shelf == "topic" and topic else "general",
                "status": unit.status,
                "recipe": unit.recipe,
                **_trigger_of(unit, shelf, topic),
                "lesson": unit.text,
                **score_of(unit, confidence, strata).as_dict(),
            }
        )
    rows.sort(key=lambda r: (r["where"] != "general", r["where"], r["id"]))
    return rows


def _trigger_of(unit: Any, shelf: str, topic: str | None) -> dict[str, str]:
    """The trigger selection matches the skill by (`evolve.skills._select.skill_of`) and where
    it comes from: the file (`file`), the topic's name for a topic skill written without one
    (`topic`), or nothing: a general skill without one applies to every task, ranked after
    the skills whose trigger matches (`any`)."""
    given = str(getattr(unit, "trigger", None) or "")
    if given:
        return {"trigger": given, "trigger_from": "file"}
    if shelf == "topic" and topic:
        return {"trigger": topic, "trigger_from": "topic"}
    return {"trigger": "", "trigger_from": "any"}


def trigger_shown(row: Mapping[str, Any]) -> str:
    """A row's trigger as `evolve skills` and the report show it."""
    if row.get("trigger_from") == "topic":
        return f"{row['trigger']} (its topic: the file gives no trigger)"
    if row.get("trigger_from") == "any":
        return "any task, after the skills whose trigger matches (the file gives no trigger)"
    return str(row["trigger"])


# --- proposals (pure: ops for the applier) ------------------------------------------------
def count_ops(units: Iterable[Any], outcomes: Iterable[Outcome]) -> list[Any]:
    """`count` ops moving the scoreboard counters of the skills in `outcomes` (episodes'
    injected ids, held-out ids, passed). Ids of units that are not skills are ignored."""
    from evolve.ops import Op

    by_id = {u.id: u for u in units if getattr(u, "kind", None) == "skill"}
    ops = []
    for ident, inc in sorted(tally(outcomes).items()):
        unit = by_id.get(ident)
        if unit is None:
            continue
        ops.append(Op(op="count", unit=unit.with_(**counted(unit, inc)), reason="scoreboard"))
    return ops


def retired_at(unit: Any, now: datetime | None = None) -> str:
    """The end of a retired skill's validity (`valid_to`), as a revoke records it: `now`
    to the second, or the skill's own `valid_from` when a clock behind it would put the end
    before the start (`evolve show` prints "held from ... to ...")."""
    from evolve._format._render import learned_time

    when = (now or datetime.now(UTC)).replace(microsecond=0)
    if unit.valid_from and when < learned_time(unit):
        return str(unit.valid_from)
    return when.isoformat()


def retire_ops(
    units: Iterable[Any],
    confidence: float,
    strata: Strata | None = None,
    now: datetime | None = None,
) -> list[tuple[Any, Score]]:
    """A retirement op for each active skill whose lift is confidently negative, with its
    score. The op is a `revoke` whose unit has status `retired`, the evidence as reason and
    the retire time as `valid_to` (`retired_at`; `now`, the wall clock unless given)."""
    from evolve.ops import Op

    out = []
    for unit in sorted(units, key=lambda u: u.id):
        if getattr(unit, "kind", None) != "skill" or unit.status != "active":
            continue
        score = score_of(unit, confidence, strata)
        if score.harmful:
            reason = f"retired by the scoreboard: {score.evidence()}"
            retired = unit.with_(status="retired", reason=reason, valid_to=retired_at(unit, now))
            out.append((Op(op="revoke", unit=retired, reason=reason), score))
    return out


def _after(ops: Sequence[Any], units: Iterable[Any]) -> tuple[dict[str, Any], set[str]]:
    """The skills as `ops` leave them (evicted ones gone) and the ids whose lesson they
    rewrite."""
    before = {u.id: u for u in units if getattr(u, "kind", None) == "skill"}
    final = dict(before)
    for op in ops:
        if op.op == "evict":
            final.pop(op.id, None)
        elif getattr(op.unit, "kind", None) == "skill":
            final[op.id] = op.unit
    rewritten = {
        ident
        for ident, unit in final.items()
        if ident in before and _lesson(unit) != _lesson(before[ident])
    }
    return final, rewritten


def strata_after(
    root: Any, ops: Sequence[Any], units: Iterable[Any], outcomes: Sequence[Outcome]
) -> dict[str, bytes | None]:
    """The per-task record's extra file for a skills batch (as `count_ops_after` counts):
    the batch's outcomes added for the skills that stay, a rewritten lesson's entry empty."""
    final, rewritten = _after(ops, units)
    keep = [i for i in final if i not in rewritten]
    return strata_files(root, outcomes, keep=keep, restart=rewritten)


def count_ops_after(
    ops: Sequence[Any],
    units: Iterable[Any],
    outcomes: Iterable[Outcome],
) -> list[Any]:
    """`count` ops for `outcomes` that go in the same apply as `ops` (a skills batch): each
    counts on top of the unit as the last of `ops` on its id leaves it (so the applier, which
    walks the ops in order, sees only the counters change), and skips an evicted unit.

    A skill whose lesson `ops` rewrite (a MERGE or REVISE that changes its text, a promotion
    into it) is a new treatment: its record restarts at 0, and the batch's episodes, which
    ran with the old lesson, are not counted on it."""
    from evolve.ops import Op

    final, rewritten = _after(ops, units)
    out = count_ops([u for i, u in final.items() if i not in rewritten], outcomes)
    for ident in sorted(rewritten):
        unit = final[ident]
        if any(int(getattr(unit, name, None) or 0) for name in SKILL_COUNTERS):
            zero = dict.fromkeys(SKILL_COUNTERS, 0)
            out.append(Op(op="count", unit=unit.with_(**zero), reason=RESTART_REASON))
    return out


RESTART_REASON = "scoreboard: the lesson was rewritten; its record restarts"


def _lesson(unit: Any) -> str:
    return " ".join(str(unit.text).split())


def retire_message(op: Any, score: Score) -> tuple[str, str]:
    """The subject and body of the commit that retires `op`'s skill: its evidence, pooled and
    within tasks (what `settle` in `evolve.train._scoreboard` commits)."""
    where = getattr(op.unit, "topic", None) or "general"
    iv = score.interval or (float("nan"), float("nan"))
    st = score.within
    siv = st.interval or (float("nan"), float("nan"))
    body = "\n".join(
        [
            f"Retired skill {op.id} ({where}): its lift when injected is confidently negative.",
            "",
            f"trigger: {getattr(op.unit, 'trigger', '') or ''}",
            f"lesson: {op.unit.text}",
            "",
            f"injections: {score.injected}",
            f"pass rate injected: {score.injected_pass}/{score.injected} "
            f"({_pct(score.rate_injected)})",
            f"pass rate held out: {score.held_out_pass}/{score.held_out} "
            f"({_pct(score.rate_held_out)})",
            f"lift (pooled): {_signed(score.lift)}",
            f"interval (pooled, {score.confidence:.0%}, Newcombe): [{iv[0]:+.3f}, {iv[1]:+.3f}]",
            f"tasks with both arms: {st.tasks} ({st.injected} injected, {st.held_out} held out)",
            f"lift within tasks (Mantel-Haenszel): {_signed(st.lift)}",
            f"interval within tasks ({score.confidence:.0%}, stratified score, "
            f"Miettinen-Nurminen): [{siv[0]:+.3f}, {siv[1]:+.3f}]",
        ]
    )
    return f"skills: retire {op.id} (lift within tasks {_signed(score.within.lift)})", body
