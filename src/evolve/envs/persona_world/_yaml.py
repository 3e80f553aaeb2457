"""Reading the evalset's YAML: once per process while a file is unchanged, with libyaml.

Every run, gate and generation opens the environment, and the pure-Python loader made the
evalset's few files a sixth of an `evolve evolve`. A file is keyed by its resolved path,
mtime and size, so an edit is read again; callers get a deep copy, so one caller that mutates
what it read cannot change what the next one sees.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from evolve._yaml import StrictLoader
from evolve._yaml import load as load_strict
from evolve.errors import ConfigError

# libyaml's safe loader when available, refusing a key given twice (`evolve._yaml`).
_LOADER: type = StrictLoader
_PARSED: dict[tuple[str, int, int], Any] = {}


_READ: dict[tuple[str, bytes], Any] = {}


def load_yaml(path: Path, data: bytes | None = None) -> Any:
    """The document at `path`; or, given `data`, the document those bytes hold (already read
    from `path`, which only names it: nothing is read again, so what is parsed is exactly
    what the caller read).

    Raises:
        FileNotFoundError: the file is missing.
        yaml.YAMLError: it is not valid YAML.
        ConfigError: a mapping in it gives a key twice (one sentence naming the file).
    """
    if data is not None:
        found = (str(path), data)
        if found not in _READ:
            text = data.decode("utf-8")
            document = load_strict(text, str(path), error=ConfigError)
            for seen in [k for k in _READ if k[0] == found[0]]:
                del _READ[seen]  # one version per file, as below
            _READ[found] = document
        return copy.deepcopy(_READ[found])
    st = path.stat()
    name = str(path.resolve())
    key = (name, st.st_mtime_ns, st.st_size)
    if key not in _PARSED:
        document = load_strict(path.read_text(encoding="utf-8"), str(path), error=ConfigError)
        for old in [k for k in _PARSED if k[0] == name]:
            del _PARSED[old]  # one version per file: the cache stays as big as the evalset
        _PARSED[key] = document
    return copy.deepcopy(_PARSED[key])
