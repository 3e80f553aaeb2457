"""Git merge drivers for the counter sidecars: three-way merges of counts.

A sidecar holds evidence (counts of episodes), not content, so two learners that both moved a
count both keep their episodes: each count merges as ``base + (ours - base) + (theirs - base)``.
git runs ``evolve merge-driver <kind> %O %A %B %P`` (registered by
`evolve.workspace.install_merge_drivers`) for the files `.gitattributes` names; the result is
written over %A and the exit status says whether it merged (0) or is a conflict (1).

The kinds and their rules (docs/sharing.md):

- ``counters`` (`memory/**/_counters.yaml`): per unit id and counter, the three-way sum; an
  integer count stops at 0, alpha/beta at their prior 1.0, and a skill's passes never exceed
  its episodes; an entry whose counters are all back at their defaults is dropped.
- ``strata`` (`memory/skills/_strata.yaml`): per skill, task and cell, the three-way sum (at
  least 0, passes at most episodes).
- ``failed`` (`memory/skills/_failed_tasks.yaml`): per task, the three-way sum of failing
  episodes (a task left with none leaves the record).
- ``staging`` (`memory/skills/_staging.yaml`): per failure shape and topic, the three-way sum
  of sightings; evidence lines are the union (ours first), the newest kept.

A side that is not the format this evolve writes (malformed YAML, a bad value, a key given
twice, not UTF-8) is a conflict, said in one sentence naming the file and the side; %A is
left as our side had it, so nothing is lost and `git merge` stops for the person. The
module imports only the readers of these formats, never the store, so git's call is quick.
"""

from __future__ import annotations

import sys

from evolve.workspace._drivers import KINDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

MAX_BYTES = 64 * 1024 * 1024  # a sidecar past this is not one evolve wrote


class Malformed(Exception):
    """One side of a merge is not a sidecar of its kind (the message names the problem)."""


def _merge_count(base: float, ours: float, theirs: float) -> float:
    return base + (ours - base) + (theirs - base)


def _int(value: float) -> int:
    return max(0, int(round(value)))


# --- counters -------------------------------------------------------------------------------


def _read_counters(path: str, raw: str) -> dict[str, dict[str, float | int]]:
    from evolve._format import Unhandled
    from evolve._format._units import parse_counters as canonical

    try:
        return canonical(raw)
    except Unhandled:
        pass
    from evolve.errors import EvolveError
    from evolve.memory._counters import parse_counters

    try:
        return parse_counters(path, raw)
    except EvolveError as exc:  # MalformedUnit is one
        raise Malformed(str(exc).rstrip(".")) from None


def merge_counters(path: str, base: str, ours: str, theirs: str) -> str:
    """The three-way merge of a `_counters.yaml` (texts in, text out)."""
    from evolve._format._units import COUNTER_DEFAULTS, INT_COUNTERS, dump_counters

    b, o, t = (_read_counters(path, raw) for raw in (base, ours, theirs))
    out: dict[str, dict[str, float | int]] = {}
    for ident in sorted({*b, *o, *t}):
        be, oe, te = b.get(ident, {}), o.get(ident, {}), t.get(ident, {})
        entry: dict[str, float | int] = {}
        for name in sorted({*be, *oe, *te}):
            default = COUNTER_DEFAULTS[name]
            value = _merge_count(
                be.get(name, default), oe.get(name, default), te.get(name, default)
            )
            if name in INT_COUNTERS:
                entry[name] = _int(value)
            else:
                entry[name] = max(float(default), float(value))
        for arm, passes in (("injected", "injected_pass"), ("held_out", "held_out_pass")):
            if passes in entry:
                entry[passes] = min(entry[passes], entry.get(arm, 0))
        if any(v != COUNTER_DEFAULTS[k] for k, v in entry.items()):
            out[ident] = entry
    return dump_counters(out)


# --- the skills records ----------------------------------------------------------------------


def _evolve_errors(read: Callable[[str], object], raw: str) -> object:
    from evolve.errors import EvolveError

    try:
        return read(raw)
    except EvolveError as exc:
        raise Malformed(str(exc).rstrip(".")) from None


def merge_strata(path: str, base: str, ours: str, theirs: str) -> str:
    """The three-way merge of `memory/skills/_strata.yaml`."""
    from evolve.skills._strata import Strata, dump_strata, parse_strata

    sides: list[Strata] = [_evolve_errors(parse_strata, r) for r in (base, ours, theirs)]  # type: ignore[misc]
    b, o, t = sides
    zero = (0, 0, 0, 0)
    out: Strata = {}
    for skill in {*b, *o, *t}:
        bs, os_, ts = b.get(skill, {}), o.get(skill, {}), t.get(skill, {})
        cells = {}
        for task in {*bs, *os_, *ts}:
            was, mine, theirs_ = bs.get(task, zero), os_.get(task, zero), ts.get(task, zero)
            got = [_int(_merge_count(was[i], mine[i], theirs_[i])) for i in range(4)]
            got[1], got[3] = min(got[1], got[0]), min(got[3], got[2])
            cells[task] = (got[0], got[1], got[2], got[3])
        out[skill] = cells
    return dump_strata(out)


