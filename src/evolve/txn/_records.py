"""Generation records: `generations/gen-NNNN.json` and a Markdown summary (the record of why a
generation ended, which the transaction writes when it rolls one back).

The files are ignored by git (writing them never dirties the tree); each record is also
committed to the side ref `refs/evolve/records` (a history of its own), so the record of a
rejected generation survives the reset of the branch and travels with the repository.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from evolve import _confine as confined
from evolve._format._limits import check_size
from evolve.errors import EvolveError
from evolve.workspace import Workspace

RECORDS_REF = "refs/evolve/records"
# A ref per generation's candidate, so `git gc` keeps the commits the report and the records
# link after a rejected generation is reset (module search keeps its own under
# refs/evolve/candidates/<cycle>/<name>).
CANDIDATES = "refs/evolve/candidates/gen"


def candidate_ref(number: int) -> str:
    """The ref that keeps generation `number`'s candidate commit."""
    return f"{CANDIDATES}/{int(number)}"


GENERATION_SCHEMA = 1


class _Record(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A record's fields, typed; the part of pydantic's model API callers use. Read as
    pydantic read it (a number for a float field, a string of digits for a number), with
    msgspec; built ones keep a float field a float (`1` is written `1.0`, as before)."""

    def __post_init__(self) -> None:
        for name in _floats(type(self)):
            value = getattr(self, name)
            if type(value) is int:
                setattr(self, name, float(value))
            elif type(value) is dict and any(type(v) is int for v in value.values()):
                setattr(
                    self, name, {k: float(v) if type(v) is int else v for k, v in value.items()}
                )

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """Raises:
        msgspec.ValidationError (a ValueError): a wrong type, an unknown field."""
        return msgspec.convert(data, cls, strict=False)

    @classmethod
    def model_validate_json(cls, raw: str | bytes) -> Any:
        return msgspec.json.decode(raw, type=cls, strict=False)

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        del mode  # every value is JSON's already
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        return msgspec.structs.replace(self, **(update or {}))


_FLOATS: dict[type, tuple[str, ...]] = {}


def _floats(cls: type) -> tuple[str, ...]:
    """The fields of `cls` that hold a float (or a mapping to floats)."""
    found = _FLOATS.get(cls)
    if found is None:
        found = _FLOATS[cls] = tuple(
            f.name
            for f in msgspec.structs.fields(cls)
            if f.type in (float, float | None, dict[str, float])
        )
    return found


class ScoreRecord(_Record, kw_only=True):
    score: float  # episodes whose task was done with no preference violated
    violation_rate: float
    task_done: float | None = None  # the task-done rate, beside the violation rate
    episodes: int
    tokens_per_episode: float
    cost: float = 0.0  # US dollars of the scored episodes' model requests
    rules: dict[str, float]


class RoleUsageRecord(_Record, kw_only=True):
    """What one role's model requests used in a generation (`evolve.llm._meter`)."""

    requests: int
    input_tokens: int
    output_tokens: int
    tokens: int
    cached: int = 0
    cost: float = 0.0


class GainRecord(_Record, kw_only=True):
    mean: float
    low: float
    high: float
    tasks: int
    pairs: int


class ChangeRecord(_Record, kw_only=True):
    kind: Literal["memory", "prompt"]
    commit: str
    subject: str


class GenerationRecord(_Record, kw_only=True):
    """Everything a person needs to audit one generation."""

    schema_version: Literal[1] = 1
    number: int
    started: str
    finished: str
    dry_run: bool = False
    base: str
    candidate: str
    final: str
    changes: list[ChangeRecord] = msgspec.field(default_factory=list)
    refused: list[str] = msgspec.field(default_factory=list)
    dev_base: ScoreRecord | None = None
    dev: ScoreRecord | None = None
    holdout_base: ScoreRecord | None = None
    holdout: ScoreRecord | None = None
    dev_gain: GainRecord | None = None
    prompt_sizes: dict[str, int] = msgspec.field(default_factory=dict)
    protected_hash: str
    protected_hash_candidate: str
    tests_passed: bool
    tests_output: str = ""
    stream_end: int | None = None
    verdict: Literal["accepted", "rejected"]
    reason: str  # "error: <sentence>" when the generation ended in an error or was killed
    phase: str | None = None  # the step an erroring generation was in
    scored_tree: str | None = None  # the tree id that was scored (the accepted tree is it)
    # every role's tokens and cost in this generation: training, reflection, scoring
    usage: dict[str, RoleUsageRecord] = msgspec.field(default_factory=dict)

    if TYPE_CHECKING:  # any values are given, as to the pydantic model (checked when read)

        def __init__(self, **values: Any) -> None: ...

    @property
    def error(self) -> bool:
        return self.reason.startswith("error: ")

    def outcome(self) -> str:
        """`accepted`, `rejected` or `rejected (error: ...)`."""
        return f"rejected ({self.reason})" if self.error else self.verdict

    def summary_markdown(self) -> str:
        def s(r: ScoreRecord | None) -> str:
            return "-" if r is None else f"{r.score:.3f}"

        gain = self.dev_gain
        lines = [
            f"# Generation {self.number}: {self.outcome()}",
            "",
            f"- reason: {self.reason}",
            f"- base {self.base[:10]} -> candidate {self.candidate[:10]}; HEAD after: {self.final[:10]}",
            f"- dev: {s(self.dev_base)} -> {s(self.dev)}"
            + (
                f" (paired gain {gain.mean:+.3f}, interval [{gain.low:+.3f}, {gain.high:+.3f}])"
                if gain
                else ""
            ),
            f"- holdout (reported, never used to accept): {s(self.holdout_base)} -> {s(self.holdout)}",
            f"- workspace tests: {'passed' if self.tests_passed else 'FAILED'}",
            f"- prompt sizes: {', '.join(f'{k} {v}' for k, v in sorted(self.prompt_sizes.items()))}",
            "- tokens: "
            + (
                ", ".join(f"{role} {u.tokens:,}" for role, u in self.usage.items())
                + f"; cost ${sum(u.cost for u in self.usage.values()):.4f}"
                if self.usage
                else "not recorded"
            ),
            "",
            "## Changes",
            *[f"- {c.kind} {c.commit[:10]} {c.subject}" for c in self.changes],
        ]
        if self.refused:
            lines += ["", "## Refused proposals", *[f"- {r}" for r in self.refused]]
        return "\n".join(lines) + "\n"


def save_record(ws: Workspace, record: GenerationRecord) -> None:
    """Write the record files (ignored by git) and commit the record to the side ref."""
    name = f"gen-{record.number:04d}"
    # JSON escapes what UTF-8 cannot hold (a lone surrogate from a model reply, a file name
    # that is not UTF-8); the Markdown and the commit subject replace it.
    data = json.dumps(record.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    summary = _printable(record.summary_markdown())
    # Confined (evolve._confine): `generations/` as a link out is refused by name.
    confined.write_atomic(ws.root, f"generations/{name}.json", data)
    confined.write_atomic(ws.root, f"generations/{name}.md", summary)
    _keep_candidate(ws, record)
    ws.store.write_side_ref(
        RECORDS_REF,
        {f"{name}.json": data.encode("utf-8"), f"{name}.md": summary.encode("utf-8")},
        _printable(f"generation {record.number}: {record.outcome()}"),
    )


def _keep_candidate(ws: Workspace, record: GenerationRecord) -> None:
    """Point `candidate_ref` at the candidate, when it is a commit of this repository (a dry
    run's candidate lives in its temporary clone) and differs from the base."""
    if not record.candidate or record.candidate == record.base or record.dry_run:
        return
    from evolve.store import GitFailed

    with contextlib.suppress(GitFailed):  # not an object of this repository: nothing to keep
        ws.store.set_ref(candidate_ref(record.number), record.candidate)


def _printable(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def load_records(ws: Workspace) -> list[GenerationRecord]:
    """Every generation record, from the side ref (the files are a convenience copy)."""
    files = ws.store.read_side_ref(RECORDS_REF)
    records = []
    for path, raw in sorted(files.items()):
        if "/" in path or not path.endswith(".json"):
            continue  # experiments/<name>/ holds `evolve compare` results, not generations
        check_size(f"generations/{path}", len(raw))  # before it is parsed
        try:
            records.append(GenerationRecord.model_validate(json.loads(raw)))
        except ValueError as exc:  # msgspec.ValidationError is one
            raise EvolveError(
                f"generation record {path} in {RECORDS_REF} is malformed: {exc}"
            ) from exc
    return sorted(records, key=lambda r: r.number)


def score_record(summary: dict[str, Any]) -> ScoreRecord:
    return ScoreRecord(
        score=summary["score"],
        violation_rate=summary["violation_rate"],
        task_done=summary.get("task_success_rate"),
        episodes=summary["episodes"],
        tokens_per_episode=summary["tokens_per_episode"],
        cost=summary.get("cost", 0.0),
        rules={rule: r["rate"] for rule, r in summary["rules"].items()},
    )
