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
