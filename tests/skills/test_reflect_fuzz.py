"""Fuzzed skill-reflector replies through `evolve train --recipe skills`: nothing hurts.

Every run ends normally; every reply built to be bad is a logged refusal of its batch (in the
batch commit's body or, when the batch wrote nothing, its record on refs/evolve/train); every
live skill is a valid unit on a shelf within its cap.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve._text import is_placeholder
from evolve.history import TRAIN_REF
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import load_units
from evolve.skills import live_skills, occupancy
from evolve.train import train
from evolve.workspace import init_workspace

DONE = json.dumps({"tool": "supervisor__complete_task", "arguments": {}})
GOOD = [
    "Read the changed item back before completing the task.",
    "Look up the recipient with a search call before writing.",
    "Set the visibility explicitly before paying.",
]
BAD = [
    "not json at all",
    json.dumps([1, 2, 3]),
    json.dumps({"lesson": 3, "trigger": "a task"}),
    json.dumps({"lesson": "", "trigger": "a task"}),
    json.dumps({"lesson": "x " * 300, "trigger": "a task"}),
    json.dumps({"trigger": "a task"}),
    '{"lesson": "bad \\u0000 char", "trigger": "t"}',
    "[" * 300 + "]" * 300,
]
REPLY = st.one_of(
    st.builds(
        lambda lesson, trigger: (json.dumps({"lesson": lesson, "trigger": trigger}), False),
        st.sampled_from(GOOD),
        st.sampled_from(["a task that writes", "any payment"]),
    ),
    st.sampled_from(BAD).map(lambda text: (text, True)),
)


@pytest.mark.slow
@settings(
    max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.lists(REPLY, min_size=8, max_size=8))
def test_fuzzed_reflector_replies_through_train(replies: list[tuple[str, bool]]) -> None:
    served: list[tuple[str, bool]] = []

    def answer(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        reply = replies[len(served) % len(replies)]
        served.append(reply)
        return reply[0]

    with tempfile.TemporaryDirectory() as tmp:
        ws = init_workspace(Path(tmp) / "ws")
        train(ws, recipe="skills", episodes=8, agent_llm=MockLLM(lambda m, s: DONE),
              updater_llm=MockLLM(answer))  # fmt: skip
        store = ws.store
        bodies = [
            store.commit_info(s).body for s in store.git("log", "--format=%H", "HEAD").split()
        ]
        if store.ref_sha(TRAIN_REF):
            shas = store.git("log", "--format=%H", TRAIN_REF).split()
            bodies += [store.commit_info(s).body for s in shas]
        logged = sum(body.count("refused reflect ") for body in bodies)
        assert logged == sum(bad for _, bad in served), (logged, served)
        skills = live_skills(load_units(ws.root))
        assert all(not is_placeholder(u.text) for u in skills.values())
        caps = ws.config.skills.caps
        for shelf, n in occupancy(skills).items():
            assert n <= (caps.general if shelf == "general" else caps.per_topic)
        assert not store.dirty_paths(["memory"])
