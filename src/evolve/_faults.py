"""A test-only fault-injection seam, inert unless `EVOLVE_FAULT` is set.

`EVOLVE_FAULT=<step>:<kind>` makes the evolve loop fail at one named step of a generation, so
the reliability tests can check that every way of dying ends in the generation's base:

steps  `start` (journal written), `batch` (after the training batch), `reflector` (prompt
       files written, not yet committed), `tests` (inside the workspace tests, temp copy made),
       `scoring` (between the candidate's dev and holdout scores), `verdict` (decided, not yet
       applied), `record` (verdict applied, record not yet written)
kinds  `raise` (an exception), `sigint`, `sigterm` (the signal sent to this process),
       `kill` (SIGKILL to this process), `hang` (print a line to stderr and sleep, so a test
       can kill the process from outside)

`EVOLVE_FAULT=io:<ENOSPC|EDQUOT|EROFS|EACCES|EPERM|EFBIG>[:<text>]` makes every file evolve
opens for writing (atomic writes, confined writes and appends, the store's objects, locks and
reflogs) fail with that `OSError` when its path contains `<text>` (every path when no text is
given): a full disk, a read-only or unwritable folder, without a small file system or root.
That kind is read by `evolve._io.io_fault` (the ground's modules import none of each other,
and every writer reaches `_io`).

Apart from that, this module is the only place that reads the variable. Without it, :func:`fault` returns at
once; a malformed value is ignored (a production run is never affected by a typo).
"""

from __future__ import annotations

import os
import signal
import sys
import time

ENV = "EVOLVE_FAULT"
STEPS = ("start", "batch", "reflector", "tests", "scoring", "verdict", "record")
KINDS = ("raise", "sigint", "sigterm", "kill", "hang")


class InjectedFault(RuntimeError):
    """The exception `EVOLVE_FAULT=<step>:raise` raises."""


def fault(step: str) -> None:
    """Fail here if `EVOLVE_FAULT` names this step; otherwise do nothing."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    want, _, kind = spec.partition(":")
    if want != step or kind not in KINDS:
        return
    if kind == "raise":
        raise InjectedFault(f"injected fault at step {step}")
    if kind == "hang":
        sys.stderr.write(f"{ENV}: hanging at step {step}\n")
        sys.stderr.flush()
        time.sleep(120)
        return
    sig = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "kill": signal.SIGKILL}[kind]
    os.kill(os.getpid(), sig)
    time.sleep(5)  # the handler runs (and raises) during this sleep
