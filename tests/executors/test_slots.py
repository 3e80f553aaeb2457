"""Work and request slots of the threads executor, and the concurrency stub's timer."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx

from evolve.executors import get_executor
from evolve.executors._slots import FairSemaphore, request_slot
from evolve.executors._stub import StubServer, _Timer


class Meter:
    """Counts how many threads are in each phase at once, keeping the highest count."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: dict[str, int] = {"open": 0, "computing": 0, "waiting": 0}
        self.high: dict[str, int] = dict(self.now)

    def enter(self, phase: str) -> None:
        with self.lock:
            self.now[phase] += 1
            self.high[phase] = max(self.high[phase], self.now[phase])

    def leave(self, phase: str) -> None:
        with self.lock:
            self.now[phase] -= 1


def _episode(meter: Meter, item: int) -> int:
    meter.enter("open")
    meter.enter("computing")
    time.sleep(0.01)  # prepare the request
    meter.leave("computing")
    with request_slot():
        meter.enter("waiting")
        time.sleep(0.06)  # the server answers
        meter.leave("waiting")
    meter.enter("computing")
    time.sleep(0.01)  # judge and record
    meter.leave("computing")
    meter.leave("open")
    return item


def test_requests_in_flight_are_bounded_while_the_next_episodes_prepare() -> None:
    meter = Meter()
    results = get_executor("threads", 2).map(lambda i: _episode(meter, i), list(range(12)))
    assert results == list(range(12))
    assert meter.high["waiting"] == 2  # C requests in flight at most, and reached
    assert meter.high["computing"] <= 2  # C jobs computing at most
    assert meter.high["open"] > 2  # while requests wait, the next episodes are under way


def test_jobs_that_never_wait_on_a_server_stay_at_c() -> None:
    meter = Meter()

    def job(item: int) -> int:
        meter.enter("open")
        time.sleep(0.01)
        meter.leave("open")
        return item

    assert get_executor("threads", 3).map(job, list(range(20))) == list(range(20))
    assert meter.high["open"] == 3


def test_request_slot_outside_a_map_does_nothing() -> None:
    with request_slot(), request_slot():
        pass


def test_a_fair_semaphore_serves_its_waiters_first_come_first_served() -> None:
    gate = FairSemaphore(1)
    gate.acquire()
    order: list[int] = []
    threads: list[threading.Thread] = []

    def wait(n: int) -> None:
        gate.acquire()
        order.append(n)
        gate.release()

    for n in range(5):
        threads.append(threading.Thread(target=wait, args=(n,)))
        threads[-1].start()
        time.sleep(0.02)  # each is queued before the next
    # The holder takes the slot straight back: with a plain semaphore it could jump the queue.
    gate.release()
    gate.acquire()
    order.append(99)
    gate.release()
    for thread in threads:
        thread.join()
    assert order == [0, 1, 2, 3, 4, 99]


def test_the_stub_answers_after_its_latency_never_before() -> None:
    loop = asyncio.new_event_loop()
    timer = _Timer(loop)
    try:
        start = time.monotonic()
        deadlines = [start + d for d in (0.06, 0.02, 0.04, 0.0, -1.0)]

        async def wait(deadline: float) -> float:
            await timer.until(deadline)
            return time.monotonic()

        async def all_of() -> list[float]:
            return list(await asyncio.gather(*(wait(d) for d in deadlines)))

        woke = loop.run_until_complete(all_of())
    finally:
        timer.stop()
        loop.close()
    assert all(w >= d for w, d in zip(woke, deadlines, strict=True))
    assert woke[1] <= woke[2] <= woke[0]  # in the order of their deadlines

    with StubServer(latency_s=0.05) as stub, httpx.Client() as http:
        for _ in range(3):
            started = time.monotonic()
            reply = http.post(f"{stub.base_url}/chat/completions", json={"model": "m"})
            assert reply.status_code == 200
            assert time.monotonic() - started >= 0.05
