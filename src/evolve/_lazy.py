"""Names a package exports but imports on first use (PEP 562), written once.

A package names the modules its lazy names live in and installs the pair this module makes:

    __getattr__, __dir__ = lazy_exports(__name__, globals(), {"pkg._mod": ("Name", ...)})

`__getattr__` imports the named module the first time a name is asked for and keeps the value
in the package's namespace (later reads are plain attribute reads); `__dir__` lists the lazy
names with the loaded ones. The package still imports the names under `TYPE_CHECKING`, so type
checkers see them, and keeps its own literal `__all__`. Standard library only: the CLI's fast
paths import packages that use it.

A module-level regular expression that a run may never use is written `pattern(r"...")`
instead of `re.compile(r"...")`: it is compiled the first time one of its methods is read, so
a command that never reaches it does not pay for compiling it at import.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast


def lazy_exports(
    package: str,
    namespace: dict[str, Any],
    modules: Mapping[str, Iterable[str]],
    *,
    before: Callable[[str], None] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level `__getattr__` and `__dir__`.

    Args:
        package: the package's `__name__` (for the error message).
        namespace: the package's `globals()`, where a loaded value is kept.
        modules: module -> the lazy names it defines.
        before: called with the name before its module is imported (for a package that must
            prepare something first, e.g. let plug-ins register).

    Raises:
        ValueError: a name is listed under two modules.
    """
    where: dict[str, str] = {}
    for module, names in modules.items():
        for name in names:
            if where.setdefault(name, module) != module:
                raise ValueError(f"{package}: {name!r} listed under {where[name]} and {module}")

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if before is not None:
            before(name)
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__


class _Pattern:
    """A regular expression compiled on first use: the first read of one of a compiled
    pattern's attributes (`search`, `sub`, `pattern`, ...) compiles it and keeps every one in
    the instance, so later reads are plain attribute reads of the compiled pattern's own."""

    def __init__(self, source: str, flags: int) -> None:
        self._source = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # never for the private state (copying, pickling, ...)
            raise AttributeError(name)
        compiled = re.compile(self._source, self._flags)
        for attribute in _ATTRIBUTES:
            setattr(self, attribute, getattr(compiled, attribute))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"pattern({self._source!r})"


_ATTRIBUTES = (
    "search", "match", "fullmatch", "split", "findall", "finditer", "sub", "subn",
    "pattern", "flags", "groups", "groupindex",
)  # fmt: skip


def pattern(source: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(source, flags)`, compiled the first time it is used (see the module doc).

    For a module-level pattern whose callers use its methods (`_WORD.findall(text)`), not one
    passed to `re.sub(pattern, ...)` or tested with `isinstance(..., re.Pattern)`.
    """
    return cast("re.Pattern[str]", _Pattern(source, flags))
