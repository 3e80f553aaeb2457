"""One registry mechanism for every extension point: models, recipes, environments, executors.

Each extension point owns one :class:`Registry`, declared beside its protocol. A name is found,
in this order:

1. an entry registered by decorator in the module that defines it
   (``@recipes.register("ace")``). evolve's own modules are named once, in
   `evolve._builtins.PLACES`, and imported the first time a registry misses a name: one at a
   time, in that order, until one registers it (all of them for a listing or a name none
   registers);
2. an import path ``module:Object`` (``environment: mypkg.support:SupportDesk`` in
   evolve.yaml), imported when asked for;
3. an installed package's Python entry point in the registry's group (``evolve.models``,
   ``evolve.recipes``, ``evolve.environments``, ``evolve.executors``): the group is read only
   when a name is missed or listed, and an entry point is loaded only when its name is asked.

A name that ends in a separator (``openai/``, ``sim:``) registers a prefix: ``openai/gpt-4o``
finds it, and the rest of the name (``gpt-4o``) comes back with the entry. A name that none of
these answers is refused with one sentence listing the choices (:class:`UnknownName`).

Standard library only, and nothing of evolve but its errors and the table of places: any
layer may declare a registry without importing a higher one.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from evolve._builtins import PLACES
from evolve._lazy import pattern
from evolve.errors import UnknownName

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")
U = TypeVar("U")

BUILT_IN = "built-in"
REGISTERED = "registered"  # by decorator, in a module that is not evolve's
ENTRY_POINT = "entry point"
IMPORT_PATH = "import path"
SEPARATORS = "/:"
_IMPORT_PATH = pattern(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class Entry:
    """One name of a registry and where it comes from (what `evolve plugins` lists)."""

    name: str
    """The name as a user writes it (a prefix shown with its placeholder: ``openai/<model>``)."""
    source: str
    """``built-in``, ``registered``, ``entry point`` or ``import path``."""
    where: str
    """The object: ``module:qualified.name`` (an entry point's value before it is loaded)."""
    distribution: str | None = None
    """The installed package of an entry point, with its version."""


def _where(obj: object) -> str:
    module = getattr(obj, "__module__", None) or "?"
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}:{name}"


def is_import_path(name: str) -> bool:
    """Whether `name` reads as ``module:Object`` (dotted names on both sides)."""
    return _IMPORT_PATH.fullmatch(name.strip()) is not None


