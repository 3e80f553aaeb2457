"""A persona's timeline file (`timeline/<persona>.json` on `refs/evolve/train`): read and
written here, by training (`evolve.train._trainref.Timeline`) and by the merge of two
learners' records (`evolve.remote`), which must not load the training loop to read it.

`{"persona": P, "segments": [{"stream", "start", "end", "clock"}, ...]}`: episodes
`start..end-1` of `stream` are the persona's ticks `clock..clock+(end-start)-1`.
"""

from __future__ import annotations

import json

import msgspec


class Segment(msgspec.Struct, frozen=True):
    stream: str
    start: int
    end: int
    clock: int

    def covers(self, stream: str, episode: int) -> bool:
        return self.stream == stream and self.start <= episode < self.end


def parse_segments(raw: bytes) -> list[Segment]:
    """The segments of a timeline file (ValueError when it is not one)."""
    try:
        data = json.loads(raw)
        segments = [
            Segment(str(s["stream"]), int(s["start"]), int(s["end"]), int(s["clock"]))
            for s in data["segments"]
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(str(exc)) from None
    return segments


def timeline_text(persona: str, segments: list[Segment]) -> str:
    """The timeline file's text."""
    data = {"persona": persona, "segments": [msgspec.structs.asdict(s) for s in segments]}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
