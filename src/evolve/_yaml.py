"""Strict YAML for the files a person may edit by hand: a key given twice is refused.

Plain YAML loaders keep the last of two equal keys in one mapping, so a hand edit that adds
`alpha:` under a unit id that already has one, a second skill entry in `_strata.yaml`, or a
second `caps:` in `evolve.yaml` would silently replace what was there. Every reader of such a
file (`evolve.yaml`, `prompts/parameters.yaml`, unit front matter, the counters sidecars, the
skills' `_strata.yaml`, `_staging.yaml` and `_failed_tasks.yaml`, evalset files, experiment
files) parses through :func:`load`, which refuses a duplicate key in any mapping at any depth
with one sentence naming the file, the key and both lines.

libyaml parses when it is installed (as before); only the construction of mappings, which is
Python in both loaders, gains the check. The stdlib-only fast readers (`evolve.quick`) leave
any file with a repeated key to these readers, so both paths answer alike.
"""

from __future__ import annotations

from typing import Any

from evolve.errors import EvolveError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    import yaml

    StrictLoader: type[yaml.SafeLoader]

_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKey(EvolveError):
    """A mapping gives the same key twice; the message names the file, key and lines."""

    def __init__(self, message: str, key: object, first: int, second: int) -> None:
        super().__init__(message)
        self.key, self.first, self.second = key, first, second


class _Twice(Exception):
    def __init__(self, key: object, first: int, second: int) -> None:
        super().__init__(key, first, second)
        self.key, self.first, self.second = key, first, second


_LOADERS: list[Any] = []


def _strict_loader() -> Any:
    """The safe loader (libyaml's when available) that refuses a key given twice in one
    mapping. A merge (`<<: *base`) and the keys that override it are not duplicates. Built on
    first use: a document read from a cache needs no PyYAML."""
    if _LOADERS:
        return _LOADERS[0]
    import yaml

    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[valid-type,misc]
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            if isinstance(node, yaml.MappingNode):
                seen: dict[object, int] = {}
                for key_node, _value in node.value:
                    if key_node.tag == _MERGE:
                        continue
                    key = self.construct_object(key_node, deep=deep)
                    line = key_node.start_mark.line + 1
                    try:
                        if key in seen:
                            raise _Twice(key, seen[key], line)
                        seen[key] = line
                    except TypeError:
                        continue  # an unhashable key: the base class says so
            result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return result

    StrictLoader.__doc__ = _strict_loader.__doc__
    _LOADERS.append(StrictLoader)
    return StrictLoader


def __getattr__(name: str) -> Any:
    if name == "StrictLoader":
        return _strict_loader()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def duplicate_sentence(source: str, key: object, first: int, second: int) -> str:
    """The one sentence for a key given twice in `source`."""
    where = f"lines {first} and {second}" if first != second else f"both on line {first}"
    return f"{source} gives the key {key!r} twice ({where}); keep one of them and retry."


def load(
    text: str,
    source: str,
    *,
    error: type[EvolveError] = DuplicateKey,
    line_offset: int = 0,
    cache: str | None = None,
    keep: Callable[[Any], bool] | None = None,
) -> Any:
    """The YAML document in `text` (the file `source`, named in errors).

    `line_offset` is added to the line numbers named (front matter that starts below the
    file's first line).

    `cache`: a cache file (`evolve._format._cache.DiskCache`) that remembers parsed documents
    by the digest of their text and the source of this module, so the same text is not
    parsed (nor PyYAML imported) again. Only documents that parsed are kept, and only those
    `keep` accepts (a file holding secrets must not be copied into a cache file). The
    caller gets its own copy of a remembered document.

    Raises:
        DuplicateKey (or `error`, with the same sentence): a mapping gives a key twice.
        yaml.YAMLError: the text is not valid YAML (the caller words that in its own terms).
    """
    key = None
    if cache is not None:
        import hashlib

        from evolve._format._cache import DiskCache

        store = DiskCache(cache, code=[__file__])
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20)
        key = ("yaml", digest.digest())
        known = store.get(key)
        if isinstance(known, tuple) and len(known) == 1:
            return known[0]
    import yaml

    try:
        document = yaml.load(text, Loader=_strict_loader())  # noqa: S506 (a safe loader)
    except _Twice as twice:
        first, second = twice.first + line_offset, twice.second + line_offset
        message = duplicate_sentence(source, twice.key, first, second)
        if error is DuplicateKey:
            raise DuplicateKey(message, twice.key, first, second) from None
        raise error(message) from None
    if key is not None and (keep is None or keep(document)):
        store.put(key, (document,))
    return document
