"""The tasks that have failed in training so far: the scoreboard's stratum (issue 13, item 5).

A skill's harm or help shows only on tasks it can change; most training episodes are of tasks
the agent passes with or without any skill, and counting them dilutes the comparison (the
sim's wrong lesson hurts only its app's verify tasks, about 2 of 9). So the scoreboard counts
an episode only when its task has failed in an EARLIER training episode of this workspace: a
covariate fixed before the episode runs (it depends on history strictly before it, never on
the episode's arm), so both arms are restricted alike and the hold-out stays randomized
within the stratum.

The record is `memory/skills/_failed_tasks.yaml` (a sorted list of task ids), written by the
applier as an extra file with the commit that first needs it (a skills batch, or a scoreboard
count commit), so a resumed or restarted stream reads what the committed episodes left, and an
episode whose commit was lost is replayed with the record as it stood before it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

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


def parse_failed(raw: str | None) -> set[str]:
    """The task ids in the record's text (empty for none)."""
    if not raw or not raw.strip():
        return set()
    try:
        data = load_yaml(raw, FAILED_PATH)  # a key given twice: one sentence
    except yaml.YAMLError as exc:
        raise EvolveError(f"{FAILED_PATH} is not valid YAML: {exc}") from exc
    if data is None:
        return set()
    if not isinstance(data, list) or not all(isinstance(t, str) for t in data):
        raise EvolveError(f"{FAILED_PATH} must be a list of task ids.")
    return set(data)


def dump_failed(tasks: Iterable[str]) -> str:
    """The record's text for `tasks` (sorted, at most MAX_TASKS; empty text for none)."""
    ids = sorted(set(tasks))[:MAX_TASKS]
    if not ids:
        return ""
    return str(yaml.safe_dump(ids, default_flow_style=False, allow_unicode=True))


def _text(root: Path) -> str | None:
    """The record's text in the workspace at `root` (None when there is none)."""
    full = root / FAILED_PATH
    if not full.is_file():
        return None
    try:
        return full.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise EvolveError(f"{FAILED_PATH} is not UTF-8 text.") from None


def load_failed(root: Path) -> set[str]:
    """The record as it is in the workspace at `root`."""
    return parse_failed(_text(root))


def failed_files(root: Path, tasks: Iterable[str]) -> dict[str, bytes | None]:
    """The applier's `extra_files` entry that writes `tasks` as the record (nothing when the
    workspace already holds exactly that)."""
    raw = _text(root) or ""
    text = dump_failed(tasks)
    if raw == text:
        return {}
    return {FAILED_PATH: text.encode("utf-8") if text else None}


def take_back(before: bytes | None, after: bytes | None, now: bytes | None) -> bytes | None:
    """The record `now` less what one commit changed from `before` to `after` (for `evolve
    revert`): the tasks it recorded as failed are taken out and the ones it dropped come back;
    what later commits recorded stays. Evidence like the per-task counts: never a conflict.
    (A task the commit recorded that failed again later stays out: a later batch does not
    record a task already on the list.)"""

    def ids(raw: bytes | None) -> set[str]:
        return parse_failed(raw.decode("utf-8") if raw else None)

    b, a, n = ids(before), ids(after), ids(now)
    text = dump_failed((n - (a - b)) | (b - a))
    return text.encode("utf-8") if text else None
