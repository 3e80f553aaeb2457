"""The evalset as the persona world holds it: task specs, splits and personas.

The files are validated by the models (`_TaskSpec`, `_Splits`, `_ProcedureSpec` of `_specs`,
and the persona model of `_personas`, through pydantic), in the order and with the errors
the environment has always given; a file in the plain form (exactly the fields, of exactly
their types) is taken without pydantic, as the models would take it. What they validate to is held as plain values: task specs,
and personas (`_personas.Persona`, which the judge, the worlds and the sim read). A caller
that names a cache file (`evolve run`'s fast path, in `.git/`) gets the validated values
remembered there, keyed by a digest of every evalset file's bytes and by the validating
code's source (`evolve._format._cache`), so an unchanged evalset is neither parsed nor
validated (nor pydantic imported) again; anything unusual (an unreadable file, a value the
cache cannot hold) just validates.

Every file is read once, through a confined open (`evolve._confine`: no link followed out of
the folder holding the evalset, the workspace, nor into `.git/`, checked at open time with
`O_NOFOLLOW` at each folder), and what is digested, parsed, validated and remembered are those
same bytes: a file swapped for another, or for a link, after it was checked is refused by name
or never read, and the cache never holds values of bytes other than those its key names.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from evolve.envs._protocol import SPLITS, Split
from evolve.envs.persona_world._personas import Persona
from evolve.errors import ConfigError

Spec = tuple[str, str, dict[str, Any]]  # task id, family, params


FILES = ("tasks.yaml", "splits.yaml", "procedures.yaml")
PERSONAS = "personas"
Files = dict[str, bytes | None]  # evalset-relative name -> bytes read (None: no such file)


def read_files(evalset: Path, names: tuple[str, ...] = FILES) -> Files:
    """Every file the evalset is read from, read once: `names` (by default `tasks.yaml`,
    `splits.yaml`, `procedures.yaml`) and each `personas/*.yaml`, each opened confined to the
    folder holding `evalset` (`evolve._confine.read_bytes`).

    Raises:
        PathRefused: a file, or a folder on its path, is a link out of that folder or into
            `.git/` (or became one while it was opened), named.
    """
    from evolve import _confine

    root, top = evalset.parent, evalset.name
    listed = list(names)
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        listed += sorted(
            f"{PERSONAS}/{name}"
            for name in os.listdir(evalset / PERSONAS)
            if name.endswith(".yaml")
        )
    files: Files = {}
    for name in listed:
        try:
            files[name] = _confine.read_bytes(root, f"{top}/{name}")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            files[name] = None
    return files


def personas_of(files: Files) -> dict[str, bytes]:
    """The persona files among `files` (:func:`read_files`): file name -> bytes."""
    return {
        name.removeprefix(f"{PERSONAS}/"): data
        for name, data in files.items()
        if name.startswith(f"{PERSONAS}/") and data is not None
    }


def read_yaml(path: Path, data: bytes | None = None) -> Any:
    """An evalset file's document (see `_yaml`); given `data`, the document those bytes (read
    from `path` by :func:`read_files`) hold.

    Raises:
        ConfigError: the file is missing or not valid YAML.
    """
    import yaml

    from evolve.envs.persona_world._yaml import load_yaml

    try:
        return load_yaml(path, data)
    except FileNotFoundError:
        raise ConfigError(f"{path} is missing; the evalset is incomplete.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML.") from exc


def _first_problem(exc: Exception) -> str:
    """One line for a validation error (pydantic's own text spans several lines)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "?"
        return f"field {loc!r}: {str(first.get('msg', 'invalid')).rstrip('.').lower()}"
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(".") if lines else type(exc).__name__


def _document(evalset: Path, files: Files, name: str) -> Any:
    data = files.get(name)
    if data is None:
        raise ConfigError(f"{evalset / name} is missing; the evalset is incomplete.")
    return read_yaml(evalset / name, data)


def _validated_specs(evalset: Path, files: Files) -> tuple[list[Spec], dict[str, Split]]:
    """Task specs and the split of each task, validated as the environment always has, from
    the bytes `files` holds (:func:`read_files`).

    Raises:
        ConfigError: a missing or malformed file, or a task in two splits.
    """
    import yaml

    from evolve.envs.persona_world._procedures import PROCEDURES_FILE, procedure_specs

    # not the plain form: the models say what is wrong (tasks.yaml first, as always)
    tasks = _document(evalset, files, "tasks.yaml")
    specs = _plain_tasks(tasks, with_split=False)
    if specs is None:
        specs = _model_specs(evalset, tasks)
    splits_doc = _document(evalset, files, "splits.yaml")
    splits = _plain_splits(splits_doc)
    if splits is None:
        splits = _model_splits(evalset, splits_doc)
    split_of: dict[str, Split] = {}
    try:  # procedure-shaped tasks, only when evalset/procedures.yaml exists
        raw = files.get(PROCEDURES_FILE)
        entries = procedure_specs(raw, evalset / PROCEDURES_FILE)
        extra = _plain_tasks(entries, with_split=True)
        if extra is None:
            extra = _model_procedures(evalset, entries)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{evalset}/procedures.yaml is not valid YAML{where}.") from exc
    out: list[Spec] = [(t[0], t[1], t[2]) for t in specs]
    out += [(t[0], t[1], t[2]) for t in extra]
    split_of.update({t[0]: t[3] for t in extra if t[3] is not None})
    for split in SPLITS:
        for task_id in splits[split]:
            if task_id in split_of:
                raise ConfigError(f"task {task_id} is in both {split_of[task_id]} and {split}.")
            split_of[task_id] = split
    return out, split_of


_Entry = tuple[str, str, dict[str, Any], Split | None]  # a task spec, and its split if given
_TASK_KEYS = frozenset({"id", "family", "params"})
_PROCEDURE_KEYS = _TASK_KEYS | {"split"}


def _plain_tasks(entries: Any, *, with_split: bool) -> list[_Entry] | None:
    """The task specs of `entries` in the plain form (a list of mappings of exactly `id`,
    `family`, `params` (and `split`): strings, a mapping of string keys, a split's name), as
    the models validate them; None for anything else (the models then say what is wrong)."""
    if type(entries) is not list:
        return None
    keys = _PROCEDURE_KEYS if with_split else _TASK_KEYS
    out: list[_Entry] = []
    for entry in entries:
        if type(entry) is not dict or entry.keys() != keys:
            return None
        ident, family, params = entry["id"], entry["family"], entry["params"]
        split = entry.get("split")
        if (
            type(ident) is not str
            or type(family) is not str
            or type(params) is not dict
            or not all(type(k) is str for k in params)
            or (with_split and split not in SPLITS)
        ):
            return None
        out.append((ident, family, dict(params), split))
    return out


def _plain_splits(doc: Any) -> dict[str, tuple[str, ...]] | None:
    """The splits of `doc` in the plain form (a mapping of exactly the three splits, each a
    list of strings); None for anything else."""
    if type(doc) is not dict or doc.keys() != set(SPLITS):
        return None
    out = {}
    for split, ids in doc.items():
        if type(ids) is not list or not all(type(i) is str for i in ids):
            return None
        out[split] = tuple(ids)
    return out


def _malformed(evalset: Path, exc: Exception) -> ConfigError:
    return ConfigError(
        f"{evalset} has a malformed tasks.yaml or splits.yaml: {_first_problem(exc)}."
    )


def _model_specs(evalset: Path, tasks: Any) -> list[_Entry]:
    """`tasks.yaml` validated by the model (pydantic), in its words.

    Raises:
        ConfigError: naming the first problem.
    """
    from pydantic import ValidationError

    from evolve.envs.persona_world._specs import _TaskSpec

    try:
        specs = [_TaskSpec.model_validate(t) for t in tasks]
    except (ValidationError, TypeError) as exc:
        raise _malformed(evalset, exc) from exc
    return [(t.id, t.family, t.params, None) for t in specs]


def _model_splits(evalset: Path, splits: Any) -> dict[str, tuple[str, ...]]:
    """`splits.yaml` validated by the model (pydantic), in its words.

    Raises:
        ConfigError: naming the first problem.
    """
    from pydantic import ValidationError

    from evolve.envs.persona_world._specs import _Splits

    try:
        valid = _Splits.model_validate(splits)
    except (ValidationError, TypeError) as exc:
        raise _malformed(evalset, exc) from exc
    return {split: getattr(valid, split) for split in SPLITS}


def _model_procedures(evalset: Path, entries: Any) -> list[_Entry]:
    """`procedures.yaml`'s entries validated by the model (pydantic), in its words.

    Raises:
        ConfigError: naming the first problem.
    """
    from pydantic import ValidationError

    from evolve.envs.persona_world._specs import _ProcedureSpec

    try:
        specs = [_ProcedureSpec.model_validate(t) for t in entries]
    except (ValidationError, TypeError) as exc:
        raise ConfigError(
            f"{evalset} has a malformed procedures.yaml: {_first_problem(exc)}."
        ) from exc
    return [(t.id, t.family, t.params, t.split) for t in specs]


# --- remembered ------------------------------------------------------------------------------


def _digest(files: Files) -> bytes:
    """A digest of every file the evalset is read from (the bytes :func:`read_files` read)."""
    import hashlib

    h = hashlib.blake2b(digest_size=20)
    for name in files:  # in the order read: the three files, then the personas by name
        h.update(repr((name, files[name])).encode())
    return h.digest()


def _remembered(value: object) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 3
        and isinstance(value[0], list)
        and isinstance(value[1], dict)
        and isinstance(value[2], dict)
    )


