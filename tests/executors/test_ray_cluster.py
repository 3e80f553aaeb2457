"""The `ray` executor's map on one local Ray cluster shared by the module (a start costs
seconds): input order, failures in one sentence, and HTTP episodes bounded by C.

Marked `ray`: skips without Ray installed, except where CI=true or EVOLVE_REQUIRE_RAY=1, where
it fails (`.ci/run` installs the `ray` extra).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from test_ray import need_ray

from evolve.errors import ModelError
from evolve.evaluate import run_split
from evolve.executors import EpisodeFailed, get_executor
from evolve.executors._ray import ray_session
from evolve.executors._stub import StubServer
from evolve.workspace import Workspace

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Iterator[StubServer]:
    """One local Ray cluster for the module (a start costs seconds), whose workers reach a
    stub OpenAI-compatible server with 50 ms of latency."""
    ray = need_ray()
    with StubServer(latency_s=0.05) as stub, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", stub.base_url)
        patch.setenv("OPENAI_API_KEY", "stub")
        patch.delenv("RAY_ADDRESS", raising=False)
        with ray_session(ray):  # workers start with this environment
            yield stub
        assert not ray.is_initialized()


def _late_first(item: int) -> int:
    time.sleep(0.02 * (6 - item))  # the first items finish last
    return item * item


def _fails_on_three(item: int) -> int:
    if item == 3:
        raise ValueError("bad item\nthree")
    time.sleep(0.05)
    return item


def _model_gone(item: int) -> int:
    raise ModelError("the model is gone; try again later.")


def test_ray_results_come_back_in_input_order(cluster: StubServer) -> None:
    seen: list[tuple[int, int]] = []
    results = get_executor("ray", 3).map(
        _late_first, list(range(6)), progress=lambda d, t: seen.append((d, t))
    )
    assert results == [i * i for i in range(6)]
    assert seen == [(d, 6) for d in range(1, 7)]


def test_a_failing_job_on_ray_is_one_sentence(cluster: StubServer) -> None:
    with pytest.raises(EpisodeFailed) as caught:
        get_executor("ray", 2).map(
            _fails_on_three, list(range(40)), label=lambda i: f"the episode of item {i}"
        )
    assert str(caught.value) == "the episode of item 3 failed with ValueError: bad item three."


def test_a_user_error_on_ray_is_raised_as_it_is(cluster: StubServer) -> None:
    with pytest.raises(ModelError, match=r"^the model is gone; try again later\.$"):
        get_executor("ray", 2).map(_model_gone, [1, 2, 3])


def test_http_episodes_on_ray_never_exceed_the_concurrency(
    cluster: StubServer, workspace: Workspace
) -> None:
    # The first requests wait until 4 are in flight at once (an event, not a loaded
    # machine's timing): the bound is reached, and nothing passes it.
    cluster.reset(gather=4)
    try:
        report = run_split(
            workspace, "dev", model="openai/stub", concurrency=4, executor="ray", log=False
        )
        assert len(report.episodes) == 20 and cluster.requests == 20
        assert cluster.max_in_flight == 4  # bounded, and the bound is reached
    finally:
        cluster.reset()


def _square(item: int) -> int:
    return item * item


def test_a_session_keeps_its_actors_between_maps_and_frees_them_for_another_shape(
    cluster: StubServer,
) -> None:
    from evolve.executors._ray import _ACTORS

    assert _ACTORS.owned  # the fixture's session was opened by evolve
    one = get_executor("ray", 1)
    assert one.map(_square, [1, 2]) == [1, 4]
    [kept] = _ACTORS.pools.values()
    assert one.map(_square, [3]) == [9]
    assert list(_ACTORS.pools.values()) == [kept]  # the same actors served again
    # Another shape needs the CPUs the kept actors hold: they are freed, nothing waits forever.
    done: list[list[int]] = []
    worker = threading.Thread(
        target=lambda: done.append(get_executor("ray", 4).map(_square, [1, 2, 3, 4]))
    )
    worker.start()
    worker.join(timeout=120)
    assert done == [[1, 4, 9, 16]]
    assert kept not in list(_ACTORS.pools.values())