def merge_failed(path: str, base: str, ours: str, theirs: str) -> str:
    """The three-way merge of `memory/skills/_failed_tasks.yaml`."""
    from evolve.skills._failed import dump_failed, parse_failed

    sides: list[dict[str, int]] = [_evolve_errors(parse_failed, r) for r in (base, ours, theirs)]  # type: ignore[misc]
    b, o, t = sides
    out = {
        task: _int(_merge_count(b.get(task, 0), o.get(task, 0), t.get(task, 0)))
        for task in {*b, *o, *t}
    }
    return dump_failed({task: n for task, n in out.items() if n > 0})


def merge_staging(path: str, base: str, ours: str, theirs: str) -> str:
    """The three-way merge of `memory/skills/_staging.yaml`."""
    from evolve.skills._staging import MAX_EVIDENCE, Sighting, Staging, dump_staging, parse_staging

    sides: list[Staging] = [_evolve_errors(parse_staging, r) for r in (base, ours, theirs)]  # type: ignore[misc]
    b, o, t = sides
    out: Staging = {}
    for shape in sorted({*b, *o, *t}):
        was, mine, other = (
            b.get(shape, Sighting()),
            o.get(shape, Sighting()),
            t.get(shape, Sighting()),
        )
        topics = {
            topic: _int(
                _merge_count(
                    was.by_topic.get(topic, 0), mine.by_topic.get(topic, 0),
                    other.by_topic.get(topic, 0),
                )
            )
            for topic in {*was.by_topic, *mine.by_topic, *other.by_topic}
        }  # fmt: skip
        evidence = [*mine.evidence, *(e for e in other.evidence if e not in mine.evidence)]
        kept = Sighting({k: n for k, n in topics.items() if n > 0}, evidence[-MAX_EVIDENCE:])
        if kept.count > 0:
            out[shape] = kept
    return dump_staging(out)


MERGES: dict[str, Callable[[str, str, str, str], str]] = {
    "counters": merge_counters,
    "strata": merge_strata,
    "failed": merge_failed,
    "staging": merge_staging,
}


# --- git's call ------------------------------------------------------------------------------


def _read_side(file: str, side: str) -> str:
    try:
        with open(file, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise Malformed(f"{side} side could not be read ({exc.strerror})") from None
    if len(data) > MAX_BYTES:
        raise Malformed(f"{side} side is larger than any sidecar evolve writes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed(f"{side} side is not UTF-8 text") from None


def merge_files(kind: str, base: str, ours: str, theirs: str, path: str) -> tuple[int, str]:
    """Merge the sidecar of `kind` that git stored in the files `base`, `ours`, `theirs`
    (`path`: its path in the workspace) into `ours`; returns (exit status, sentence)."""
    merge = MERGES.get(kind)
    if merge is None:
        return 2, f"evolve merge-driver: unknown kind {kind!r}; use one of {', '.join(KINDS)}."
    shown = path or ours
    try:
        texts = [
            _read_side(file, side)
            for file, side in ((base, "the common ancestor's"), (ours, "our"), (theirs, "their"))
        ]
        try:
            merged = merge(shown, *texts)
        except Malformed:
            # Name the side that does not read: each alone.
            for text, side in zip(texts, ("the common ancestor's", "our", "their"), strict=True):
                try:
                    merge(shown, text, text, text)
                except Malformed as exc:
                    raise Malformed(f"{side} side: {exc}") from None
            raise
    except Malformed as exc:
        return 1, (
            f"{shown}: not merged ({exc}); it is left as our side had it, marked as a "
            f"conflict: fix that side by hand, `git add {shown}`, then commit the merge."
        )
    except Exception as exc:  # noqa: BLE001 - git's merge must stop, never crash half-way
        return 1, (
            f"{shown}: not merged ({type(exc).__name__}: {exc}); it is left as our side had "
            f"it, marked as a conflict: resolve it by hand, `git add {shown}`, then commit."
        )
    from pathlib import Path

    from evolve._io import atomic_write

    try:
        atomic_write(Path(ours), merged)
    except OSError as exc:
        return 1, f"{shown}: the merged counts could not be written ({exc.strerror}); rerun."
    return 0, ""


def main(argv: Sequence[str]) -> int:
    """`evolve merge-driver KIND BASE OURS THEIRS [PATH]` (git's %O %A %B %P)."""
    args = list(argv)
    if len(args) not in (4, 5) or args[0] in ("-h", "--help"):
        print(
            "Usage: evolve merge-driver KIND BASE OURS THEIRS [PATH]\n\n"
            "  git's merge driver for evolve's counter sidecars (KIND: "
            f"{', '.join(KINDS)}):\n"
            "  a three-way merge of counts, written over OURS. Registered by `evolve init`\n"
            "  and `evolve clone` in .gitattributes and .git/config (docs/sharing.md).",
            file=sys.stdout if args[:1] in (["-h"], ["--help"]) else sys.stderr,
        )
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    kind, base, ours, theirs = args[:4]
    code, said = merge_files(kind, base, ours, theirs, args[4] if len(args) == 5 else "")
    if said:
        print(said, file=sys.stderr)
    return code
