"""The staging area: failure shapes seen under too few topics to be general yet.

Skill compilation promotes a lesson to the general shelf when its failure shape shows up under two or
more topics *in one batch*; with small batches that almost never happens. So each shape seen
in a batch and not promoted is counted in `memory/skills/_staging.yaml` (written by the
applier with the batch, so a revert of the batch takes its sightings back too)::

    verify-final-state:
      topics: {gmail: 1, venmo: 2}   # sightings per topic so far
      evidence: [episode 3 (pay_back-1), ...]

and a shape is promoted once its sightings (batch + staging) reach `skills.staging_threshold`
under at least `skills.promote_min_topics` topics. A promoted shape leaves the staging area.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from evolve._yaml import load as load_yaml
from evolve.errors import EvolveError

STAGING_PATH = "memory/skills/_staging.yaml"
MAX_SHAPES = 200
MAX_EVIDENCE = 8
_DUMPER: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass
class Sighting:
    """How often a failure shape was seen, per topic, and the episodes it was seen in."""

    by_topic: dict[str, int] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(self.by_topic.values())

    @property
    def topics(self) -> list[str]:
        return sorted(t for t, n in self.by_topic.items() if n > 0)

    def add(self, topic: str, evidence: str) -> None:
        self.by_topic[topic] = self.by_topic.get(topic, 0) + 1
        if evidence and evidence not in self.evidence:
            self.evidence = [*self.evidence, evidence][-MAX_EVIDENCE:]

    def joined(self, other: Sighting) -> Sighting:
        by_topic = dict(self.by_topic)
        for topic, n in other.by_topic.items():
            by_topic[topic] = by_topic.get(topic, 0) + n
        evidence = [*self.evidence, *(e for e in other.evidence if e not in self.evidence)]
        return Sighting(by_topic, evidence[-MAX_EVIDENCE:])


Staging = dict[str, Sighting]


def parse_staging(raw: str | None) -> Staging:
    """Read the staging file (None or empty: nothing staged).

    Raises:
        EvolveError: the file is not the mapping this module writes.
    """
    if not raw or not raw.strip():
        return {}
    try:
        data = load_yaml(raw, STAGING_PATH)  # a key given twice: one sentence
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
        topics, evidence = entry.get("topics"), entry.get("evidence", [])
        if (
            not isinstance(topics, dict)
            or not all(
                isinstance(t, str) and isinstance(n, int) and not isinstance(n, bool) and n >= 0
                for t, n in topics.items()
            )
            or not isinstance(evidence, list)
            or not all(isinstance(e, str) for e in evidence)
        ):
            raise EvolveError(
                f"{STAGING_PATH}: entry {shape!r} needs topics (topic: sightings) and a list of "
                "evidence."
            )
        out[shape] = Sighting(dict(topics), list(evidence))
    return out


def dump_staging(staging: Staging) -> str:
    """Canonical text (sorted shapes); "" when nothing is staged."""
    kept = sorted(staging.items(), key=lambda kv: (-kv[1].count, kv[0]))[:MAX_SHAPES]
    data = {
        shape: {
            "topics": {t: n for t, n in sorted(s.by_topic.items()) if n > 0},
            "evidence": list(s.evidence),
        }
        for shape, s in sorted(kept)
        if s.count > 0
    }
    if not data:
        return ""
    return str(yaml.dump(data, Dumper=_DUMPER, sort_keys=True, allow_unicode=True, width=10_000))


def take_back(before: bytes | None, after: bytes | None, now: bytes | None) -> bytes | None:
    """The staging area `now` less what one commit changed from `before` to `after` (for
    `evolve revert`): sightings are evidence, so later batches' sightings are kept and a
    revert never conflicts on this file. A shape the commit promoted (took out) comes back
    with the sightings it had."""

    def read(data: bytes | None) -> Staging:
        return parse_staging(data.decode("utf-8") if data else None)

    b, a, n = read(before), read(after), read(now)
    out: Staging = {}
    for shape in sorted({*b, *a, *n}):
        was, left, cur = (
            b.get(shape, Sighting()),
            a.get(shape, Sighting()),
            n.get(shape, Sighting()),
        )
        by_topic = {}
        for topic in {*was.by_topic, *left.by_topic, *cur.by_topic}:
            moved = left.by_topic.get(topic, 0) - was.by_topic.get(topic, 0)
            by_topic[topic] = max(0, cur.by_topic.get(topic, 0) - moved)
        new_ev = [e for e in left.evidence if e not in was.evidence]
        # In the order they were seen: the sightings before the commit where they stood (those
        # it pushed out of the capped list come back in place, those a later commit pushed out
        # stay out), then the later commits' own.
        evidence = [e for e in was.evidence if e in cur.evidence or e not in left.evidence]
        evidence += [e for e in cur.evidence if e not in new_ev and e not in evidence]
        kept = Sighting({t: k for t, k in by_topic.items() if k > 0}, evidence[-MAX_EVIDENCE:])
        if kept.count > 0:
            out[shape] = kept
    text = dump_staging(out)
    return text.encode("utf-8") if text else None
