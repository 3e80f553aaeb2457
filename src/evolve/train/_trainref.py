"""What training knows that the branch does not record, kept on the side ref `refs/evolve/train`.

Three things live there, each committed with the store's side-ref writer (a history of its own
that never touches HEAD, the index or the working tree, and travels with `git push/fetch
'refs/evolve/*:refs/evolve/*'`):

- `refusals/<stream>/<episode>-<base>.txt`: the refusals (tombstone, scope, cap, review) of an
  episode that committed nothing else, so they still reach git history; `evolve log` shows them
  beside the commits (see `evolve.history.refusal_entries`).
- `timeline/<persona>.json`: the persona's own clock. Every training episode a workspace runs
  for a persona is one tick of that persona's timeline, whichever stream (seed, recipe,
  feedback tier) ran it; scheduled preference changes (drift, `changes: - at_episode: N` in the
  persona file) are keyed to this clock, so a second stream started after the drift sees the
  drifted preference, not a replay of the old one.
- `runs/<stream>.json`: the last episode the stream ran and HEAD after it, so a rerun resumes
  after the last episode run, not the last one that committed (see `last_run`).

The timeline is a list of segments: episodes `start..end-1` of `stream` are the persona's
ticks `clock..clock+(end-start)-1`. Segments are written before their episodes run, so a
stopped stream resumes (and replays) with the very same clock values. A new segment starts at
the persona's clock now, and never below the stream's own episode number (so a workspace that
has trained one stream, or a copy without the side ref, keeps clock == episode).
"""

from __future__ import annotations

import json
import re

import msgspec

from evolve._format._message import CLOCK
from evolve._format._timeline import Segment, parse_segments, timeline_text
from evolve.errors import EvolveError
from evolve.history import REFUSAL_KIND, TRAIN_REF, side_ref_sha
from evolve.history._log import BASE
from evolve.store import KIND, GitFailed, GitStore

__all__ = [
    "BASE",
    "CLOCK",
    "Segment",
    "Timeline",
    "last_run",
    "record_refusals",
    "record_run",
    "recorded_refusals",
    "refusal_path",
    "runs_path",
]


class Timeline(msgspec.Struct):
    """A persona's clock over every stream the workspace trained for it."""

    persona: str
    segments: list[Segment] = msgspec.field(default_factory=list)

    @property
    def path(self) -> str:
        return f"timeline/{self.persona}.json"

    @classmethod
    def load(cls, store: GitStore, persona: str) -> Timeline:
        timeline = cls(persona)
        raw = store.read_side_ref(TRAIN_REF, timeline.path).get(timeline.path)
        if raw is not None:
            try:
                timeline.segments = cls.parse(persona, raw).segments
            except ValueError:
                raise EvolveError(
                    f"{TRAIN_REF}:{timeline.path} is not a valid timeline; restore it with "
                    f"`git update-ref {TRAIN_REF} {TRAIN_REF}~1` or delete the ref to restart "
                    "the persona's clock."
                ) from None
        return timeline

    @classmethod
    def parse(cls, persona: str, raw: bytes) -> Timeline:
        """The timeline file's bytes read back (ValueError when they are not one)."""
        return cls(persona, parse_segments(raw))

    def text(self) -> str:
        """The timeline file's text (what `save` commits)."""
        return timeline_text(self.persona, self.segments)

    def now(self) -> int:
        """Ticks the persona has seen: the clock the next new episode gets."""
        return max((s.clock + s.end - s.start for s in self.segments), default=0)

    def clock(self, stream: str, episode: int) -> int:
        for s in self.segments:
            if s.covers(stream, episode):
                return s.clock + episode - s.start
        raise KeyError(f"episode {episode} of {stream} is not on {self.persona}'s timeline")

    def extend(self, stream: str, start: int, end: int) -> list[Segment]:
        """Give the episodes `start..end-1` of `stream` that have no clock yet the next ticks."""
        added: list[Segment] = []
        k = start
        while k < end:
            if any(s.covers(stream, k) for s in self.segments):
                k += 1
                continue
            first = k
            while k < end and not any(s.covers(stream, k) for s in self.segments):
                k += 1
            seg = Segment(stream, first, k, max(self.now(), first))
            self.segments.append(seg)
            added.append(seg)
        return added

    def save(self, store: GitStore, added: list[Segment]) -> None:
        text = self.text()
        spans = ", ".join(
            f"{s.stream} episodes {s.start}..{s.end - 1} at clock {s.clock}..{s.clock + s.end - s.start - 1}"
            for s in added
        )
        store.write_side_ref(
            TRAIN_REF, {self.path: text.encode("utf-8")}, f"timeline {self.persona}: {spans}"
        )


