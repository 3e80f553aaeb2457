"""Running a program contained (docs/sandbox.md): model-written code and agent commands.

Standard library only; it knows nothing of the rest of evolve.
"""

from evolve.sandbox._backends import BACKENDS, Backend, bwrap_works, choose, unshare_works
from evolve.sandbox._pids import process_limit
from evolve.sandbox._run import SAFE_PATH, WEAK_WARNING, Limit, Limits, Outcome, environment, run
from evolve.sandbox._session import Session, SessionError

__all__ = [
    "BACKENDS",
    "SAFE_PATH",
    "Session",
    "SessionError",
    "WEAK_WARNING",
    "Backend",
    "Limit",
    "Limits",
    "Outcome",
    "bwrap_works",
    "choose",
    "environment",
    "process_limit",
    "run",
    "unshare_works",
]
