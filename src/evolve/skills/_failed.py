"""The tasks that have failed in training so far: the scoreboard's stratum.

A skill's harm or help shows only on tasks it can change; most training episodes are of tasks
the agent passes with or without any skill, and counting them dilutes the comparison (the
sim's wrong lesson hurts only its app's verify tasks, about 2 of 9). So the scoreboard counts
an episode only when its task has failed in an EARLIER training episode of this workspace: a
covariate fixed before the episode runs (it depends on history strictly before it, never on
the episode's arm), so both arms are restricted alike and the hold-out stays randomized
within the stratum.

The record is `memory/skills/_failed_tasks.yaml`: each task that failed, with the number of
training episodes that failed it (`pay_back-verify-4: 2`), written by the applier as an extra
file with the commit that holds the episode (a skills batch, or a scoreboard count commit), so
a resumed or restarted stream reads what the committed episodes left, and an episode whose
commit was lost is replayed with the record as it stood before it.

The count, not a list, is what makes a revert exact: `evolve revert` of one commit takes back
the episodes that commit counted (:func:`take_back`), and a task stays in the record while
any episode that was not reverted failed it (a later batch that failed the task again counted
it, so reverting the first batch leaves it in the stratum). A file written by an older evolve
(a sorted list of task ids) still reads: each task with one failing episode.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from evolve._format import _limits as limits
from evolve._yaml import load as load_yaml
from evolve.errors import EvolveError

FAILED_PATH = "memory/skills/_failed_tasks.yaml"
MAX_TASKS = 10_000
# Said by `evolve skills` and the report when skills exist but no task has failed: the
# scoreboard compares task success, so episodes rejected only by the user's preference checks
# (the task itself done) move no lift, and a reader should not take the zeros for a verdict.
NO_TASK_FAILED = (
    "No task has failed in training yet: the scoreboard compares task success (the task done), "
    "and episodes rejected only by preference checks pass it, so no lift can move from 0 until a "
    "task fails (a lift shown as '-' has no episode counted yet)."
)


def parse_failed(raw: str | None) -> dict[str, int]:
    """The failing episodes per task in the record's text (tasks with none left out; an old
    list of task ids reads as one episode each)."""
    if not raw or not raw.strip():
        return {}
    try:
        data = load_yaml(raw, FAILED_PATH)  # a key given twice: one sentence
    except yaml.YAMLError as exc:
        raise EvolveError(f"{FAILED_PATH} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if isinstance(data, list) and all(isinstance(t, str) for t in data):
        return dict.fromkeys(data, 1)
    if isinstance(data, dict) and all(
        isinstance(t, str) and type(n) is int and n >= 0 for t, n in data.items()
    ):
        return {t: n for t, n in data.items() if n > 0}
    raise EvolveError(
        f"{FAILED_PATH} must map each task id to the number of training episodes that failed it."
    )


def dump_failed(counts: Mapping[str, int]) -> str:
    """The record's text for `counts` (sorted by task, at most MAX_TASKS; empty text for
    none)."""
    ids = sorted(t for t, n in counts.items() if n > 0)[:MAX_TASKS]
    if not ids:
        return ""
    return str(
        yaml.safe_dump(
            {t: counts[t] for t in ids},
            default_flow_style=False,
            allow_unicode=True,
            sort_keys=False,
        )
    )


def fail(counts: dict[str, int], task_id: str) -> None:
    """Count one more training episode that failed `task_id`."""
    counts[task_id] = counts.get(task_id, 0) + 1


def _text(root: Path) -> str | None:
    """The record's text in the workspace at `root` (None when there is none)."""
    full = root / FAILED_PATH
    if not full.is_file():
        return None
    try:
        return limits.read_bytes(root, FAILED_PATH).decode("utf-8")  # no link out
    except UnicodeDecodeError:
        raise EvolveError(f"{FAILED_PATH} is not UTF-8 text.") from None


def load_failed(root: Path) -> dict[str, int]:
    """The record as it is in the workspace at `root` (task -> failing episodes)."""
    return parse_failed(_text(root))


def failed_files(root: Path, counts: Mapping[str, int]) -> dict[str, bytes | None]:
    """The applier's `extra_files` entry that writes `counts` as the record (nothing when the
    workspace already holds exactly that)."""
    raw = _text(root) or ""
    text = dump_failed(counts)
    if raw == text:
        return {}
    return {FAILED_PATH: text.encode("utf-8") if text else None}


def _read(raw: bytes | None) -> dict[str, int]:
    return parse_failed(raw.decode("utf-8") if raw else None)


def take_back(before: bytes | None, after: bytes | None, now: bytes | None) -> bytes | None:
    """The record `now` less what one commit changed from `before` to `after` (for `evolve
    revert`): the failing episodes it counted are taken off (a revert's revert puts back the
    ones that revert took off); what every other commit counted stays, so a task stays while
    an episode that was not reverted failed it. Evidence like the per-task counts: never a
    conflict."""
    b, a, n = _read(before), _read(after), _read(now)
    out = {t: n.get(t, 0) - (a.get(t, 0) - b.get(t, 0)) for t in {*b, *a, *n}}
    text = dump_failed({t: k for t, k in out.items() if k > 0})
    return text.encode("utf-8") if text else None


def git_revert_fix(
    before: bytes | None,
    after: bytes | None,
    parent: bytes | None,
    left: bytes | None,
    head: bytes | None,
) -> bytes | None:
    """The record at `head` as it would be had a plain `git revert` of the commit that took
    the record from `before` to `after` done what `evolve revert` does: git left `left` where
    the record was `parent`; `take_back` would have left `take_back(before, after, parent)`.
    The difference, task by task, is laid over `head` (later commits' counts kept). Git's
    line-by-line revert agrees whenever it did not conflict; a conflict resolved by hand (or
    a file git deleted that later commits had changed) is set right here."""
    want, got, n = _read(take_back(before, after, parent)), _read(left), _read(head)
    out = {t: n.get(t, 0) + want.get(t, 0) - got.get(t, 0) for t in {*want, *got, *n}}
    text = dump_failed({t: k for t, k in out.items() if k > 0})
    return text.encode("utf-8") if text else None