def recorded_refusals(store: GitStore, stream: str) -> set[str]:
    """Paths of the refusal records of `stream` already on the side ref."""
    sha = side_ref_sha(store, TRAIN_REF)
    return set(store.list_files(sha, f"refusals/{stream}")) if sha else set()


def refusal_path(stream: str, episode: int, base: str) -> str:
    return f"refusals/{stream}/{episode:06d}-{base[:12]}.txt"


def record_refusals(
    store: GitStore,
    path: str,
    subject: str,
    body: str,
    trailers: list[tuple[str, str]],
) -> str:
    """Commit an episode's refusals to the side ref; returns the record's commit."""
    return store.write_side_ref(
        TRAIN_REF,
        {path: (body + "\n").encode("utf-8")},
        subject,
        body=body,
        trailers=[*trailers, (KIND, REFUSAL_KIND)],
    )


# --- the stream's own record of its commits ---------------------------------------------------
#
# `streams/<stream>.json` ({"commits": {"<episode>": "<sha>"}}): the commit each episode of the
# stream made, written when a training run ends. The stream resumes after the newest episode
# whose commit is on HEAD's history; an episode commit that is a copy (cherry-picked or
# rebased from elsewhere: the record names another commit for that episode, not on HEAD's
# history) does not move it (`evolve.train._stream.own_last_episode`).


def stream_record_path(stream: str) -> str:
    return f"streams/{stream}.json"


def stream_commits(store: GitStore, stream: str) -> dict[int, str]:
    """{episode: the commit it made}, as the stream recorded them (empty: no record yet, as in
    a workspace trained before the record existed)."""
    path = stream_record_path(stream)
    raw = store.read_side_ref(TRAIN_REF, path).get(path)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
        return {int(k): str(v) for k, v in data["commits"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise EvolveError(
            f"{TRAIN_REF}:{path} is not a valid stream record; restore it with "
            f"`git update-ref {TRAIN_REF} {TRAIN_REF}~1`."
        ) from None


def record_stream_commits(store: GitStore, stream: str, commits: dict[int, str]) -> None:
    """Add the commits of a training run to the stream's record (one side-ref commit)."""
    if not commits:
        return
    known = stream_commits(store, stream)
    if all(known.get(k) == sha for k, sha in commits.items()):
        return
    known.update(commits)
    data = {"stream": stream, "commits": {str(k): known[k] for k in sorted(known)}}
    text = json.dumps(data, indent=2) + "\n"
    first, last = min(commits), max(commits)
    store.write_side_ref(
        TRAIN_REF,
        {stream_record_path(stream): text.encode("utf-8")},
        f"stream {stream}: commits of episodes {first}..{last}",
    )


# --- the episodes a stream ran -------------------------------------------------------------
#
# `runs/<stream>.json`: the last episode of the stream that ran to its end (learned from, or
# accepted, or failed: each was a paid model call) and HEAD after it. A rerun resumes after
# it, not after the last episode that committed, so episodes that changed nothing are not
# paid for twice; it counts only while that HEAD is on the current branch's history (a
# rejected generation's reset, another branch, a `git reset` back: the commits decide again).


def runs_path(stream: str) -> str:
    return f"runs/{stream}.json"


def last_run(store: GitStore, stream: str) -> int | None:
    """The last episode `stream` ran, if its record stands on HEAD's history; else None."""
    path = runs_path(stream)
    raw = store.read_side_ref(TRAIN_REF, path).get(path)
    head = store.head()
    if raw is None or head is None:
        return None
    try:
        data = json.loads(raw)
        episode, at = int(data["episode"]), str(data["head"])
    except (ValueError, KeyError, TypeError):
        return None  # a record no writer of ours made: the commits decide
    if episode < 0 or not re.fullmatch(r"[0-9a-f]{40,64}", at):
        return None
    if at != head:
        try:
            store.git("merge-base", "--is-ancestor", at, head)
        except GitFailed:
            return None
    return episode


def record_run(store: GitStore, stream: str, episode: int) -> None:
    """Note that `stream` ran up to `episode` (inclusive), standing on HEAD now."""
    head = store.head()
    if head is None:
        return
    path = runs_path(stream)
    text = json.dumps({"episode": episode, "head": head, "stream": stream}, sort_keys=True)
    store.write_side_ref(
        TRAIN_REF, {path: (text + "\n").encode("utf-8")}, f"runs {stream}: up to episode {episode}"
    )
