"""A revert gives the staging area back its sightings in the order they were seen.

A batch whose new sighting pushed the oldest out of the capped evidence list was reverted
with that sighting put back at the end of the list, so `evolve revert` of the last batch left
`memory/skills/_staging.yaml` different from before the batch (issue 22 found it: the skills
prompts' rewording moved the sim's stream onto such a batch).
"""

from __future__ import annotations

from evolve.skills._staging import MAX_EVIDENCE, Sighting, dump_staging, take_back


def _file(evidence: list[str], count: int) -> bytes:
    return dump_staging({"verify": Sighting({"venmo": count}, evidence)}).encode("utf-8")


def test_a_sighting_the_batch_pushed_out_comes_back_in_its_place() -> None:
    seen = [f"episode {i}" for i in range(MAX_EVIDENCE)]
    before = _file(seen, MAX_EVIDENCE)
    after = _file([*seen[1:], "episode 40"], MAX_EVIDENCE + 1)
    assert take_back(before, after, after) == before


def test_later_sightings_stay_after_the_restored_ones() -> None:
    seen = [f"episode {i}" for i in range(MAX_EVIDENCE)]
    before = _file(seen, MAX_EVIDENCE)
    after = _file([*seen[1:], "episode 40"], MAX_EVIDENCE + 1)
    now = _file([*seen[2:], "episode 40", "episode 44"], MAX_EVIDENCE + 2)
    # episode 0 came back in place; episode 1, pushed out by the later batch, stays out
    want = _file([seen[0], *seen[2:], "episode 44"], MAX_EVIDENCE + 1)
    assert take_back(before, after, now) == want
