"""`train` resolves its options into one TrainRequest, and writes only under a writer lock."""

from __future__ import annotations

import pytest

from evolve import txn
from evolve.errors import EvolveError
from evolve.train import TrainRequest, stream_id, train
from evolve.workspace import Workspace


def test_the_request_names_its_stream_scope_and_generation_trailer() -> None:
    request = TrainRequest("ace", 8, "instance", 3, False, "alex", generation=2)
    assert request.stream == stream_id("alex", "ace", 3, "instance")
    assert request.scope == "user:alex"
    assert request.trailers(("Evolve-Episode", "1")) == [
        ("Evolve-Episode", "1"),
        ("Evolve-Generation", "2"),
    ]
    assert TrainRequest("ace", 8, "instance", 3, False, "alex").trailers() == []


def test_training_under_a_callers_lock_needs_that_lock(workspace: Workspace) -> None:
    head = workspace.store.head()
    with pytest.raises(EvolveError, match="outside the workspace's writer lock"):
        train(workspace, recipe="ace", episodes=2, take_lock=False)
    assert workspace.store.head() == head
    with txn.writer(workspace, "a caller"):
        report = train(workspace, recipe="ace", episodes=2, take_lock=False)
    assert report.end == 2 and len(report.outcomes) == 2
