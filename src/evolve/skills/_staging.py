"""The staging area: failure shapes seen under too few topics to be general yet.

Seed 003 promotes a lesson to the general shelf when its failure shape shows up under two or
more topics *in one batch*; with small batches that almost never happens. So each shape seen
in a batch and not promoted is counted in `memory/skills/_staging.yaml` (written by the
applier with the batch, so a revert of the batch takes its sightings back too)::

    verify-final-state:
      count: 2                 # candidates of this shape so far
      topics: [gmail, venmo]   # the topics they came from
      evidence: [episode 3 (pay_back-1), ...]

and a shape is promoted once its sightings (batch + staging) reach `skills.staging_threshold`
under at least `skills.promote_min_topics` topics. A promoted shape leaves the staging area.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from evolve.errors import EvolveError

STAGING_PATH = "memory/skills/_staging.yaml"
MAX_SHAPES = 200
MAX_EVIDENCE = 8
_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass
class Sighting:
    count: int = 0
    topics: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    def add(self, topic: str, evidence: str) -> None:
        self.count += 1
        if topic not in self.topics:
            self.topics = sorted({*self.topics, topic})
        if evidence and evidence not in self.evidence:
            self.evidence = [*self.evidence, evidence][-MAX_EVIDENCE:]

    def joined(self, other: Sighting) -> Sighting:
        out = Sighting(self.count, list(self.topics), list(self.evidence))
        out.count += other.count
        out.topics = sorted({*out.topics, *other.topics})
        out.evidence = [*out.evidence, *(e for e in other.evidence if e not in out.evidence)]
        out.evidence = out.evidence[-MAX_EVIDENCE:]
        return out


Staging = dict[str, Sighting]


def parse_staging(raw: str | None) -> Staging:
    """Read the staging file (None or empty: nothing staged).

    Raises:
        EvolveError: the file is not the mapping this module writes.
    """
    if not raw or not raw.strip():
        return {}
    try:
        data = yaml.load(raw, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise EvolveError(f"{STAGING_PATH} is not valid YAML; fix or delete it.") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise EvolveError(f"{STAGING_PATH} must map failure shapes to their sightings.")
    out: Staging = {}
    for shape, entry in data.items():
        if not isinstance(shape, str) or not isinstance(entry, dict):
            raise EvolveError(f"{STAGING_PATH}: entry {shape!r} must be a mapping.")
        count, topics, evidence = entry.get("count"), entry.get("topics"), entry.get("evidence", [])
        if (
            not isinstance(count, int)
            or isinstance(count, bool)
            or count < 0
            or not isinstance(topics, list)
            or not all(isinstance(t, str) for t in topics)
            or not isinstance(evidence, list)
            or not all(isinstance(e, str) for e in evidence)
        ):
            raise EvolveError(
                f"{STAGING_PATH}: entry {shape!r} needs a count, a list of topics and of evidence."
            )
        out[shape] = Sighting(count, sorted(set(topics)), list(evidence))
    return out


def dump_staging(staging: Staging) -> str:
    """Canonical text (sorted shapes); "" when nothing is staged."""
    kept = sorted(staging.items(), key=lambda kv: (-kv[1].count, kv[0]))[:MAX_SHAPES]
    data = {
        shape: {"count": s.count, "topics": list(s.topics), "evidence": list(s.evidence)}
        for shape, s in sorted(kept)
        if s.count > 0
    }
    if not data:
        return ""
    return str(yaml.dump(data, Dumper=_DUMPER, sort_keys=True, allow_unicode=True, width=10_000))
