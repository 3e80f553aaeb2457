"""The reading commands' fast path: `evolve log`, `show` and `memory` in the standard library.

A reviewer runs these all day, and on a short command start-up is most of the wait: importing
click, pydantic, PyYAML, `re`, `subprocess` or `pathlib` costs more than git's own answer. The
modules here import none of them on the common path. They answer exactly what the full
commands answer (tests compare the two on the same workspaces); whenever a case is not the
common one (a merge in the history, a journal to recover, a unit file not written in
evolve's canonical form, a recipe without a light renderer, any error), they raise
:class:`Unhandled` before printing anything, and the full command runs instead.
"""