class Registry(Mapping[str, T]):
    """The objects of one extension point, by name.

    As a mapping it holds the registered names and the installed entry points' names (not
    import paths); `lookup` and `resolve` also accept an import path, and say what to do when
    a name is unknown.
    """

    def __init__(self, kind: str, group: str, *, placeholder: str | None = None) -> None:
        """
        Args:
            kind: what one entry is, in words (``recipe``): the refusal says
                ``unknown recipe 'x'; choose one of ...``.
            group: the entry-point group, also the key of `evolve._builtins.PLACES`.
            placeholder: how a prefix is shown in lists (default `kind`: ``openai/<model>``).
        """
        self.kind = kind
        self.group = group
        self.placeholder = placeholder or kind
        self._objects: dict[str, T] = {}  # every name, aliases and prefixes included
        self._entries: dict[str, Entry] = {}  # the listed name of each object
        self._points: dict[str, EntryPoint] | None = None  # the group, once read
        self._loaded = False
        self._loading = False
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.group!r})"

    # --- filling -------------------------------------------------------------------------

    def register(self, name: str, *aliases: str) -> Callable[[U], U]:
        """A decorator that registers what it decorates as `name` (and `aliases`).

        A name that ends in ``/`` or ``:`` is a prefix (``openai/``: every ``openai/<model>``).

        Raises:
            ValueError: `name` is taken by another object (two built-ins, one name).
        """

        def decorate(obj: U) -> U:
            self.add(name, obj, *aliases)  # type: ignore[arg-type]
            return obj

        return decorate

    def add(self, name: str, obj: T, *aliases: str, entry: Entry | None = None) -> None:
        """Register `obj` as `name` (and `aliases`); `entry` says where it comes from."""
        where = _where(obj)
        if entry is None:
            source = BUILT_IN if where.startswith("evolve.") else REGISTERED
            entry = Entry(self._shown(name), source, where)
        with self._lock:
            for each in (name, *aliases):
                held = self._objects.get(each)
                if held is not None and held is not obj and _where(held) != where:
                    raise ValueError(f"{self.kind} {each!r} is registered twice ({_where(held)})")
            for each in (name, *aliases):
                self._objects[each] = obj
            self._entries[name] = entry

    def _shown(self, name: str) -> str:
        return f"{name}<{self.placeholder}>" if name[-1:] in SEPARATORS else name

    def load_builtins(self) -> None:
        """Import evolve's modules for this group (once): their decorators register them."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:  # done, or asked again from an import below
                return
            self._loading = True
            try:
                for place in PLACES.get(self.group, ()):
                    _import_place(place)
            finally:
                self._loading = False
            self._loaded = True

    def _entry_points(self) -> dict[str, EntryPoint]:
        if self._points is None:
            with self._lock:
                if self._points is None:
                    from importlib.metadata import entry_points

                    points: dict[str, EntryPoint] = {}
                    for point in entry_points(group=self.group):
                        points.setdefault(point.name, point)
                    self._points = points
        return self._points

    # --- finding -------------------------------------------------------------------------

    def _match(self, name: str) -> tuple[T, str] | None:
        found = self._objects.get(name)
        if found is not None and name[-1:] not in SEPARATORS:  # a prefix needs its rest
            return found, ""
        for index, char in enumerate(name):
            if char in SEPARATORS:
                head, rest = name[: index + 1], name[index + 1 :]
                found = self._objects.get(head)
                return (found, rest) if found is not None and rest else None
        return None

    def _from_entry_point(self, name: str) -> tuple[T, str] | None:
        points = self._entry_points()
        point = points.get(name)
        rest = ""
        if point is None:
            head = next((name[: i + 1] for i, c in enumerate(name) if c in SEPARATORS), None)
            if head is None or head not in points or not name[len(head) :]:
                return None
            point, rest = points[head], name[len(head) :]
        dist = getattr(point, "dist", None)
        where = f"{dist.name} {dist.version}" if dist is not None else "an installed package"
        try:
            obj = point.load()
        except ImportError as exc:
            raise UnknownName(
                f"the {self.kind} {point.name!r} of {where} cannot be imported ({exc}); "
                "reinstall that package or uninstall it."
            ) from exc
        entry = Entry(self._shown(point.name), ENTRY_POINT, point.value, where)
        self.add(point.name, obj, entry=entry)
        return obj, rest

    def _import(self, name: str) -> T:
        module_name, _, attribute = name.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError as exc:
            raise UnknownName(
                f"cannot import the {self.kind} {name!r} ({exc}); check its module path, or "
                f"choose one of {', '.join(self.choices())}."
            ) from exc
        for part in attribute.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise UnknownName(
                    f"module {module_name!r} has no {attribute!r}; check the {self.kind}'s "
                    "import path."
                ) from None
        self.add(name, obj, entry=Entry(name, IMPORT_PATH, _where(obj)))
        found: T = obj
        return found

    def _load_until(self, name: str) -> tuple[T, str] | None:
        """Import evolve's modules for this group one at a time until one registers `name` (a
        command imports the built-in it runs, not its siblings): first a module named after it
        (``evolve.updaters._tepa`` for ``tepa``), then the others in `PLACES` order. None when
        none does (then every one is imported, as `load_builtins` does)."""
        if self._loaded:
            return None
        with self._lock:
            if self._loaded or self._loading:  # done, or asked again from an import below
                return None
            self._loading = True
            head = re.split(f"[{SEPARATORS}]", name, maxsplit=1)[0]
            try:
                modules = list(_modules(PLACES.get(self.group, ())))
                named = [m for m in modules if m.rpartition(".")[2].lstrip("_") == head]
                for module in [*named, *(m for m in modules if m not in named)]:
                    importlib.import_module(module)
                    found = self._match(name)
                    if found is not None:
                        return found
            finally:
                self._loading = False
            self._loaded = True
            return None

    def _find(self, name: str) -> tuple[T, str] | None:
        name = name.strip()
        found = self._match(name)
        if found is None:
            found = self._load_until(name) or self._match(name)
        if found is None and is_import_path(name):
            return self._import(name), ""
        if found is None:
            found = self._from_entry_point(name)
        return found

    def resolve(self, name: str) -> tuple[T, str]:
        """The object `name` stands for, and the rest of the name after a prefix ("" if none).

        Raises:
            UnknownName: one sentence listing the choices; or an import path or entry point
                that cannot be imported.
        """
        found = self._find(name)
        if found is None:
            raise UnknownName(
                f"unknown {self.kind} {name.strip()!r}; choose one of {', '.join(self.choices())}."
            )
        return found

    def lookup(self, name: str) -> T:
        """The object `name` stands for (see `resolve`).

        Raises:
            UnknownName: one sentence listing the choices.
        """
        return self.resolve(name)[0]

    def find(self, name: str) -> T | None:
        """The object `name` stands for, or None when nothing answers to it (a cheap miss:
        `"hand" in recipes` is asked for every hand note).

        Raises:
            UnknownName: an import path or entry point that cannot be imported.
        """
        found = self._find(name)
        return found[0] if found is not None else None

    # --- listing -------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every name: built-ins and registered ones, installed entry points (loaded or not),
        import paths used in this process; sorted by name."""
        self.load_builtins()
        out = dict(self._entries)
        for name, point in self._entry_points().items():
            if name not in self._objects:
                dist = getattr(point, "dist", None)
                where = f"{dist.name} {dist.version}" if dist is not None else None
                out[name] = Entry(self._shown(name), ENTRY_POINT, point.value, where)
        return [out[name] for name in sorted(out)]

    def choices(self) -> list[str]:
        """The names to offer a user (import paths are theirs already), sorted."""
        return [e.name for e in self.entries() if e.source != IMPORT_PATH]

    def _names(self) -> list[str]:
        self.load_builtins()
        names = {n for n, e in self._entries.items() if e.source != IMPORT_PATH}
        return sorted(names | set(self._entry_points()))

    def __getitem__(self, name: str) -> T:
        try:
            return self.lookup(name)
        except UnknownName:
            raise KeyError(name) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def _modules(places: tuple[str, ...]) -> Iterator[str]:
    """The modules `places` name, in order; ``pkg.*``: the package and every module in it (the
    package imported first, to list them)."""
    for place in places:
        if not place.endswith(".*"):
            yield place
            continue
        import pkgutil

        package = importlib.import_module(place[:-2])
        for info in pkgutil.iter_modules(package.__path__):
            yield f"{package.__name__}.{info.name}"


def _import_place(place: str) -> None:
    """Import `place`; ``pkg.*``: the package and every module in it."""
    for module in _modules((place,)):
        importlib.import_module(module)
