"""The scoreboard's per-task record: each skill's two arms counted within each task.

A skill's pooled counters (`injected`, `injected_pass`, `held_out`, `held_out_pass`, in the
shelf's `_counters.yaml`) mix tasks: the two arms hold different tasks by chance, and a skill
whose harm lives on 2 of 9 tasks is drowned by the tasks where both arms agree. The task is
fixed before the hold-out is drawn, so within one task the comparison is randomized; the
scoreboard's stratified estimator (`evolve.stats.stratified`) compares the arms
within each task and combines the tasks. For that it needs the counts per task:

    memory/skills/_strata.yaml
    <skill id>:
      <task id>: [injected, injected_pass, held_out, held_out_pass]

It counts every eligible training episode (skills selected), whether or not its task failed
before (the pooled counters count only those): within a task nothing dilutes the comparison.
Written by the applier as an extra file with the commit that counts the episodes (a skills
batch, or a scoreboard count commit), so a resumed stream reads what the committed episodes
left. It is evidence like the counters: a revert takes back what the reverted commit added
(`take_back`, never a conflict), and a rewritten lesson's entry restarts with its counters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import yaml

from evolve._format import _limits as limits
from evolve._yaml import load as load_yaml
from evolve.errors import EvolveError
from evolve.memory._counters import arms_fault

STRATA_PATH = "memory/skills/_strata.yaml"
Cell = tuple[int, int, int, int]  # injected, injected_pass, held_out, held_out_pass
Strata = dict[str, dict[str, Cell]]  # skill id -> task id -> cell
# One episode's scoreboard outcome: (injected ids, held-out ids, passed, task id, whether the
# task failed in an earlier training episode: `evolve.skills._failed`).
Outcome = tuple[Sequence[str], Sequence[str], bool, str, bool]
_DUMPER: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _cell(skill: object, task: object, value: object) -> Cell:
    ok = (
        isinstance(value, list)
        and len(value) == 4
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    )
    if not ok or not isinstance(value, list):
        raise EvolveError(
            f"{STRATA_PATH}: {skill!r}/{task!r} must be four counts "
            "[injected, injected_pass, held_out, held_out_pass]."
        )
    a, b, c, d = (int(v) for v in value)
    fault = arms_fault(a, b, c, d)  # the pooled counters' check (`_counters.yaml`)
    if fault:
        raise EvolveError(f"{STRATA_PATH}: {skill!r}/{task!r} {fault}.")
    return a, b, c, d


def parse_strata(raw: str | None) -> Strata:
    """The record's counts (empty for no text). Raises EvolveError naming the file."""
    if not raw or not raw.strip():
        return {}
    try:
        data = load_yaml(raw, STRATA_PATH)  # a key given twice: one sentence
    except yaml.YAMLError as exc:
        raise EvolveError(f"{STRATA_PATH} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise EvolveError(f"{STRATA_PATH} must map skill ids to their tasks' counts.")
    out: Strata = {}
    for skill, tasks in data.items():
        if not isinstance(skill, str) or not isinstance(tasks, dict):
            raise EvolveError(f"{STRATA_PATH}: entry {skill!r} must map task ids to counts.")
        cells: dict[str, Cell] = {}
        for task, value in tasks.items():
            if not isinstance(task, str):
                raise EvolveError(f"{STRATA_PATH}: entry {skill!r}: task ids must be text.")
            cells[task] = _cell(skill, task, value)
        out[skill] = cells
    return out


def dump_strata(strata: Mapping[str, Mapping[str, Cell]]) -> str:
    """Canonical text (sorted; empty cells and skills dropped; empty text for none)."""
    data = {
        skill: {task: list(cell) for task, cell in sorted(tasks.items()) if any(cell)}
        for skill, tasks in sorted(strata.items())
    }
    data = {skill: tasks for skill, tasks in data.items() if tasks}
    if not data:
        return ""
    return str(yaml.dump(data, Dumper=_DUMPER, sort_keys=True, width=10_000,
                         default_flow_style=None))  # fmt: skip


def _decoded(data: bytes | None) -> str:
    try:
        return data.decode("utf-8") if data else ""
    except UnicodeDecodeError:
        raise EvolveError(f"{STRATA_PATH} is not UTF-8 text.") from None


def _text(root: Path) -> str:
    """The record's text in the workspace at `root` ("" when there is none)."""
    full = root / STRATA_PATH
    return _decoded(limits.read_bytes(root, STRATA_PATH)) if full.is_file() else ""


def load_strata(root: Path) -> Strata:
    """The record as it is in the workspace at `root`."""
    return parse_strata(_text(root))


def tally_tasks(outcomes: Iterable[Outcome]) -> Strata:
    """Per skill and task, the increments `outcomes` give (the arms as
    `evolve.skills._scoreboard.tally` assigns them: a held-out episode counts for its held-out
    skill only, an episode with nothing held out for every injected skill)."""
    out: dict[str, dict[str, list[int]]] = {}
    for injected, held, passed, task, _before in outcomes:
        ids, base = (held, 2) if held else (injected, 0)
        for ident in dict.fromkeys(ids):
            cell = out.setdefault(ident, {}).setdefault(task, [0, 0, 0, 0])
            cell[base] += 1
            cell[base + 1] += int(bool(passed))
    return {s: {t: (c[0], c[1], c[2], c[3]) for t, c in ts.items()} for s, ts in out.items()}


def added(strata: Strata, increments: Strata, restart: Iterable[str] = ()) -> Strata:
    """`strata` plus `increments`; the skills in `restart` (a rewritten lesson) start empty
    and take no increments (the episodes ran with the old lesson)."""
    gone = set(restart)
    out: Strata = {s: dict(ts) for s, ts in strata.items() if s not in gone}
    for skill, tasks in increments.items():
        if skill in gone:
            continue
        mine = out.setdefault(skill, {})
        for task, inc in tasks.items():
            cur = mine.get(task, (0, 0, 0, 0))
            mine[task] = (
                cur[0] + inc[0], cur[1] + inc[1], cur[2] + inc[2], cur[3] + inc[3]
            )  # fmt: skip
    return out


def strata_files(
    root: Path, outcomes: Iterable[Outcome], *, keep: Iterable[str] | None = None,
    restart: Iterable[str] = (),
) -> dict[str, bytes | None]:  # fmt: skip
    """The applier's `extra_files` entry that adds `outcomes` to the record (only for the
    skills in `keep` when given: those the count ops count) and restarts `restart`; nothing
    when the record would not change."""
    raw = _text(root)
    inc = tally_tasks(outcomes)
    if keep is not None:
        kept = set(keep)
        inc = {s: ts for s, ts in inc.items() if s in kept}
    text = dump_strata(added(parse_strata(raw), inc, restart))
    if raw == text:
        return {}
    return {STRATA_PATH: text.encode("utf-8") if text else None}


def _read(data: bytes | None) -> Strata:
    return parse_strata(_decoded(data))


def dropped(before: bytes | None, after: bytes | None) -> set[str]:
    """The skills whose entry a (non-revert) commit dropped from the record: a restart."""
    a = _read(after)
    return {skill for skill in _read(before) if skill not in a}


def take_back(
    before: bytes | None, after: bytes | None, now: bytes | None, restarted: Iterable[str] = ()
) -> bytes | None:
    """The record `now` less what one commit changed from `before` to `after` (for `evolve
    revert`): counts are evidence, so what later commits added stays, and a revert never
    conflicts on this file. A count the commit reset (a restart) comes back; counts stop at 0.
    A skill in `restarted` (its record restarted by a later commit: `dropped`) keeps its
    entry as it is now: the commit's counts were dropped with the old lesson's record."""
    b, a, n = _read(before), _read(after), _read(now)
    out: Strata = {}
    zero = (0, 0, 0, 0)
    kept = set(restarted)
    for skill in {*b, *a, *n}:
        if skill in kept:
            out[skill] = n.get(skill, {})
            continue
        bs, as_, ns = b.get(skill, {}), a.get(skill, {}), n.get(skill, {})
        cells: dict[str, Cell] = {}
        for task in {*bs, *as_, *ns}:
            was, left, cur = bs.get(task, zero), as_.get(task, zero), ns.get(task, zero)
            got = [max(0, cur[i] - (left[i] - was[i])) for i in range(4)]
            got[1], got[3] = min(got[1], got[0]), min(got[3], got[2])
            cells[task] = (got[0], got[1], got[2], got[3])
        out[skill] = cells
    text = dump_strata(out)
    return text.encode("utf-8") if text else None
