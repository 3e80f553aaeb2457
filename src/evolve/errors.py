"""Errors a user can hit.

Every error that reaches the command line is an :class:`EvolveError` whose message is one
sentence saying what happened and what to do. Anything else is a bug.
"""

from __future__ import annotations


class EvolveError(Exception):
    """A failure the user can act on; its message is shown as is."""


class ConfigError(EvolveError):
    """`evolve.yaml` is missing or does not match the configuration schema."""


class PathRefused(EvolveError, PermissionError):
    """A path escapes the workspace, points into `.git/`, or touches a protected file."""


class LockHeld(EvolveError):
    """Another writer holds the workspace lock."""


class NotAWorkspace(EvolveError):
    """No `evolve.yaml` was found walking up from the current directory."""


class ModelError(EvolveError):
    """A model backend could not be reached or answered with an error."""


class UnknownName(EvolveError):
    """A name (model, split, recipe, persona, task) is not known."""


class WriteFailed(EvolveError):
    """The file system refused a write (full, read-only, not permitted); what was being written
    was rolled back."""


# errno name -> what happened, for the writes a user can fix (the rest are bugs: tracebacks).
_WRITE_ERRORS = {
    "ENOSPC": ("the disk is full", "free some space"),
    "EDQUOT": ("the disk quota is used up", "free some space"),
    "EFBIG": ("a file grew past the size limit", "raise the file size limit"),
    "EROFS": ("the file system is read-only", "make it writable"),
    "EACCES": ("permission was denied", "make it writable for this user"),
    "EPERM": ("the operation was not permitted", "make it writable for this user"),
}


def write_failure(exc: BaseException) -> tuple[str, str] | None:
    """(what happened, naming the file; what to do) for an `OSError` a user can fix by freeing
    space or granting access, else None."""
    import errno as errno_names

    if not isinstance(exc, OSError) or exc.errno is None:
        return None
    said = _WRITE_ERRORS.get(errno_names.errorcode.get(exc.errno, ""))
    if said is None:
        return None
    what, fix = said
    where = f" writing {exc.filename}" if exc.filename else ""
    return f"{what}{where}", fix
