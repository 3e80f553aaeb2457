"""The process limit holds for root too: each run gets its own pids cgroup where the machine
allows one, so a program that forks without end is refused by the kernel at the limit (root
ignores RLIMIT_NPROC; the watch alone let a fork bomb take every pid of a CI machine)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from evolve import sandbox
from evolve.sandbox._pids import PidsGroup

needs_group = pytest.mark.skipif(
    sandbox.process_limit() != "cgroup", reason="this machine lets evolve make no pids cgroup"
)

# Forks children that sleep, writing how many it holds to a file in its folder (read after the
# run: what was left in its standard output's pipe when it was stopped is not kept), until a
# fork is refused.
FORKER = """
import os, time
held = 0
while held < 60:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    held += 1
    with open("held.tmp", "w") as f:
        f.write(str(held))
    os.replace("held.tmp", "held")
time.sleep(30)
"""


def _leftovers() -> list[str]:
    group = PidsGroup.create(1)
    if group is None:
        return []
    parent = os.path.dirname(group.path)
    group.remove()
    return [n for n in os.listdir(parent) if n.startswith(f"evolve-sandbox-{os.getpid()}-")]


@needs_group
@pytest.mark.parametrize("backend", ["rlimits", "bwrap"])
def test_the_kernel_refuses_forks_past_the_limit_for_root_too(backend: str) -> None:
    if backend == "bwrap" and not sandbox.bwrap_works():
        pytest.skip("bubblewrap may not create namespaces here")
    held: list[int] = []

    def read(folder: Path) -> None:
        path = folder / "work" / "held"
        held.append(int(path.read_text()) if path.exists() else 0)

    out = sandbox.run(
        [sys.executable, "-c", FORKER],
        backend=backend,  # type: ignore[arg-type]
        limits=sandbox.Limits(processes=8, wall_s=60),
        inspect=read,
    )
    assert out.limit == "processes", out
    assert "more processes than allowed" in out.reason()
    # The program and its children (bubblewrap's two included) stay within the limit plus the
    # two the watch allows; as root, nothing refused a fork before.
    assert held and 1 <= held[0] <= 8 + 1, held
    assert out.duration_s < 30  # stopped on the refusal, not at the children's end
    assert _leftovers() == []


@needs_group
def test_a_session_worker_that_forks_is_stopped_by_the_kernel_limit() -> None:
    code = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"
    with sandbox.Session(
        [sys.executable, "-c", code], backend="rlimits", limits=sandbox.Limits(processes=8)
    ) as session:
        with pytest.raises(sandbox.SessionError) as caught:
            session.receive(timeout_s=60)
        assert caught.value.limit == "processes", str(caught.value)
    assert _leftovers() == []


def test_a_group_holds_its_limit_and_says_when_it_was_reached() -> None:
    group = PidsGroup.create(2)
    if group is None:
        pytest.skip("this machine lets evolve make no pids cgroup")
    try:
        with open(os.path.join(group.path, "pids.max"), encoding="ascii") as fh:
            assert fh.read().strip() == "2"
        assert not group.hit() and group.members() == []
    finally:
        group.remove()
    assert not os.path.exists(group.path)


def test_what_holds_the_limit_is_named() -> None:
    held = sandbox.process_limit()
    assert held in ("cgroup", "rlimit", "watch")
    if os.getuid() != 0:
        assert held in ("cgroup", "rlimit")


def test_a_group_left_by_an_ended_process_is_removed_by_the_next_run() -> None:
    group = PidsGroup.create(2)
    if group is None:
        pytest.skip("this machine lets evolve make no pids cgroup")
    parent = os.path.dirname(group.path)
    group.remove()
    gone = 2**22 + 12345  # above any pid this machine hands out (pid_max is at most 2**22)
    left = os.path.join(parent, f"evolve-sandbox-{gone}-0123456789ab")
    os.mkdir(left)
    try:
        out = sandbox.run([sys.executable, "-c", "print('hi')"], backend="rlimits")
        assert out.ok, out
        assert not os.path.exists(left)
    finally:
        if os.path.exists(left):
            os.rmdir(left)
