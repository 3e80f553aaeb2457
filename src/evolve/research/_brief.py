"""The capability brief: which module to search first, from what went wrong in training.

The brief reads the training episodes' records (`generations/runs/train-*.jsonl`, one JSON
record per line, as `evolve train` writes them; scoring runs are left out, so the dev and
holdout splits never steer the search) and counts four kinds of failure, each pointing at
the module that owns it:

=========================================  =========  ==========================================
failure (per training episode)             module     why
=========================================  =========  ==========================================
a rule (a remembered preference) broken,   memory     what of memory reaches the agent decides
in an episode, by a rule broken in two                whether a known preference is recalled
or more episodes
the same violations, at half weight        context    what survives the prompt's budget decides
                                                      whether a recalled preference is seen
a failed tool call, or a reply the agent   tools      how tools are described and errors
could not use                                         recovered
a task left unfinished (not completed,     workflow   the loop: plan, act, check before
the turn limit hit, or a failure named)               finishing
a task family failed in two or more        skills     a procedure the agent keeps missing
episodes                                              could be written down once
=========================================  =========  ==========================================

Each count is divided by the number of episodes read; modules are ranked by that rate (ties,
and modules nothing points at, in the harness's own order). The brief's text is an abstract
query per module with a failure, in rank order: it names capability gaps, never a rule, tool
or task (ScholarEvolve §C.2: abstracted questions omit domain entities), and is what the
relevance-ranked pick reads.

Records are input from disk: a line that is not a JSON object of the expected fields is
skipped and counted, never trusted.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evolve.research._card import MODULES

if TYPE_CHECKING:
    from evolve.workspace import Workspace

RUNS = "generations/runs"  # evolve.workspace.RUNS
MAX_RECORDS = 100_000  # the newest records read, at most

# The question each module's failures raise, in words the cards use.
GAPS: Mapping[str, str] = {
    "memory": "recall the remembered user preferences relevant to the task: retrieve memory "
    "by relevance and recency",
    "context": "keep the relevant preferences in the prompt under a context budget: select "
    "and order what enters the context window",
    "tools": "recover from failed tool calls and unusable replies: clear tool documentation "
    "on demand and error feedback",
    "workflow": "finish the task correctly: plan, act, verify and refine before finishing",
    "skills": "reuse procedures that recur across tasks: induce reusable skills and workflows "
    "from past episodes",
}
WEIGHT_CONTEXT = 0.5


@dataclass(frozen=True)
class Brief:
    """What training failures say about where to search.

    `module_order`: all five modules, the first to search first. `text`: the capability gaps
    in that order (the relevance pick's query). `reasons`: per module, one line per kind of
    failure counted. `scores`: per module, failures per episode.
    """

    module_order: list[str]
    text: str
    reasons: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scores: Mapping[str, float] = field(default_factory=dict)
    episodes: int = 0
    skipped: int = 0  # lines that were not a usable record

    def to_json(self) -> dict[str, Any]:
        return {
            "module_order": list(self.module_order),
            "text": self.text,
            "scores": dict(self.scores),
            "reasons": {m: list(r) for m, r in self.reasons.items()},
            "episodes": self.episodes,
            "skipped": self.skipped,
        }


def capability_brief(ws: Workspace) -> Brief:
    """The brief of the workspace `ws`'s training records (every module at score 0 and the
    harness's order when there are none).

    Raises:
        PathRefused: `generations/runs` or a record file is a link out of the workspace.
    """
    records, skipped = _records(ws.root)
    return brief_of(records, skipped)


def brief_of(records: list[Mapping[str, Any]], skipped: int = 0) -> Brief:
    """The brief of training episode records (dicts as `evolve train` writes them)."""
    n = len(records)
    rule_episodes: Counter[str] = Counter()
    family_failed: Counter[str] = Counter()
    for r in records:
        rule_episodes.update(set(r["violations"]))
        if not r["accepted"]:
            family_failed[r["family"]] += 1
    recurring = {rule for rule, k in rule_episodes.items() if k >= 2}
    violations = sum(len(set(r["violations"]) & recurring) for r in records)
    failed_calls = sum(_failed_calls(r) for r in records)
    bad_replies = sum(_bad_replies(r) for r in records)
    unfinished = sum(1 for r in records if _unfinished(r))
    repeated = {f: k for f, k in family_failed.items() if k >= 2}
    counts = {
        "memory": float(violations),
        "context": WEIGHT_CONTEXT * violations,
        "tools": float(failed_calls + bad_replies),
        "workflow": float(unfinished),
        "skills": float(sum(repeated.values())),
    }
    reasons: dict[str, tuple[str, ...]] = {m: () for m in MODULES}
    if violations:
        top = ", ".join(
            f"{rule} ({rule_episodes[rule]})" for rule in _top(rule_episodes, recurring)
        )
        said = f"{violations} violations of {len(recurring)} recurring rules: {top}"
        reasons["memory"] = (f"{said} (recurring preference violations -> memory)",)
        reasons["context"] = (f"{said} (at half weight: the context may have dropped them)",)
    if failed_calls or bad_replies:
        reasons["tools"] = (
            f"{failed_calls} failed tool calls, {bad_replies} unusable replies "
            f"(failed calls -> tools)",
        )
    if unfinished:
        reasons["workflow"] = (
            f"{unfinished} of {n} episodes left the task unfinished (unfinished tasks -> workflow)",
        )
    if repeated:
        fams = ", ".join(
            f"{f} ({repeated[f]})" for f in sorted(repeated, key=lambda f: (-repeated[f], f))[:5]
        )
        reasons["skills"] = (
            f"{sum(repeated.values())} failed episodes in families that failed twice or more: "
            f"{fams} (recurring failures of one kind of task -> skills)",
        )
    scores = {m: round(counts[m] / n, 6) if n else 0.0 for m in MODULES}
    order = sorted(MODULES, key=lambda m: (-scores[m], MODULES.index(m)))
    text = " ".join(GAPS[m] + "." for m in order if scores[m] > 0)
    return Brief(order, text, reasons, scores, n, skipped)


def _top(counts: Counter[str], keep: set[str]) -> list[str]:
    return sorted(keep, key=lambda k: (-counts[k], k))[:5]


def _calls(r: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for turn in r["turns"]:
        if isinstance(turn, dict) and isinstance(turn.get("call"), dict):
            yield turn["call"]


def _failed_calls(r: Mapping[str, Any]) -> int:
    return sum(1 for call in _calls(r) if call.get("ok") is False)


def _bad_replies(r: Mapping[str, Any]) -> int:
    return sum(1 for t in r["turns"] if isinstance(t, dict) and t.get("bad_reply"))


def _unfinished(r: Mapping[str, Any]) -> bool:
    state = r.get("final_state")
    not_done = isinstance(state, dict) and state.get("completed") is False
    return bool(not_done or r.get("hit_turn_limit") is True or r.get("failure"))


def _usable(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("split", "train") == "train"
        and isinstance(value.get("violations"), dict)
        and all(isinstance(k, str) for k in value["violations"])
        and isinstance(value.get("turns"), list)
        and isinstance(value.get("accepted"), bool)
        and isinstance(value.get("family"), str)
        and value.get("model_error") is None
    )


def _records(root: Path) -> tuple[list[Mapping[str, Any]], int]:
    """The training records under `root`'s `generations/runs/` (newest `MAX_RECORDS`), and
    the number of lines skipped."""
    from evolve import _confine as confined
    from evolve._format import _limits as limits

    folder = root / RUNS
    if not folder.is_dir():
        return [], 0
    confined.check(root, RUNS)
    names = sorted(
        e.name
        for e in os.scandir(folder)
        if e.name.startswith("train-") and e.name.endswith(".jsonl") and e.is_file()
    )
    records: list[Mapping[str, Any]] = []
    skipped = 0
    for name in names:
        text = limits.read_text(root, f"{RUNS}/{name}")
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except (ValueError, RecursionError):
                skipped += 1
                continue
            if _usable(value):
                records.append(value)
            elif not (isinstance(value, dict) and value.get("split", "train") != "train"):
                skipped += 1
    return records[-MAX_RECORDS:], skipped
