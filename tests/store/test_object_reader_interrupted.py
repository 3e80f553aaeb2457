"""An interrupt between a request to the long-lived `git cat-file --batch` and the end of its
answer (Ctrl-C, a generation's time-limit alarm) must not leave half an answer on the pipe for
the next request to read as its own: before, the next read named the wrong object or none
("... is not a commit in this repository" during a generation's rollback, under load)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from evolve.store._base import _ObjectReader


def _repo(tmp: Path) -> tuple[str, str]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tmp, capture_output=True, text=True, check=True
        ).stdout.strip()

    git("init", "-q")
    (tmp / "a.txt").write_text("a" * 5000, encoding="utf-8")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one")
    return git("rev-parse", "HEAD"), git("rev-parse", "HEAD:a.txt")


class _CutShort:
    """The reader's stdout, raising KeyboardInterrupt at its first `read` (the header read,
    the body not)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.cut = False

    def readline(self) -> bytes:
        return bytes(self.stream.readline())

    def close(self) -> None:
        self.stream.close()

    def read(self, size: int = -1) -> bytes:
        if not self.cut:
            self.cut = True
            raise KeyboardInterrupt
        return bytes(self.stream.read(size))


@pytest.mark.parametrize("where", ["after the header", "before the header"])
def test_the_next_request_after_an_interrupt_gets_its_own_answer(
    tmp_path: Path, where: str
) -> None:
    commit, blob = _repo(tmp_path)
    reader = _ObjectReader(tmp_path)
    try:
        assert reader.get(commit) is not None  # the process is up
        proc = reader._proc
        assert proc is not None
        if where == "after the header":
            proc.stdout = _CutShort(proc.stdout)  # type: ignore[assignment]
        else:
            real = proc.stdout

            class _Before:
                cut = False

                def readline(self) -> bytes:
                    if not self.cut:
                        self.cut = True
                        raise KeyboardInterrupt
                    return bytes(real.readline()) if real is not None else b""

                def read(self, size: int = -1) -> bytes:
                    return bytes(real.read(size)) if real is not None else b""

                def close(self) -> None:
                    if real is not None:
                        real.close()

            proc.stdout = _Before()  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            reader.get(blob)
        found = reader.get(commit)
        assert found is not None
        assert found[0] == commit and found[1] == "commit"
        assert found[2].startswith(b"tree ")
        again = reader.get(blob)
        assert again == (blob, "blob", b"a" * 5000)
    finally:
        reader.close()