class EvalsetReader:
    """Reads an evalset (see the module's docstring); `remember`: the cache file, or None."""

    def __init__(self, evalset: Path, remember: str | None = None) -> None:
        from evolve._format._cache import DiskCache

        self.evalset = evalset
        self.files = read_files(evalset)  # read once: all that follows uses these bytes
        self.cache = DiskCache(remember, size=1, valid=_remembered)
        self.key = _digest(self.files) if remember is not None else None
        self.known: tuple[list[Spec], dict[str, Split], dict[str, dict[str, Any]]] | None = None
        if self.key is not None:
            self.known = self.cache.get(self.key)  # type: ignore[assignment]
        self._specs: tuple[list[Spec], dict[str, Split]] | None = None
        self._personas: dict[str, dict[str, Any]] | None = None

    def specs(self) -> tuple[list[Spec], dict[str, Split]]:
        if self.known is not None:
            return self.known[0], self.known[1]
        self._specs = _validated_specs(self.evalset, self.files)
        return self._specs

    def personas(self) -> dict[str, Persona]:
        if self.known is not None:
            return {name: Persona.of(dump) for name, dump in self.known[2].items()}
        from evolve.envs.persona_world._personas import load_personas

        found = load_personas(self.evalset / PERSONAS, personas_of(self.files))
        self._personas = {name: p.dump() for name, p in found.items()}
        return found

    def save(self) -> None:
        """Remember what was validated, under the key of the very bytes validated."""
        if self.key is None or self.known is not None or self._specs is None:
            return
        if self._personas is None:
            return
        self.cache.put(self.key, (*self._specs, self._personas))
