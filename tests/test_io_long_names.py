"""A legal file name of up to 255 bytes can be written atomically and committed.

The temporary file beside it used to be named ".<name>.<random>.tmp", 14 bytes longer than
the name, so a 251-character prompt file name crashed with "File name too long".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve._io import atomic_write, temp_prefix
from evolve.txn import lock
from evolve.txn._writer import Transaction
from evolve.workspace import Workspace


@pytest.mark.parametrize(
    "name",
    [
        "p" * 248 + ".md",  # 251 characters, the case
        "q" * 252 + ".md",  # 255 bytes, the longest legal name
        "é" * 126 + ".md",  # 255 bytes of two-byte characters
        "漢" * 84 + ".md",  # 255 bytes of three-byte characters
    ],
)
def test_atomic_write_of_the_longest_names(tmp_path: Path, name: str) -> None:
    assert len(name.encode("utf-8")) <= 255
    target = tmp_path / name
    atomic_write(target, "first\n")
    atomic_write(target, "second\n")  # replacing an existing file too
    assert target.read_text(encoding="utf-8") == "second\n"
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left
    prefix = temp_prefix(name)
    assert len(prefix.encode("utf-8")) + 8 + len(".tmp") <= 255
    assert prefix.startswith(".") and prefix.endswith(".")


def test_short_names_keep_their_whole_name_in_the_temp_prefix() -> None:
    assert temp_prefix("system.md") == ".system.md."


def test_a_251_character_prompt_file_is_written_and_committed(workspace: Workspace) -> None:
    rel = "prompts/" + "p" * 248 + ".md"
    with lock(workspace, "test"):
        tx = Transaction(workspace)
        paths = tx.write({rel: b"# a prompt with a long name\n"})
        sha = tx.commit(paths, "prompt with a long name")
    assert sha is not None
    assert workspace.store.read(sha, rel) == b"# a prompt with a long name\n"
    assert workspace.store.dirty_paths() == []
