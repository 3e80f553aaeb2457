"""Every token counted (issue 22, item 5): the meter behind each role's model."""

from __future__ import annotations

import threading

from evolve.llm import (
    Completion,
    Message,
    Meter,
    MeteredLLM,
    MockLLM,
    RoleUsage,
    metering,
    usage_line,
)
from evolve.llm._meter import current_meter, difference


def _reply(meter: Meter, role: str, n: int = 1) -> None:
    llm = meter.wrap(MockLLM(["ok"] * n), role)
    for _ in range(n):
        llm.complete([Message("user", "hello there")])


def test_each_role_is_counted_apart_and_a_cached_reply_costs_nothing() -> None:
    meter = Meter()
    _reply(meter, "agent", 3)
    _reply(meter, "updater", 1)
    meter.record("reflector", Completion("x", cached=True))
    usage = meter.snapshot()
    assert usage["agent"].requests == 3 and usage["updater"].requests == 1
    assert usage["agent"].tokens > usage["updater"].tokens > 0
    assert usage["reflector"] == RoleUsage(requests=1, cached=1)
    line = usage_line(usage)
    assert line.startswith("tokens: agent ") and "updater" in line and "reflector 0" in line
    assert "1 replies from the request cache" in line


def test_wrapping_twice_counts_once_and_a_difference_keeps_what_was_used() -> None:
    meter = Meter()
    llm = meter.wrap(MockLLM(["a", "b"]), "agent")
    assert meter.wrap(llm, "agent") is llm
    before = meter.snapshot()
    llm.complete([Message("user", "one")])
    _reply(meter, "updater")
    after = meter.snapshot()
    used = difference(after, before)
    assert set(used) == {"agent", "updater"} and used["agent"].requests == 1
    assert difference(after, after) == {}


def test_threads_lose_no_count() -> None:
    meter = Meter()
    llm = meter.wrap(MockLLM(lambda messages, schema: "ok"), "agent")

    def work() -> None:
        for _ in range(200):
            llm.complete([Message("user", "x")])

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert meter.snapshot()["agent"].requests == 1600


def test_metering_nests_into_the_open_meter() -> None:
    assert current_meter() is None
    with metering() as outer:
        with metering() as inner:
            assert inner is outer  # a generation's training counts into the generation's meter
        assert current_meter() is outer
    assert current_meter() is None
    assert isinstance(outer.wrap(MockLLM(), "agent"), MeteredLLM)
