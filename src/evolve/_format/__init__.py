"""File formats, each read and written in one place: the bottom layer of evolve.

- :mod:`evolve._format._message`: commit messages, and every `Evolve-*` trailer name;
- :mod:`evolve._format._units`: unit files (front matter) and the counter sidecars, and the
  walk of `memory/`;
- :mod:`evolve._format._render`: the `<memory>` text rendered from units;
- :mod:`evolve._format._views`: what `log`, `show`, `memory` and `run` print;
- :mod:`evolve._format._dates`: the dates `--as-of` takes;
- :mod:`evolve._format._git`: git's status, ls-tree and cat-file outputs;
- :mod:`evolve._format._timeline`: a persona's timeline (its clock across streams);
- :mod:`evolve._format._cache`: the caches kept in `.git/`, keyed by content and by the
  source of the code that produced them.

The standard library only, and little of it at import: the reading commands import these
modules on their fast path (no `re`, pydantic, PyYAML or rich at the top of a module). Both
those commands and the writers use them, so nothing here imports the rest of evolve but
:mod:`evolve.errors`.
"""


class Unhandled(Exception):  # noqa: N818 - a signal, not an error a user sees
    """A fast reader cannot answer this case exactly (a file not in canonical form, a case
    the full command answers); the caller takes the full way."""
