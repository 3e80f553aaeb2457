"""The skills' hand-editable records, read up front.

`memory/skills/_strata.yaml`, `_staging.yaml` and `_failed_tasks.yaml` are read in the middle
of a training stream (when an episode is counted, when a batch commits). A person may edit
them by hand; one that cannot be read (a key given twice, a count that is not a number) must
be refused before the stream writes anything (the persona's timeline on the side ref, a run
log), not after its first episodes ran. `check_records` reads them all, as their readers do.
"""

from __future__ import annotations

from pathlib import Path

from evolve._format import _limits as limits
from evolve.errors import EvolveError
from evolve.skills._failed import load_failed
from evolve.skills._staging import STAGING_PATH, parse_staging
from evolve.skills._strata import load_strata


def check_records(root: Path) -> None:
    """Read every skills record in the workspace at `root`.

    Raises:
        EvolveError: one of them cannot be read (one sentence naming the file).
    """
    load_strata(root)
    load_failed(root)
    staging = root / STAGING_PATH
    if staging.is_file():
        try:
            raw = limits.read_bytes(root, STAGING_PATH).decode("utf-8")  # no link out
        except UnicodeDecodeError:
            raise EvolveError(f"{STAGING_PATH} is not UTF-8 text.") from None
        parse_staging(raw)
